import { spawn } from 'node:child_process';
import { CALLABLE_COMMAND } from './callable.ts';

export interface ProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `callable` as its own process without blocking this one (a vendor server in this process
 * keeps answering meanwhile). `prefix` runs it under another command (strace); killed after `timeoutMs`.
 */
export function callableProcess(args: string[], options: { env?: NodeJS.ProcessEnv; prefix?: string[]; timeoutMs?: number } = {}): Promise<ProcessRun> {
  const [command, ...rest] = [...(options.prefix ?? []), CALLABLE_COMMAND.command, ...CALLABLE_COMMAND.args, ...args];
  const child = spawn(command!, rest, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}
