import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const REPO = join(import.meta.dirname, '../..');
export const CALLABLE_BIN = join(REPO, 'bin/callable.js');
/** How a client or test starts `callable`: this Node (the sandbox hosts it starts get the flag isolated-vm needs). */
export const CALLABLE_COMMAND = { command: process.execPath, args: [CALLABLE_BIN] };

export interface ServeProcess {
  url: string;
  child: ChildProcess;
  stderr: () => string;
  stop: () => Promise<void>;
}

/** Starts `callable serve` on a free port and waits for the URL it prints. */
export async function startServe(dataDir: string, extra: string[] = []): Promise<ServeProcess> {
  const child = spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'serve', '--port', '0', '--data-dir', dataDir, ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: process.env,
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`callable serve did not start:\n${err}`)), 15_000);
    const onData = (): void => {
      const m = /MCP on (http:\/\/\S+\/mcp)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`callable serve exited (${code}):\n${err}`)));
  });
  return {
    url,
    child,
    stderr: () => err,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
