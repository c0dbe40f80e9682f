import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workerdBinary } from '../../src-main/deploy/supervisor.ts';
import { createEngine, type Engine } from '../../src-main/engine/index.ts';
import { defineFunction } from '../support/engine.ts';
import { seedMcpFunctions } from '../support/fixtures.ts';
import { connect, type Era, type TestClient } from '../support/mcpClients.ts';
import { LOG_LEVEL_META_KEY } from '@modelcontextprotocol/client';
import { ENVELOPE_2026, exchange, headers2026, INIT_2025, mcpHeaders, messagesOf } from '../support/rawHttp.ts';
import { vendorServer } from '../support/vendor.ts';
import { freePort, roundRobin, startDeployServe, type DeployServe } from './support.ts';

/**
 * `callable deploy --target workerd --serve`: the real npm workerd serving the functions of a data
 * folder, called by real MCP clients of both eras. The secret lives in the real (test) keychain.
 */
const SECRET = `sk-deploy-${process.pid}-c0ffee`;
const ERAS: Era[] = ['2026-07-28', '2025-11-25'];
/** A schema with a "__proto__" field (JSON.parse makes it an own property, as a saved schema's). */
const PROTO_SCHEMA =
  '{"type":"object","properties":{"__proto__":{"type":"object","properties":{"polluted":{"type":"boolean"}},"additionalProperties":false},"constructor":{"type":"string"},"result":{}},"required":["__proto__"],"dependentRequired":{"constructor":["__proto__"]},"additionalProperties":false}';

let dataDir: string;
let vendor: Awaited<ReturnType<typeof vendorServer>> & { connections: () => number };
let vendorConnections: () => number = () => 0;
let served: DeployServe;
const clients: TestClient[] = [];

/** Every file under `dir`, read whole. */
function filesUnder(dir: string): Array<{ path: string; text: string }> {
  const out: Array<{ path: string; text: string }> = [];
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const path = join(dir, name);
    if (statSync(path).isFile()) out.push({ path, text: readFileSync(path, 'utf8') });
  }
  return out;
}

async function client(era: Era, url = served.url): Promise<TestClient> {
  const c = await connect(era, { transport: 'http', url, token: served.token });
  clients.push(c);
  return c;
}

