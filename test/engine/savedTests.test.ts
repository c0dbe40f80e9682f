import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine, MAX_RECORDED_EXCHANGES, MAX_TEST_CASES, TEST_CASE_VERSION, type TestCaseInput } from '../../src-main/engine/index.ts';
import { caseFileJson } from '../../src-main/engine/savedTests/caseFiles.ts';
import { RECORDINGS_KEPT } from '../../src-main/engine/audit/ledger.ts';
import { defineFunction, testEngine } from '../support/engine.ts';
import { scratch } from '../support/scratch.ts';
import { vendorServer } from '../support/vendor.ts';

const SECRET = `sk-saved-tests-${process.pid}-SECRET`;
const s = scratch();

/** A vendor stand-in: echoes what it got (the Authorization header only when asked, to provoke an echo). */
async function vendor() {
  return vendorServer((req, res) => {
    if (req.url === '/bytes') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.from([0xff, 0x00, 0xfe, 0x01]));
      return;
    }
    if (req.url === '/chunk') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('c'.repeat(900 * 1024));
      return;
    }
    if (req.url === '/big') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(1024 * 1024 + 10));
      return;
    }
    const echo = req.url.startsWith('/echo-auth') ? { authorization: req.headers.authorization ?? null } : {};
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': String(Math.random()) });
    res.end(JSON.stringify({ method: req.method, url: req.url, body: req.body, ...echo }));
  });
}

/** An engine on the real test keychain (test/setup/keychain.ts), with the credential `vendor` holding SECRET for the stand-in. */
async function engineWithCredential(port: number) {
  const engine = testEngine({ secrets: undefined });
  await engine.credentials.set({ name: 'vendor', hosts: [`127.0.0.1:${port}`], placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } }, SECRET);
  return engine;
}

const SOURCE = (port: number) => `export default async ({ word, path = '/translate' }, ctx) => {
  const r = await ctx.fetch('http://127.0.0.1:${port}' + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-mine': 'yes' }, body: JSON.stringify({ word }), credential: 'vendor' });
  const data = await r.json();
  return { status: r.status, got: data, requestId: r.headers.get('x-request-id') };
}`;

