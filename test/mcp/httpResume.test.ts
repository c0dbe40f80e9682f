// Resumable streams (issue 11): the priming event (id, retry), the bounded replay log per stream,
// Last-Event-ID replay after a real disconnect, and the log freed with its session.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { startMcpHttpServer, type RunningHttpServer } from '../../src-main/mcp/http.ts';
import type { HttpLimits } from '../../src-main/mcp/httpLimits.ts';
import type { ServeProcess } from '../support/callable.ts';
import { defineFunction, testEngine } from '../support/engine.ts';
import { seedMcpFunctions } from '../support/fixtures.ts';
import { exchange, INIT_2025, mcpHeaders, messagesOf, open } from '../support/rawHttp.ts';
import { until } from '../support/wait.ts';
import { runConformance, serveForConformance } from '../support/conformance.ts';

const engine = testEngine();
const token = 'resume-token-0123456789';
const servers: RunningHttpServer[] = [];
async function serve(limits: Partial<HttpLimits> = {}): Promise<RunningHttpServer> {
  const server = await startMcpHttpServer(engine, { host: '127.0.0.1', port: 0, token, diagnostic: () => {}, limits });
  servers.push(server);
  return server;
}
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

beforeAll(async () => {
  await defineFunction(
    engine,
    { name: 'steps', inputSchema: { type: 'object', properties: { steps: { type: 'number' }, ms: { type: 'number' } } }, timeoutMs: 60_000 },
    `export default async ({ steps, ms }, ctx) => {
      for (let i = 1; i <= steps; i++) { ctx.progress(i, steps, 'step ' + i); await new Promise((r) => setTimeout(r, ms)); }
      return 'finished ' + steps;
    }`,
  );
});

interface SseEvent {
  id?: string;
  retry?: string;
  data: string;
}
/** The events of an SSE body. */
function eventsOf(body: string): SseEvent[] {
  return body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event: SseEvent = { data: '' };
      for (const line of block.split('\n')) {
        const [field, ...rest] = line.split(':');
        const value = rest.join(':').replace(/^ /, '');
        if (field === 'id') event.id = value;
        else if (field === 'retry') event.retry = value;
        else if (field === 'data') event.data += value;
      }
      return event;
    });
}

/** Opens a 2025-11-25 session; returns its id. */
async function session(port: number): Promise<string> {
  const init = await exchange(port, { headers: mcpHeaders(token), body: INIT_2025 });
  const sid = String(init.headers['mcp-session-id']);
  await exchange(port, { headers: mcpHeaders(token, { 'mcp-session-id': sid }), body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  return sid;
}

/** Starts `steps` with a progress token; the client hangs up once `seen` events (beyond the priming one) arrived. */
async function callThenHangUp(port: number, sid: string, steps: number, seen: number, id = 7, ms = 150) {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'steps', arguments: { steps, ms }, _meta: { progressToken: 'p' } } });
  const reply = await open(port, { headers: mcpHeaders(token, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }), body });
  expect(reply.status).toBe(200);
  expect(reply.headers['content-type']).toMatch(/text\/event-stream/);
  await until(() => eventsOf(reply.body()).length >= seen + 1, `${seen} events before hanging up`);
  reply.abort();
  return eventsOf(reply.body());
}

/** Runs `steps` to its end with the client connected; returns the stream's events (priming first, the result last). */
async function callToEnd(port: number, sid: string, steps: number, id = 7, ms = 10): Promise<SseEvent[]> {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'steps', arguments: { steps, ms }, _meta: { progressToken: 'p' } } });
  const reply = await open(port, { headers: mcpHeaders(token, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }), body });
  return eventsOf(await reply.ended);
}

const replayGet = (port: number, sid: string, lastEventId: string) =>
  exchange(port, { method: 'GET', headers: { ...mcpHeaders(token, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }), accept: 'text/event-stream', 'last-event-id': lastEventId } });

