import ivm from 'isolated-vm';
import type { CompiledModule as CompiledFunction } from '../engine/sandbox/protocol.ts';
import { EarlyBridge, REFUSE_ALL, type HostBinding } from './bridge.ts';
import { GUEST_PART_OP } from './guestBundle.ts';
import type { GuestCode } from './guestCode.ts';

/** A fresh, never-used context with the prelude installed: what one call needs. */
export interface PreparedContext {
  context: ivm.Context;
  /** The guest's entry point (guest/index.js): settle(id, ok, value) and invoke(exports, argsJson, …) are the same function. */
  settle: ivm.Reference;
  invoke: ivm.Reference<(...a: unknown[]) => unknown>;
  binding: HostBinding;
  /** Set when the function's module was already evaluated in this context (a spare). */
  exports?: ivm.Reference | undefined;
  /** Logs the module wrote while it was evaluated ahead of the call: [level, message]. */
  earlyLogs: Array<[string, string]>;
  /** Releases the context and every Reference into it (a held Reference keeps a context alive). */
  release(): void;
}

/** The prelude is our code and quick; this only guards against a broken isolate. */
const PRELUDE_TIMEOUT_MS = 2000;
/** A module evaluated ahead of its call gets at most this long (a slow top level is left to the call). */
const EARLY_MODULE_TIMEOUT_MS = 250;

/**
 * A warm isolate for one function: its prelude and compiled module stay compiled between calls,
 * and after a call of a function that is called again the next call's context is prepared ahead.
 */
export class WarmIsolate {
  readonly key: string;
  readonly isolate: ivm.Isolate;
  readonly memoryMb: number;
  inflight = 0;
  lastUsed = Date.now();
  /** Set when the host disposed the isolate on purpose (eviction), so it is not taken for a memory crash. */
  disposedByHost = false;
  /** Set when it was disposed because guest code kept running after its run ended. */
  stopped = false;
  readonly #name: string;
  readonly #prelude: ivm.Script;
  readonly #guest: GuestCode;
  readonly #scripts = new Map<string, Promise<ivm.Script>>();
  /** Droppers of the spare contexts every isolate of the pool holds now, oldest first (shared). */
  readonly #spares: Set<() => void>;
  readonly #maxSpares: number;
  #spare: Promise<PreparedContext> | undefined;
  #spareHash: string | undefined;
  #calls = 0;
  /** Module versions whose top level did something that needs a run (fetch, timers) or failed: evaluated at call time only. */
  readonly #lateOnly = new Set<string>();

  constructor(key: string, memoryMb: number, guest: GuestCode, spares: Set<() => void>, maxSpares: number, onDiagnostic: (message: string) => void) {
    this.key = key;
    this.memoryMb = memoryMb;
    this.#name = key.slice(0, key.lastIndexOf('@'));
    this.#spares = spares;
    this.#maxSpares = maxSpares;
    this.isolate = new ivm.Isolate({
      memoryLimit: memoryMb,
      onCatastrophicError: (message: string) => onDiagnostic(`isolate for ${key} failed catastrophically: ${message}`),
    });
    this.#guest = guest;
    this.#prelude = guest.compileIn(this.isolate);
  }

