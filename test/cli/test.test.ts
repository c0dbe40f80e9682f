import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { vendorServer } from '../support/vendor.ts';

const SECRET = `sk-cli-saved-test-${process.pid}-SECRET`;
/** Replays must not need the keychain: the session bus points nowhere. */
const NO_KEYCHAIN = { ...process.env, DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus' };

async function stop(server: import('node:http').Server): Promise<void> {
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** A function folder `<root>/<name>` calling the stand-in vendor at `port` with the credential `vendor`. */
function writeFunction(root: string, name: string, port: number, path = '/v1/quote', extra = ''): string {
  const folder = join(root, name);
  mkdirSync(folder, { recursive: true });
  writeFileSync(
    join(folder, 'function.json'),
    JSON.stringify({ name, description: 'quotes a price', allowedHosts: [`127.0.0.1:${port}`], credentials: ['vendor'], inputSchema: { type: 'object', properties: { item: { type: 'string' } } } }),
  );
  writeFileSync(
    join(folder, 'index.js'),
    `export default async ({ item }, ctx) => {
      const r = await ctx.fetch('http://127.0.0.1:${port}${path}', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ item }), credential: 'vendor' });
      const data = await r.json();
      return { item, price: data.price${extra} };
    }`,
  );
  return folder;
}

/** A data folder with `quote` imported, the credential `vendor` in the real keychain and granted. */
async function setUp() {
  const vendor = await vendorServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ price: req.body.includes('apple') ? 3 : 5, auth: req.headers.authorization === `Bearer ${SECRET}` }));
  });
  const data = tempDir();
  const src = tempDir();
  writeFunction(src, 'quote', vendor.port);
  expect((await cli(['import', src, '--data-dir', data])).code).toBe(0);
  const set = await cli(['credentials', 'set', 'vendor', '--host', `127.0.0.1:${vendor.port}`, '--data-dir', data], { stdin: SECRET });
  expect(set.code, set.stderr).toBe(0);
  expect((await cli(['credentials', 'grant', 'vendor', 'quote', '--data-dir', data])).code).toBe(0);
  return { vendor, data, src };
}

