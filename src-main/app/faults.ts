// What main does when something goes wrong in it or in the window: write it down in a log file the
// user can find, keep going, and restart cleanly only when faults keep coming. Plain Node: the tests
// provoke these faults in real processes and on real (full, missing) folders.
import { appendFileSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { inspect } from 'node:util';

export const LOG_FILE = 'main.log';

/** Where main's log lives: the `logs` folder of the app's data folder (Electron's userData). */
export function logsDir(userDataDir: string): string {
  return join(userDataDir, 'logs');
}

/** One log entry: a timestamped first line, then the stack (or the value) indented below it. */
export function formatFault(kind: string, error: unknown, when: Date = new Date()): string {
  const detail =
    error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : typeof error === 'string' ? error : inspect(error, { depth: 4, breakLength: Infinity });
  const lines = detail.split('\n');
  return `[${when.toISOString()}] ${kind}: ${lines[0]}\n${lines
    .slice(1)
    .map((l) => `    ${l.trimStart()}\n`)
    .join('')}`;
}

export interface FaultLogOptions {
  /** The log file is moved to main.log.1 (replacing it) before an entry would take it past this size. */
  maxBytes?: number;
  /** Told when the log cannot be written (stderr in the app), with the entry itself. */
  fallback?: (message: string) => void;
}

/** Appends entries to `<dir>/main.log`. Never throws: a log that cannot be written goes to the fallback. */
export class FaultLog {
  readonly path: string;
  readonly #dir: string;
  readonly #maxBytes: number;
  readonly #fallback: (message: string) => void;

  constructor(dir: string, options: FaultLogOptions = {}) {
    this.#dir = dir;
    this.path = join(dir, LOG_FILE);
    this.#maxBytes = options.maxBytes ?? 1024 * 1024;
    this.#fallback = options.fallback ?? ((message) => void process.stderr.write(message));
  }

  /** Writes one entry; true when it reached the file. */
  write(entry: string): boolean {
    try {
      mkdirSync(this.#dir, { recursive: true });
      this.#rotate(Buffer.byteLength(entry));
      appendFileSync(this.path, entry);
      return true;
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      this.#fallback(`callable studio: could not write the log ${this.path} (${e.code ?? e.message}); the entry was:\n${entry}`);
      return false;
    }
  }

  #rotate(incoming: number): void {
    let size: number;
    try {
      size = statSync(this.path).size;
    } catch {
      return;
    }
    if (size > 0 && size + incoming > this.#maxBytes) renameSync(this.path, `${this.path}.1`);
  }
}

/** Counts events within a sliding time window. */
export class FaultCounter {
  readonly #windowMs: number;
  #times: number[] = [];

  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  /** Records one event at `now`; returns how many fell within the window, this one included. */
  record(now: number): number {
    this.#times = this.#times.filter((t) => now - t < this.#windowMs);
    this.#times.push(now);
    return this.#times.length;
  }

  reset(): void {
    this.#times = [];
  }
}

/** Faults in main tolerated within a minute before the app restarts itself. */
export const MAX_MAIN_FAULTS = 5;
export const FAULT_WINDOW_MS = 60_000;

/** After an uncaught exception or unhandled rejection in main: keep going, or restart the app cleanly. */
export function mainFaultDecision(faultsInWindow: number): 'continue' | 'relaunch' {
  return faultsInWindow > MAX_MAIN_FAULTS ? 'relaunch' : 'continue';
}

/**
 * After the window's renderer process is gone (`render-process-gone`): a clean exit is left alone; the
 * first crash within the window reloads the page; a repeated one stops reloading and asks the user.
 */
export function rendererGoneDecision(reason: string, crashesInWindow: number): 'ignore' | 'reload' | 'ask' {
  if (reason === 'clean-exit') return 'ignore';
  return crashesInWindow <= 1 ? 'reload' : 'ask';
}

export interface FaultHandlerOptions {
  log: FaultLog;
  /** Called when faults keep coming (more than MAX_MAIN_FAULTS within FAULT_WINDOW_MS). */
  relaunch: () => void;
  now?: () => number;
}

/**
 * Installs `uncaughtException` and `unhandledRejection` handlers on `proc` that log each fault and keep
 * the process alive, relaunching once faults keep coming. Returns a function that removes them.
 */
export function installFaultHandlers(proc: NodeJS.EventEmitter, options: FaultHandlerOptions): () => void {
  const counter = new FaultCounter(FAULT_WINDOW_MS);
  const now = options.now ?? Date.now;
  let relaunching = false;
  const handle = (kind: string) => (error: unknown) => {
    const count = counter.record(now());
    const decision = mainFaultDecision(count);
    options.log.write(formatFault(kind, error) + (decision === 'relaunch' && !relaunching ? `    (${count} faults within ${FAULT_WINDOW_MS / 1000} s: restarting the app)\n` : ''));
    if (decision === 'relaunch' && !relaunching) {
      relaunching = true;
      options.relaunch();
    }
  };
  const onException = handle('uncaughtException');
  const onRejection = handle('unhandledRejection');
  proc.on('uncaughtException', onException);
  proc.on('unhandledRejection', onRejection);
  return () => {
    proc.off('uncaughtException', onException);
    proc.off('unhandledRejection', onRejection);
  };
}