  /** The function's module compiled in this isolate (one version kept: older ones are dropped). */
  script(compiled: CompiledFunction): Promise<ivm.Script> {
    let script = this.#scripts.get(compiled.hash);
    if (script === undefined) {
      for (const [hash, old] of this.#scripts) {
        this.#scripts.delete(hash);
        old.then((s) => s.release(), () => {});
      }
      script = this.isolate.compileScript(compiled.code, { filename: `${this.#name}.js` });
      script.catch(() => this.#scripts.delete(compiled.hash));
      this.#scripts.set(compiled.hash, script);
    }
    return script;
  }

  /** The spare context prepared in the background if there is one, else a new one. */
  async takeContext(compiled: CompiledFunction): Promise<PreparedContext> {
    this.#calls++;
    const ready = this.#spare;
    this.#spare = undefined;
    this.#spares.delete(this.#dropSpare);
    const taken = ready ? await ready.catch(() => undefined) : undefined;
    // A spare that evaluated another version of the module is not fresh for this one.
    if (taken && (taken.exports === undefined || this.#spareHash === compiled.hash)) return taken;
    taken?.release();
    return this.#prepare(this.inflight <= 1);
  }

  /**
   * After a call: prepare the next call's context off its critical path (functions called again
   * only), with the module already evaluated when that is safe (see #evaluateEarly). `ahead`: the
   * function is about to be called for the first time (a client listed its tools), so its first
   * call gets one too.
   */
  prepareSpare(compiled: CompiledFunction, timeoutMs: number, ahead = false): void {
    // Only for functions called more than once: an idle function called once keeps no spare.
    if ((!ahead && this.#calls < 2) || this.#spare !== undefined || this.isolate.isDisposed) return;
    // After the answer has gone out, not on its path.
    setImmediate(() => {
      if (this.#spare !== undefined || this.isolate.isDisposed || (ahead && this.#calls > 0)) return;
      this.#spareHash = compiled.hash;
      const early = !this.#lateOnly.has(compiled.hash);
      // An idle isolate is prepared synchronously: each asynchronous step is a hop to its
      // thread, and a call arriving meanwhile would wait for all of them.
      const idle = (): boolean => this.inflight === 0;
      const spare = this.#prepare(idle()).then(async (prepared) => {
        if (!early) return prepared;
        try {
          await this.#evaluateEarly(prepared, compiled, timeoutMs, idle());
          return prepared;
        } catch {
          // Not evaluable ahead of time: start over with a context that never saw the module.
          prepared.release();
          return this.#prepare(idle());
        }
      });
      this.#spare = spare;
      spare.catch(() => {
        if (this.#spare === spare) this.#spare = undefined;
      });
      this.#spares.add(this.#dropSpare);
      if (this.#spares.size > this.#maxSpares) this.#spares.values().next().value?.();
    });
  }

  readonly #dropSpare = (): void => {
    const old = this.#spare;
    this.#spare = undefined;
    this.#spares.delete(this.#dropSpare);
    old?.then(
      (p) => p.release(),
      () => {},
    );
  };

  // Synchronous when nothing else runs in the isolate (each async step is a hop to its thread);
  // asynchronous otherwise, since a synchronous step would wait on the isolate's lock.
  async #prepare(sync: boolean): Promise<PreparedContext> {
    const isolate = this.isolate;
    const prelude = this.#prelude;
    const binding: HostBinding = { ...REFUSE_ALL };
    const guest = this.#guest;
    // The guest runtime's own parts (guestBundle.ts) are answered whoever owns the context.
    const hostSync = (...a: unknown[]): unknown => (a[0] === GUEST_PART_OP ? guest.part(a[1]) : binding.sync(...(a as [unknown])));
    const callbacks = [new ivm.Callback(hostSync), new ivm.Callback((op: unknown, p: unknown) => binding.start(op, p))];
    const context = sync ? isolate.createContextSync() : await isolate.createContext();
    let api: ivm.Reference<(...a: unknown[]) => unknown> | undefined;
    try {
      const options = { reference: true as const, timeout: PRELUDE_TIMEOUT_MS };
      api = (sync ? prelude.runSync(context, options) : await prelude.run(context, options)) as ivm.Reference<(...a: unknown[]) => unknown>;
      const applyOptions = { result: { reference: true as const }, timeout: PRELUDE_TIMEOUT_MS };
      // Two entries into the isolate per context: each one takes its lock.
      const entry = (sync ? api.applySync(undefined, callbacks, applyOptions) : await api.apply(undefined, callbacks, applyOptions)) as ivm.Reference<(...a: unknown[]) => unknown>;
      api.release();
      const prepared: PreparedContext = {
        context,
        settle: entry,
        invoke: entry,
        binding,
        earlyLogs: [],
        release() {
          binding.sync = REFUSE_ALL.sync;
          binding.start = REFUSE_ALL.start;
          // Throws only when the isolate is already gone, which released everything anyway.
          try {
            prepared.exports?.release();
            entry.release();
            context.release();
          } catch {
            /* disposed */
          }
        },
      };
      return prepared;
    } catch (error) {
      api?.release();
      context.release();
      throw error;
    }
  }

  /**
   * Evaluates the module in a spare ahead of its call, so the call is a single entry into the
   * isolate. Only while the top level needs no run: its logs are kept for the call, random bytes
   * and URLs work, and anything else (fetch, timers) or a failure sends this module version back
   * to evaluation at call time, where it behaves (and fails) exactly as it always does.
   */
  async #evaluateEarly(prepared: PreparedContext, compiled: CompiledFunction, timeoutMs: number, sync: boolean): Promise<void> {
    const early = new EarlyBridge();
    prepared.binding.sync = early.sync;
    prepared.binding.start = early.start;
    try {
      const script = await this.#scripts.get(compiled.hash);
      if (!script) throw new Error('module not compiled');
      const options = { reference: true as const, timeout: Math.min(timeoutMs, EARLY_MODULE_TIMEOUT_MS) };
      prepared.exports = (sync ? script.runSync(prepared.context, options) : await script.run(prepared.context, options)) as ivm.Reference;
    } catch {
      early.needsRun = true;
    }
    prepared.binding.sync = REFUSE_ALL.sync;
    prepared.binding.start = REFUSE_ALL.start;
    prepared.earlyLogs.push(...early.logs);
    if (early.needsRun) {
      this.#lateOnly.add(compiled.hash);
      throw new Error('evaluate at call time');
    }
  }
}
