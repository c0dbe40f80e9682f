import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { userCacheFolder } from '../../src-main/engine/userCache.ts';
import { callableProcess } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { RUN_CACHE_VARIABLE } from './userCache.ts';

// The test run keeps what it caches (saved functions' validators, the guest script and its code
// cache) in a temporary folder of its own (test/setup/userCache.ts), never in the cache folder of
// the person running the tests: these fail when a test process, or a `callable` a test starts,
// would write there.

/** The user's own cache folder, as it would be without the run's (XDG_CACHE_HOME as the shell had it is not known here: ~/.cache). */
const USERS = join(homedir(), '.cache', 'callable-studio');
const inside = (folder: string, parent: string): boolean => {
  const rel = relative(parent, folder);
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep) && rel !== folder);
};
const entries = (folder: string): string[] => (existsSync(folder) ? readdirSync(folder).filter((name) => !name.startsWith('.')).sort() : []);

describe("the test run's cache folder", () => {
  it('is a private temporary folder, not the user’s', () => {
    const run = process.env[RUN_CACHE_VARIABLE];
    expect(run, 'test/setup/userCache.ts did not run: vitest.config.ts names it as a globalSetup of every tier').toBeDefined();
    expect(inside(run!, tmpdir()), `${run} is under the temporary folder`).toBe(true);
    expect(process.env.XDG_CACHE_HOME).toBe(run);
    const validators = userCacheFolder('validators')!;
    expect(inside(validators, run!)).toBe(true);
    expect(inside(validators, USERS)).toBe(false);
  });

  it('is where a `callable` the tests start and its sandbox host keep what they cache, and the user’s folder gets none of it', async () => {
    const run = process.env[RUN_CACHE_VARIABLE]!;
    // A schema no one else has saved: its kept validator's entry name is this test's alone.
    const field = `field_${randomBytes(8).toString('hex')}`;
    const functions = tempDir('callable-fn-');
    mkdirSync(join(functions, 'cache_probe'));
    writeFileSync(
      join(functions, 'cache_probe/function.json'),
      JSON.stringify({ name: 'cache_probe', description: 'x', inputSchema: { type: 'object', properties: { [field]: { type: 'string' } }, required: [field] } }),
    );
    writeFileSync(join(functions, 'cache_probe/index.js'), `export default (args) => args[${JSON.stringify(field)}].length;`);
    const data = tempDir('callable-data-');
    const env = { ...process.env, CALLABLE_SECRETS: 'env' };
    const before = entries(join(run, 'callable-studio', 'validators'));

    const imported = await callableProcess(['import', functions, '--data-dir', data], { env });
    expect(imported.code, imported.stderr).toBe(0);
    const kept = entries(join(run, 'callable-studio', 'validators')).filter((name) => !before.includes(name));
    expect(kept.length, 'the saved function’s validator kept in the run’s cache folder').toBeGreaterThan(0);
    const leaked = entries(join(USERS, 'validators')).filter((name) => kept.includes(name));
    expect(leaked, `kept in ${join(USERS, 'validators')}`).toEqual([]);

    const ran = await callableProcess(['run', 'cache_probe', '--args', JSON.stringify({ [field]: 'abc' }), '--data-dir', data], { env });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout.trim()).toBe('3');
    // The sandbox host that ran it gets no environment but what it needs; the engine hands it the
    // cache folder it resolved (src-main/engine/sandbox/hostProcess.ts), so the guest script and its
    // code cache are kept there too.
    const guest = join(run, 'callable-studio', 'guest');
    expect(entries(guest).length, `the guest script kept in ${guest}`).toBeGreaterThan(0);
  });
});
