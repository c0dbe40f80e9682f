import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../src-main/engine/index.ts';
import { startMcpHttpServer, type RunningHttpServer } from '../../src-main/mcp/http.ts';
import { seedMcpFunctions } from '../support/fixtures.ts';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * A raw HTTP request: the path is sent byte for byte (no URL normalisation) and a header given as
 * an array is sent as that many header lines.
 */
function raw(port: number, options: { path?: string; method?: string; headers?: Record<string, string | string[]>; body?: string | Buffer }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: options.path ?? '/mcp', method: options.method ?? 'POST', headers: options.headers ?? {} }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Writes bytes on a bare socket and resolves with the first status line the server sends. */
function firstStatusLine(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect(port, '127.0.0.1', () => socket.write(head));
    let seen = '';
    socket.on('data', (d: Buffer) => {
      seen += d.toString('latin1');
      const end = seen.indexOf('\r\n');
      if (end >= 0) {
        socket.destroy();
        resolve(seen.slice(0, end));
      }
    });
    socket.on('error', reject);
    socket.setTimeout(5000, () => {
      socket.destroy();
      resolve(`(no answer) ${seen}`);
    });
  });
}

const INIT_2025 = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
});

describe('Streamable HTTP against hostile clients', () => {
  let dataDir: string;
  let engine: Engine;
  let server: RunningHttpServer;
  const token = 'test-token-0123456789abcdef';
  const ok = (): Record<string, string> => ({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` });
  const ping2026 = (id: unknown = 1): string =>
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/list',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    });
  const stillServes = async (): Promise<void> => {
    const reply = await raw(server.port, { headers: ok(), body: INIT_2025 });
    expect(reply.status, reply.body).toBe(200);
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'callable-hostile-'));
    engine = createEngine({ dataDir });
    await seedMcpFunctions(engine);
    server = await startMcpHttpServer(engine, { host: '127.0.0.1', port: 0, token, diagnostic: () => {} });
  });

  afterAll(async () => {
    await server.close();
    engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('token smuggling: two Authorization headers are refused with 401, whichever comes first', async () => {
    for (const pair of [
      [`Bearer ${token}`, 'Bearer wrong-token'],
      ['Bearer wrong-token', `Bearer ${token}`],
      [`Bearer ${token}`, `Bearer ${token}`],
    ]) {
      const reply = await raw(server.port, { headers: { ...ok(), authorization: pair }, body: INIT_2025 });
      expect(reply.status, pair.join(' / ')).toBe(401);
    }
    await stillServes();
  });

  it('path aliasing: only /mcp and /mcp/<profile> are served, compared on the raw path', async () => {
    for (const path of ['/mcp/', '/mcp/../mcp', '//mcp', '/mcp/%2e%2e', '/MCP', '/mcp/./', '/mcp%2f', '/./mcp']) {
      const reply = await raw(server.port, { path, headers: ok(), body: INIT_2025 });
      expect(reply.status, path).toBe(404);
    }
    expect((await raw(server.port, { path: '/mcp?x=1', headers: ok(), body: INIT_2025 })).status).toBe(200);
  });

  it('cross-site request without Origin: Sec-Fetch-Site cross-site is refused with 403', async () => {
    const reply = await raw(server.port, { headers: { ...ok(), 'sec-fetch-site': 'cross-site' }, body: INIT_2025 });
    expect(reply.status).toBe(403);
    expect((await raw(server.port, { headers: { ...ok(), 'sec-fetch-site': 'none' }, body: INIT_2025 })).status).toBe(200);
  });

  it('Expect: 100-continue with an oversized Content-Length gets 413 at once, never 100 Continue', async () => {
    const head =
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
      `Content-Length: ${50 * 1024 * 1024}\r\nExpect: 100-continue\r\n\r\n`;
    expect(await firstStatusLine(server.port, head)).toMatch(/^HTTP\/1\.1 413 /);
    // A body within the limit still gets its 100 Continue.
    const small = head.replace(`Content-Length: ${50 * 1024 * 1024}`, `Content-Length: ${INIT_2025.length}`);
    expect(await firstStatusLine(server.port, small)).toMatch(/^HTTP\/1\.1 100 /);
    await stillServes();
  });

  it('empty batch: a body of [] is a 400 JSON-RPC error in both eras', async () => {
    for (const headers of [ok(), { ...ok(), 'mcp-protocol-version': '2025-11-25' }, { ...ok(), 'mcp-protocol-version': '2026-07-28' }]) {
      const reply = await raw(server.port, { headers, body: '[]' });
      expect(reply.status).toBe(400);
      expect(JSON.parse(reply.body)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    }
  });

  it('batch smuggling: a JSON-RPC batch is refused with 400 for revisions without batches', async () => {
    // 2026-07-28 (stateless).
    const modern = await raw(server.port, { headers: ok(), body: `[${ping2026(1)},${ping2026(2)}]` });
    expect(modern.status).toBe(400);
    expect(JSON.parse(modern.body)).toMatchObject({ error: { code: -32600, message: expect.stringMatching(/batch/i) } });
    // 2025-11-25 inside a session.
    const init = await raw(server.port, { headers: ok(), body: INIT_2025 });
    const session = init.headers['mcp-session-id'] as string;
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const legacy = await raw(server.port, {
      headers: { ...ok(), 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
      body: `[${list},${list.replace('"id":2', '"id":3')}]`,
    });
    expect(legacy.status).toBe(400);
    expect(JSON.parse(legacy.body)).toMatchObject({ error: { code: -32600, message: expect.stringMatching(/batch/i) } });
    // An initialize batch.
    expect((await raw(server.port, { headers: ok(), body: `[${INIT_2025}]` })).status).toBe(400);
    // 2025-03-26 had batches: its clients (which send no MCP-Protocol-Version) may still use them.
    const old = await raw(server.port, { headers: ok(), body: INIT_2025.replace('2025-11-25', '2025-03-26') });
    const oldSession = old.headers['mcp-session-id'] as string;
    await raw(server.port, { headers: { ...ok(), 'mcp-session-id': oldSession }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    const oldBatch = await raw(server.port, { headers: { ...ok(), 'mcp-session-id': oldSession }, body: `[${list},${list.replace('"id":2', '"id":3')}]` });
    expect(oldBatch.status, oldBatch.body).toBe(200);
    await stillServes();
  });

  it('oversized request id: a 10,000-character id is refused with 400 before the SDK sees it', async () => {
    const big = 'x'.repeat(10_000);
    const modern = await raw(server.port, { headers: ok(), body: ping2026(big) });
    expect(modern.status).toBe(400);
    expect(modern.body).not.toContain(big);
    expect(JSON.parse(modern.body)).toMatchObject({ id: null, error: { code: -32600, message: expect.stringMatching(/id/) } });
    const legacy = await raw(server.port, { headers: ok(), body: INIT_2025.replace('"id":1', `"id":"${big}"`) });
    expect(legacy.status).toBe(400);
    // A number with absurd precision is refused too; a normal string id is fine.
    expect((await raw(server.port, { headers: ok(), body: ping2026(1).replace('"id":1', `"id":1${'0'.repeat(400)}`) })).status).toBe(400);
    expect((await raw(server.port, { headers: ok(), body: INIT_2025.replace('"id":1', '"id":"req-1"') })).status).toBe(200);
  });

  it('deep nesting: params nested 100,000 levels are refused with 400 and the server keeps serving', async () => {
    const depth = 100_000;
    const nested = '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    for (const body of [
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":${nested}}}`,
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":${'['.repeat(depth)}${']'.repeat(depth)}}}}`,
    ]) {
      const reply = await raw(server.port, { headers: ok(), body });
      expect(reply.status).toBe(400);
      expect(JSON.parse(reply.body)).toMatchObject({ error: { code: -32600, message: expect.stringMatching(/nest/i) } });
    }
    // Brackets inside strings do not count.
    const stringy = JSON.stringify({ ...JSON.parse(INIT_2025), params: { ...JSON.parse(INIT_2025).params, clientInfo: { name: '{'.repeat(5000), version: '0' } } });
    expect((await raw(server.port, { headers: ok(), body: stringy })).status).toBe(200);
    await stillServes();
  });
});
