// The warm isolates of a sandbox host: a few per function, created on demand, dropped when idle.
import type { GuestCode } from './guestCode.ts';
import { WarmIsolate } from './warmIsolate.ts';

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


export class IsolatePool {
  readonly #guest: GuestCode;
  readonly #maxWarm: number;
  readonly #onDiagnostic: (message: string) => void;
  readonly #slots = new Map<string, WarmIsolate[]>();
  /** Droppers of the spare contexts held now, oldest first. */
  readonly #spares = new Set<() => void>();
  #sweeper: NodeJS.Timeout | undefined;

  constructor(guest: GuestCode, options: { maxWarmIsolates?: number; onDiagnostic?: (message: string) => void }) {
    this.#guest = guest;
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

  /** CPU time every live isolate has used so far (ns): when it moves, guest code (or its compiler) ran. */
  get cpuTimeNs(): bigint {
    let ns = 0n;
    for (const list of this.#slots.values()) {
      for (const slot of list) {
        try {
          if (!slot.isolate.isDisposed) ns += slot.isolate.cpuTime;
        } catch {
          // Disposed meanwhile.
        }
      }
    }
    return ns;
  }

  acquire(functionName: string, memoryMb: number): WarmIsolate {
    const key = `${functionName}@${memoryMb}`;
    let list = (this.#slots.get(key) ?? []).filter((s) => !s.isolate.isDisposed);
    let slot = list.reduce<WarmIsolate | undefined>((best, s) => (best === undefined || s.inflight < best.inflight ? s : best), undefined);
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

  release(slot: WarmIsolate): void {
    slot.inflight--;
    slot.lastUsed = Date.now();
    if (slot.isolate.isDisposed) this.#remove(slot);
  }

  /** Disposes an isolate whose guest code kept running after its run ended; its other runs end too. */
  discard(slot: WarmIsolate): void {
    slot.stopped = true;
    this.#dispose(slot);
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

  #create(key: string, memoryMb: number): WarmIsolate {
    return new WarmIsolate(key, memoryMb, this.#guest, this.#spares, MAX_SPARES, this.#onDiagnostic);
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

  #dispose(slot: WarmIsolate): void {
    slot.disposedByHost = true;
    if (!slot.isolate.isDisposed) slot.isolate.dispose();
    this.#remove(slot);
  }

  #remove(slot: WarmIsolate): void {
    const list = this.#slots.get(slot.key);
    if (!list) return;
    const rest = list.filter((s) => s !== slot);
    if (rest.length === 0) this.#slots.delete(slot.key);
    else this.#slots.set(slot.key, rest);
  }
}
