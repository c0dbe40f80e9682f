#!/usr/bin/env -S node --no-node-snapshot
// The `callable` command. --no-node-snapshot is required by isolated-vm on Node 20+.
// Diagnostics go to stderr: stdout may be an MCP stdio channel.
import module from 'node:module';

// Cache compiled code between runs (an IDE starts `callable mcp` often; startup matters).
module.enableCompileCache?.();

process.on('unhandledRejection', (error) => {
  process.stderr.write(`callable: unhandled rejection (kept running): ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
});

const { runCli } = await import('../src-main/cli/index.ts');
const code = await runCli(process.argv.slice(2), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() });
process.exitCode = code;
// Servers return when they are done; anything left (timers, sockets) must not hold the exit.
process.stdout.write('', () => process.exit(code));
