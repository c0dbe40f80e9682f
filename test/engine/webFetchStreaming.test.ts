import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineFunction, testEngine } from '../support/engine.ts';
import { vendorServer, type SeenRequest } from '../support/vendor.ts';
import { until } from '../support/wait.ts';

// A web fetch() response body reaches the function as the vendor sends it: each vendor below sends
// a first part, then holds the rest until the function, having read that part, asks for /seen/NAME.
// A body that waited for the whole response would never get there (the run would time out).
const SECRET = `sk-stream/${Math.random().toString(36).slice(2)}+key`;
const engine = testEngine({ secrets: undefined });
let port: number;
let base: string;
let seen: SeenRequest[];
/** The responses each vendor route is holding open, by name, with what it sends once the function has seen the first part. */
const held = new Map<string, { res: ServerResponse; rest?: string; end: boolean }>();
/** Names whose vendor connection was closed before the response was sent in full. */
const closedEarly = new Set<string>();
/** What /big sends, and how far it got: `blocked` while its socket takes no more. */
const BIG = 48 * 1024 * 1024;
const big = { written: 0, blocked: false };

beforeAll(async () => {
  const vendor = await vendorServer((req, res) => {
    const url = new URL(req.url, 'http://vendor');
    const name = url.searchParams.get('name') ?? url.pathname.slice(1);
    res.on('close', () => {
      if (!res.writableFinished) closedEarly.add(name);
    });
    if (url.pathname === '/sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      held.set(name, { res, rest: 'data: two\n\n', end: true });
    } else if (url.pathname === '/flood') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('a'.repeat(1000));
      held.set(name, { res, rest: 'b'.repeat(5000), end: false });
    } else if (url.pathname === '/secret') {
      // The key the request carried, echoed split across two writes, the second only once the function read the first.
      const key = String(req.headers['x-api-key'] ?? '');
      const half = key.length >> 1;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: one\n\ndata: ${key.slice(0, half)}`);
      held.set(name, { res, rest: `${key.slice(half)}\n\n`, end: true });
    } else if (url.pathname === '/hold') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      held.set(name, { res, end: false });
    } else if (url.pathname === '/big') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const piece = Buffer.alloc(64 * 1024, 0x61);
      const pump = () => {
        while (big.written < BIG) {
          big.written += piece.length;
          if (!res.write(piece)) {
            big.blocked = true;
            res.once('drain', () => {
              big.blocked = false;
              pump();
            });
            return;
          }
        }
        res.end();
      };
      pump();
    } else if (url.pathname === '/stalled') {
      // Answers how much /big sent once it has been held back for a while, or has sent everything.
      let calm = 0;
      const watch = setInterval(() => {
        calm = big.blocked ? calm + 1 : 0;
        if (calm >= 10 || big.written >= BIG) {
          clearInterval(watch);
          res.end(String(big.written));
        }
      }, 20);
    } else if (url.pathname.startsWith('/seen/')) {
      res.end('ok');
      const waiting = held.get(url.pathname.slice('/seen/'.length));
      if (waiting?.rest !== undefined) waiting.res.write(waiting.rest);
      if (waiting?.end) waiting.res.end();
    } else res.writeHead(404).end();
  });
  port = vendor.port;
  base = `http://127.0.0.1:${port}`;
  seen = vendor.seen;
  await engine.credentials.set({ name: 'vendor', hosts: [`127.0.0.1:${port}`], placement: { kind: 'header', header: 'X-Api-Key', template: '{secret}' } }, SECRET);
});

afterAll(async () => {
  for (const { res } of held.values()) res.destroy();
  await engine.credentials.remove('vendor');
});

/** Defines `name` with `body` as its async handler (`base` is the vendor's origin). */
async function define(name: string, body: string, spec: Record<string, unknown> = {}) {
  await defineFunction(engine, { name, allowedHosts: [`127.0.0.1:${port}`], timeoutMs: 20_000, ...spec }, `export default async (args, ctx) => { const base = ${JSON.stringify(base)}; ${body} }`);
}

// Reads an event stream with for await, telling the vendor after the first chunk; its events do not depend on how the body was cut.
const SSE_READER = `
  const res = await fetch(base + '/sse');
  const decoder = new TextDecoder();
  let text = '';
  let first;
  for await (const chunk of res.body) {
    const part = decoder.decode(chunk, { stream: true });
    if (first === undefined) {
      first = part;
      ctx.log('first: ' + JSON.stringify(part));
      await fetch(base + '/seen/sse');
    }
    text += part;
  }
  return { status: res.status, type: res.headers.get('content-type'), events: text.split('\\n\\n').filter(Boolean) };`;

describe('a web fetch response body streams to the function', () => {
  it('gives the first event of a server-sent-events response before the vendor sent the second; the trace and the saved test have the whole body, and the test replays', async () => {
    await define('sse_events', SSE_READER);
    const result = await engine.run('sse_events', {}, { caller: 'console' });
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, value: { status: 200, type: 'text/event-stream', events: ['data: one', 'data: two'] } });
    // The first chunk the function read was the first event alone: the second was sent after it asked for /seen/sse.
    expect(result.logs.map((l) => l.message)).toEqual(['first: "data: one\\n\\n"']);
    expect(seen.map((r) => r.url).filter((u) => u.includes('sse'))).toEqual(['/sse', '/seen/sse']);
    expect(result.trace.find((e) => e.url === `${base}/sse`)).toMatchObject({ method: 'GET', status: 200, bytesIn: 'data: one\n\ndata: two\n\n'.length });

    const saved = await engine.tests.fromRun(result.runId, 'two_events', { source: 'console' });
    expect(saved.exchanges.map((x) => ('response' in x ? [x.request.url, x.response.status, x.response.body] : x))).toEqual([
      [`${base}/sse`, 200, 'data: one\n\ndata: two\n\n'],
      [`${base}/seen/sse`, 200, 'ok'],
    ]);
    // Replayed from the recording: the vendor is not asked.
    const before = seen.length;
    const replay = await engine.tests.run('sse_events', 'two_events');
    expect(replay.map((r) => [r.case, r.status, r.message])).toEqual([['two_events', 'pass', undefined]]);
    expect(seen.length).toBe(before);
  });

  it('ends the run with the response limit error when the body crosses it mid-stream, and closes the vendor connection', async () => {
    await define(
      'sse_flood',
      `const res = await fetch(base + '/flood');
      const reader = res.body.getReader();
      const first = await reader.read();
      ctx.log('first ' + first.value.length);
      await fetch(base + '/seen/flood');
      for (;;) if ((await reader.read()).done) return 'read to the end';`,
      { limits: { responseBytes: 4096 } },
    );
    const result = await engine.run('sse_flood', {}, { caller: 'console' });
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'response_too_large', message: `the response from 127.0.0.1:${port} is larger than the response body limit (4096 bytes); raise limits.responseBytes if that is expected` },
    });
    expect(result.logs.map((l) => l.message)).toEqual(['first 1000']);
    await until(() => closedEarly.has('flood'), 'the vendor connection of /flood to close');
    expect(result.trace.find((e) => e.url === `${base}/flood`)).toMatchObject({ error: expect.stringContaining('larger than the response body limit') });
  });

  it('redacts a stored secret the vendor echoes split across two chunks, giving the part before it at once', async () => {
    await define(
      'sse_secret',
      `const res = await fetch(base + '/secret', { headers: { 'x-api-key': ctx.secret('vendor') } });
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      const first = decoder.decode((await reader.read()).value, { stream: true });
      await fetch(base + '/seen/secret');
      let text = first;
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value, { stream: true });
      return { first, text };`,
      { credentials: ['vendor'] },
    );
    const result = await engine.run('sse_secret', {}, { caller: 'console' });
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, value: { first: 'event: one\n\ndata: ', text: 'event: one\n\ndata: [redacted:vendor]\n\n' } });
    expect(seen.find((r) => r.url === '/secret')?.headers['x-api-key']).toBe(SECRET);
    expect(JSON.stringify(result)).not.toContain(SECRET.slice(0, SECRET.length >> 1));
  });

  it('stops reading from the vendor while the function does not read, and reads on when it does', async () => {
    await define(
      'sse_backpressure',
      `const res = await fetch(base + '/big');
      const reader = res.body.getReader();
      let total = (await reader.read()).value.length;
      const sent = Number(await (await fetch(base + '/stalled')).text());
      for (let r = await reader.read(); !r.done; r = await reader.read()) total += r.value.length;
      return { sent, total };`,
      { limits: { responseBytes: 50 * 1024 * 1024 } },
    );
    const result = await engine.run('sse_backpressure', {}, { caller: 'console' });
    expect(result, JSON.stringify(result).slice(0, 2000)).toMatchObject({ ok: true, value: { total: BIG } });
    const { sent } = (result as { value: { sent: number } }).value;
    // While the function held its first chunk, the vendor could send what the host queues and the sockets buffer, not the body.
    expect(sent).toBeLessThan(BIG / 2);
  });

  it('closes the vendor connection when the function aborts or cancels a body still arriving', async () => {
    await define(
      'sse_abort',
      `const decoder = new TextDecoder();
      const c = new AbortController();
      const aborted = await fetch(base + '/hold?name=abort', { signal: c.signal });
      const reader = aborted.body.getReader();
      const first = decoder.decode((await reader.read()).value);
      c.abort(new Error('enough'));
      const after = await reader.read().then(() => 'more', (e) => e.message);
      const cancelled = await fetch(base + '/hold?name=cancel');
      const other = cancelled.body.getReader();
      const again = decoder.decode((await other.read()).value);
      await other.cancel();
      return [first, after, again];`,
    );
    const result = await engine.run('sse_abort', {}, { caller: 'console' });
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, value: ['data: one\n\n', 'enough', 'data: one\n\n'] });
    await until(() => closedEarly.has('abort') && closedEarly.has('cancel'), 'the vendor connections of the aborted and the cancelled body to close');
    expect(result.trace.find((e) => e.url === `${base}/hold?name=abort`)).toMatchObject({ error: 'the function aborted the request' });
  });

  it('closes the vendor connection of a body still arriving when the run ends, and the trace says the body was not in full', async () => {
    await define('sse_left', `const res = await fetch(base + '/hold?name=left'); return res.status;`);
    const result = await engine.run('sse_left', {}, { caller: 'console' });
    expect(result).toMatchObject({ ok: true, value: 200 });
    await until(() => closedEarly.has('left'), 'the vendor connection of the body left unread to close');
    expect(result.trace.find((e) => e.url === `${base}/hold?name=left`)).toMatchObject({ error: 'the run ended before the response body arrived in full' });
  });
});
