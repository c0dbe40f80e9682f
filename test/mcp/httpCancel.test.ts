import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startMcpHttpServer, type RunningHttpServer } from '../../src-main/mcp/http.ts';
import { testEngine, waitVendorFunction } from '../support/engine.ts';
import { exchange, INIT_2025, mcpHeaders, messagesOf, open, type Exchange } from '../support/rawHttp.ts';
import { until } from '../support/wait.ts';

const engine = testEngine();
const token = 'cancel-token-0123456789';
const headers = (extra: Record<string, string> = {}): Record<string, string> => mcpHeaders(token, extra);

let vendor: Awaited<ReturnType<typeof waitVendorFunction>>;
let server: RunningHttpServer;
const pending: Exchange[] = [];

beforeAll(async () => {
  vendor = await waitVendorFunction(engine);
  // One call at a time: a slot a cancelled call failed to give back would block the next call.
  server = await startMcpHttpServer(engine, { host: '127.0.0.1', port: 0, token, diagnostic: () => {}, limits: { maxRunningCalls: 1, maxQueuedCalls: 4 } });
});
afterEach(() => {
  for (const p of pending.splice(0)) p.abort();
  vendor.release();
});
afterAll(async () => {
  vendor?.release();
  await server?.close();
});

async function session(protocolVersion = '2025-11-25'): Promise<string> {
  const init = await exchange(server.port, { headers: headers(), body: INIT_2025.replace('2025-11-25', protocolVersion) });
  expect(init.status, init.body).toBe(200);
  const sid = init.headers['mcp-session-id'] as string;
  await exchange(server.port, { headers: headers({ 'mcp-session-id': sid }), body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  return sid;
}

const callBody = (id: number | string, tag: string): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'wait_vendor', arguments: { tag } } });

async function call(sid: string, id: number | string, tag: string): Promise<Exchange> {
  const reply = await open(server.port, { headers: headers({ 'mcp-session-id': sid }), body: callBody(id, tag) });
  pending.push(reply);
  return reply;
}

