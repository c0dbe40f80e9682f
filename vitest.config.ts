import { globSync, readFileSync } from 'node:fs';
import { configDefaults, defineConfig } from 'vitest/config';
import FreshFirst from './test/setup/freshFirst.ts';

/** Every test file is in exactly one tier (test/tiers.test.ts checks it). */
export const TEST_FILES = ['test/**/*.test.ts', 'test/**/*.spec.ts'];

/**
 * Pure modules only: no keychain, no spawned process, no sandbox host, no server, no database
 * file. They share worker threads and skip the keychain setup, so they run in seconds.
 */
export const UNIT_FILES = [
  'test/docs.test.ts',
  'test/layers.test.ts',
  'test/tiers.test.ts',
  'test/app/engineChannel.test.ts',
  'test/app/windowDecisions.test.ts',
  'test/cli/commandHelp.test.ts',
  'test/engine/elicitationSchema.test.ts',
  'test/engine/redact.test.ts',
  'test/engine/sandboxProtocol.test.ts',
  'test/mcp/allowedOrigins.test.ts',
];

/**
 * Integration files that load the machine on purpose and time what they provoke: memory bombs and
 * wedged sandbox hosts, whose heartbeats and deadlines come late when other files starve them of
 * CPU. They run one at a time, once the other integration files are done.
 */
export const ALONE_FILES = ['test/engine/limits.test.ts', 'test/engine/sandboxHost.test.ts'];

/** The built renderer in Chromium (needs `electron-vite build` first). */
export const E2E_FILES = ['test/e2e/**/*.test.ts', 'test/e2e/**/*.spec.ts'];

/**
 * Integration files that leave processes running after their last test (engines, sandbox hosts or
 * keychain stores they never close): the end of their own process stops them. In a process shared
 * with later files they would pile up (test/setup/leftovers.ts fails a shared file that does).
 */
export const OWN_PROCESS_FILES = [
  'test/engine/echoedSecrets.test.ts',
  'test/engine/echoedSecretsAttacks.test.ts',
  'test/engine/keychain.test.ts',
  'test/engine/oauth.test.ts',
  'test/engine/oauthStudio.test.ts',
  'test/engine/packages.test.ts',
  'test/engine/savedTests.test.ts',
  'test/engine/scaffold.test.ts',
];

/**
 * Test helpers that register a vitest hook as they load (test/support/fsFaults.ts undoes its
 * faults after each test that way). A process that runs file after file loads a helper once, so
 * only its first file would get the hook: files that import one get a fresh process each, as do
 * OWN_PROCESS_FILES.
 */
const read = (file: string): string => readFileSync(new URL(file, import.meta.url), 'utf8');
export const HOOKED_HELPERS = globSync('test/support/**/*.ts', { cwd: import.meta.dirname })
  .map((file) => file.split('\\').join('/'))
  .filter((file) => /^(?:before|after)(?:Each|All)\(/m.test(read(file)));
export const FRESH_FILES = globSync(TEST_FILES, { cwd: import.meta.dirname, exclude: ['**/node_modules/**', ...UNIT_FILES, ...ALONE_FILES, 'test/e2e/**'] })
  .map((file) => file.split('\\').join('/'))
  .filter((file) => OWN_PROCESS_FILES.includes(file) || HOOKED_HELPERS.some((helper) => read(file).includes(`/${helper.slice('test/'.length)}'`)))
  .sort();

/**
 * Every tier writes caches to a private temporary folder, never the user's own (test/setup/userCache.ts);
 * the processes tests start inherit it.
 */
const CACHE_SETUP = 'test/setup/userCache.ts';

/** Real components: isolated-vm needs --no-node-snapshot on Node 20+, and the keychain tests a private keyring. */
const real = {
  pool: 'forks' as const,
  execArgv: ['--no-node-snapshot'],
  globalSetup: ['test/setup/keychain.ts', CACHE_SETUP],
};

/**
 * Files run at once, per tier. Vitest's default is one fewer than the cores: one file at a time on
 * 2 cores. Unit files are CPU-bound: one per core. Integration files mostly wait (on child
 * processes, sockets, timers, SQLite locks), so three share 2 cores; their timing bounds hold with
 * a connection flood running beside them (ALONE_FILES do not). Each e2e file drives a Chromium:
 * two at a time.
 * Vitest runs groups with different counts one after another (sequence.groupOrder). Unit files share
 * the e2e group (both two at a time) and, started after the e2e files, fill its tail instead of
 * running on their own before everything else.
 */
const MAX_WORKERS = { unit: 2, integration: 3, alone: 1, e2e: 2 };

export default defineConfig({
  test: {
    reporters: ['default', './test/setup/summaryReporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    sequence: { sequencer: FreshFirst },
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT_FILES, globalSetup: [CACHE_SETUP], pool: 'threads', maxWorkers: MAX_WORKERS.unit, sequence: { groupOrder: 3 } } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: TEST_FILES,
          exclude: [...configDefaults.exclude, ...UNIT_FILES, ...FRESH_FILES, ...ALONE_FILES, ...E2E_FILES],
          ...real,
          // Each worker process runs file after file: starting a process, vitest and the engine's
          // modules again for every file was a fifth of these files' CPU. No integration file changes
          // process-wide state (environment, cwd, listeners, mocks, globals) without putting it back
          // (test/tiers.test.ts checks what it can), and what a file starts, it stops (leftovers.ts).
          isolate: false,
          setupFiles: ['test/setup/leftovers.ts'],
          maxWorkers: MAX_WORKERS.integration,
          sequence: { groupOrder: 1 },
        },
      },
      { extends: true, test: { name: 'integration:fresh', include: FRESH_FILES, ...real, maxWorkers: MAX_WORKERS.integration, sequence: { groupOrder: 1 } } },
      { extends: true, test: { name: 'integration:alone', include: ALONE_FILES, ...real, maxWorkers: MAX_WORKERS.alone, sequence: { groupOrder: 2 } } },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: E2E_FILES,
          ...real,
          maxWorkers: MAX_WORKERS.e2e,
          sequence: { groupOrder: 3 },
          // What the page shows after a bridge call the engine process answers (reading a spec, a run):
          // vitest's 1 s default for expect.poll is less than that can take on a loaded 2-core machine.
          expect: { poll: { timeout: 10_000 } },
        },
      },
    ],
  },
});