describe('saved tests: record a real run, replay it offline', () => {
  it('records every exchange without the injected credential, replays green with the vendor stopped, and fails a changed request with a diff naming it', async () => {
    const v = await vendor();
    const engine = await engineWithCredential(v.port);
    await defineFunction(engine, { name: 'translate', allowedHosts: [`127.0.0.1:${v.port}`], credentials: ['vendor'] }, SOURCE(v.port));

    const run = await engine.run('translate', { word: 'hello' }, { caller: 'console' });
    expect(run.ok, JSON.stringify(run)).toBe(true);
    expect(v.seen.at(-1)!.headers.authorization).toBe(`Bearer ${SECRET}`);
    const saved = await engine.tests.fromRun(run.runId, 'hello', { source: 'console', ignore: ['$.requestId'] });
    expect(saved).toMatchObject({ version: TEST_CASE_VERSION, name: 'hello', args: { word: 'hello' }, source: 'console', expect: { ok: true } });
    expect(saved.exchanges).toHaveLength(1);
    const exchange = saved.exchanges[0]!;
    expect(exchange.request).toEqual({
      method: 'POST',
      url: `http://127.0.0.1:${v.port}/translate`,
      headers: [['content-type', 'application/json'], ['x-mine', 'yes']],
      body: '{"word":"hello"}',
    });
    expect('response' in exchange && exchange.response.status).toBe(200);
    expect(JSON.stringify(saved)).not.toContain(SECRET);
    expect(JSON.stringify(saved).toLowerCase()).not.toContain('authorization');

    // The vendor is gone: a replay never reaches the network (nor the keychain).
    await new Promise<void>((resolve) => v.server.close(() => resolve()));
    const before = v.seen.length;
    const green = await engine.tests.runAll(['translate']);
    expect(green.results.map((r) => [r.case, r.status, r.message])).toEqual([['hello', 'pass', undefined]]);
    expect(green).toMatchObject({ passed: 1, failed: 0 });
    expect(v.seen.length).toBe(before);

    // Without the ignored path the random request id would fail the case.
    await engine.tests.save('translate', { ...saved, name: 'strict', ignore: [] });
    const strict = (await engine.tests.run('translate', 'strict'))[0]!;
    expect(strict.status).toBe('pass'); // replay answers with the recorded headers: the id is the recorded one

    // The function now asks for another path: the case fails, naming the request.
    await engine.saveFunction({ spec: { name: 'translate', allowedHosts: [`127.0.0.1:${v.port}`], credentials: ['vendor'] }, source: SOURCE(v.port).replace("path = '/translate'", "path = '/v2/translate'") });
    const red = (await engine.tests.run('translate', 'hello'))[0]!;
    expect(red.status).toBe('fail');
    expect(red.message).toBe(`request #1 (POST http://127.0.0.1:${v.port}/v2/translate) does not match the recording`);
    expect(red.differences).toEqual([{ path: 'request #1', expected: `POST http://127.0.0.1:${v.port}/translate`, actual: `POST http://127.0.0.1:${v.port}/v2/translate` }]);
  });

  it('compares the result as exact JSON except the ignored paths, and --update rewrites the expectation', async () => {
    const engine = testEngine();
    await defineFunction(engine, { name: 'shape' }, 'export default ({ n }) => ({ n, items: [{ id: 1, at: "t1" }, { id: 2, at: "t2" }], stamp: "x" })');
    const base: TestCaseInput = {
      version: 1,
      name: 'shape_case',
      args: { n: 1 },
      exchanges: [],
      expect: { ok: true, value: { n: 1, items: [{ id: 1, at: 'other' }, { id: 2, at: 'other' }], stamp: 'y' } },
      ignore: ['$.items[*].at', '$.stamp'],
      recordedAt: new Date().toISOString(),
      source: 'cli',
    };
    await engine.tests.save('shape', base);
    expect((await engine.tests.run('shape', 'shape_case'))[0]!.status).toBe('pass');

    await engine.tests.save('shape', { ...base, ignore: ['$.stamp'], expect: { ok: true, value: { n: 2, items: [{ id: 1, at: 't1' }], stamp: 'y' } } }, { replace: true });
    const failed = (await engine.tests.run('shape', 'shape_case'))[0]!;
    expect(failed.status).toBe('fail');
    expect(failed.message).toBe('$.n: expected 2, got 1');
    expect(failed.differences).toEqual([
      { path: '$.n', expected: 2, actual: 1 },
      { path: '$.items[1]', expected: undefined, actual: { id: 2, at: 't2' }, note: 'not expected' },
    ]);

    const updated = (await engine.tests.run('shape', 'shape_case', { update: true }))[0]!;
    expect(updated.status).toBe('updated');
    expect(engine.tests.get('shape', 'shape_case').expect).toEqual({ ok: true, value: { n: 1, items: [{ id: 1, at: 't1' }, { id: 2, at: 't2' }], stamp: 'x' } });
    expect((await engine.tests.run('shape', 'shape_case'))[0]!.status).toBe('pass');
  });

  it('keeps binary bodies as base64 and replays a refused request as the same error', async () => {
    const v = await vendor();
    const engine = testEngine();
    await defineFunction(
      engine,
      { name: 'bytes', allowedHosts: [`127.0.0.1:${v.port}`] },
      `export default async (a, ctx) => {
        const r = await ctx.fetch('http://127.0.0.1:${v.port}/bytes');
        const bytes = [...new Uint8Array(await r.arrayBuffer())];
        let refused = null;
        try { await ctx.fetch('https://elsewhere.example.com/'); } catch (e) { refused = e.code ?? e.name; }
        return { bytes, refused };
      }`,
    );
    const run = await engine.run('bytes', {}, { caller: 'cli' });
    expect(run.ok && run.value).toEqual({ bytes: [255, 0, 254, 1], refused: 'egress_refused' });
    const saved = await engine.tests.fromRun(run.runId, 'binary', { source: 'cli' });
    const [first, second] = saved.exchanges;
    expect(first && 'response' in first && first.response).toMatchObject({ body: null, bodyBase64: Buffer.from([0xff, 0x00, 0xfe, 0x01]).toString('base64') });
    expect(second && 'error' in second && second.error.code).toBe('egress_refused');
    expect((await engine.tests.run('bytes', 'binary'))[0]).toMatchObject({ status: 'pass' });
  });

  it('refuses to save a run whose response body was over the recording bound', async () => {
    const v = await vendor();
    const engine = testEngine();
    await defineFunction(engine, { name: 'big', allowedHosts: [`127.0.0.1:${v.port}`] }, `export default async (a, ctx) => (await (await ctx.fetch('http://127.0.0.1:${v.port}/big')).text()).length`);
    const run = await engine.run('big', {}, { caller: 'cli' });
    expect(run.ok && run.value).toBe(1024 * 1024 + 10);
    await expect(engine.tests.fromRun(run.runId, 'too_big')).rejects.toThrow(
      `test case "too_big" was not saved: the response body of http://127.0.0.1:${v.port}/big is larger than a test case keeps (1048576 bytes per body, 2097152 per run)`,
    );
    expect(engine.tests.list('big')).toEqual([]);

    // Three bodies under the per-body bound, over the per-run bound together.
    await defineFunction(engine, { name: 'chunks', allowedHosts: [`127.0.0.1:${v.port}`] }, `export default async (a, ctx) => { let n = 0; for (let i = 0; i < 3; i++) n += (await (await ctx.fetch('http://127.0.0.1:${v.port}/chunk')).text()).length; return n; }`);
    const chunks = await engine.run('chunks', {}, { caller: 'cli' });
    expect(chunks.ok && chunks.value).toBe(3 * 900 * 1024);
    // Arguments (and result) over the bound: the run is not kept to become a case.
    await defineFunction(engine, { name: 'huge_args' }, 'export default ({ text }) => text.length');
    const huge = await engine.run('huge_args', { text: 'h'.repeat(1024 * 1024) }, { caller: 'cli' });
    expect(huge.ok && huge.value).toBe(1024 * 1024);
    await expect(engine.tests.fromRun(huge.runId, 'huge')).rejects.toThrow('test case "huge" was not saved: the arguments and result of the run (1048614 bytes) are larger than a test case keeps (1048576 bytes)');
    await expect(engine.tests.fromRun(chunks.runId, 'chunks')).rejects.toThrow(`the response body of http://127.0.0.1:${v.port}/chunk is larger than a test case keeps (1048576 bytes per body, 2097152 per run)`);
  });

  it('refuses a run with more requests than a case holds, and a case past the most a function keeps', async () => {
    const v = await vendor();
    const engine = testEngine();
    await defineFunction(
      engine,
      { name: 'chatty', allowedHosts: [`127.0.0.1:${v.port}`], limits: { fetchCount: MAX_RECORDED_EXCHANGES + 1 } },
      `export default async ({ times }, ctx) => { for (let i = 0; i < times; i++) await ctx.fetch('http://127.0.0.1:${v.port}/n/' + i); return times; }`,
    );
    const most = await engine.run('chatty', { times: MAX_RECORDED_EXCHANGES }, { caller: 'cli' });
    expect((await engine.tests.fromRun(most.runId, 'most')).exchanges).toHaveLength(MAX_RECORDED_EXCHANGES);
    const over = await engine.run('chatty', { times: MAX_RECORDED_EXCHANGES + 1 }, { caller: 'cli' });
    expect(over.ok).toBe(true);
    await expect(engine.tests.fromRun(over.runId, 'over')).rejects.toThrow(`test case "over" was not saved: the run made more than ${MAX_RECORDED_EXCHANGES} requests; a test case holds at most ${MAX_RECORDED_EXCHANGES}`);

    const base = engine.tests.get('chatty', 'most');
    for (let i = 1; i < MAX_TEST_CASES; i++) await engine.tests.save('chatty', { ...base, name: `copy_${i}`, exchanges: [] });
    expect(engine.tests.list('chatty')).toHaveLength(MAX_TEST_CASES);
    await expect(engine.tests.save('chatty', { ...base, name: 'one_more', exchanges: [] })).rejects.toThrow(`chatty has ${MAX_TEST_CASES} test cases, the most a function keeps; delete some first`);
    // Replacing one that exists is still allowed.
    await engine.tests.save('chatty', { ...base, name: 'copy_1', exchanges: [] }, { replace: true });
  });

  it('redacts a secret the vendor echoes, and refuses a case that holds a stored secret, naming the credential', async () => {
    const v = await vendor();
    const engine = await engineWithCredential(v.port);
    await defineFunction(engine, { name: 'echoer', allowedHosts: [`127.0.0.1:${v.port}`], credentials: ['vendor'] }, SOURCE(v.port));
    const echoed = await engine.run('echoer', { word: 'x', path: '/echo-auth' }, { caller: 'console' });
    expect(echoed.ok && JSON.stringify(echoed.value)).toContain('[redacted:vendor]');
    const kept = await engine.tests.fromRun(echoed.runId, 'echoed');
    expect(JSON.stringify(kept)).not.toContain(SECRET);
    expect(JSON.stringify(kept)).toContain('[redacted:vendor]');

    // The secret typed into the arguments of a run that never sent the credential: nothing redacts it, the scan refuses it.
    await defineFunction(engine, { name: 'notes', credentials: ['vendor'] }, 'export default ({ note }) => ({ length: note.length })');
    const leaky = await engine.run('notes', { note: `my key is ${SECRET}` }, { caller: 'console' });
    await expect(engine.tests.fromRun(leaky.runId, 'leaky')).rejects.toThrow(
      'test case "leaky" was not saved: args.note contains the secret of credential "vendor"; a test case must never hold a stored secret',
    );
    // Base64-encoded in the arguments.
    const encoded = await engine.run('notes', { note: Buffer.from(SECRET).toString('base64') }, { caller: 'console' });
    await expect(engine.tests.fromRun(encoded.runId, 'encoded')).rejects.toThrow('args.note contains the secret of credential "vendor"');
    // Also inside a base64 body.
    const hidden: TestCaseInput = {
      version: 1,
      name: 'hidden',
      args: {},
      exchanges: [{ request: { method: 'GET', url: 'http://127.0.0.1:1/', headers: [], body: null }, response: { status: 200, headers: [], body: null, bodyBase64: Buffer.concat([Buffer.from([0xff]), Buffer.from(SECRET)]).toString('base64') } }],
      expect: { ok: true, value: null },
      recordedAt: new Date().toISOString(),
      source: 'har',
    };
    await expect(engine.tests.save('notes', hidden)).rejects.toThrow('exchanges[0].response.bodyBase64 contains the secret of credential "vendor"');
    expect(engine.tests.list('notes')).toEqual([]);

    // A folder to import whose case holds the secret: refused with the folder's other problems, and nothing is imported.
    const dir = s.dir('callable-tests-leak-');
    mkdirSync(join(dir, 'leaky_fn', 'tests'), { recursive: true });
    writeFileSync(join(dir, 'leaky_fn', 'function.json'), JSON.stringify({ name: 'leaky_fn' }));
    writeFileSync(join(dir, 'leaky_fn', 'index.js'), 'export default () => 1');
    writeFileSync(join(dir, 'leaky_fn', 'tests', 'hidden.json'), caseFileJson({ ...hidden, ignore: [] }));
    await expect(engine.importFunctions(dir)).rejects.toThrow(`${join(dir, 'leaky_fn')}: test case "hidden" was not saved: exchanges[0].response.bodyBase64 contains the secret of credential "vendor"`);
    expect(engine.functions.find('leaky_fn')).toBeUndefined();
  });

  it('export writes tests/CASE.json, import reads it back, and export again gives the same bytes; rename and delete', async () => {
    const engine = testEngine();
    await defineFunction(engine, { name: 'pure' }, 'export default ({ a }) => ({ twice: a * 2 })');
    const run = await engine.run('pure', { a: 21 }, { caller: 'console' });
    const saved = await engine.tests.fromRun(run.runId, 'answer', { source: 'console' });
    expect(saved.expect).toEqual({ ok: true, value: { twice: 42 } });
    const out = s.dir('callable-tests-export-');
    engine.exportFunctions(out);
    const file = join(out, 'pure', 'tests', 'answer.json');
    expect(readFileSync(file, 'utf8')).toBe(caseFileJson(saved));

    const other = s.engine(createEngine({ dataDir: s.dir('callable-tests-import-'), secrets: undefined }));
    await other.importFunctions(join(out, 'pure'));
    expect(other.tests.list('pure').map((c) => c.name)).toEqual(['answer']);
    expect((await other.tests.run('pure'))[0]!.status).toBe('pass');
    const again = s.dir('callable-tests-export2-');
    other.exportFunctions(again);
    expect(readFileSync(join(again, 'pure', 'tests', 'answer.json'), 'utf8')).toBe(readFileSync(file, 'utf8'));

    other.tests.rename('pure', 'answer', 'renamed');
    expect(other.tests.list('pure').map((c) => c.name)).toEqual(['renamed']);
    expect(() => other.tests.rename('pure', 'renamed', 'Bad Name')).toThrow('"Bad Name": a test case name starts with a lower-case letter');
    other.tests.delete('pure', 'renamed');
    expect(() => other.tests.get('pure', 'renamed')).toThrow('pure has no test case named "renamed" (it has none)');
    const third = s.dir('callable-tests-export3-');
    other.exportFunctions(third);
    expect(readdirSync(join(third, 'pure'))).toEqual(['function.json', 'index.ts']);
  });

  it('a run made by an MCP client in another process becomes a test case from its history; only the last runs keep their requests', async () => {
    const v = await vendor();
    const dataDir = s.dir('callable-tests-history-');
    const server = createEngine({ dataDir, secrets: undefined });
    await defineFunction(server, { name: 'remote', allowedHosts: [`127.0.0.1:${v.port}`] }, `export default async ({ n }, ctx) => (await (await ctx.fetch('http://127.0.0.1:${v.port}/n/' + n)).json()).url`);
    const first = await server.run('remote', { n: 0 }, { caller: 'mcp', client: { name: 'claude-code' }, transport: 'stdio' });
    for (let n = 1; n <= RECORDINGS_KEPT; n++) await server.run('remote', { n }, { caller: 'mcp' });
    const last = await server.run('remote', { n: 99 }, { caller: 'mcp' });
    server.close();

    const studio = s.engine(createEngine({ dataDir, secrets: undefined }));
    const saved = await studio.tests.fromRun(last.runId, 'from_mcp');
    expect(saved).toMatchObject({ args: { n: 99 }, source: 'history', expect: { ok: true, value: '/n/99' } });
    expect(saved.exchanges.map((e) => e.request.url)).toEqual([`http://127.0.0.1:${v.port}/n/99`]);
    await expect(studio.tests.fromRun(first.runId, 'too_old')).rejects.toThrow(`run ${first.runId} has no recording to make a test case from: only the last runs`);
    const kept = (studio.database.prepare('SELECT COUNT(*) AS n FROM run_recordings').get() as { n: number }).n;
    expect(kept).toBe(RECORDINGS_KEPT);
  });

  it('refuses to import a folder whose test case is malformed, naming the file', async () => {
    const engine = testEngine();
    await defineFunction(engine, { name: 'pure2' }, 'export default () => 1');
    const dir = s.dir('callable-tests-bad-');
    engine.exportFunctions(dir);
    mkdirSync(join(dir, 'pure2', 'tests'));
    writeFileSync(join(dir, 'pure2', 'tests', 'broken.json'), JSON.stringify({ version: 1, name: 'broken', args: {}, exchanges: [], expect: { ok: 'yes' }, recordedAt: 'now', source: 'cli' }));
    await expect(engine.importFunctions(join(dir, 'pure2'))).rejects.toThrow(join(dir, 'pure2', 'tests', 'broken.json'));
  });
});
