import { symlinkSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { runCli } from '../../src-main/cli/index.ts';
import { CALLABLE_BIN } from './callable.ts';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the `callable` command in-process with the given stdin text and environment. */
export async function cli(argv: string[], options: { stdin?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<CliRun> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await runCli(argv, {
    stdin: Readable.from(options.stdin === undefined ? [] : [Buffer.from(options.stdin)]),
    stdout,
    stderr,
    env: options.env ?? process.env,
    cwd: options.cwd ?? process.cwd(),
  });
  return { code, stdout: out, stderr: err };
}

/**
 * `env` with `callable` on PATH as `npm link` puts it (a link to this checkout's bin/callable.js,
 * in `binDir`) and this Node first on PATH for its shebang.
 */
export function withCallableOnPath(binDir: string, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  symlinkSync(CALLABLE_BIN, join(binDir, 'callable'));
  return { ...env, PATH: [binDir, dirname(process.execPath), env.PATH ?? ''].join(delimiter) };
}
