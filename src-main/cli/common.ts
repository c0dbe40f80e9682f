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
  /** Aborted, with the signal's name as reason, when the process is told to stop (SIGINT, SIGTERM). */
  interrupt?: AbortSignal | undefined;
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
  /** Aborted when the process is told to stop; commands that wait (serve) end on it. */
  interrupted: AbortSignal;
  out: (text: string) => void;
  err: (text: string) => void;
}

export interface Command {
  usage: string;
  summary: string;
  /** Each flag (or subcommand) and what it does, for `callable X --help`. */
  options?: Array<[flag: string, meaning: string]>;
  /** Command lines that work as written; `callable X --help` prints them. At least one. */
  examples: [string, ...string[]];
  /**
   * Whether this command (with these arguments) writes and so may create a missing data folder; the
   * others need it to exist, so a mistyped --data-dir is reported instead of becoming a new folder.
   */
  createsDataDir?: (args: string[]) => boolean;
  run: (ctx: CommandContext) => Promise<number>;
}

/** `callable X --help`: usage, summary, the flags (with the --data-dir every command takes) and the examples. */
export function commandHelp(command: Command): string {
  const options: Array<[string, string]> = [...(command.options ?? []), ['--data-dir DIR', 'the data folder (env CALLABLE_DATA_DIR; every command takes it)']];
  const width = Math.max(...options.map(([flag]) => flag.length));
  return [
    `Usage: callable ${command.usage}`,
    '',
    command.summary,
    '',
    'Options:',
    ...options.map(([flag, meaning]) => `  ${flag.padEnd(width)}  ${meaning}`),
    '',
    command.examples.length === 1 ? 'Example:' : 'Examples:',
    ...command.examples.map((e) => `  ${e}`),
  ].join('\n');
}

export function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, positionals: number) {
  const parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  if (parsed.positionals.length !== positionals) {
    throw new UsageError(positionals === 0 ? `unexpected argument "${parsed.positionals[0]}"` : `expected ${positionals} argument(s), got ${parsed.positionals.length}`);
  }
  return parsed;
}


/** The conventional exit code of a process ended by a signal: 128 + its number (SIGINT 130, SIGTERM 143). */
export function signalExitCode(signal: unknown): number {
  return signal === 'SIGTERM' ? 143 : signal === 'SIGHUP' ? 129 : 130;
}

/** Resolves when `signal` is aborted. */
export function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