function textOf(result: { content: Array<{ text?: string }> }): string {
  return result.content.map((c) => c.text ?? '').join('');
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'callable-deploy-'));
  vendor = Object.assign(await vendorServer((req, res) => {
    if (req.url.startsWith('/redirect')) {
      res.writeHead(302, { location: 'https://evil.example/stolen' });
      res.end();
      return;
    }
    if (req.url.startsWith('/big')) {
      res.end('x'.repeat(5000));
      return;
    }
    // The vendor echoes what it was sent, the credential's header included.
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ path: req.url, authorization: req.headers.authorization ?? null }));
  }), { connections: () => vendorConnections() });
  let connections = 0;
  vendor.server.on('connection', () => connections++);
  vendorConnections = () => connections;
  const engine: Engine = createEngine({ dataDir });
  try {
    await seedMcpFunctions(engine);
    await engine.credentials.set({ name: 'vendor_key', hosts: [`127.0.0.1:${vendor.port}`], placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } }, SECRET);
    const here = `127.0.0.1:${vendor.port}`;
    await defineFunction(
      engine,
      { name: 'vendor_call', description: 'Calls the vendor with its credential', allowedHosts: [here], credentials: ['vendor_key'], inputSchema: { type: 'object', properties: {} } },
      `export default async (args, ctx) => {
        const res = await ctx.fetch('http://${here}/echo', { credential: 'vendor_key' });
        const body = await res.json();
        return { status: res.status, seen: body.authorization };
      }`,
    );
    await defineFunction(
      engine,
      { name: 'go_unlisted', description: 'Fetches a host not on its list', allowedHosts: [here], inputSchema: { type: 'object', properties: {} } },
      `export default async (args, ctx) => (await ctx.fetch('https://api.example.com/v1')).status`,
    );
    await defineFunction(
      engine,
      {
        name: 'probe',
        description: 'Fetches what it is told',
        allowedHosts: [here, 'api.example.com', '169.254.169.254', '100.64.0.1'],
        credentials: ['vendor_key'],
        inputSchema: { type: 'object', properties: { url: { type: 'string' }, headers: { type: 'object' }, credential: { type: 'string' } }, required: ['url'] },
      },
      `export default async ({ url, headers, credential }, ctx) => (await ctx.fetch(url, { headers, credential })).status`,
    );
    await defineFunction(
      engine,
      { name: 'raw_socket', description: 'Tries a TCP socket past the egress Worker', inputSchema: { type: 'object', properties: {} } },
      `export default async () => {
        const name = 'cloudflare:' + 'sockets';
        const { connect } = await import(name);
        const socket = connect({ hostname: '127.0.0.1', port: ${vendor.port} });
        await socket.opened;
        return 'connected';
      }`,
    );
    await defineFunction(
      engine,
      {
        name: 'bad_output',
        description: 'Breaks its output schema',
        inputSchema: { type: 'object', properties: {} },
        outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      },
      `export default () => ({ n: 'not a number' })`,
    );
    await defineFunction(
      engine,
      { name: 'too_big', description: 'Returns more than its result limit', limits: { resultBytes: 1024 }, inputSchema: { type: 'object', properties: {} } },
      `export default () => 'x'.repeat(2000)`,
    );
    await defineFunction(
      engine,
      { name: 'too_chatty', description: 'Logs more than its log limit', limits: { logBytes: 1024 }, inputSchema: { type: 'object', properties: {} } },
      `export default (args, ctx) => { ctx.log('y'.repeat(2000)); return 'said it'; }`,
    );
    await defineFunction(
      engine,
      { name: 'sleepy', description: 'Outlives its deadline', timeoutMs: 300, inputSchema: { type: 'object', properties: {} } },
      `export default async () => { await new Promise((r) => setTimeout(r, 5000)); return 'late'; }`,
    );
    await defineFunction(
      engine,
      { name: 'asks', description: 'Asks the user', inputSchema: { type: 'object', properties: {} } },
      `export default async (args, ctx) => ctx.elicit('Which floor?', { type: 'object', properties: { floor: { type: 'integer' } } })`,
    );
    // Fields named "__proto__" (validated under an alias) and "constructor" (an own property or
    // absent, never Object.prototype's): the deployed gateway answers these as the local server does.
    await defineFunction(
      engine,
      {
        name: 'proto_fields',
        description: 'Has a "__proto__" field',
        inputSchema: JSON.parse(PROTO_SCHEMA) as { type: 'object' },
        outputSchema: JSON.parse(PROTO_SCHEMA) as { type: 'object' },
      },
      'export default (args) => args.result ?? args',
    );
    await defineFunction(
      engine,
      {
        name: 'own_fields',
        description: 'Requires a field named "constructor"',
        inputSchema: { type: 'object', properties: { constructor: { type: 'string' }, toString: { type: 'string' } }, required: ['constructor'] },
      },
      'export default (args) => Object.keys(args)',
    );
    await defineFunction(
      engine,
      { name: 'counter', description: 'Counts calls in its global scope', inputSchema: { type: 'object', properties: {} } },
      `export default () => { globalThis.calls = (globalThis.calls ?? 0) + 1; return globalThis.calls; }`,
    );
    await defineFunction(
      engine,
      { name: 'many_fetches', description: 'Fetches three times', allowedHosts: [here], limits: { fetchCount: 2 }, inputSchema: { type: 'object', properties: {} } },
      `export default async (args, ctx) => { for (let i = 0; i < 3; i++) await ctx.fetch('http://${here}/n' + i); return 'all three'; }`,
    );
    await defineFunction(
      engine,
      { name: 'big_body', description: 'Reads a body over its limit', allowedHosts: [here], limits: { responseBytes: 1024 }, inputSchema: { type: 'object', properties: {} } },
      `export default async (args, ctx) => (await (await ctx.fetch('http://${here}/big')).text()).length`,
    );
    await defineFunction(
      engine,
      { name: 'reports', description: 'Logs two lines and reports progress twice', inputSchema: { type: 'object', properties: {} } },
      `export default async (args, ctx) => {
        ctx.log('starting', { step: 1 });
        ctx.progress(1, 2, 'half way');
        await new Promise((r) => setTimeout(r, 10));
        ctx.log.warn('almost done');
        ctx.progress(2, 2, 'all done');
        return 'reported';
      }`,
    );
    await defineFunction(
      engine,
      { name: 'reports_itself', description: 'Reports past ctx, straight to the binding', limits: { logBytes: 1024 }, inputSchema: { type: 'object', properties: {} } },
      `export default async (args, ctx) => {
        const name = 'cloudflare:' + 'workers';
        const { env } = await import(name);
        await env.REPORTER.log('info', 'within the limit');
        await env.REPORTER.log('info', 'z'.repeat(2000));
        await env.REPORTER.log('shout', 'not a level');
        await env.REPORTER.progress({ progress: 'lots', message: 'not a number' });
        await env.REPORTER.progress({ progress: 1, total: 'two', message: 'm'.repeat(3000) });
        return 'reported itself';
      }`,
    );
  } finally {
    engine.close();
  }
  served = await startDeployServe(dataDir, ['--port', String(await freePort()), '--allow-origin', 'http://localhost:6274']);
}, 60_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await served?.stop();
  if (served) rmSync(served.outDir, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

describe.each(ERAS)('the deployed gateway, with a %s client', (era) => {
  it('lists the enabled functions and calls one (structured result)', async () => {
    const c = await client(era);
    const names = (await c.listTools()).map((t) => t.name);
    expect(names).toContain('echo');
    expect(names).toContain('vendor_call');
    expect(names).not.toContain('hidden');
    const echo = (await c.listTools()).find((t) => t.name === 'echo')!;
    expect(echo.outputSchema).toMatchObject({ required: ['echo', 'n'] });
    const result = await c.callTool('echo', { text: 'hi', n: 21 });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ echo: 'hi', n: 42 });
  });

  it('refuses arguments that do not match the input schema, as locally', async () => {
    const result = await (await client(era)).callTool('echo', { txt: 'hi' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      'Invalid arguments for echo: args.text is required; args has an unexpected property "txt". Fix the arguments to match the tool\'s input schema and call again.',
    );
  });

  it('answers arguments with a "__proto__" field or an inherited one as the local server does', async () => {
    const local = await connect(era, { transport: 'stdio', stdioArgs: ['--data-dir', dataDir] });
    clients.push(local);
    const deployed = await client(era);
    const calls: Array<[string, string]> = [
      ['proto_fields', '{"__proto__":{"polluted":true},"constructor":"c"}'],
      ['proto_fields', '{"constructor":"c"}'],
      ['proto_fields', '{"__proto__":{"polluted":1,"x":0},"prototype":1}'],
      ['proto_fields', '{"__proto__":{"polluted":false},"result":{"__proto__":{"polluted":"yes"}}}'],
      ['own_fields', '{}'],
      ['own_fields', '{"constructor":"c"}'],
    ];
    const answers = async (c: TestClient) => {
      const seen: string[] = [];
      for (const [name, args] of calls) {
        const result = await c.callTool(name, JSON.parse(args) as Record<string, unknown>);
        seen.push(`${name} ${args} → ${result.isError ? 'error' : 'ok'} ${textOf(result)}`);
      }
      return seen;
    };
    const locally = await answers(local);
    expect(await answers(deployed)).toEqual(locally);
    // What both say: a "__proto__" field is checked like any other, an inherited "constructor" is absent.
    expect(locally[1]).toContain('args.__proto__ is required; args must have property __proto__ when property constructor is present');
    expect(locally[2]).toContain('args has an unexpected property "prototype"; args.__proto__ has an unexpected property "x"; args.__proto__.polluted must be boolean');
    expect(locally[3]).toContain('result.__proto__.polluted must be boolean');
    expect(locally[4]).toContain('args.constructor is required');
    expect(locally[4]).not.toContain('must be string');
    expect(locally.map((line) => line.split(' → ')[1]!.split(' ')[0])).toEqual(['ok', 'error', 'error', 'error', 'error', 'ok']);
  });

  it('reports a throwing function as a tool error', async () => {
    const result = await (await client(era)).callTool('broken', {});
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('broken failed: Error: vendor said no');
  });

  it('returns content other than JSON (an image)', async () => {
    const result = await (await client(era)).callTool('picture', {});
    expect(result.content[0]).toEqual({ type: 'image', data: 'iVBORw==', mimeType: 'image/png' });
  });

  it('refuses egress to a host not on allowedHosts', async () => {
    const result = await (await client(era)).callTool('go_unlisted', {});
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      `go_unlisted failed: Error: GET https://api.example.com/v1 refused: api.example.com is not an allowed host: allowedHosts is 127.0.0.1:${vendor.port}; add it to the function's allowedHosts`,
    );
  });

  it('refuses a metadata address and a CGNAT address even when the list names them', async () => {
    const c = await client(era);
    const metadata = await c.callTool('probe', { url: 'https://169.254.169.254/latest/meta-data' });
    expect(textOf(metadata)).toContain('refused: 169.254.169.254 is a cloud metadata address');
    const cgnat = await c.callTool('probe', { url: 'https://100.64.0.1/' });
    expect(cgnat.isError).toBe(true);
    expect(textOf(cgnat)).toMatch(/GET https:\/\/100\.64\.0\.1\/ refused: 100\.64\.0\.1 is/);
  });

  it('refuses plain http to a name, a proxy header, a redirect off the list, and a credential towards another host', async () => {
    const c = await client(era);
    const http = await c.callTool('probe', { url: 'http://api.example.com/v1' });
    expect(textOf(http)).toBe(
      'probe failed: Error: GET http://api.example.com/v1 refused: plain http is only allowed to a literal local address named in allowedHosts (e.g. 127.0.0.1:8080); use https',
    );
    const proxy = await c.callTool('probe', { url: `http://127.0.0.1:${vendor.port}/x`, headers: { 'proxy-authorization': 'Basic eA==' } });
    expect(textOf(proxy)).toContain('refused: the "proxy-authorization" header is set by the host, not by the function; remove it');
    const hop = await c.callTool('probe', { url: `http://127.0.0.1:${vendor.port}/redirect` });
    expect(textOf(hop)).toContain('probe failed: Error: GET https://evil.example/stolen refused: evil.example is not an allowed host');
    const before = vendor.seen.length;
    const elsewhere = await c.callTool('probe', { url: 'https://api.example.com/v1', credential: 'vendor_key' });
    expect(textOf(elsewhere)).toContain(`refused: credential "vendor_key" may only be sent to 127.0.0.1:${vendor.port}`);
    expect(vendor.seen.length).toBe(before);
  });

  it('has no way out but the egress Worker: a raw TCP socket goes nowhere', async () => {
    const connections = vendor.connections();
    const result = await (await client(era)).callTool('raw_socket', {});
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('raw_socket failed: Error: proxy request failed, cannot connect to the specified address');
    expect(vendor.connections()).toBe(connections);
  });

  it('injects the credential towards the vendor; the function and the result never see the secret', async () => {
    const before = vendor.seen.length;
    const result = await (await client(era)).callTool('vendor_call', {});
    expect(result.isError, textOf(result)).toBeFalsy();
    expect(vendor.seen.length).toBe(before + 1);
    expect(vendor.seen.at(-1)!.headers.authorization).toBe(`Bearer ${SECRET}`);
    // The vendor echoed the header: the function read it redacted, the whole value as locally.
    expect(JSON.parse(textOf(result))).toEqual({ status: 200, seen: '[redacted:vendor_key]' });
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it('checks the result against the output schema, and enforces the result and log limits', async () => {
    const c = await client(era);
    expect(textOf(await c.callTool('bad_output', {}))).toBe('bad_output failed (output_invalid): the result does not match the outputSchema: result.n must be number');
    expect(textOf(await c.callTool('too_big', {}))).toBe('too_big stopped at a sandbox limit (result_too_large): the result is 2002 bytes, over the result size limit of 1024 bytes (limits.resultBytes); return less or raise the limit');
    expect(textOf(await c.callTool('too_chatty', {}))).toBe('too_chatty stopped at a sandbox limit (log_limit): the function logged more than 1024 bytes (limits.logBytes); log less or raise the limit');
  });

  it('ends a call at its deadline', async () => {
    const started = Date.now();
    const result = await (await client(era)).callTool('sleepy', {});
    expect(textOf(result)).toBe('sleepy stopped at a sandbox limit (timeout): the run exceeded its deadline of 300 ms (timeoutMs); make it faster or raise timeoutMs');
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('refuses ctx.elicit with a tool error that says there is no one to ask', async () => {
    const result = await (await client(era)).callTool('asks', {});
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('ctx.elicit is not available on a deployed gateway: there is no one to ask');
  });

  it('carries no state from one call to the next (a fresh isolate per call)', async () => {
    const c = await client(era);
    const values = [];
    for (let i = 0; i < 3; i++) values.push(textOf(await c.callTool('counter', {})));
    expect(values).toEqual(['1', '1', '1']);
  });

  it('sends ctx.log lines and ctx.progress updates to the client before the result; progress only when it sent a progress token', async () => {
    const c = await client(era);
    const progress: Array<{ progress: number; total?: number; message?: string }> = [];
    const result = await c.callTool('reports', {}, { logLevel: 'debug', onprogress: (p) => progress.push(p) });
    // What the client had received when the result came.
    const logsAtResult = c.logs.slice();
    const progressAtResult = progress.slice();
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'reported' }]);
    expect(progressAtResult).toEqual([
      { progress: 1, total: 2, message: 'half way' },
      { progress: 2, total: 2, message: 'all done' },
    ]);
    expect(logsAtResult).toEqual([
      { level: 'info', data: 'starting {"step":1}' },
      { level: 'warning', data: 'almost done' },
    ]);
    const without = await c.callTool('reports', {}, { logLevel: 'debug' });
    expect(without).toEqual(result);
    expect(c.logs.slice(2)).toEqual(logsAtResult);
  });

  it('puts the notices on the tools/call response ahead of its result; none of progress without a progress token', async () => {
    const port = Number(new URL(served.url).port);
    const call = async (id: number, progressToken?: string): Promise<Array<Record<string, unknown>>> => {
      const meta = { ...(era === '2026-07-28' ? { ...ENVELOPE_2026, [LOG_LEVEL_META_KEY]: 'debug' } : {}), ...(progressToken === undefined ? {} : { progressToken }) };
      const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'reports', arguments: {}, _meta: meta } });
      const headers = mcpHeaders(served.token, era === '2026-07-28' ? headers2026('tools/call', 'reports') : { 'mcp-protocol-version': '2025-11-25' });
      const res = await exchange(port, { headers, body });
      expect(res.status).toBe(200);
      return messagesOf(res.body);
    };
    const withToken = await call(11, 'tok-1');
    expect(withToken.map((m) => m.method ?? 'result')).toEqual(['notifications/message', 'notifications/progress', 'notifications/message', 'notifications/progress', 'result']);
    expect(withToken.filter((m) => m.method === 'notifications/progress').map((m) => m.params)).toEqual([
      { progressToken: 'tok-1', progress: 1, total: 2, message: 'half way' },
      { progressToken: 'tok-1', progress: 2, total: 2, message: 'all done' },
    ]);
    expect(withToken.filter((m) => m.method === 'notifications/message').map((m) => m.params)).toEqual([
      { level: 'info', data: 'starting {"step":1}', logger: 'function' },
      { level: 'warning', data: 'almost done', logger: 'function' },
    ]);
    const withoutToken = await call(12);
    expect(withoutToken.map((m) => m.method ?? 'result')).toEqual(['notifications/message', 'notifications/message', 'result']);
    expect(withoutToken.at(-1)).toMatchObject({ id: 12, result: (withToken.at(-1) as { result: unknown }).result });
  });

  it('checks what an isolate reports past ctx: the log limit, the levels, and bounded progress', async () => {
    const c = await client(era);
    const progress: Array<{ progress: number; total?: number; message?: string }> = [];
    const result = await c.callTool('reports_itself', {}, { logLevel: 'debug', onprogress: (p) => progress.push(p) });
    expect(textOf(result)).toBe('reported itself');
    expect(c.logs).toEqual([{ level: 'info', data: 'within the limit' }]);
    expect(progress).toEqual([{ progress: 1, message: 'm'.repeat(1000) }]);
  });

  it('enforces the fetch-count and response-size limits', async () => {
    const c = await client(era);
    const many = await c.callTool('many_fetches', {});
    expect(textOf(many)).toBe('many_fetches stopped at a sandbox limit (fetch_limit): the function made more than 2 requests (limits.fetchCount); make fewer or raise the limit');
    const big = await c.callTool('big_body', {});
    expect(textOf(big)).toBe(
      `big_body stopped at a sandbox limit (response_too_large): the response from 127.0.0.1:${vendor.port} is larger than the response body limit (1024 bytes); raise limits.responseBytes if that is expected`,
    );
  });
});

