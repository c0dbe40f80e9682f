// The relay between the bridge and the engine process, and its supervisor. Plain Node, no Electron:
// main uses it for the window, and the tests drive the same code against a real engine process.
import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { z } from 'zod';
import { contract, EVENT_NAMES, type EngineStatus, type Envelope, type EventName, type EventPayload, type MethodName } from '../../src-preload/contract.ts';
import { decodeMessage, encodeMessage, EngineToMainSchema, PROTOCOL_VERSION, type EngineToMain } from '../engineProcess/protocol.ts';
import type { NodeRuntime } from './nodeRuntime.ts';
import { authorizationUrlDecision } from './windowPolicy.ts';

export interface EngineProcessOptions {
  /** Which Node runs the engine (resolveNodeRuntime). When none fits, the relay stays unavailable with its message. */
  node: NodeRuntime;
  /** The engine process entry, src-main/engineProcess/main.ts. */
  entry: string;
  /** Arguments for the entry (`--data-dir`, `--mcp-port`). */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  /** Every change of state, with a message for the user. */
  onStatus?: (status: EngineStatus) => void;
  /**
   * Opens an OAuth sign-in page in the system browser; called only with a URL authorizationUrlDecision
   * allows. If it throws or rejects, the connect waiting for that sign-in ends with the reason.
   */
  openExternal?: (url: string) => void | Promise<void>;
  /** Where the relay reports what the user may need to read later (stderr in the app). */
  diagnostic?: (message: string) => void;
  /** Give up after this many unexpected exits within `crashWindowMs`. */
  maxCrashes?: number;
  crashWindowMs?: number;
  /** The first restart waits this long; each further one in the window twice as long, up to 5 s. */
  restartDelayMs?: number;
  /** How long a call waits for a starting or restarting engine before answering `engine_unavailable`. */
  callWaitMs?: number;
  /** An engine not ready after this long is killed and counted as a crash. */
  readyTimeoutMs?: number;
  /** How long close() waits for the engine to exit by itself before SIGKILL. */
  closeTimeoutMs?: number;
}

/**
 * The engine process is TypeScript run by Node's type stripping: it starts from Node's compile cache
 * (Node's own default folder), and passes it on to its sandbox hosts, unless the environment already
 * names a cache or turns it off.
 */
export function withCompileCache(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (env.NODE_COMPILE_CACHE || env.NODE_DISABLE_COMPILE_CACHE) return env;
  return { ...env, NODE_COMPILE_CACHE: join(tmpdir(), 'node-compile-cache') };
}

type Failure = Extract<Envelope<unknown>, { ok: false }>;
const unavailable = (message: string): Failure => ({ ok: false, error: { code: 'engine_unavailable', message } });
const badInput = (message: string): Failure => ({ ok: false, error: { code: 'bad_input', message } });

/** Runs the engine process, relays calls and events to and from it, and restarts it when it crashes. */
export class EngineProcess {
  readonly #options: Required<Omit<EngineProcessOptions, 'onStatus' | 'env' | 'args' | 'openExternal'>> & Pick<EngineProcessOptions, 'onStatus' | 'env' | 'args' | 'openExternal'>;
  #status: EngineStatus = { state: 'starting', message: 'Starting the engine…' };
  #child: ChildProcess | undefined;
  #pid: number | undefined;
  #started = false;
  #closed = false;
  #fatal: string | undefined;
  #crashes: number[] = [];
  #restartTimer: NodeJS.Timeout | undefined;
  #readyTimer: NodeJS.Timeout | undefined;
  #nextId = 1;
  readonly #pending = new Map<number, { channel: MethodName; resolve: (envelope: Envelope<unknown>) => void }>();
  readonly #readyWaiters = new Set<(ready: boolean) => void>();
  readonly #listeners = new Map<EventName, Set<(payload: unknown) => void>>();

