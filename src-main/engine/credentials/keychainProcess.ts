// The engine's side of the keychain helper process (keychainHelper.ts): every keychain call goes
// there, off the event loop, with a deadline. A helper that does not answer in time is killed (a
// wedged native call cannot be interrupted in a thread, and would hold this process's exit) and the
// next call starts a new one. The helper never keeps this process alive by itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { StudioError } from '../model/index.ts';
import { compileCacheEnv } from '../nodeChild.ts';
import type { HelperAnswer, HelperRequest } from './keychainHelper.ts';

const HELPER_ENTRY = fileURLToPath(new URL('./keychainHelper.ts', import.meta.url));

/** How long one keychain call may take before it fails as "not answering" (CALLABLE_KEYCHAIN_TIMEOUT_MS overrides). */
export const KEYCHAIN_TIMEOUT_MS = 5000;
/** How long the helper may take to start (a loaded machine starts Node slowly); not counted in the call's timeout. */
const START_TIMEOUT_MS = 15_000;
/** An idle helper exits after this long (a long-lived server does not keep a process for a keychain it rarely reads). */
const IDLE_MS = 30_000;

const ENV_ADVICE = 'or set CALLABLE_SECRETS=env and pass each secret as CALLABLE_SECRET_<NAME> (name upper-cased, - as _)';

/** What the keychain said, turned into the one error a user sees: locked, not answering, or not available. */
export function keychainFailure(detail: string): StudioError {
  if (/did not receive a reply|no ?reply|timed? ?out/i.test(detail)) {
    return new StudioError('keychain_not_answering', `the keychain is not answering (unlock it if it asks, or restart it, and retry); it said: ${detail}`, {
      keychain: 'not_answering',
    });
  }
  if (/\block|unlock|prompt|interaction is not allowed|user canceled|user cancelled/i.test(detail)) {
    return new StudioError('keychain_locked', `the keychain is locked (unlock it and retry); it said: ${detail}`, { keychain: 'locked' });
  }
  if (process.platform === 'linux' && existsSync('/proc/keys')) {
    return new StudioError(
      'keychain_unavailable',
      'No OS keychain is available: no Secret Service (gnome-keyring, KWallet) answers on D-Bus in this session, and the kernel session keyring is not used ' +
        `because it loses secrets at logout or reboot. Start a Secret Service (log in to a desktop session, or run gnome-keyring-daemon), ${ENV_ADVICE}. (keychain said: ${detail})`,
      { keychain: 'unavailable' },
    );
  }
  return new StudioError(
    'keychain_unavailable',
    `No OS keychain is available. On Linux a Secret Service (e.g. gnome-keyring) must be running in this session; ${ENV_ADVICE}. (keychain said: ${detail})`,
    { keychain: 'unavailable' },
  );
}

function notAnswering(timeoutMs: number): StudioError {
  return new StudioError(
    'keychain_not_answering',
    `the keychain is not answering (no answer within ${timeoutMs / 1000} s; if it asks to be unlocked, unlock it and retry)`,
    { keychain: 'not_answering' },
  );
}

interface Pending {
  resolve: (value: string | null) => void;
  reject: (error: Error) => void;
  line: string;
  timer: NodeJS.Timeout | undefined;
  onAbort: (() => void) | undefined;
  signal: AbortSignal | undefined;
}

export interface KeychainProcessOptions {
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
}

export class KeychainProcess {
  readonly #options: KeychainProcessOptions;
  #child: ChildProcess | undefined;
  #ready = false;
  #startTimer: NodeJS.Timeout | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #nextId = 1;
  /** Calls not settled yet, in the order they were made (a Map keeps it); one at a time is with the helper. */
  readonly #pending = new Map<number, Pending>();
  #inflight: number | undefined;

  constructor(options: KeychainProcessOptions) {
    this.#options = options;
  }

  /** The helper's pid while one runs (tests use it to stop it). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  call(op: HelperRequest['op'], service: string, account: string, secret?: string, signal?: AbortSignal): Promise<string | null> {
    if (signal?.aborted) return Promise.reject(cancelled());
    const id = this.#nextId++;
    const request: HelperRequest = secret === undefined ? { id, op, service, account } : { id, op, service, account, secret };
    return new Promise<string | null>((resolve, reject) => {
      const pending: Pending = { resolve, reject, line: `${JSON.stringify(request)}\n`, timer: undefined, onAbort: undefined, signal };
      if (signal) {
        pending.onAbort = () => this.#settle(id, cancelled());
        signal.addEventListener('abort', pending.onAbort, { once: true });
      }
      this.#pending.set(id, pending);
      clearTimeout(this.#idleTimer);
      this.#ensureChild();
      if (this.#ready) this.#arm(id, pending);
      this.#pump();
    });
  }

  /** Ends the helper; calls in flight fail. */
  dispose(): void {
    this.#end(new StudioError('keychain_unavailable', 'the keychain helper was stopped (the engine is closing)', { keychain: 'unavailable' }));
  }

