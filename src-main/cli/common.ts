import type { Readable, Writable } from 'node:stream';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Engine } from '../engine/index.ts';

/** The process surface the CLI uses, injected so tests run it in-process. */
export interface CliIo {
  stdin: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  stdout: Writable;
  stderr: Writable;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

export class UsageError extends Error {}

export interface CommandContext {
  io: CliIo;
  args: string[];
  /** Opens the engine on the chosen data folder (lazily: `--help` needs none). */
  engine: () => Engine;
  dataDir: string;
  out: (text: string) => void;
  err: (text: string) => void;
}

export interface Command {
  usage: string;
  summary: string;
  run: (ctx: CommandContext) => Promise<number>;
}

export function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, positionals: number) {
  const parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  if (parsed.positionals.length !== positionals) {
    throw new UsageError(positionals === 0 ? `unexpected argument "${parsed.positionals[0]}"` : `expected ${positionals} argument(s), got ${parsed.positionals.length}`);
  }
  return parsed;
}

