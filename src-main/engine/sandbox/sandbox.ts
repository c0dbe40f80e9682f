// The engine's sandbox: a few host processes, started beside the engine and replaced when one
// dies. A function always goes to the same host while it lives, so its isolate stays warm there.
import { availableParallelism } from 'node:os';
import { HostProcess, type HostOptions } from './hostProcess.ts';
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
const DEFAULT_MAX_HOST_MEMORY_MB = 2048;

/** A host started by startHostEarly that no Sandbox has taken yet, and what it said meanwhile. */
let earlyHost: HostProcess | undefined;
const earlyNotes: string[] = [];

/**
 * Starts one sandbox host now, for a server that makes its Sandbox only once the rest of it has
 * loaded (`callable mcp` starts it before loading the MCP server and the engine): the first
 * Sandbox made with the default memory cap takes it, so a call right after start-up does not wait
 * for a whole host start. One that is never taken ends with this process (its channel closes).
 * Returns its process id.
 */
export function startHostEarly(): number {
  if (earlyHost?.alive) return earlyHost.pid;
  earlyNotes.length = 0;
  earlyHost = new HostProcess({
    maxMemoryMb: DEFAULT_MAX_HOST_MEMORY_MB,
    diagnostic: (message) => void (earlyNotes.length < 100 && earlyNotes.push(message)),
    onExit: (dead) => {
      if (earlyHost === dead) earlyHost = undefined;
    },
  });
  return earlyHost.pid;
}

export class Sandbox {
  readonly #slots: Array<HostProcess | undefined>;
  readonly #options: Required<Omit<SandboxOptions, 'hosts' | 'heartbeatTimeoutMs'>> & { heartbeatTimeoutMs?: number | undefined };
  readonly #deaths: number[] = [];
  /** What each host was asked to warm (a replaced host starts with none). */
  readonly #warmed = new WeakMap<HostProcess, Set<string>>();
  #disposed = false;

  constructor(options: SandboxOptions = {}) {
    const count = options.hosts ?? Math.min(4, Math.max(1, Math.floor(availableParallelism() / 2)));
    this.#slots = new Array<HostProcess | undefined>(count).fill(undefined);
    this.#options = { maxHostMemoryMb: options.maxHostMemoryMb ?? DEFAULT_MAX_HOST_MEMORY_MB, heartbeatTimeoutMs: options.heartbeatTimeoutMs, diagnostic: options.diagnostic ?? (() => {}) };
    this.#adoptEarlyHost();
  }

  /** Takes the host startHostEarly started as the first host, when it was started with this sandbox's cap (else ends it). */
  #adoptEarlyHost(): void {
    const host = earlyHost;
    earlyHost = undefined;
    if (!host) return;
    if (!host.adopt(this.#hostOptions(0))) {
      host.dispose();
      return;
    }
    this.#slots[0] = host;
    for (const note of earlyNotes.splice(0)) this.#options.diagnostic(note);
  }

  /** Starts the host processes in the background (idempotent). */
  start(): void {
    for (let i = 0; i < this.#slots.length; i++) this.#host(i);
  }

  async run(job: SandboxJob): Promise<SandboxOutcome> {
    let host = this.#host(this.#slotOf(job.functionName));
    // While the function's own host is starting, a host already up takes the call (its isolate is made there).
    if (!host.started) host = this.#slots.find((other): other is HostProcess => other?.started === true) ?? host;
    try {
      await host.ready;
    } catch (error) {
      return { ok: false, error: { code: 'sandbox_crashed', message: `the sandbox could not start for "${job.functionName}": ${(error as Error).message}` }, logs: [], durationMs: 0, resultBytes: 0 };
    }
    return host.run(job);
  }

  /** Readies a function's isolate in its host ahead of its first call (once per host and version: a server warms at start and again when tools are listed). */
  warm(functionName: string, memoryMb: number, compiled: CompiledModule): void {
    const host = this.#host(this.#slotOf(functionName));
    const key = `${functionName}@${compiled.hash}@${memoryMb}`;
    const warmed = this.#warmed.get(host) ?? new Set<string>();
    this.#warmed.set(host, warmed);
    if (warmed.has(key)) return;
    warmed.add(key);
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
    const host = new HostProcess(this.#hostOptions(index));
    this.#slots[index] = host;
    return host;
  }

  #hostOptions(index: number): HostOptions {
    return {
      maxMemoryMb: this.#options.maxHostMemoryMb,
      silenceMs: this.#options.heartbeatTimeoutMs,
      diagnostic: this.#options.diagnostic,
      onExit: (dead) => this.#onExit(index, dead),
    };
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