  /**
   * Starts a call's time limit, from when it was made (or the helper became ready): calls made
   * together (a list of credentials) share one deadline, though the helper answers them one at a
   * time. A call still queued at its deadline fails alone; the one the helper holds was wedged.
   */
  #arm(id: number, pending: Pending): void {
    pending.timer ??= setTimeout(() => {
      if (this.#inflight === id) this.#end(notAnswering(this.#options.timeoutMs));
      else this.#settle(id, notAnswering(this.#options.timeoutMs));
    }, this.#options.timeoutMs);
  }

  /** Hands the helper the oldest waiting call once it is free (the keychain library is synchronous: one at a time). */
  #pump(): void {
    const child = this.#child;
    if (!child || !this.#ready || this.#inflight !== undefined) return;
    const next = this.#pending.entries().next();
    if (next.done) return;
    const [id, pending] = next.value;
    this.#inflight = id;
    child.stdin!.write(pending.line);
  }

  #ensureChild(): ChildProcess {
    if (this.#child) return this.#child;
    // The keychain needs the session's bus and runtime folders, never the secrets of env mode.
    const env = { ...compileCacheEnv(), ...Object.fromEntries(Object.entries(this.#options.env).filter(([key]) => !key.startsWith('CALLABLE_SECRET_') && key !== 'CALLABLE_MCP_TOKEN')) };
    const child = spawn(process.execPath, [HELPER_ENTRY], { stdio: ['pipe', 'pipe', 'ignore'], env });
    this.#child = child;
    this.#ready = false;
    let buffered = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (text: string) => {
      buffered += text;
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        this.#onLine(child, line);
      }
    });
    child.stdin!.on('error', () => {});
    child.on('error', (error) => {
      if (this.#child === child) this.#end(keychainFailure(`the keychain helper could not start: ${error.message}`));
    });
    child.on('exit', (code, signal) => {
      if (this.#child === child) this.#end(keychainFailure(`the keychain helper exited (${signal ?? `exit code ${code}`})`));
    });
    this.#startTimer = setTimeout(() => this.#end(notAnswering(START_TIMEOUT_MS)), START_TIMEOUT_MS);
    // Never keeps this process alive by itself: a call in flight does (its timer).
    child.unref();
    (child.stdout as unknown as Socket).unref();
    (child.stdin as unknown as Socket).unref();
    return child;
  }

  #onLine(child: ChildProcess, line: string): void {
    if (this.#child !== child) return;
    let answer: HelperAnswer | { ready: true };
    try {
      answer = JSON.parse(line) as HelperAnswer | { ready: true };
    } catch {
      return;
    }
    if ('ready' in answer) {
      clearTimeout(this.#startTimer);
      this.#ready = true;
      for (const [id, pending] of this.#pending) this.#arm(id, pending);
      this.#pump();
      return;
    }
    this.#settle(answer.id, answer.ok ? answer.value : keychainFailure(answer.message));
  }

  #settle(id: number, outcome: string | null | Error): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    if (this.#inflight === id) this.#inflight = undefined;
    if (pending.onAbort) pending.signal?.removeEventListener('abort', pending.onAbort);
    if (outcome instanceof Error) pending.reject(outcome);
    else pending.resolve(outcome);
    if (this.#pending.size === 0 && this.#child) {
      clearTimeout(this.#idleTimer);
      this.#idleTimer = setTimeout(() => this.#retire(), IDLE_MS);
      this.#idleTimer.unref();
    }
    this.#pump();
  }

  /** Lets an idle helper go: its stdin closes and it exits by itself; the next call starts another. */
  #retire(): void {
    if (this.#pending.size > 0 || !this.#child) return;
    const child = this.#child;
    this.#child = undefined;
    this.#ready = false;
    child.stdin!.end();
  }

  /** Kills the helper (wedged, dead or no longer needed) and fails every call it held. */
  #end(error: StudioError): void {
    clearTimeout(this.#startTimer);
    clearTimeout(this.#idleTimer);
    const child = this.#child;
    this.#child = undefined;
    this.#ready = false;
    this.#inflight = undefined;
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const id of [...this.#pending.keys()]) this.#settle(id, error);
  }
}

function cancelled(): StudioError {
  return new StudioError('cancelled', 'the keychain call was abandoned: the run ended first');
}
