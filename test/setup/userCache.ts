import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Saving a function keeps its validators, and the sandbox host keeps the guest script and V8's code
 * cache, in the user's cache folder ($XDG_CACHE_HOME/callable-studio, else ~/.cache/callable-studio:
 * src-main/engine/userCache.ts). A test run must not write there: this points XDG_CACHE_HOME at a
 * private temporary folder for the whole run, which every test process and every process a test
 * starts with the test's environment inherits, and removes it afterwards. A test that wants a cache
 * folder of its own sets XDG_CACHE_HOME itself and puts this one back (test/engine/storedValidators.test.ts).
 * test/setup/userCache.test.ts fails when a test or a `callable` it starts would write the user's own.
 */
export const RUN_CACHE_VARIABLE = 'CALLABLE_TEST_CACHE_HOME';

export default function setup(): () => void {
  // Several projects name this setup; a run of them makes one folder.
  if (process.env[RUN_CACHE_VARIABLE]) return () => {};
  const before = process.env.XDG_CACHE_HOME;
  const folder = mkdtempSync(join(tmpdir(), 'callable-test-cache-'));
  process.env[RUN_CACHE_VARIABLE] = folder;
  process.env.XDG_CACHE_HOME = folder;
  return () => {
    rmSync(folder, { recursive: true, force: true });
    delete process.env[RUN_CACHE_VARIABLE];
    if (before === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = before;
  };
}
