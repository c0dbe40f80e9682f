import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.spec.ts'],
    // isolated-vm needs --no-node-snapshot on Node 20+.
    pool: 'forks',
    execArgv: ['--no-node-snapshot'],
    globalSetup: ['test/setup/keychain.ts'],
    reporters: ['default', './test/setup/summaryReporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
