#!/usr/bin/env node
// The `callable` command. It runs without --no-node-snapshot (Node starts ~40 ms faster with its
// snapshot): isolated-vm, which needs the flag, runs only in the sandbox hosts, started with it.
// Diagnostics go to stderr: stdout may be an MCP stdio channel.
import module from 'node:module';

// The command is TypeScript run by Node's type stripping, and isolated-vm 7 needs Node 24's ABI.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(`callable: needs Node.js 24 or newer, but this is Node ${process.versions.node} (${process.execPath}). Install Node 24 (https://nodejs.org, or: npm install -g node@24) and run callable with it.\n`);
  process.exit(2);
}

// Cache compiled code between runs (an IDE starts `callable mcp` often; startup matters).
module.enableCompileCache?.();

process.on('unhandledRejection', (error) => {
  process.stderr.write(`callable: unhandled rejection (kept running): ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
});

// SIGINT/SIGTERM ask runCli to stop (runs in flight are cancelled and recorded); a second signal,
// or a shutdown that takes more than a second, ends the process at once, with the same exit code.
const interruption = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    const code = signal === 'SIGTERM' ? 143 : 130;
    if (interruption.signal.aborted) process.exit(code);
    interruption.abort(signal);
    setTimeout(() => process.exit(code), 1000).unref();
  });
}

// The event loop must not empty while the command is unanswered (Node would end it with exit 13 and
// no line): every run settles by design, and if one ever did not, this says so and exits 1.
let answered = false;
process.on('beforeExit', () => {
  if (answered) return;
  process.stderr.write('callable: the command ended without an answer (an internal error; please report it); a run in flight may not be recorded\n');
  process.exit(1);
});

// A server starts its first sandbox host now, while the rest of it loads: the first call does not wait for one.
const command = process.argv.slice(2).find((arg, i, all) => !arg.startsWith('-') && all[i - 1] !== '--data-dir');
if (command === 'mcp' || command === 'serve') (await import('../src-main/engine/sandbox/sandbox.ts')).startHostEarly();

const { runCli } = await import('../src-main/cli/index.ts');
const code = await runCli(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  interrupt: interruption.signal,
});
answered = true;
process.exitCode = code;
// Servers return when they are done; anything left (timers, sockets) must not hold the exit.
process.stdout.write('', () => process.exit(code));