  constructor(options: EngineProcessOptions) {
    this.#options = {
      diagnostic: () => {},
      maxCrashes: 5,
      crashWindowMs: 60_000,
      restartDelayMs: 250,
      callWaitMs: 20_000,
      readyTimeoutMs: 60_000,
      closeTimeoutMs: 5_000,
      ...options,
    };
  }

  get status(): EngineStatus {
    return { ...this.#status };
  }

  /** The engine process's pid while one runs. */
  get pid(): number | undefined {
    return this.#child ? this.#pid : undefined;
  }

  /** Starts the engine; resolves once it is ready, rejects with the user's message if it cannot run. */
  start(): Promise<void> {
    if (!this.#started) {
      this.#started = true;
      if (this.#options.node.ok) {
        this.#setStatus('starting', 'Starting the engine…');
        this.#spawn(this.#options.node.path);
      } else this.#setStatus('unavailable', this.#options.node.message);
    }
    return this.#waitReady(Infinity).then((ready) => {
      if (!ready) throw new Error(this.#status.message);
    });
  }

  /**
   * One bridge call: validated against the contract here, answered by the engine. Never rejects and
   * never hangs: when the engine is down, or dies while answering, the envelope says so.
   */
  async invoke(channel: string, payload: unknown): Promise<Envelope<unknown>> {
    if (typeof channel !== 'string' || !Object.hasOwn(contract, channel)) return badInput(`unknown method "${String(channel).slice(0, 100)}"`);
    const name = channel as MethodName;
    const parsed = contract[name].request.safeParse(payload);
    if (!parsed.success) return badInput(`${name}: ${issues(parsed.error)}`);
    if (this.#status.state !== 'ready' && !(await this.#waitReady(this.#options.callWaitMs))) {
      return unavailable(this.#status.state === 'unavailable' ? this.#status.message : `${name}: the engine was not ready within ${this.#options.callWaitMs / 1000} s (${this.#status.message}); try again in a moment.`);
    }
    const child = this.#child;
    if (!child) return unavailable(`${name}: the engine process is not running; try again in a moment.`);
    const id = this.#nextId++;
    // The engine validates the payload again: it trusts nothing that crosses its channel.
    const encoded = encodeMessage({ type: 'invoke', id, channel: name, payload });
    if (!encoded.ok) return badInput(`${name}: ${encoded.message}`);
    return new Promise((resolve) => {
      this.#pending.set(id, { channel: name, resolve });
      child.send(encoded.text, (error: Error | null) => {
        if (error) this.#settle(id, unavailable(`${name} did not reach the engine: ${error.message}`));
      });
    });
  }

  /** Engine events, and `engine:status` from the relay itself. Returns the unsubscribe function. */
  subscribe<E extends EventName>(event: E, listener: (payload: EventPayload<E>) => void): () => void {
    if (!EVENT_NAMES.includes(event)) throw new Error(`unknown event ${String(event)}`);
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    const l = listener as (payload: unknown) => void;
    set.add(l);
    return () => void set.delete(l);
  }

  /** Stops the engine: closes its channel, waits for it to exit, and kills it if it does not in time. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#restartTimer);
    clearTimeout(this.#readyTimer);
    this.#setStatus('unavailable', 'Callable Studio is closing.');
    this.#failPending('Callable Studio is closing.');
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    if (child.connected) child.disconnect();
    else child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([exited.then(() => true), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), this.#options.closeTimeoutMs)))]);
    clearTimeout(timer);
    if (!inTime) {
      this.#options.diagnostic(`the engine process did not exit within ${this.#options.closeTimeoutMs} ms of closing; killing it`);
      child.kill('SIGKILL');
      await exited;
    }
  }

  #spawn(nodePath: string): void {
    this.#fatal = undefined;
    const child = spawn(nodePath, ['--no-node-snapshot', this.#options.entry, ...(this.#options.args ?? [])], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: withCompileCache(this.#options.env ?? process.env),
      windowsHide: true,
    });
    this.#child = child;
    this.#pid = child.pid;
    child.on('message', (raw: unknown) => this.#receive(child, raw));
    child.on('error', (error) => {
      // Only a failed spawn leaves no pid; other errors (a failed send) are answered where they happen.
      if (child.pid !== undefined || child !== this.#child) return this.#options.diagnostic(`engine process: ${error.message}`);
      this.#child = undefined;
      clearTimeout(this.#readyTimer);
      this.#failPending(`the engine process could not start: ${error.message}`);
      this.#setStatus('unavailable', `Could not start the engine process with ${nodePath}: ${error.message}`);
    });
    child.on('exit', (code, signal) => this.#exited(child, code, signal));
    clearTimeout(this.#readyTimer);
    this.#readyTimer = setTimeout(() => {
      this.#options.diagnostic(`the engine process was not ready after ${this.#options.readyTimeoutMs / 1000} s; killing it`);
      child.kill('SIGKILL');
    }, this.#options.readyTimeoutMs);
  }

  #receive(child: ChildProcess, raw: unknown): void {
    if (child !== this.#child) return;
    const decoded = decodeMessage(EngineToMainSchema, raw);
    if (!decoded.ok) {
      this.#options.diagnostic(`refused a message from the engine process: ${decoded.reason}`);
      if (decoded.id !== undefined) this.#settle(decoded.id, { ok: false, error: { code: 'internal', message: `the engine's answer was refused: ${decoded.reason}` } });
      return;
    }
    const message: EngineToMain = decoded.message;
    switch (message.type) {
      case 'ready':
        clearTimeout(this.#readyTimer);
        if (message.version !== PROTOCOL_VERSION) {
          this.#fatal = `The engine speaks protocol version ${message.version} but this app speaks ${PROTOCOL_VERSION}: the installation is inconsistent; reinstall Callable Studio.`;
          child.kill('SIGKILL');
          return;
        }
        this.#pid = message.pid;
        this.#setStatus('ready', 'The engine is running.');
        return;
      case 'reply':
        this.#settle(message.id, message.envelope);
        return;
      case 'event':
        for (const l of this.#listeners.get(message.name) ?? []) l(message.payload);
        return;
      case 'open-url':
        this.#openSignIn(message.credential, message.url, message.authorizationEndpoint);
        return;
      case 'fatal':
        this.#fatal = message.message;
        return;
    }
  }

  /**
   * Opens a sign-in page the engine asked for, if it is one; otherwise, or if the browser cannot be
   * opened, the connect waiting for it ends at once with the reason, instead of waiting out its timeout.
   */
  #openSignIn(credential: string, url: string, authorizationEndpoint: string): void {
    const fail = (reason: string) => {
      this.#options.diagnostic(`${reason} (credential "${credential}"): ${url.slice(0, 200)}`);
      // The contract bounds a reason's length; a browser's error message is not bounded.
      void this.invoke('credentials:cancelConnect', { name: credential, reason: reason.slice(0, 1000) }).then((answer) => {
        if (!answer.ok) this.#options.diagnostic(`could not end the connect of credential "${credential}": ${answer.error.message}`);
      });
    };
    const decision = authorizationUrlDecision(url, authorizationEndpoint);
    if (!decision.allow) return fail(`the sign-in page was not opened: ${decision.reason}`);
    const open = this.#options.openExternal;
    if (!open) return fail('the sign-in page was not opened: there is no browser to open it in');
    const failed = (error: unknown) => fail(`the browser could not open the sign-in page: ${error instanceof Error ? error.message : String(error)}`);
    try {
      Promise.resolve(open(decision.url)).catch(failed);
    } catch (error) {
      failed(error);
    }
  }

  #exited(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.#child) return;
    this.#child = undefined;
    clearTimeout(this.#readyTimer);
    if (this.#closed) return this.#failPending('Callable Studio is closing.');
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    const now = Date.now();
    this.#crashes = [...this.#crashes.filter((t) => now - t < this.#options.crashWindowMs), now];
    let next: EngineStatus;
    if (this.#fatal !== undefined) {
      next = { state: 'unavailable', message: this.#fatal };
    } else if (this.#crashes.length >= this.#options.maxCrashes) {
      next = {
        state: 'unavailable',
        message: `The engine process stopped ${this.#crashes.length} times within ${Math.round(this.#options.crashWindowMs / 1000)} s (the last time it ${how}), so Callable Studio stopped restarting it. Quit and start the app again; its terminal shows what the engine reported.`,
      };
    } else {
      next = { state: 'restarting', message: `The engine process ${how}; restarting it…` };
    }
    this.#failPending(`the engine process ${how}. ${next.state === 'restarting' ? 'It is being restarted: try again in a moment.' : next.message}`);
    this.#options.diagnostic(next.message);
    this.#setStatus(next.state, next.message);
    if (next.state === 'restarting' && this.#options.node.ok) {
      const nodePath = this.#options.node.path;
      const delay = Math.min(this.#options.restartDelayMs * 2 ** (this.#crashes.length - 1), 5_000);
      this.#restartTimer = setTimeout(() => this.#spawn(nodePath), delay);
    }
  }

  #settle(id: number, envelope: Envelope<unknown>): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    pending.resolve(envelope);
  }

  #failPending(why: string): void {
    for (const [id, { channel }] of this.#pending) this.#settle(id, unavailable(`${channel} did not finish: ${why}`));
  }

  #waitReady(ms: number): Promise<boolean> {
    if (this.#status.state === 'ready') return Promise.resolve(true);
    if (this.#status.state === 'unavailable') return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (ready: boolean): void => {
        clearTimeout(timer);
        this.#readyWaiters.delete(done);
        resolve(ready);
      };
      const timer = Number.isFinite(ms) ? setTimeout(() => done(false), ms) : undefined;
      this.#readyWaiters.add(done);
    });
  }

  #setStatus(state: EngineStatus['state'], message: string): void {
    this.#status = { state, message };
    if (state === 'ready' || state === 'unavailable') for (const w of [...this.#readyWaiters]) w(state === 'ready');
    this.#options.onStatus?.(this.status);
    for (const l of this.#listeners.get('engine:status') ?? []) l(this.status);
  }
}

/** One line per problem, each naming the field (the engine words its own checks the same way). */
function issues(error: z.ZodError): string {
  return error.issues.map((i) => (i.path.length ? `${i.path.map(String).join('.')}: ${i.message}` : i.message)).join('; ');
}