describe('2025-era sessions: request ids in flight and cancellation', () => {
  it('a second request reusing an id in flight gets a JSON-RPC error (409), and the first still gets its result', async () => {
    const sid = await session();
    const seen = vendor.seen();
    const first = await call(sid, 7, 'first');
    await until(() => vendor.seen() === seen + 1, 'the first call at the vendor');
    for (const body of [callBody(7, 'second'), JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' })]) {
      const reused = await exchange(server.port, { headers: headers({ 'mcp-session-id': sid }), body });
      expect(reused.status).toBe(409);
      expect(JSON.parse(reused.body)).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32600, message: expect.stringMatching(/request id 7 is already in flight/) } });
    }
    // The same id in another session is another request.
    const other = await session();
    expect((await exchange(server.port, { headers: headers({ 'mcp-session-id': other }), body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }) })).status).toBe(200);
    vendor.release();
    expect(messagesOf(await first.ended).at(-1)).toMatchObject({ id: 7, result: { content: [{ type: 'text', text: 'ok' }] } });
    expect(vendor.seen()).toBe(seen + 1);
    // Answered, the id is free again.
    const again = await call(sid, 7, 'again');
    await until(() => vendor.seen() === seen + 2, 'the reused id at the vendor');
    vendor.release();
    expect(messagesOf(await again.ended).at(-1)).toMatchObject({ id: 7, result: { content: [{ text: 'ok' }] } });
  });

  it('a batch naming one id twice is refused (2025-03-26, the revision with batches)', async () => {
    const sid = await session('2025-03-26');
    const list = (id: number): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list' });
    const reply = await exchange(server.port, { headers: headers({ 'mcp-session-id': sid }), body: `[${list(3)},${list(3)}]` });
    expect(reply.status).toBe(409);
    expect(JSON.parse(reply.body)).toMatchObject({ id: 3, error: { code: -32600 } });
    const fine = await exchange(server.port, { headers: headers({ 'mcp-session-id': sid }), body: `[${list(3)},${list(4)}]` });
    expect(fine.status, fine.body).toBe(200);
    expect(messagesOf(fine.body).map((m) => m.id).sort()).toEqual([3, 4]);
  });

  it('notifications/cancelled stops the running call and ends its response stream; the session and the call slot stay usable', async () => {
    const sid = await session();
    const seen = vendor.seen();
    const closed = vendor.closed();
    const running = await call(sid, 'job-1', 'cancel-me');
    expect(running.status).toBe(200);
    expect(running.headers['content-type']).toMatch(/text\/event-stream/);
    await until(() => vendor.seen() === seen + 1, 'the call at the vendor');
    const cancel = await exchange(server.port, {
      headers: headers({ 'mcp-session-id': sid }),
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'job-1', reason: 'user pressed stop' } }),
    });
    expect(cancel.status).toBe(202);
    // The stream ends without a response for the cancelled request…
    const body = await Promise.race([running.ended, new Promise<string>((_, reject) => setTimeout(() => reject(new Error('the cancelled call stream is still open')), 5000))]);
    expect(messagesOf(body).filter((m) => m.id === 'job-1')).toEqual([]);
    // …and the run stopped: its vendor request was closed and it is recorded as cancelled.
    await until(() => vendor.closed() === closed + 1, 'the vendor request to be closed');
    await until(() => engine.runs.list({ functionName: 'wait_vendor', limit: 1 })[0]?.errorCode === 'cancelled', 'the run to be recorded as cancelled');
    // The one call slot is free again and the session still answers.
    const next = await call(sid, 'job-2', 'after');
    await until(() => vendor.seen() === seen + 2, 'the next call at the vendor');
    vendor.release();
    expect(messagesOf(await next.ended).at(-1)).toMatchObject({ id: 'job-2', result: { content: [{ text: 'ok' }] } });
    // Cancelling a request that is not in flight changes nothing.
    const stray = await exchange(server.port, {
      headers: headers({ 'mcp-session-id': sid }),
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'nope' } }),
    });
    expect(stray.status).toBe(202);
  });

  it('a client that disconnects without cancelling keeps its id and slot until the run ends (disconnection is not cancellation)', async () => {
    const sid = await session();
    const seen = vendor.seen();
    const closed = vendor.closed();
    const gone = await call(sid, 11, 'gone');
    await until(() => vendor.seen() === seen + 1, 'the call at the vendor');
    gone.abort();
    await new Promise((r) => setTimeout(r, 200));
    // The run goes on: its vendor request is still open.
    expect(vendor.closed()).toBe(closed);
    const reused = await exchange(server.port, { headers: headers({ 'mcp-session-id': sid }), body: callBody(11, 'reuse') });
    expect(reused.status).toBe(409);
    // The run finishes; its result has no one to go to; the id and the slot come back.
    vendor.release();
    let retry = { status: 409 } as { status: number; body?: string };
    for (let i = 0; i < 50 && retry.status === 409; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 50));
      retry = await exchange(server.port, { headers: headers({ 'mcp-session-id': sid }), body: JSON.stringify({ jsonrpc: '2.0', id: 11, method: 'tools/list' }) });
    }
    expect(retry.status).toBe(200);
  });

  it('a request the session refuses (an unsupported MCP-Protocol-Version) leaves neither its id nor its call slot behind', async () => {
    const sid = await session();
    const refused = await exchange(server.port, { headers: headers({ 'mcp-session-id': sid, 'mcp-protocol-version': '1999-01-01' }), body: callBody(21, 'never') });
    expect(refused.status).toBe(400);
    const seen = vendor.seen();
    const next = await call(sid, 21, 'runs');
    await until(() => vendor.seen() === seen + 1, 'the call at the vendor');
    vendor.release();
    expect(messagesOf(await next.ended).at(-1)).toMatchObject({ id: 21, result: { content: [{ text: 'ok' }] } });
  });
});