describe('callable run --save-test and callable test', () => {
  it('records a real run, then replays it green with the vendor stopped and no keychain; the case never holds the secret', async () => {
    const { vendor, data } = await setUp();
    const run = await cli(['run', 'quote', '--args', '{"item":"apple"}', '--save-test', 'apple', '--data-dir', data]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ item: 'apple', price: 3 });
    expect(run.stderr).toContain('saved test case apple of quote (1 request, expects the result); replay it: callable test quote --case apple');
    expect(vendor.seen.at(-1)!.headers.authorization).toBe(`Bearer ${SECRET}`);
    await stop(vendor.server);
    const seen = vendor.seen.length;

    const replay = await cli(['test', '--data-dir', data], { env: NO_KEYCHAIN });
    expect(replay.code, replay.stdout + replay.stderr).toBe(0);
    expect(replay.stdout).toMatch(/^PASS {4}quote › apple {2}\(\d+(\.\d+)? ms\)\n\n1 passed, 0 failed \(1 case\)\n$/);
    expect(vendor.seen.length).toBe(seen);

    const all = await cli(['test', '--json', '--data-dir', data], { env: NO_KEYCHAIN });
    expect(all.code).toBe(0);
    expect(JSON.parse(all.stdout)).toMatchObject({ passed: 1, failed: 0, results: [{ case: 'apple', status: 'pass' }] });
    const json = await cli(['test', 'quote', '--case', 'apple', '--json', '--data-dir', data], { env: NO_KEYCHAIN });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ passed: 1, failed: 0, updated: 0, results: [{ function: 'quote', case: 'apple', status: 'pass', expected: { ok: true, value: { item: 'apple', price: 3 } } }] });

    // The case as a file (export), and the database itself: the secret is in neither.
    const out = tempDir();
    expect((await cli(['export', out, '--data-dir', data])).code).toBe(0);
    const caseFile = join(out, 'quote', 'tests', 'apple.json');
    const text = readFileSync(caseFile, 'utf8');
    expect(JSON.parse(text)).toMatchObject({ version: 1, name: 'apple', args: { item: 'apple' }, source: 'cli', expect: { ok: true, value: { item: 'apple', price: 3 } } });
    expect(text).not.toContain(SECRET);
    for (const file of readdirSync(data).filter((f) => f.startsWith('callable.db'))) expect(readFileSync(join(data, file)).includes(SECRET), file).toBe(false);
  });

  it('fails a case whose request changed, with a diff naming the request, and exits 1', async () => {
    const { vendor, data } = await setUp();
    expect((await cli(['run', 'quote', '--args', '{"item":"pear"}', '--save-test', 'pear', '--data-dir', data])).code).toBe(0);
    await stop(vendor.server);
    const changed = tempDir();
    writeFunction(changed, 'quote', vendor.port, '/v2/quote');
    expect((await cli(['import', changed, '--data-dir', data])).code).toBe(0);

    const red = await cli(['test', '--data-dir', data], { env: NO_KEYCHAIN });
    expect(red.code).toBe(1);
    expect(red.stdout).toContain(`FAIL    quote › pear`);
    expect(red.stdout).toContain(`request #1 (POST http://127.0.0.1:${vendor.port}/v2/quote) does not match the recording`);
    expect(red.stdout).toContain('0 passed, 1 failed (1 case)');
    expect(red.stdout).toContain(
      [`  request #1`, `    - expected: "POST http://127.0.0.1:${vendor.port}/v1/quote"`, `    + actual:   "POST http://127.0.0.1:${vendor.port}/v2/quote"`].join('\n'),
    );
    // --update cannot make a changed request match: the case still fails.
    expect((await cli(['test', '--update', '--data-dir', data], { env: NO_KEYCHAIN })).code).toBe(1);
  });

  it('--update rewrites the expectation of a changed result, and the next run passes', async () => {
    const { vendor, data } = await setUp();
    expect((await cli(['run', 'quote', '--args', '{"item":"apple"}', '--save-test', 'apple', '--data-dir', data])).code).toBe(0);
    await stop(vendor.server);
    const changed = tempDir();
    writeFunction(changed, 'quote', vendor.port, '/v1/quote', ' * 2');
    expect((await cli(['import', changed, '--data-dir', data])).code).toBe(0);

    const red = await cli(['test', 'quote', '--data-dir', data], { env: NO_KEYCHAIN });
    expect(red.code).toBe(1);
    expect(red.stdout).toContain('FAIL    quote › apple');
    expect(red.stdout).toContain('$.price: expected 3, got 6');
    expect(red.stdout).toContain(['  $.price', '    - expected: 3', '    + actual:   6'].join('\n'));

    // The secret scan of the rewritten case needs the stored secrets: the keychain is there for --update.
    const update = await cli(['test', 'quote', '--update', '--data-dir', data]);
    expect(update.code, update.stdout + update.stderr).toBe(0);
    expect(update.stdout).toContain('UPDATED quote › apple');
    expect(update.stdout).toContain('0 passed, 0 failed, 1 updated (1 case)');
    const green = await cli(['test', 'quote', '--data-dir', data], { env: NO_KEYCHAIN });
    expect(green.code).toBe(0);
    expect(green.stdout).toContain('1 passed, 0 failed (1 case)');
  });

  it('import then export carries tests/CASE.json to another data folder, where it replays green', async () => {
    const { vendor, data } = await setUp();
    expect((await cli(['run', 'quote', '--args', '{"item":"fig"}', '--save-test', 'fig', '--data-dir', data])).code).toBe(0);
    await stop(vendor.server);
    const out = tempDir();
    expect((await cli(['export', out, '--data-dir', data])).code).toBe(0);
    const other = tempDir();
    const imported = await cli(['import', out, '--data-dir', other], { env: NO_KEYCHAIN });
    expect(imported.code, imported.stderr).toBe(0);
    const replay = await cli(['test', '--data-dir', other], { env: NO_KEYCHAIN });
    expect(replay.code, replay.stdout + replay.stderr).toBe(0);
    expect(replay.stdout).toContain('PASS    quote › fig');
    const again = tempDir();
    expect((await cli(['export', again, '--data-dir', other], { env: NO_KEYCHAIN })).code).toBe(0);
    expect(readFileSync(join(again, 'quote', 'tests', 'fig.json'), 'utf8')).toBe(readFileSync(join(out, 'quote', 'tests', 'fig.json'), 'utf8'));
  });

  it('refuses bad names and usage with one line and exit 2, before any call is made', async () => {
    const { vendor, data } = await setUp();
    const bad = await cli(['run', 'quote', '--args', '{"item":"apple"}', '--save-test', 'Bad Name', '--data-dir', data]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('callable run: "Bad Name": a test case name starts with a lower-case letter or a digit and has only a-z, 0-9, _ and - (at most 64 characters), e.g. translate_hello\n');
    expect(vendor.seen).toHaveLength(0);

    expect((await cli(['run', 'quote', '--args', '{"item":"apple"}', '--save-test', 'apple', '--data-dir', data])).code).toBe(0);
    const taken = await cli(['run', 'quote', '--args', '{"item":"apple"}', '--save-test', 'apple', '--data-dir', data]);
    expect(taken.code).toBe(2);
    expect(taken.stderr).toBe('callable run: quote already has a test case named "apple"; pick another name, or delete or rename that one first\n');
    expect(vendor.seen).toHaveLength(1);

    const unknownFlag = await cli(['test', '--bogus', '--data-dir', data]);
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr).toContain("callable test: Unknown option '--bogus'");
    const noFunction = await cli(['test', 'nosuch', '--data-dir', data]);
    expect(noFunction.code).toBe(2);
    expect(noFunction.stderr).toContain('callable test: no function named "nosuch"; "callable list" shows');
    const noCase = await cli(['test', 'quote', '--case', 'nosuch', '--data-dir', data]);
    expect(noCase.code).toBe(2);
    expect(noCase.stderr).toBe('callable test: no test case named "nosuch" in quote\n');
    expect(existsSync(join(data, 'callable.db'))).toBe(true);
  });

  it('says so, and exits 1, when there is no case to run', async () => {
    const data = tempDir();
    const src = tempDir();
    writeFunction(src, 'quote', 1);
    expect((await cli(['import', src, '--data-dir', data])).code).toBe(0);
    const none = await cli(['test', '--data-dir', data]);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe(`callable test: no function has saved test cases; save one from a run: callable run NAME --args '{…}' --save-test CASE\n`);
  });
});
