import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startMcpHttpServer, type RunningHttpServer } from '../../src-main/mcp/http.ts';
import { DEFAULT_HTTP_LIMITS, type HttpLimits } from '../../src-main/mcp/httpLimits.ts';
import { testEngine, waitVendorFunction } from '../support/engine.ts';
import { exchange, headers2026, INIT_2025, mcpHeaders, messagesOf, open, request2026, socketTo, type Exchange } from '../support/rawHttp.ts';
import { until } from '../support/wait.ts';

const engine = testEngine();
const token = 'bounds-token-0123456789';
const headers = (extra: Record<string, string> = {}): Record<string, string> => mcpHeaders(token, extra);
/** A whole POST /mcp as bytes for a bare socket. */
const rawPost = (port: number, body: string, extra: Record<string, string> = {}): string =>
  `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
  Object.entries(headers(extra))
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('') +
  `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
/** Headers of a 2026-07-28 request. */
const modern = (method = 'tools/list', name?: string): Record<string, string> => headers(headers2026(method, name));

let vendor: Awaited<ReturnType<typeof waitVendorFunction>>;
const servers: RunningHttpServer[] = [];
async function serve(limits: Partial<HttpLimits> = {}): Promise<RunningHttpServer> {
  const server = await startMcpHttpServer(engine, { host: '127.0.0.1', port: 0, token, diagnostic: () => {}, limits });
  servers.push(server);
  return server;
}
const streams: Exchange[] = [];
afterEach(async () => {
  for (const s of streams.splice(0)) s.abort();
  vendor?.release();
  for (const s of servers.splice(0)) await s.close();
});

beforeAll(async () => {
  vendor = await waitVendorFunction(engine);
});
afterAll(() => vendor?.release());

