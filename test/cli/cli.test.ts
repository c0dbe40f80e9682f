import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CALLABLE_COMMAND, REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { vendorServer } from '../support/vendor.ts';

const EXAMPLES = join(REPO, 'resources/examples');

describe('callable, in process', () => {
  it('imports, lists, runs and exports the examples', async () => {
    const data = tempDir();
    const imported = await cli(['import', EXAMPLES, '--data-dir', data]);
    expect(imported).toMatchObject({ code: 0 });
    expect(imported.stdout).toContain('imported word_stats (revision 1)');

    const list = await cli(['list', '--data-dir', data]);
    expect(list.stdout).toMatch(/^word_stats\s+enabled\s+r1\s+Word statistics$/m);

    const run = await cli(['run', 'word_stats', '--args', '{"text":"one two two"}', '--data-dir', data]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ words: 3, topWords: [{ word: 'two', count: 2 }, { word: 'one', count: 1 }] });
    expect(run.stderr).toMatch(/ok in [\d.]+ ms/);

    const out = tempDir();
    expect((await cli(['export', out, '--data-dir', data])).code).toBe(0);
    expect(readFileSync(join(out, 'word_stats/index.ts'), 'utf8')).toBe(readFileSync(join(EXAMPLES, 'word_stats/index.ts'), 'utf8'));
  });

  it('exits 2 for bad input and usage errors, with a message that says what to do', async () => {
    const data = tempDir();
    await cli(['import', EXAMPLES, '--data-dir', data]);
    const badArgs = await cli(['run', 'word_stats', '--args', '{"txt":1}', '--data-dir', data]);
    expect(badArgs).toMatchObject({ code: 2 });
    expect(badArgs.stderr).toContain('args.text is required');

    const badJson = await cli(['run', 'word_stats', '--args', '{text:', '--data-dir', data]);
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain('--args is not valid JSON');

    const unknown = await cli(['run', 'nope', '--data-dir', data]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no function named "nope"');

    expect((await cli(['frobnicate'])).code).toBe(2);
    expect((await cli(['list', '--bogus', '--data-dir', data])).code).toBe(2);
    expect((await cli(['import', join(data, 'missing'), '--data-dir', data])).stderr).toContain('is not a folder');
  });

  it('exits 1 when the function fails, printing the error', async () => {
    const data = tempDir();
    const dir = tempDir();
    const { mkdirSync, writeFileSync } = await import('node:fs');
    mkdirSync(join(dir, 'boom'));
    writeFileSync(join(dir, 'boom/function.json'), '{"name":"boom","description":"fails"}\n');
    writeFileSync(join(dir, 'boom/index.js'), 'export default () => { throw new Error("kaput"); }\n');
    await cli(['import', dir, '--data-dir', data]);
    const run = await cli(['run', 'boom', '--data-dir', data]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('boom failed (function_error): Error: kaput');
    const json = await cli(['run', 'boom', '--json', '--data-dir', data]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: 'function_error' } });
  });

  it('uses CALLABLE_DATA_DIR when no --data-dir is given', async () => {
    const data = tempDir();
    await cli(['import', join(EXAMPLES, 'word_stats')], { env: { ...process.env, CALLABLE_DATA_DIR: data } });
    expect((await cli(['list', '--data-dir', data])).stdout).toContain('word_stats');
  });

  it('stores a credential secret from stdin in the keychain, never shows it, and a run injects it', async () => {
    const data = tempDir();
    const secret = `cli-secret-${Date.now()}`;
    const vendor = await vendorServer((req, res) => res.end(JSON.stringify({ ok: req.headers.authorization === `Token ${secret}` })));
    const fnDir = tempDir();
    const { mkdirSync, writeFileSync } = await import('node:fs');
    mkdirSync(join(fnDir, 'call_vendor'));
    writeFileSync(
      join(fnDir, 'call_vendor/function.json'),
      JSON.stringify({ name: 'call_vendor', description: 'x', allowedHosts: [`127.0.0.1:${vendor.port}`], credentials: ['local'] }),
    );
    writeFileSync(join(fnDir, 'call_vendor/index.js'), `export default async (a, ctx) => (await ctx.fetch('http://127.0.0.1:${vendor.port}/', { credential: 'local' })).json();`);
    await cli(['import', fnDir, '--data-dir', data]);
    // A function gets a credential only once the user grants it.
    await cli(['credentials', 'grant', 'local', 'call_vendor', '--data-dir', data]);

    const argvSecret = await cli(['credentials', 'set', 'local', '--host', `127.0.0.1:${vendor.port}`, '--secret', secret, '--data-dir', data]);
    expect(argvSecret.code).toBe(2);
    expect(argvSecret.stderr).toContain('never taken from the command line');

    const set = await cli(['credentials', 'set', 'local', '--host', `127.0.0.1:${vendor.port}`, '--template', 'Token {secret}', '--data-dir', data], { stdin: `${secret}\n` });
    expect(set).toMatchObject({ code: 0 });
    const list = await cli(['credentials', 'list', '--data-dir', data]);
    expect(list.stdout).toContain(`local  127.0.0.1:${vendor.port}  header Authorization: Token {secret}  (secret set)`);
    expect(list.stdout + list.stderr).not.toContain(secret);

    const run = await cli(['run', 'call_vendor', '--data-dir', data]);
    expect(JSON.parse(run.stdout)).toEqual({ ok: true });
    expect(run.stderr).toContain('[credential local]');

    expect((await cli(['credentials', 'rm', 'local', '--data-dir', data])).code).toBe(0);
    expect((await cli(['credentials', 'list', '--data-dir', data])).stdout).toContain('No credentials yet');
  });

  it('shows recent runs with their caller', async () => {
    const data = tempDir();
    await cli(['import', join(EXAMPLES, 'word_stats'), '--data-dir', data]);
    await cli(['run', 'word_stats', '--args', '{"text":"a"}', '--data-dir', data]);
    const runs = await cli(['runs', '--function', 'word_stats', '--data-dir', data]);
    expect(runs.stdout).toMatch(/word_stats {2}ok {2}[\d.]+ ms {2}cli/);
  });
});

describe('callable, as a spawned command', () => {
  it('runs from the checkout with the flags isolated-vm needs', () => {
    const data = tempDir();
    const imported = spawnSync(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'import', EXAMPLES, '--data-dir', data], { encoding: 'utf8' });
    expect(imported.status, imported.stderr).toBe(0);
    const run = spawnSync(join(REPO, 'bin/callable.js'), ['run', 'word_stats', '--args', '{"text":"hi hi"}', '--data-dir', data], { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ words: 2 });
  });
});
