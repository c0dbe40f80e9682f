// The engine's sandbox: a few host processes, started beside the engine and replaced when one
// dies. A function always goes to the same host while it lives, so its isolate stays warm there.
import { availableParallelism } from 'node:os';
import { HostProcess } from './hostProcess.ts';
import type { CompiledModule, SandboxJob, SandboxOutcome } from './protocol.ts';

export interface SandboxOptions {
  /** How many host processes; by default one per two cores (at least one, at most four). */
  hosts?: number | undefined;
  /** The most one host process may grow to (MB), whatever its isolates' limits add up to. */
  maxHostMemoryMb?: number | undefined;
  /** A host without a heartbeat for this long is stopped and replaced (default 10 s). */
  heartbeatTimeoutMs?: number | undefined;
  diagnostic?: ((message: string) => void) | undefined;
}

/** Replacements allowed in a row before the next waits (a host that cannot start must not spin). */
const QUICK_DEATHS = 3;
const QUICK_DEATH_MS = 2000;
const RESPAWN_BACKOFF_MS = 1000;

export class Sandbox {
  readonly #slots: Array<HostProcess | undefined>;
  readonly #options: Required<Omit<SandboxOptions, 'hosts' | 'heartbeatTimeoutMs'>> & { heartbeatTimeoutMs?: number | undefined };
  readonly #deaths: number[] = [];
  #disposed = false;

  constructor(options: SandboxOptions = {}) {
    const count = options.hosts ?? Math.min(4, Math.max(1, Math.floor(availableParallelism() / 2)));
    this.#slots = new Array<HostProcess | undefined>(count).fill(undefined);
    this.#options = { maxHostMemoryMb: options.maxHostMemoryMb ?? 2048, heartbeatTimeoutMs: options.heartbeatTimeoutMs, diagnostic: options.diagnostic ?? (() => {}) };
  }

  /** Starts the host processes in the background (idempotent). */
  start(): void {
    for (let i = 0; i < this.#slots.length; i++) this.#host(i);
  }

  async run(job: SandboxJob): Promise<SandboxOutcome> {
    const host = this.#host(this.#slotOf(job.functionName));
    try {
      await host.ready;
    } catch (error) {
      return { ok: false, error: { code: 'sandbox_crashed', message: `the sandbox could not start for "${job.functionName}": ${(error as Error).message}` }, logs: [], durationMs: 0, resultBytes: 0 };
    }
    return host.run(job);
  }

  /** Readies a function's isolate in its host ahead of its first call. */
  warm(functionName: string, memoryMb: number, compiled: CompiledModule): void {
    const host = this.#host(this.#slotOf(functionName));
    host.ready.then(() => host.warm(functionName, memoryMb, compiled), () => {});
  }

  /** The host processes now (pid, resident size and cap from their last heartbeat). */
  get hosts(): Array<{ pid: number; rssBytes: number; capBytes: number; peakRssBytes: number; inflight: number }> {
    return this.#slots.filter((h): h is HostProcess => h !== undefined && h.alive).map((h) => ({ pid: h.pid, rssBytes: h.rssBytes, capBytes: h.capBytes, peakRssBytes: h.peakRssBytes, inflight: h.inflight }));
  }

  dispose(): void {
    this.#disposed = true;
    for (const host of this.#slots) host?.dispose();
  }

  #slotOf(functionName: string): number {
    let h = 0;
    for (let i = 0; i < functionName.length; i++) h = (h * 31 + functionName.charCodeAt(i)) | 0;
    return Math.abs(h) % this.#slots.length;
  }

  #host(index: number): HostProcess {
    const existing = this.#slots[index];
    if (existing?.alive) return existing;
    const host = new HostProcess({
      maxMemoryMb: this.#options.maxHostMemoryMb,
      silenceMs: this.#options.heartbeatTimeoutMs,
      diagnostic: this.#options.diagnostic,
      onExit: (dead) => this.#onExit(index, dead),
    });
    this.#slots[index] = host;
    return host;
  }

  /** A dead host is replaced at once, so the next call does not wait for a process to start. */
  #onExit(index: number, dead: HostProcess): void {
    if (this.#slots[index] !== dead || this.#disposed) return;
    this.#slots[index] = undefined;
    const now = Date.now();
    this.#deaths.push(now);
    while (this.#deaths.length > 0 && this.#deaths[0]! < now - QUICK_DEATH_MS) this.#deaths.shift();
    if (this.#deaths.length >= QUICK_DEATHS) {
      setTimeout(() => {
        if (!this.#disposed && this.#slots[index] === undefined) this.#host(index);
      }, RESPAWN_BACKOFF_MS).unref();
      return;
    }
    this.#host(index);
  }
}
