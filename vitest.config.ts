import { configDefaults, defineConfig } from 'vitest/config';

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

/** The built renderer in Chromium (needs `electron-vite build` first). */
export const E2E_FILES = ['test/e2e/**/*.test.ts', 'test/e2e/**/*.spec.ts'];

/** Real components: isolated-vm needs --no-node-snapshot on Node 20+, and the keychain tests a private keyring. */
const real = {
  pool: 'forks' as const,
  execArgv: ['--no-node-snapshot'],
  globalSetup: ['test/setup/keychain.ts'],
};

export default defineConfig({
  test: {
    reporters: ['default', './test/setup/summaryReporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT_FILES, pool: 'threads' } },
      { extends: true, test: { name: 'integration', include: TEST_FILES, exclude: [...configDefaults.exclude, ...UNIT_FILES, ...E2E_FILES], ...real } },
      { extends: true, test: { name: 'e2e', include: E2E_FILES, ...real } },
    ],
  },
});
