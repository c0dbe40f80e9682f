// The warm isolates of a sandbox host: a few per function, created on demand, dropped when idle.
import { availableParallelism } from 'node:os';
import type { GuestCode } from './guestCode.ts';
import { WarmIsolate } from './warmIsolate.ts';

/**
 * Contexts sharing one isolate share its heap limit, and isolated-vm's limit is a guideline
 * that concurrent fresh contexts can trip; past this many calls in flight a second isolate of the
 * same function takes the load instead.
 */
const MAX_INFLIGHT_PER_ISOLATE = 4;
/**
 * isolated-vm runs isolates on a pool of hardware_concurrency() + 1 threads and starts a thread of
 * its own for each task beyond that (made and ended per task). A function gets no more isolates
 * than that pool has threads; its calls beyond those isolates' seats wait for a seat.
 */
const MAX_ISOLATES_PER_FUNCTION = Math.min(4, availableParallelism() + 1);
const IDLE_MS = 10 * 60 * 1000;
/** Spare contexts kept at once (the most recently used isolates'); each holds a small heap. */
const MAX_SPARES = 16;


export class IsolatePool {
  readonly #guest: GuestCode;
  readonly #maxWarm: number;
  readonly #onDiagnostic: (message: string) => void;
  readonly #slots = new Map<string, WarmIsolate[]>();
  /** Calls waiting for a seat, per function key, first come first served. */
  readonly #waiting = new Map<string, Waiter[]>();
  /** Runs of an isolate waiting for the engine (ctx.fetch, ctx.elicit…): they hold no seat meanwhile. */
  readonly #parked = new Map<WarmIsolate, number>();
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

  /**
   * An isolate of the function with a free seat (fewer than MAX_INFLIGHT_PER_ISOLATE runs that are
   * not waiting for the engine), a new one while the function has fewer than
   * MAX_ISOLATES_PER_FUNCTION, or undefined when every seat is taken: then `wait()` for one.
   */
  tryAcquire(functionName: string, memoryMb: number): WarmIsolate | undefined {
    const key = `${functionName}@${memoryMb}`;
    if (this.#waiting.has(key)) return undefined;
    const slot = this.#pick(key, memoryMb, false);
    if (slot) this.#take(slot);
    return slot;
  }

  /**
   * Waits for a seat (in turn with the function's other waiting calls); rejects with the signal's
   * reason when it aborts first. A seat frees when a run ends or starts waiting for the engine, so
   * a call never waits behind runs that wait for it (a ctx.elicit answered by calling the tool).
   */
  wait(functionName: string, memoryMb: number, signal: AbortSignal): Promise<WarmIsolate> {
    const key = `${functionName}@${memoryMb}`;
    return new Promise<WarmIsolate>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason as Error);
        return;
      }
      const waiter: Waiter = {
        memoryMb,
        resolve: (slot) => {
          signal.removeEventListener('abort', onAbort);
          resolve(slot);
        },
      };
      const onAbort = (): void => {
        const queue = this.#waiting.get(key);
        const at = queue?.indexOf(waiter) ?? -1;
        if (queue && at >= 0) {
          queue.splice(at, 1);
          if (queue.length === 0) this.#waiting.delete(key);
        }
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const queue = this.#waiting.get(key);
      if (queue) queue.push(waiter);
      else this.#waiting.set(key, [waiter]);
      this.#serve(key);
    });
  }

  /** An isolate for a warm-up (compiling the module ahead of the first call): never waits. */
  acquireNow(functionName: string, memoryMb: number): WarmIsolate {
    const key = `${functionName}@${memoryMb}`;
    const slot = this.#pick(key, memoryMb, true)!;
    this.#take(slot);
    return slot;
  }

  /** A run of `slot` waits for the engine: its seat goes to a waiting call meanwhile. */
  park(slot: WarmIsolate): void {
    this.#parked.set(slot, (this.#parked.get(slot) ?? 0) + 1);
    this.#serve(slot.key);
  }

  /** The engine answered: the run is back in its isolate (over the seats if they were given away). */
  unpark(slot: WarmIsolate): void {
    const n = (this.#parked.get(slot) ?? 1) - 1;
    if (n > 0) this.#parked.set(slot, n);
    else this.#parked.delete(slot);
  }

  #seated(slot: WarmIsolate): number {
    return slot.inflight - (this.#parked.get(slot) ?? 0);
  }

  /** The least busy live isolate with a free seat, else a new one if allowed; `any`: the least busy regardless. */
  #pick(key: string, memoryMb: number, any: boolean): WarmIsolate | undefined {
    let list = this.#slots.get(key);
    if (list?.some((s) => s.isolate.isDisposed)) {
      list = list.filter((s) => !s.isolate.isDisposed);
      if (list.length > 0) this.#slots.set(key, list);
      else this.#slots.delete(key);
    }
    let best: WarmIsolate | undefined;
    let bestSeated = Number.POSITIVE_INFINITY;
    for (const s of list ?? []) {
      const seated = this.#seated(s);
      if (seated < bestSeated) [best, bestSeated] = [s, seated];
    }
    if (best !== undefined && bestSeated < MAX_INFLIGHT_PER_ISOLATE) return best;
    if ((list?.length ?? 0) < MAX_ISOLATES_PER_FUNCTION) {
      const slot = this.#create(key, memoryMb);
      this.#slots.set(key, [...(list ?? []), slot]);
      this.#trim(key);
      return slot;
    }
    return any ? best : undefined;
  }

  #take(slot: WarmIsolate): void {
    slot.inflight++;
    slot.lastUsed = Date.now();
    this.#startSweeper();
  }

  /** Gives free seats of `key` to its waiting calls, in turn. */
  #serve(key: string): void {
    const queue = this.#waiting.get(key);
    while (queue && queue.length > 0) {
      const slot = this.#pick(key, queue[0]!.memoryMb, false);
      if (!slot) return;
      const waiter = queue.shift()!;
      if (queue.length === 0) this.#waiting.delete(key);
      this.#take(slot);
      waiter.resolve(slot);
    }
  }

  release(slot: WarmIsolate): void {
    slot.inflight--;
    slot.lastUsed = Date.now();
    if (slot.isolate.isDisposed) this.#remove(slot);
    if (this.#waiting.has(slot.key)) this.#serve(slot.key);
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
    this.#parked.delete(slot);
    const list = this.#slots.get(slot.key);
    if (!list) return;
    const rest = list.filter((s) => s !== slot);
    if (rest.length === 0) this.#slots.delete(slot.key);
    else this.#slots.set(slot.key, rest);
  }
}

interface Waiter {
  memoryMb: number;
  resolve(slot: WarmIsolate): void;
}