describe('resumable streams', () => {
  it('primes a POST stream with an id and retry, and replays what a disconnected client missed exactly once, then the result', async () => {
    const server = await serve();
    const sid = await session(server.port);
    const initialize = server.replayHeld().events;
    const before = await callThenHangUp(server.port, sid, 6, 1);
    // The first event is the priming one: an id, the retry interval (1 s by default), empty data.
    expect(before[0]).toEqual({ id: expect.stringMatching(/./) as unknown, retry: '1000', data: '' });
    const last = before.at(-1)!.id!;
    const seenSteps = messagesOf(before.map((e) => `data: ${e.data}`).join('\n')).map((m) => (m.params as { progress: number }).progress);
    // The call goes on without the client; its events are kept.
    await until(() => server.replayHeld().events - initialize === 8, 'the call to finish (priming, 6 progress, the result)');
    const replay = await replayGet(server.port, sid, last);
    expect(replay.status).toBe(200);
    const replayed = messagesOf(replay.body);
    const steps = replayed.filter((m) => m.method === 'notifications/progress').map((m) => (m.params as { progress: number }).progress);
    expect([...seenSteps, ...steps]).toEqual([1, 2, 3, 4, 5, 6]);
    const results = replayed.filter((m) => m.id === 7);
    expect(results).toHaveLength(1);
    expect(JSON.stringify(results[0]!.result)).toContain('finished 6');
    // Every replayed event carries its id, so the client can resume again from any of them.
    expect(eventsOf(replay.body).every((e) => e.id !== undefined)).toBe(true);
  });

  it('primes a call that sends nothing for a while before its result, so a client that hangs up then resumes it', async () => {
    const server = await serve();
    const sid = await session(server.port);
    const initialize = server.replayHeld().events;
    // No progress token: the stream carries nothing until the result, a second later.
    const body = JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'steps', arguments: { steps: 1, ms: 1000 } } });
    const reply = await open(server.port, { headers: mcpHeaders(token, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }), body });
    expect(reply.status).toBe(200);
    await until(() => eventsOf(reply.body()).length >= 1, 'the priming event');
    const [priming, ...more] = eventsOf(reply.body());
    expect(priming).toEqual({ id: expect.stringMatching(/./) as unknown, retry: '1000', data: '' });
    expect(more).toEqual([]);
    reply.abort();
    await until(() => server.replayHeld().events - initialize === 2, 'the call to finish (priming, the result)');
    const replay = await replayGet(server.port, sid, priming!.id!);
    expect(replay.status).toBe(200);
    const results = messagesOf(replay.body).filter((m) => m.id === 8);
    expect(results).toHaveLength(1);
    expect(JSON.stringify(results[0]!.result)).toContain('finished 1');
  });

  it('sends a quick call\'s priming event and result on one stream, the priming event first', async () => {
    const server = await serve();
    const sid = await session(server.port);
    const events = await callToEnd(server.port, sid, 1, 9, 0);
    expect(events[0]).toEqual({ id: expect.stringMatching(/./) as unknown, retry: '1000', data: '' });
    const messages = messagesOf(events.slice(1).map((e) => `data: ${e.data}`).join('\n'));
    expect(messages.filter((m) => m.id === 9)).toHaveLength(1);
    expect(events.every((e) => e.id !== undefined)).toBe(true);
  });

  it('refuses, with the reason, a replay after an event the bounded log has evicted, and still replays after a kept one', async () => {
    const server = await serve({ replayEvents: 3 });
    const sid = await session(server.port);
    // The initialize exchange's own stream (priming event, result) is logged too.
    const initialize = server.replayHeld().events;
    const events = await callToEnd(server.port, sid, 8);
    const priming = events[0]!.id!;
    // Priming, 8 progress events and the result were stored: the call's stream keeps the last 3.
    expect(events).toHaveLength(10);
    expect(server.replayHeld().events - initialize).toBe(3);
    const refused = await replayGet(server.port, sid, priming);
    expect(refused.status).toBe(400);
    const error = (JSON.parse(refused.body) as { error: { message: string } }).error.message;
    expect(error).toBe(
      `Bad Request: cannot resume: the events after Last-Event-ID ${JSON.stringify(priming)} are no longer kept (each stream keeps its last 3 events, at most 65536 bytes); send the request again`,
    );
    const kept = await replayGet(server.port, sid, events.at(-3)!.id!);
    expect(kept.status).toBe(200);
    const replayed = messagesOf(kept.body);
    expect(replayed.map((m) => (m.method === 'notifications/progress' ? (m.params as { progress: number }).progress : m.id))).toEqual([8, 7]);
    const unknown = await replayGet(server.port, sid, 'no-such-event');
    expect(unknown.status).toBe(400);
    expect(unknown.body).toContain('names no stream this session still keeps');
  });

  it('keeps the last 256 events of a stream by default', async () => {
    const server = await serve();
    const sid = await session(server.port);
    const initialize = server.replayHeld().events;
    const events = await callToEnd(server.port, sid, 300, 7, 1);
    expect(events.length).toBeGreaterThan(256);
    expect(server.replayHeld().events - initialize).toBe(256);
    // The oldest events are gone: a replay after the priming event is refused ...
    expect((await replayGet(server.port, sid, events[0]!.id!)).status).toBe(400);
    // ... and one after the 256th newest (the oldest kept) still works.
    const oldestKept = events.at(-256)!;
    const tail = await replayGet(server.port, sid, oldestKept.id!);
    expect(tail.status).toBe(200);
    expect(eventsOf(tail.body).map((e) => e.id)).toEqual(events.slice(-255).map((e) => e.id));
  });

  it('keeps the logs of a session\'s last streams only (replayStreams)', async () => {
    const server = await serve({ replayStreams: 2 });
    const sid = await session(server.port);
    const first = await callToEnd(server.port, sid, 2);
    expect((await replayGet(server.port, sid, first.at(-2)!.id!)).status).toBe(200);
    // Two more streams (the initialize one came first): the first call's log is dropped.
    await callToEnd(server.port, sid, 2, 8);
    await callToEnd(server.port, sid, 2, 9);
    const refused = await replayGet(server.port, sid, first.at(-1)!.id!);
    expect(refused.status).toBe(400);
    expect(refused.body).toContain('names no stream this session still keeps');
  });

  it('keeps a stream log within its byte bound', async () => {
    const server = await serve({ replayBytes: 400 });
    const sid = await session(server.port);
    const initialize = server.replayHeld();
    expect(await callToEnd(server.port, sid, 8)).toHaveLength(10);
    const held = server.replayHeld();
    // Ten events (priming, 8 progress, result) of about 100 bytes each were stored in the call's stream.
    expect(held.bytes - initialize.bytes).toBeLessThanOrEqual(400);
    expect(held.events - initialize.events).toBeGreaterThan(0);
    expect(held.events - initialize.events).toBeLessThan(10);
  });

  it('keeps the newest event of a stream even when it alone is over the byte bound', async () => {
    const server = await serve({ replayBytes: 1 });
    const sid = await session(server.port);
    const initialize = server.replayHeld().events;
    expect(await callToEnd(server.port, sid, 2)).toHaveLength(4);
    expect(server.replayHeld().events - initialize).toBe(1);
  });

  it('frees the replay log when the session is deleted; a replay then finds no session', async () => {
    const server = await serve();
    const sid = await session(server.port);
    const before = await callThenHangUp(server.port, sid, 3, 1);
    await until(() => server.replayHeld().events >= 5, 'the call to finish');
    const deleted = await exchange(server.port, { method: 'DELETE', headers: mcpHeaders(token, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }) });
    expect(deleted.status).toBe(200);
    expect(server.replayHeld()).toEqual({ sessions: 0, events: 0, bytes: 0 });
    const replay = await replayGet(server.port, sid, before.at(-1)!.id!);
    expect(replay.status).toBe(404);
  });
});

describe('the official conformance scenario server-sse-polling against callable serve', () => {
  let dataDir: string;
  let serveProcess: ServeProcess;
  let url: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'callable-resume-conformance-'));
    const seeded = createEngine({ dataDir, secrets: new MemorySecretStore() });
    await seedMcpFunctions(seeded);
    // The scenario calls a tool of this name and expects its result.
    await seeded.saveFunction({ spec: { name: 'test_reconnection' }, source: 'export default () => "reconnected"' });
    seeded.close();
    ({ serve: serveProcess, url } = await serveForConformance(dataDir));
  });

  afterAll(async () => {
    await serveProcess.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('passes with no warning (a priming event with id and retry on the POST stream)', async () => {
    const result = await runConformance(url, 'server-sse-polling');
    expect(result.code, result.output).toBe(0);
    const { checks } = result;
    expect(checks.length, result.output).toBeGreaterThan(0);
    expect(checks.filter((c) => c.status === 'WARNING' || c.status === 'FAILURE')).toEqual([]);
    expect(checks.find((c) => c.id === 'server-sse-priming-event')?.status).toBe('SUCCESS');
    expect(checks.find((c) => c.id === 'server-sse-retry-field')?.status).toBe('SUCCESS');
  });
});
