import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMcpHttpServer, type RunningHttpServer } from '../../src-main/mcp/http.ts';
import { parseAllowedOrigins } from '../../src-main/mcp/httpOrigin.ts';
import { startServe } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { testEngine } from '../support/engine.ts';
import { exchange, INIT_2025 } from '../support/rawHttp.ts';
import { scratch } from '../support/scratch.ts';

const engine = testEngine();
const s = scratch();
const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const withOrigin = (port: number, origin: string | string[] | undefined) =>
  exchange(port, { headers: origin === undefined ? base : { ...base, origin }, body: INIT_2025 });

describe('Origin allow-list on the HTTP server', () => {
  let open: RunningHttpServer;
  let listed: RunningHttpServer;
  beforeAll(async () => {
    open = await startMcpHttpServer(engine, { host: '127.0.0.1', port: 0, token: undefined, diagnostic: () => {} });
    const allowed = parseAllowedOrigins(['HTTP://localhost:6274/']);
    if ('error' in allowed) throw new Error(allowed.error);
    listed = await startMcpHttpServer(engine, { host: '127.0.0.1', port: 0, token: undefined, diagnostic: () => {}, allowedOrigins: allowed.origins });
  });
  afterAll(async () => {
    await open?.close();
    await listed?.close();
  });

  it('by default only the server’s own loopback origins pass (all three names, this port); other ports, hosts and schemes are refused', async () => {
    for (const origin of [`http://127.0.0.1:${open.port}`, `http://localhost:${open.port}`, `http://[::1]:${open.port}`]) {
      expect((await withOrigin(open.port, origin)).status, origin).toBe(200);
    }
    for (const origin of [
      'http://localhost:3000',
      `http://127.0.0.1:${open.port + 1}`,
      `http://localhost:${listed.port}`,
      `https://127.0.0.1:${open.port}`,
      `http://evil.example:${open.port}`,
      `http://localhost:${open.port}.evil.example`,
      `http://127.0.0.2:${open.port}`,
      'http://[::1]:6274',
      'https://evil.example',
    ]) {
      const reply = await withOrigin(open.port, origin);
      expect(reply.status, origin).toBe(403);
      expect(JSON.parse(reply.body)).toMatchObject({ error: { message: expect.stringMatching(/not on this server's allow-list|not a plain scheme/) } });
    }
    // The same-host form is exact too: a trailing slash or a path is not an origin a browser sends.
    expect((await withOrigin(open.port, `http://127.0.0.1:${open.port}/`)).status).toBe(403);
    expect((await withOrigin(open.port, undefined)).status).toBe(200);
  });

  it('a listed origin passes exactly: scheme, host and port compared; odd spellings, null and duplicates are refused', async () => {
    expect((await withOrigin(listed.port, 'http://localhost:6274')).status).toBe(200);
    expect((await withOrigin(listed.port, undefined)).status).toBe(200);
    for (const origin of [
      'http://localhost:6275',
      'https://localhost:6274',
      'http://127.0.0.1:6274',
      'http://localhost',
      'http://localhost:6274/',
      'HTTP://LOCALHOST:6274',
      'http://localhost:6274/path',
      'null',
      '',
      'http://localhost:6274.evil.example',
    ]) {
      expect((await withOrigin(listed.port, origin)).status, JSON.stringify(origin)).toBe(403);
    }
    // Two Origin headers, even if one is listed.
    expect((await withOrigin(listed.port, ['http://localhost:6274', 'https://evil.example'])).status).toBe(403);
    expect((await withOrigin(listed.port, ['http://localhost:6274', 'http://localhost:6274'])).status).toBe(403);
  });
});

describe('callable serve --allow-origin', () => {
  it('accepts the listed origins (repeatable) and refuses others', async () => {
    const data = s.dir('callable-origin-');
    const serve = await startServe(data, ['--no-auth', '--allow-origin', 'http://localhost:6274', '--allow-origin', 'https://Inspector.Example/']);
    s.child(serve.child);
    try {
      const port = Number(new URL(serve.url).port);
      expect((await withOrigin(port, 'http://localhost:6274')).status).toBe(200);
      expect((await withOrigin(port, 'https://inspector.example')).status).toBe(200);
      expect((await withOrigin(port, 'http://localhost:3000')).status).toBe(403);
    } finally {
      await serve.stop();
    }
  });

  it.each([['null'], ['http://localhost:6274/app'], ['localhost:6274'], ['*']])('a malformed --allow-origin %s is one line and exit 2', async (value) => {
    const data = s.dir('callable-origin-');
    const run = await cli(['serve', '--port', '0', '--no-auth', '--allow-origin', value, '--data-dir', data]);
    expect(run.code).toBe(2);
    const [first, ...rest] = run.stderr.trim().split('\n');
    expect(first).toMatch(/^callable serve: --allow-origin: /);
    expect(rest.every((line) => line.startsWith('Usage: '))).toBe(true);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });
});