/** Opens a 2025-11-25 session and returns its id. */
async function session(port: number): Promise<string> {
  const init = await exchange(port, { headers: headers(), body: INIT_2025 });
  expect(init.status, init.body).toBe(200);
  const sid = init.headers['mcp-session-id'] as string;
  const done = await exchange(port, { headers: headers({ 'mcp-session-id': sid }), body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  expect(done.status).toBe(202);
  return sid;
}

async function stillServes(port: number): Promise<void> {
  const reply = await exchange(port, { headers: modern(), body: request2026(99, 'tools/list') });
  expect(reply.status, reply.body).toBe(200);
  expect(messagesOf(reply.body)[0]).toMatchObject({ id: 99, result: { tools: expect.any(Array) } });
}

describe('HTTP server resource bounds', () => {
  it(`connections: at the default bound (${DEFAULT_HTTP_LIMITS.maxConnections}) a new connection replaces the oldest that sent no request; the others stay usable`, async () => {
    // Opening them all may take more than the short deadline under pressure (tested below) on a busy machine.
    const server = await serve({ pressureHeadersTimeoutMs: 30_000 });
    const held: Array<Awaited<ReturnType<typeof socketTo>>> = [];
    try {
      for (let i = 0; i < DEFAULT_HTTP_LIMITS.maxConnections; i++) held.push(await socketTo(server.port));
      const extra = await socketTo(server.port);
      await held[0]!.closed;
      expect(held[0]!.received()).toBe('');
      extra.socket.write(rawPost(server.port, INIT_2025));
      await until(() => extra.received().includes('HTTP/1.1 200'), 'an answer on the new connection');
      // The rest are still open and usable.
      const second = held[1]!;
      second.socket.write(rawPost(server.port, INIT_2025));
      await until(() => second.received().includes('HTTP/1.1 200'), 'an answer on a held connection');
      extra.socket.destroy();
    } finally {
      for (const h of held) h.socket.destroy();
    }
  });

  it('connections: an idle keep-alive connection makes room when none is silent; when every connection has a request in progress one more is 503 with Retry-After and closed', async () => {
    const server = await serve({ maxConnections: 3, maxStreams: 8 });
    const listen = (id: number): Promise<Exchange> => open(server.port, { headers: modern('subscriptions/listen'), body: request2026(id, 'subscriptions/listen', { notifications: { toolsListChanged: true } }) });
    const idle = await socketTo(server.port);
    idle.socket.write(rawPost(server.port, INIT_2025));
    await until(() => idle.received().includes('HTTP/1.1 200'), 'the answer on the keep-alive connection');
    streams.push(await listen(1), await listen(2));
    const third = await listen(3);
    streams.push(third);
    expect(third.status).toBe(200);
    await idle.closed;
    // All three connections are busy with a request: the next is refused.
    const extra = await socketTo(server.port);
    await extra.closed;
    expect(extra.received()).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(extra.received()).toMatch(/\r\nRetry-After: 2\r\n/);
    expect(extra.received()).toContain('3 connections are open and busy (the limit)');
    // Once one ends, a fresh client is served.
    third.abort();
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 50));
      status = (await exchange(server.port, { headers: modern(), body: request2026(98, 'tools/list') })).status;
    }
    expect(status).toBe(200);
  });

  it('connections: under pressure (three quarters of the bound open) a new connection must send its headers within the short deadline', async () => {
    const server = await serve({ maxConnections: 4, pressureHeadersTimeoutMs: 300 });
    const calm = [await socketTo(server.port), await socketTo(server.port)];
    const pressed = await socketTo(server.port);
    const opened = Date.now();
    await pressed.closed;
    const after = Date.now() - opened;
    expect(after).toBeLessThan(3000);
    // The ones opened before the pressure keep the 10 s headers timeout.
    for (const c of calm) expect(c.socket.destroyed).toBe(false);
    // A client that sends its request in time is served under pressure too.
    const prompt = await socketTo(server.port);
    prompt.socket.write(rawPost(server.port, INIT_2025));
    await until(() => prompt.received().includes('HTTP/1.1 200'), 'the prompt client answered');
    await new Promise((r) => setTimeout(r, 500));
    expect(prompt.socket.destroyed).toBe(false);
    for (const c of [...calm, prompt]) c.socket.destroy();
  });

  it('idle sockets: a connection that sends nothing, or only part of its headers, is closed after the headers timeout', async () => {
    const server = await serve({ headersTimeoutMs: 400, requestTimeoutMs: 2000 });
    const silent = await socketTo(server.port);
    const partial = await socketTo(server.port);
    partial.socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n`);
    const started = Date.now();
    await Promise.all([silent.closed, partial.closed]);
    expect(Date.now() - started).toBeLessThan(5000);
    // Node answers a request that never completed its headers with 408.
    expect(partial.received()).toMatch(/^HTTP\/1\.1 408 /);
    await stillServes(server.port);
  });

  it('slow bodies: a request whose body does not arrive within the request timeout is closed with 408', async () => {
    const server = await serve({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
    const slow = await socketTo(server.port);
    slow.socket.write(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${INIT_2025.length}\r\n\r\n${INIT_2025.slice(0, 10)}`,
    );
    // A byte now and then keeps the socket busy, but the request as a whole is late.
    const drip = setInterval(() => slow.socket.write(' '), 100);
    try {
      await slow.closed;
    } finally {
      clearInterval(drip);
    }
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408 /);
    await stillServes(server.port);
  });

  it('keep-alive: an idle connection after a response is closed after the keep-alive timeout', async () => {
    const server = await serve({ keepAliveTimeoutMs: 300 });
    const conn = await socketTo(server.port);
    conn.socket.write(rawPost(server.port, INIT_2025));
    await until(() => conn.received().includes('HTTP/1.1 200'), 'the response');
    const answered = Date.now();
    await conn.closed;
    // Well before the 5 s default: it is the configured bound that closed it.
    expect(Date.now() - answered).toBeLessThan(3000);
  });

  it('listening streams: past the total bound a 2025 GET stream or a 2026 subscriptions/listen is refused 503 with Retry-After; a long stream outlives the request timeout', async () => {
    const server = await serve({ maxStreams: 3, headersTimeoutMs: 200, requestTimeoutMs: 400 });
    const a = await session(server.port);
    const b = await session(server.port);
    const get = (sid: string): Promise<Exchange> => open(server.port, { method: 'GET', headers: { accept: 'text/event-stream', authorization: `Bearer ${token}`, 'mcp-session-id': sid } });
    const listen = (id: number): Promise<Exchange> => open(server.port, { headers: modern('subscriptions/listen'), body: request2026(id, 'subscriptions/listen', { notifications: { toolsListChanged: true } }) });
    const first = await get(a);
    streams.push(first);
    expect(first.status).toBe(200);
    // One listening stream per session: a second GET on the same session is a conflict.
    const again = await get(a);
    streams.push(again);
    expect(again.status).toBe(409);
    await again.ended;
    const second = await get(b);
    streams.push(second);
    expect(second.status).toBe(200);
    const third = await listen(1);
    streams.push(third);
    expect(third.status, third.body()).toBe(200);
    for (const refused of [await listen(2), await get(await session(server.port))]) {
      streams.push(refused);
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('2');
      expect(JSON.parse(await refused.ended)).toMatchObject({ error: { message: expect.stringMatching(/3 listening streams/) } });
    }
    // Past the request timeout the open streams are still open.
    await new Promise((r) => setTimeout(r, 1000));
    for (const s of [first, second, third]) expect(await Promise.race([s.ended.then(() => 'ended', () => 'failed'), Promise.resolve('open')])).toBe('open');
    // Closing one gives its place back (once the server has seen it close).
    first.abort();
    let reopened: Exchange | undefined;
    for (let i = 0; i < 50 && reopened?.status !== 200; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 50));
      reopened = await get(a);
      streams.push(reopened);
    }
    expect(reopened?.status).toBe(200);
    await stillServes(server.port);
  });

  it('sessions: at the bound the idlest session is dropped for a new one; when every session is busy a new one is refused 503', async () => {
    const server = await serve({ maxSessions: 2, maxStreams: 8 });
    const oldest = await session(server.port);
    const busy = await session(server.port);
    const stream = await open(server.port, { method: 'GET', headers: { accept: 'text/event-stream', authorization: `Bearer ${token}`, 'mcp-session-id': busy } });
    streams.push(stream);
    expect(stream.status).toBe(200);
    const third = await session(server.port);
    // The idle one made room; the listening one stayed.
    const list = (sid: string) => exchange(server.port, { headers: headers({ 'mcp-session-id': sid }), body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }) });
    expect((await list(oldest)).status).toBe(404);
    expect((await list(busy)).status).toBe(200);
    const thirdStream = await open(server.port, { method: 'GET', headers: { accept: 'text/event-stream', authorization: `Bearer ${token}`, 'mcp-session-id': third } });
    streams.push(thirdStream);
    const refused = await exchange(server.port, { headers: headers(), body: INIT_2025 });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('2');
    expect(JSON.parse(refused.body)).toMatchObject({ id: 1, error: { message: expect.stringMatching(/2 sessions are busy/) } });
    await stillServes(server.port);
  });

  it('tool calls: past the running bound calls wait in a bounded queue; past the queue they get 503 with Retry-After; the waiting ones then finish', async () => {
    const server = await serve({ maxRunningCalls: 2, maxQueuedCalls: 2 });
    const sid = await session(server.port);
    const seenBefore = vendor.seen();
    const call = (id: number, legacy: boolean): Promise<Exchange> =>
      open(server.port, {
        headers: legacy ? headers({ 'mcp-session-id': sid }) : modern('tools/call', 'wait_vendor'),
        body: legacy
          ? JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'wait_vendor', arguments: { tag: `c${id}` } } })
          : request2026(id, 'tools/call', { name: 'wait_vendor', arguments: { tag: `c${id}` } }),
      });
    // Two running (one per era), two waiting.
    const running = [call(1, true), call(2, false)];
    await until(() => vendor.seen() === seenBefore + 2, 'two calls at the vendor');
    const waiting = [call(3, true), call(4, false)];
    await new Promise((r) => setTimeout(r, 300));
    expect(vendor.seen()).toBe(seenBefore + 2);
    for (const [id, legacy] of [
      [5, true],
      [6, false],
    ] as const) {
      const refused = await call(id, legacy);
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('2');
      expect(JSON.parse(await refused.ended)).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32000, message: expect.stringMatching(/2 tool calls are running and 2 waiting/) } });
    }
    // Requests that are not tool calls still pass.
    await stillServes(server.port);
    // The vendor answers: the running calls finish, the waiting ones run and finish.
    vendor.release();
    await until(() => vendor.seen() === seenBefore + 4, 'the waiting calls at the vendor');
    vendor.release();
    for (const [i, exchangeP] of [...running, ...waiting].entries()) {
      const reply = await exchangeP;
      const messages = messagesOf(await reply.ended);
      expect(messages.at(-1), `call ${i + 1}`).toMatchObject({ id: i + 1, result: { content: [{ type: 'text', text: 'ok' }] } });
    }
    // And the slots are back: a fresh call runs at once.
    const fresh = call(7, false);
    await until(() => vendor.seen() === seenBefore + 5, 'a fresh call at the vendor');
    vendor.release();
    expect(messagesOf(await (await fresh).ended).at(-1)).toMatchObject({ id: 7, result: { content: [{ text: 'ok' }] } });
  });

  it('tool calls: a client that goes away while queued loses its place, and a stateless caller that disconnects frees its slot and stops its run', async () => {
    const server = await serve({ maxRunningCalls: 1, maxQueuedCalls: 1 });
    const seenBefore = vendor.seen();
    const closedBefore = vendor.closed();
    const body = (id: number): string => request2026(id, 'tools/call', { name: 'wait_vendor', arguments: { tag: `d${id}` } });
    const rawCall = async (id: number) => {
      const conn = await socketTo(server.port);
      conn.socket.write(rawPost(server.port, body(id), headers2026('tools/call', 'wait_vendor')));
      return conn;
    };
    const runner = await rawCall(1);
    await until(() => vendor.seen() === seenBefore + 1, 'the running call');
    // The queue's one place is taken, then given up.
    const quitter = await rawCall(2);
    await new Promise((r) => setTimeout(r, 200));
    const full = await exchange(server.port, { headers: modern('tools/call', 'wait_vendor'), body: body(3) });
    expect(full.status).toBe(503);
    quitter.socket.destroy();
    await quitter.closed;
    const waiter = await rawCall(4);
    await new Promise((r) => setTimeout(r, 200));
    expect(waiter.received()).toBe('');
    // The running caller disconnects: its run stops (the vendor request is closed) and the waiter runs.
    runner.socket.destroy();
    await until(() => vendor.closed() === closedBefore + 1, 'the abandoned run to close its vendor request');
    const abandoned = () => engine.runs.list({ functionName: 'wait_vendor', limit: 50 }).find((r) => (r.args as { tag?: string }).tag === 'd1');
    await until(() => abandoned()?.errorCode === 'cancelled', 'the abandoned run to be recorded as cancelled');
    await until(() => vendor.seen() === seenBefore + 2, 'the waiting call at the vendor');
    vendor.release();
    await until(() => waiter.received().includes('"text":"ok"'), 'the waiting call result');
    waiter.socket.destroy();
    // The quitter never ran.
    expect(vendor.seen()).toBe(seenBefore + 2);
  });
});
