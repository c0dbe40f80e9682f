import ivm from 'isolated-vm';
import type { CompiledModule as CompiledFunction } from '../protocol.ts';
import { pureHostOp, type HostAnswer } from './hostOps.ts';

/** The host side of one context's bridge; a run points it at itself for as long as it owns the context. */
export interface HostBinding {
  sync: (op: unknown, a?: unknown, b?: unknown, c?: unknown, d?: unknown) => HostAnswer;
  start: (op: unknown, payload: unknown) => HostAnswer;
}

/** A fresh, never-used context with the prelude installed: what one call needs. */
export interface PreparedContext {
  context: ivm.Context;
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

/** A warm isolate for one function: its prelude and compiled module stay compiled between calls. */
export interface IsolateSlot {
  readonly key: string;
  readonly isolate: ivm.Isolate;
  readonly memoryMb: number;
  inflight: number;
  lastUsed: number;
  /** Set when the host disposed the isolate on purpose (eviction), so it is not taken for a memory crash. */
  disposedByHost: boolean;
  script(compiled: CompiledFunction): Promise<ivm.Script>;
  /** The spare context prepared in the background if there is one, else a new one. */
  takeContext(compiled: CompiledFunction): Promise<PreparedContext>;
  /**
   * After a call: prepare the next call's context off its critical path (functions called again
   * only), with the module already evaluated when that is safe (see `prepareSpare` below).
   */
  prepareSpare(compiled: CompiledFunction, timeoutMs: number): void;
}

/**
 * Contexts sharing one isolate share its heap limit, and isolated-vm's limit is a guideline
 * that concurrent fresh contexts can trip; past this many calls in flight a second isolate of the
 * same function takes the load instead.
 */
const MAX_INFLIGHT_PER_ISOLATE = 4;
const MAX_ISOLATES_PER_FUNCTION = 4;
const IDLE_MS = 10 * 60 * 1000;
/** Spare contexts kept at once (the most recently used isolates'); each holds a small heap. */
const MAX_SPARES = 16;
/** The prelude is our code and quick; this only guards against a broken isolate. */
const PRELUDE_TIMEOUT_MS = 2000;
/** A module evaluated ahead of its call gets at most this long (a slow top level is left to the call). */
const EARLY_MODULE_TIMEOUT_MS = 250;
const MAX_EARLY_LOGS = 100;
/** Host memory held for logs written ahead of a call; past it the module is evaluated at call time (where logBytes applies). */
const MAX_EARLY_LOG_BYTES = 64 * 1024;

const refuse: HostBinding = {
  sync: () => ({ ok: false, error: { message: 'no run owns this context' } }),
  start: () => ({ ok: false, error: { message: 'no run owns this context' } }),
};

export class IsolatePool {
  readonly #preludeSource: string;
  readonly #maxWarm: number;
  readonly #onDiagnostic: (message: string) => void;
  readonly #slots = new Map<string, IsolateSlot[]>();
  /** Droppers of the spare contexts held now, oldest first. */
  readonly #spares = new Set<() => void>();
  #sweeper: NodeJS.Timeout | undefined;

  constructor(preludeSource: string, options: { maxWarmIsolates?: number; onDiagnostic?: (message: string) => void }) {
    this.#preludeSource = preludeSource;
    this.#maxWarm = options.maxWarmIsolates ?? 128;
    this.#onDiagnostic = options.onDiagnostic ?? (() => {});
  }