describe('what --serve prints, writes and logs', () => {
  it('prints the MCP URL and the token; the token is the data folder\'s own', async () => {
    expect(served.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const { cli } = await import('../support/cli.ts');
    const token = await cli(['token', '--data-dir', dataDir]);
    expect(served.token).toBe(token.stdout.trim());
  });

  it('writes no secret into the project folder, and none reaches its output', () => {
    const files = filesUnder(served.outDir);
    expect(files.map((f) => f.path.slice(served.outDir.length + 1)).sort()).toEqual(['README.md', 'config.capnp', 'egress.js', 'gateway.js']);
    for (const f of files) expect(f.text.includes(SECRET), f.path).toBe(false);
    const config = readFileSync(join(served.outDir, 'config.capnp'), 'utf8');
    expect(config).toContain('(name = "SECRET_VENDOR_KEY", fromEnvironment = "CALLABLE_SECRET_VENDOR_KEY")');
    expect(config).toContain('(name = "MCP_TOKEN", fromEnvironment = "CALLABLE_MCP_TOKEN")');
    expect(served.stdout()).not.toContain(SECRET);
    expect(served.stderr()).not.toContain(SECRET);
  });

  it('logs each call as one structured audit line (function, caller, duration, outcome)', async () => {
    await (await client('2026-07-28')).callTool('echo', { text: 'audited' });
    await new Promise((r) => setTimeout(r, 200));
    const audits = served
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{"audit"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const line = audits.find((a) => a.function === 'echo' && a.caller === 'contract-client-v2');
    expect(line).toMatchObject({ audit: 'call', function: 'echo', caller: 'contract-client-v2', outcome: 'ok' });
    expect(typeof line!.durationMs).toBe('number');
    expect(audits.find((a) => a.function === 'vendor_call')).toMatchObject({ outcome: 'ok', trace: [{ method: 'GET', status: 200, credential: 'vendor_key' }] });
  });
});

describe('the gateway checks requests as the local server does', () => {
  const port = (): number => Number(new URL(served.url).port);

  it('refuses a missing or wrong bearer token', async () => {
    const none = await exchange(port(), { headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: INIT_2025 });
    expect(none.status).toBe(401);
    const wrong = await exchange(port(), { headers: mcpHeaders('not-the-token'), body: INIT_2025 });
    expect(wrong.status).toBe(401);
  });

  it('refuses a Host that is not this machine (DNS rebinding)', async () => {
    const res = await exchange(port(), { headers: mcpHeaders(served.token, { host: 'evil.example:80' }), body: INIT_2025 });
    expect(res.status).toBe(403);
  });

  it('refuses a browser Origin not on the allow-list, and accepts one that is (--allow-origin)', async () => {
    const refused = await exchange(port(), { headers: mcpHeaders(served.token, { origin: 'http://evil.example' }), body: INIT_2025 });
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('origin http://evil.example is not on this server');
    const allowed = await exchange(port(), { headers: mcpHeaders(served.token, { origin: 'http://localhost:6274' }), body: INIT_2025 });
    expect(allowed.status).toBe(200);
  });
});

describe('sessionless, so any process answers any request', () => {
  const port = (): number => Number(new URL(served.url).port);

  it('gives a 2025-11-25 client no Mcp-Session-Id, and has no GET stream or DELETE', async () => {
    const init = await exchange(port(), { headers: mcpHeaders(served.token), body: INIT_2025 });
    expect(init.status).toBe(200);
    expect(init.headers['mcp-session-id']).toBeUndefined();
    const get = await exchange(port(), { method: 'GET', headers: { authorization: `Bearer ${served.token}`, accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
    const del = await exchange(port(), { method: 'DELETE', headers: { authorization: `Bearer ${served.token}` } });
    expect(del.status).toBe(405);
  });
});

describe('scale: two workerd processes behind a round-robin balancer', () => {
  it('serve the same tools to both eras, each request to the next process', async () => {
    // A second workerd on the same project, given the token and the secret the way --serve gives them.
    const second = await freePort();
    const child = spawn(workerdBinary(), ['serve', '--experimental', join(served.outDir, 'config.capnp'), '--socket-addr', `http=127.0.0.1:${second}`], {
      env: { PATH: process.env.PATH, CALLABLE_MCP_TOKEN: served.token, CALLABLE_SECRET_VENDOR_KEY: SECRET },
      stdio: 'ignore',
    });
    const balancer = await roundRobin([Number(new URL(served.url).port), second]);
    try {
      for (let i = 0; i < 50; i++) {
        const up = await fetch(`http://127.0.0.1:${second}/`).then(() => true, () => false);
        if (up) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      for (const era of ERAS) {
        const c = await client(era, balancer.url);
        expect((await c.listTools()).map((t) => t.name)).toContain('echo');
        for (let i = 0; i < 4; i++) expect((await c.callTool('echo', { text: `r${i}`, n: i })).structuredContent).toEqual({ echo: `r${i}`, n: i * 2 });
        expect(JSON.parse(textOf(await c.callTool('vendor_call', {})))).toEqual({ status: 200, seen: '[redacted:vendor_key]' });
      }
      expect(balancer.hits[0]).toBeGreaterThan(3);
      expect(balancer.hits[1]).toBeGreaterThan(3);
    } finally {
      await balancer.close();
      child.kill('SIGTERM');
    }
  });
});
