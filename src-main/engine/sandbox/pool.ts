import ivm from 'isolated-vm';
import type { CompiledFunction } from '../functions/compile.ts';

/** A warm isolate for one function: its prelude and compiled module stay compiled between calls. */
export interface IsolateSlot {
  readonly key: string;
  readonly isolate: ivm.Isolate;
  readonly memoryMb: number;
  readonly prelude: ivm.Script;
  inflight: number;
  lastUsed: number;
  /** Set when the host disposed the isolate on purpose (eviction), so it is not taken for a memory crash. */
  disposedByHost: boolean;
  script(compiled: CompiledFunction): Promise<ivm.Script>;
}

/**
 * Contexts sharing one isolate share its heap limit, and isolated-vm's limit is a guideline
 * that concurrent fresh contexts can trip; past this many calls in flight a second isolate of the
 * same function takes the load instead.
 */
const MAX_INFLIGHT_PER_ISOLATE = 4;
const MAX_ISOLATES_PER_FUNCTION = 4;
const IDLE_MS = 10 * 60 * 1000;

export class IsolatePool {
  readonly #preludeSource: string;
  readonly #maxWarm: number;
  readonly #onDiagnostic: (message: string) => void;
  readonly #slots = new Map<string, IsolateSlot[]>();
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
    return {
      key,
      isolate,
      memoryMb,
      prelude,
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
    };
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