  get size(): number {
    let n = 0;
    for (const list of this.#slots.values()) n += list.length;
    return n;
  }

  /** The memory limits of every live isolate added up: what this process may legitimately hold for them. */
  get reservedMb(): number {
    let mb = 0;
    for (const list of this.#slots.values()) for (const slot of list) if (!slot.isolate.isDisposed) mb += slot.memoryMb;
    return mb;
  }

  acquire(functionName: string, memoryMb: number): IsolateSlot {
    const key = `${functionName}@${memoryMb}`;
    let list = (this.#slots.get(key) ?? []).filter((s) => !s.isolate.isDisposed);
    let slot = list.reduce<IsolateSlot | undefined>((best, s) => (best === undefined || s.inflight < best.inflight ? s : best), undefined);
    if (slot === undefined || (slot.inflight >= MAX_INFLIGHT_PER_ISOLATE && list.length < MAX_ISOLATES_PER_FUNCTION)) {
      slot = this.#create(key, memoryMb);
      list = [...list, slot];
      this.#trim(key);
    }
    this.#slots.set(key, list);
    slot.inflight++;
    slot.lastUsed = Date.now();
    this.#startSweeper();
    return slot;
  }

  release(slot: IsolateSlot): void {
    slot.inflight--;
    slot.lastUsed = Date.now();
    if (slot.isolate.isDisposed) this.#remove(slot);
  }

  evict(functionName?: string): void {
    for (const [key, list] of this.#slots) {
      if (functionName !== undefined && !key.startsWith(`${functionName}@`)) continue;
      for (const slot of list) if (slot.inflight === 0) this.#dispose(slot);
    }
  }

  dispose(): void {
    for (const list of this.#slots.values()) for (const slot of list) this.#dispose(slot);
    this.#slots.clear();
    this.#spares.clear();
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }

  #create(key: string, memoryMb: number): IsolateSlot {
    const isolate = new ivm.Isolate({
      memoryLimit: memoryMb,
      onCatastrophicError: (message: string) => this.#onDiagnostic(`isolate for ${key} failed catastrophically: ${message}`),
    });
    const prelude = isolate.compileScriptSync(this.#preludeSource, { filename: 'callable:prelude' });
    const scripts = new Map<string, Promise<ivm.Script>>();
    const name = key.slice(0, key.lastIndexOf('@'));
    const spares = this.#spares;
    let spare: Promise<PreparedContext> | undefined;
    let calls = 0;
    let spareHash: string | undefined;
    /** Module versions whose top level did something that needs a run (fetch, timers) or failed: evaluated at call time only. */
    const lateOnly = new Set<string>();

    const dropSpare = (): void => {
      const old = spare;
      spare = undefined;
      spares.delete(dropSpare);
      old?.then(
        (p) => p.release(),
        () => {},
      );
    };

    // Synchronous when nothing else runs in the isolate (each async step is a hop to its thread);
    // asynchronous otherwise, since a synchronous step would wait on the isolate's lock.
    const prepare = async (sync: boolean): Promise<PreparedContext> => {
      const binding: HostBinding = { ...refuse };
      const callbacks = [new ivm.Callback((...a: unknown[]) => binding.sync(...(a as [unknown]))), new ivm.Callback((op: unknown, p: unknown) => binding.start(op, p))];
      const context = sync ? isolate.createContextSync() : await isolate.createContext();
      const refs: ivm.Reference[] = [];
      try {
        const options = { reference: true as const, timeout: PRELUDE_TIMEOUT_MS };
        const api = (sync ? prelude.runSync(context, options) : await prelude.run(context, options)) as ivm.Reference<(...a: unknown[]) => unknown>;
        refs.push(api);
        const applyOptions = { result: { reference: true as const }, timeout: PRELUDE_TIMEOUT_MS };
        const pair = (sync ? api.applySync(undefined, callbacks, applyOptions) : await api.apply(undefined, callbacks, applyOptions)) as ivm.Reference<unknown[]>;
        refs.push(pair);
        const settle = (sync ? pair.getSync(0, { reference: true }) : await pair.get(0, { reference: true })) as ivm.Reference;
        const invoke = (sync ? pair.getSync(1, { reference: true }) : await pair.get(1, { reference: true })) as ivm.Reference<(...a: unknown[]) => unknown>;
        for (const r of refs) r.release();
        const prepared: PreparedContext = {
          context,
          settle,
          invoke,
          binding,
          earlyLogs: [],
          release() {
            binding.sync = refuse.sync;
            binding.start = refuse.start;
            // Throws only when the isolate is already gone, which released everything anyway.
            try {
              prepared.exports?.release();
              settle.release();
              invoke.release();
              context.release();
            } catch {
              /* disposed */
            }
          },
        };
        return prepared;
      } catch (error) {
        for (const r of refs) r.release();
        context.release();
        throw error;
      }
    };

    /**
     * Evaluates the module in a spare ahead of its call, so the call is a single entry into the
     * isolate. Only while the top level needs no run: its logs are kept for the call, random bytes
     * and URLs work, and anything else (fetch, timers) or a failure sends this module version back
     * to evaluation at call time, where it behaves (and fails) exactly as it always does.
     */
    const evaluateEarly = async (prepared: PreparedContext, compiled: CompiledFunction, timeoutMs: number, sync: boolean): Promise<void> => {
      let needsRun = false;
      let logBytes = 0;
      prepared.binding.sync = (op, a, b, c, d) => {
        if (op === 'log' && typeof a === 'string' && typeof b === 'string') {
          logBytes += b.length;
          if (prepared.earlyLogs.length >= MAX_EARLY_LOGS || logBytes > MAX_EARLY_LOG_BYTES) needsRun = true;
          else prepared.earlyLogs.push([a, b]);
          return { ok: true };
        }
        if (op === 'random' || op === 'url') return pureHostOp(op, a, b, c, d);
        needsRun = true;
        return { ok: false, error: { message: 'not available before the call' } };
      };
      prepared.binding.start = () => {
        needsRun = true;
        return { ok: false, error: { message: 'not available before the call' } };
      };
      try {
        const script = await scripts.get(compiled.hash);
        if (!script) throw new Error('module not compiled');
        const options = { reference: true as const, timeout: Math.min(timeoutMs, EARLY_MODULE_TIMEOUT_MS) };
        prepared.exports = (sync ? script.runSync(prepared.context, options) : await script.run(prepared.context, options)) as ivm.Reference;
      } catch {
        needsRun = true;
      }
      prepared.binding.sync = refuse.sync;
      prepared.binding.start = refuse.start;
      if (needsRun) {
        lateOnly.add(compiled.hash);
        throw new Error('evaluate at call time');
      }
    };

    const slot: IsolateSlot = {
      key,
      isolate,
      memoryMb,
      inflight: 0,
      lastUsed: Date.now(),
      disposedByHost: false,
      script(compiled) {
        let script = scripts.get(compiled.hash);
        if (script === undefined) {
          // One compiled module per source version; older versions are dropped.
          for (const [hash, old] of scripts) {
            scripts.delete(hash);
            old.then((s) => s.release(), () => {});
          }
          script = isolate.compileScript(compiled.code, { filename: `${name}.js` });
          script.catch(() => scripts.delete(compiled.hash));
          scripts.set(compiled.hash, script);
        }
        return script;
      },
      async takeContext(compiled) {
        calls++;
        const ready = spare;
        spare = undefined;
        spares.delete(dropSpare);
        const taken = ready ? await ready.catch(() => undefined) : undefined;
        // A spare that evaluated another version of the module is not fresh for this one.
        if (taken && (taken.exports === undefined || spareHash === compiled.hash)) return taken;
        taken?.release();
        return prepare(this.inflight <= 1);
      },
      prepareSpare(compiled, timeoutMs) {
        // Only for functions called more than once: an idle function called once keeps no spare.
        if (calls < 2 || spare !== undefined || isolate.isDisposed) return;
        // After the answer has gone out, not on its path.
        setImmediate(() => {
          if (spare !== undefined || isolate.isDisposed) return;
          spareHash = compiled.hash;
          const early = !lateOnly.has(compiled.hash);
          // An idle isolate is prepared synchronously: each asynchronous step is a hop to its
          // thread, and a call arriving meanwhile would wait for all of them.
          const sync = slot.inflight === 0;
          spare = prepare(sync).then(async (prepared) => {
            if (!early) return prepared;
            try {
              await evaluateEarly(prepared, compiled, timeoutMs, sync && slot.inflight === 0);
              return prepared;
            } catch {
              // Not evaluable ahead of time: start over with a context that never saw the module.
              prepared.release();
              return prepare(sync && slot.inflight === 0);
            }
          });
          spare.catch(() => {
            spare = undefined;
          });
          spares.add(dropSpare);
          if (spares.size > MAX_SPARES) spares.values().next().value?.();
        });
      },
    };
    return slot;
  }

  /** Keeps the number of warm isolates bounded, dropping the least recently used idle ones. */
  #trim(exceptKey: string): void {
    const all = [...this.#slots.values()].flat().filter((s) => s.inflight === 0 && s.key !== exceptKey);
    all.sort((a, b) => a.lastUsed - b.lastUsed);
    let excess = this.size + 1 - this.#maxWarm;
    for (const slot of all) {
      if (excess <= 0) break;
      this.#dispose(slot);
      excess--;
    }
  }

  #startSweeper(): void {
    if (this.#sweeper) return;
    this.#sweeper = setInterval(() => {
      const cutoff = Date.now() - IDLE_MS;
      for (const list of this.#slots.values()) for (const slot of list) if (slot.inflight === 0 && slot.lastUsed < cutoff) this.#dispose(slot);
    }, 60_000);
    this.#sweeper.unref();
  }

  #dispose(slot: IsolateSlot): void {
    slot.disposedByHost = true;
    if (!slot.isolate.isDisposed) slot.isolate.dispose();
    this.#remove(slot);
  }

  #remove(slot: IsolateSlot): void {
    const list = this.#slots.get(slot.key);
    if (!list) return;
    const rest = list.filter((s) => s !== slot);
    if (rest.length === 0) this.#slots.delete(slot.key);
    else this.#slots.set(slot.key, rest);
  }
}
