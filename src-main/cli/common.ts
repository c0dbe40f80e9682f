import { realpathSync } from 'node:fs';
import { basename, delimiter, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { shellQuote, type Engine } from '../engine/index.ts';

/** The process surface the CLI uses, injected so tests run it in-process. */
export interface CliIo {
  stdin: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  stdout: Writable;
  stderr: Writable;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Aborted, with the signal's name as reason, when the process is told to stop (SIGINT, SIGTERM). */
  interrupt?: AbortSignal | undefined;
  /** The script path the command was started by (process.argv[1]); it decides how printed commands begin. */
  script?: string | undefined;
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
  /** How a printed command begins so that the user can paste it: `npx callable`, `callable` or `node /path/bin/callable.js`. */
  callable: string;
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
export function commandHelp(command: Command, callable = 'callable'): string {
  const options: Array<[string, string]> = [...(command.options ?? []), ['--data-dir DIR', 'the data folder (env CALLABLE_DATA_DIR; every command takes it)']];
  const width = Math.max(...options.map(([flag]) => flag.length));
  return [
    `Usage: ${callable} ${command.usage}`,
    '',
    command.summary,
    '',
    'Options:',
    ...options.map(([flag, meaning]) => `  ${flag.padEnd(width)}  ${meaning}`),
    '',
    command.examples.length === 1 ? 'Example:' : 'Examples:',
    ...command.examples.map((e) => `  ${withCommand(e, callable)}`),
  ].join('\n');
}

export function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, positionals: number) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw usageOfParseError(error, Object.keys(options));
  }
  if (parsed.positionals.length !== positionals) {
    throw new UsageError(positionals === 0 ? `unexpected argument "${parsed.positionals[0]}"` : `expected ${positionals} argument(s), got ${parsed.positionals.length}`);
  }
  return parsed;
}

/**
 * Node's parser error as one line: an unknown flag names the nearest known one (Node's own text
 * for it runs on about quoting positionals, with an unbalanced quote). Anything else passes through.
 */
export function usageOfParseError(error: unknown, known: string[]): unknown {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS')) return error;
  const unknownFlag = code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /^Unknown option '([^']+)'/.exec((error as Error).message)?.[1] : undefined;
  if (unknownFlag === undefined) return new UsageError((error as Error).message.replace(/\s*\n\s*/g, ' '));
  const name = unknownFlag.replace(/^-+/, '').split('=')[0]!;
  const nearest = known
    .map((k) => ({ k, d: k.startsWith(name) || name.startsWith(k) ? Math.abs(k.length - name.length) : editDistance(name, k) }))
    .filter(({ d }) => d <= Math.max(1, Math.floor(name.length / 3)))
    .sort((a, b) => a.d - b.d)[0]?.k;
  const hint = nearest !== undefined ? `did you mean --${nearest}?` : known.length > 0 ? `the options are ${known.map((k) => `--${k}`).join(', ')}` : 'its only options are --data-dir and --help';
  return new UsageError(`Unknown option '${unknownFlag}'; ${hint}`);
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
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

/**
 * How the user started this CLI, as the start of a command they can paste: `npx callable` (npx runs
 * it from a node_modules/.bin link), `callable` when that name on PATH is this script, else
 * `node /abs/bin/callable.js`. A CLI run inside another program (tests) says `callable`.
 */
export function invokedAs(env: NodeJS.ProcessEnv, script: string | undefined): string {
  if (script === undefined || !/^callable(\.js)?$/.test(basename(script))) return 'callable';
  if ((env.npm_lifecycle_event === 'npx' || env.npm_command === 'exec') && /[\\/]node_modules[\\/]\.bin[\\/]callable$/.test(script)) return 'npx callable';
  const real = realpathOr(script);
  if (real === undefined) return 'callable';
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && realpathOr(join(dir, 'callable')) === real) return 'callable';
  }
  return `node ${shellQuote(real)}`;
}

/** `text` with each `callable COMMAND` it mentions starting the way this CLI was started (see invokedAs). */
export function withCommand(text: string, callable: string): string {
  return callable === 'callable' ? text : text.replace(/(?<![\w/.@-])callable (?=[a-z])/g, `${callable} `);
}


function realpathOr(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}
