import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CALLABLE_COMMAND } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { vendorServer } from '../support/vendor.ts';

// A function exported with its saved tests is imported where the keychain cannot be read: a process
// with no D-Bus session (an SSH login), or CALLABLE_SECRETS=env. The cases are recorded for real
// (real keychain, vendor stand-in on 127.0.0.1), exported, and imported by the real command.

const SECRET = `vault-${Math.random().toString(36).slice(2)}-secret`;
let vendor: Awaited<ReturnType<typeof vendorServer>>;

beforeAll(async () => {
  vendor = await vendorServer((_req, res) => res.end(JSON.stringify({ price: 3 })));
});

/** A data folder with credential vault (in the keychain), a function using it and one using none, each with a saved case; and their export. */
async function exportedWithTests(): Promise<{ data: string; exported: string }> {
  const data = tempDir();
  const src = tempDir();
  mkdirSync(join(src, 'quote'));
  writeFileSync(join(src, 'quote/function.json'), JSON.stringify({ name: 'quote', description: 'a price', allowedHosts: [`127.0.0.1:${vendor.port}`], credentials: ['vault'] }));
  writeFileSync(join(src, 'quote/index.js'), `export default async (a, ctx) => (await ctx.fetch('http://127.0.0.1:${vendor.port}/quote', { credential: 'vault' })).json();`);
  mkdirSync(join(src, 'plain'));
  writeFileSync(join(src, 'plain/function.json'), JSON.stringify({ name: 'plain', description: 'no credential' }));
  writeFileSync(join(src, 'plain/index.js'), 'export default (a) => ({ twice: a.n * 2 });');
  expect((await cli(['import', src, '--data-dir', data])).code).toBe(0);
  const set = await cli(['credentials', 'set', 'vault', '--host', `127.0.0.1:${vendor.port}`, '--grant', 'quote', '--data-dir', data], { stdin: SECRET });
  expect(set.code, set.stderr).toBe(0);
  expect((await cli(['run', 'quote', '--save-test', 'three', '--data-dir', data])).code).toBe(0);
  expect((await cli(['run', 'plain', '--args', '{"n":2}', '--save-test', 'four', '--data-dir', data])).code).toBe(0);
  const exported = tempDir();
  expect((await cli(['export', exported, '--data-dir', data])).code).toBe(0);
  return { data, exported };
}

function callable(args: string[], env: NodeJS.ProcessEnv) {
  return spawnSync(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, ...args], { env, encoding: 'utf8', timeout: 30_000 });
}

function withoutDbus(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.DBUS_SESSION_BUS_ADDRESS;
  return env;
}

describe('import of functions with saved tests, where the keychain cannot be read', () => {
  it('with no D-Bus session: the functions and their cases are imported, one line saying which secret the cases were not checked for; they replay', async () => {
    const { data, exported } = await exportedWithTests();
    const env = withoutDbus();
    // The keychain really is out of reach in this environment.
    const list = callable(['credentials', 'list', '--data-dir', data], env);
    expect(list.stderr).toContain('No OS keychain is available');

    const imported = callable(['import', exported, '--data-dir', data], env);
    expect(imported.status, imported.stderr).toBe(0);
    expect(imported.stdout).toBe('imported plain (revision 1)\nimported quote (revision 1)\n');
    const lines = imported.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^callable: plain: test case "four" imported, checked only against the secrets that could be read: the secret of credential "vault" could not be read \(.*No OS keychain is available[^\n]*\)$/);
    expect(lines[1]).toMatch(/^callable: quote: test case "three" imported, checked only against the secrets that could be read: the secret of credential "vault" could not be read \(.*No OS keychain is available/);

    const replay = callable(['test', '--data-dir', data], env);
    expect(replay.status, replay.stdout + replay.stderr).toBe(0);
    expect(replay.stdout).toContain('2 passed, 0 failed (2 cases)');
  });

  it('with CALLABLE_SECRETS=env: the secrets in the environment are scanned (a case holding one is refused), the others are named as not checked', async () => {
    const { data, exported } = await exportedWithTests();
    const env = { ...withoutDbus(), CALLABLE_SECRETS: 'env' };

    const unset = callable(['import', exported, '--data-dir', data], env);
    expect(unset.status, unset.stderr).toBe(0);
    expect(unset.stderr.trim().split('\n')).toEqual(
      ['plain: test case "four"', 'quote: test case "three"'].map((c) => `callable: ${c} imported, checked only against the secrets that could be read: the secret of credential "vault" could not be read here (none is set)`),
    );

    const withSecret = { ...env, CALLABLE_SECRET_VAULT: SECRET };
    const clean = callable(['import', exported, '--data-dir', data], withSecret);
    expect(clean.status, clean.stderr).toBe(0);
    expect(clean.stderr).toBe('');

    // A case file edited to hold the secret is refused.
    const caseFile = join(exported, 'quote/tests/three.json');
    const edited = JSON.parse(readFileSync(caseFile, 'utf8'));
    edited.args = { note: SECRET };
    writeFileSync(caseFile, JSON.stringify(edited));
    const refused = callable(['import', exported, '--data-dir', data], withSecret);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('contains the secret of credential "vault"');
    expect(refused.stderr).not.toContain(SECRET);
  });
});
