import { PassThrough, Readable } from 'node:stream';
import { runCli } from '../../src-main/cli/index.ts';

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
