import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../src-main/engine/index.ts';
import { startServe, type ServeProcess } from '../support/callable.ts';
import { seedMcpFunctions } from '../support/fixtures.ts';
import { connect } from '../support/mcpClients.ts';
import { runConformance, serveForConformance } from '../support/conformance.ts';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A raw HTTP request, so tests can send what no well-behaved client would. */
function raw(url: string, options: { method?: string; headers?: Record<string, string>; body?: string | Buffer }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'POST', headers: options.headers ?? {} }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
});

describe('Streamable HTTP refuses bad requests cleanly and keeps serving', () => {
  let dataDir: string;
  let engine: Engine;
  let serve: ServeProcess;
  let token: string;
  const ok = () => ({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'callable-http-'));
    engine = createEngine({ dataDir });
    await seedMcpFunctions(engine);
    token = await engine.mcpToken();
    serve = await startServe(dataDir);
  });

  afterAll(async () => {
    await serve.stop();
    engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('binds to 127.0.0.1 and says how to get the token', () => {
    expect(serve.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    // The hint starts the way the CLI was started (here node …/bin/callable.js).
    expect(serve.stderr()).toMatch(/print the token with: \S*node\S* \S*bin\/callable\.js token\n/);
  });

  it('refuses a missing or wrong token with 401 and a WWW-Authenticate challenge', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${token}`]) {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      if (authorization) headers.authorization = authorization;
      const reply = await raw(serve.url, { headers, body: INIT });
      expect(reply.status).toBe(401);
      expect(reply.headers['www-authenticate']).toMatch(/^Bearer /);
    }
  });

  it('refuses a foreign Origin (DNS rebinding) with 403', async () => {
    const reply = await raw(serve.url, { headers: { ...ok(), origin: 'https://evil.example.com' }, body: INIT });
    expect(reply.status).toBe(403);
  });

  it('refuses a foreign Host with 403', async () => {
    const reply = await raw(serve.url, { headers: { ...ok(), host: 'evil.example.com' }, body: INIT });
    expect(reply.status).toBe(403);
  });

  it('answers malformed JSON with a JSON-RPC parse error', async () => {
    const reply = await raw(serve.url, { headers: ok(), body: '{"jsonrpc": "2.0", "id": 1, "method": ' });
    expect(reply.status).toBe(400);
    expect(JSON.parse(reply.body)).toMatchObject({ error: { code: -32700 } });
  });

  it('refuses a huge body with 413', async () => {
    const reply = await raw(serve.url, { headers: ok(), body: Buffer.alloc(3 * 1024 * 1024, 'a') });
    expect(reply.status).toBe(413);
  });

  it('refuses a body that is not JSON with 415', async () => {
    const reply = await raw(serve.url, { headers: { ...ok(), 'content-type': 'text/plain' }, body: INIT });
    expect(reply.status).toBe(415);
  });

  it('answers other paths and unknown profiles with 404', async () => {
    expect((await raw(serve.url.replace('/mcp', '/admin'), { headers: ok(), body: INIT })).status).toBe(404);
    expect((await raw(`${serve.url}/no-such-profile`, { headers: ok(), body: INIT })).status).toBe(404);
  });

  it('creates a session for a 2025-11-25 client and deletes it on DELETE', async () => {
    const init = await raw(serve.url, { headers: ok(), body: INIT });
    expect(init.status).toBe(200);
    const session = init.headers['mcp-session-id'] as string;
    expect(session).toMatch(/[0-9a-f-]{36}/);
    const del = await raw(serve.url, { method: 'DELETE', headers: { ...ok(), 'mcp-session-id': session } });
    expect(del.status).toBe(200);
    const after = await raw(serve.url, {
      headers: { ...ok(), 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(after.status).toBe(404);
  });

  it('still serves a real client after all of that', async () => {
    const client = await connect('2026-07-28', { transport: 'http', url: serve.url, token });
    try {
      expect((await client.callTool('echo', { text: 'still here' })).structuredContent).toEqual({ echo: 'still here', n: 2 });
    } finally {
      await client.close();
    }
  });

  it('serves without a token only when told --no-auth', async () => {
    const open = await startServe(dataDir, ['--no-auth']);
    try {
      const reply = await raw(open.url, { headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: INIT });
      expect(reply.status).toBe(200);
      expect(open.stderr()).toContain('no auth');
    } finally {
      await open.stop();
    }
  });
});

describe('the official MCP conformance suite against callable serve', () => {
  let dataDir: string;
  let serve: ServeProcess;
  let url: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'callable-conformance-'));
    const engine = createEngine({ dataDir });
    await seedMcpFunctions(engine);
    engine.close();
    ({ serve, url } = await serveForConformance(dataDir));
  });

  afterAll(async () => {
    await serve.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  for (const scenario of ['server-initialize', 'ping', 'tools-list', 'logging-set-level', 'dns-rebinding-protection']) {
    it(`passes ${scenario}`, async () => {
      const result = await runConformance(url, scenario);
      expect(result.code, result.output).toBe(0);
    });
  }

  it('passes dns-rebinding-protection at the 127.0.0.1 address too (Host and Origin http://127.0.0.1:PORT)', async () => {
    const result = await runConformance(serve.url, 'dns-rebinding-protection');
    expect(result.code, result.output).toBe(0);
    expect(result.checks.map((c) => `${c.id} ${c.status}`).sort()).toEqual(['localhost-host-rebinding-rejected SUCCESS', 'localhost-host-valid-accepted SUCCESS']);
  });
});
