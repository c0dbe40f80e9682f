import ivm from 'isolated-vm';
import { performance } from 'node:perf_hooks';
import { StudioError, toErrorInfo, type ErrorCode, type ErrorInfo } from '../engine/model/errors.ts';
import type { ContentItem, LogEntry } from '../engine/model/index.ts';
import { resultTooLargeMessage, timeoutMessage } from '../engine/model/toolResults.ts';
import type { CompiledModule as CompiledFunction, SandboxJob, SandboxOutcome } from '../engine/sandbox/protocol.ts';
import { RunBridge, type RunControl } from './bridge.ts';
import { defaultCacheDir, guestSource } from './guestBundle.ts';
import { GuestCode } from './guestCode.ts';
import { IsolatePool } from './pool.ts';
import type { PreparedContext, WarmIsolate as IsolateSlot } from './warmIsolate.ts';

const ENVELOPE_BYTES = '{"ok":true,"value":}'.length;
/** Why a run's signal aborts once it has ended (a reason of our own: the default builds a DOMException, with its stack, on every run). */
const RUN_ENDED = new StudioError('cancelled', 'the run has ended');
/**
 * How long the isolate of a run the host ended (deadline, limit, cancel) has to become free. Guest
 * code can outlive its run where the timeout cannot reach it (a loop whose catch swallows the
 * termination): past this its isolate is disposed, so it holds neither a CPU nor the next call.
 */
const STOP_GRACE_MS = 300;
/** The least timeoutMs a function may set (model/limits.ts, not imported: it loads zod, and the host starts without it). */
const SHORTEST_TIMEOUT_MS = 100;


/**
 * Runs functions in isolated-vm: a fresh Context per call inside a warm per-function isolate.
 * Every entry into the isolate carries the time left before the deadline as its timeout, so CPU
 * spent after an `await` is bounded too; awaited host work is bounded by the deadline timer.
 * Every crossing ends in a SandboxOutcome: the host never throws because of what a function did.
 */
export class SandboxExecutor {
  readonly #pool: IsolatePool;
  readonly #active = new Map<string, Run>();
  /**
   * The function whose guest code is still inside an isolate V8 gave up on for its memory limit,
   * STOP_GRACE_MS after its run was ended for it: the code is in a builtin that does not look for
   * termination (Array.prototype.fill on a huge array) and holds a core and growing memory until
   * the builtin returns, seconds later. Only ending the process stops it; set before that run's
   * outcome is returned.
   */
  runaway: string | undefined;

  constructor(options: { maxWarmIsolates?: number; onDiagnostic?: (message: string) => void } = {}) {
    // Built or read from the cache, and its code cache read or made, when the host starts: a first call waits for neither.
    const guest = new GuestCode(guestSource(), defaultCacheDir());
    void guest.prepare();
    this.#pool = new IsolatePool(guest, options);
  }

  /** Ends run `runId` with `cancelled` if it is in flight (the engine's cancel). */
  cancel(runId: string): void {
    this.#active.get(runId)?.fail('cancelled', 'the run was cancelled');
  }

  async run(job: SandboxJob): Promise<SandboxOutcome> {
    const run = new Run(job, this.#pool, (functionName) => (this.runaway ??= functionName));
    this.#active.set(job.runId, run);
    try {
      return await run.execute();
    } finally {
      this.#active.delete(job.runId);
    }
  }

  /**
   * Ends at once, with memory_limit, each run in flight whose isolate V8 has given up on (isolated-vm
   * disposes an isolate when a garbage collection leaves it over its memoryLimit). The run's own
   * entry into the isolate only returns when the guest's code next checks for termination, which a
   * builtin working on a huge object may not do for seconds. Called by the host's memory watch.
   */
  endOverLimit(): void {
    for (const run of this.#active.values()) run.endIfOverLimit();
  }

  /** CPU time used so far by the isolate of each run in flight (ns): busy runs are the ones whose figure moves. */
  cpuTimes(): Map<string, bigint> {
    const times = new Map<string, bigint>();
    for (const [runId, run] of this.#active) times.set(runId, run.cpuTime());
    return times;
  }

  /** CPU time all live isolates have used so far (ns), runs or not (warm-ups, spare contexts, a run past its end). */
  guestCpuNs(): bigint {
    return this.#pool.cpuTimeNs;
  }

  /** The memory limits of the live isolates added up (MB). */
  get reservedMb(): number {
    return this.#pool.reservedMb;
  }

  /**
   * Creates the isolate of a function, compiles its module and prepares its first call's context
   * ahead of that call. The module's top level is evaluated ahead only within the shortest
   * deadline a function may have, so it never gets more time than its call would.
   */
  async warm(functionName: string, memoryMb: number, compiled: CompiledFunction): Promise<void> {
    const slot = this.#pool.acquireNow(functionName, memoryMb);
    try {
      await slot.script(compiled);
    } finally {
      this.#pool.release(slot);
    }
    slot.prepareSpare(compiled, SHORTEST_TIMEOUT_MS, true);
  }

  /** Drops warm isolates (all, or one function's) so the next call starts fresh. */
  evict(functionName?: string): void {
    this.#pool.evict(functionName);
  }

  get warmIsolates(): number {
    return this.#pool.size;
  }

  dispose(): void {
    this.#pool.dispose();
  }
}

class Run implements RunControl {
  readonly #job: SandboxJob;
  readonly #pool: IsolatePool;
  readonly started = performance.now();
  readonly #deadline: number;
  /** Made when something first asks for the run's signal (a fetch, a wait for a seat): a plain call never does. */
  #abort: AbortController | undefined;
  readonly #bridge: RunBridge;
  #failure: ErrorInfo | undefined;
  #finished = false;
  #slot: IsolateSlot | undefined;
  /** The run's waits for the engine in progress (its seat lent while there is one), and whether its seat is given back. */
  #parks = 0;
  #released = false;
  #onFailure: ((error: ErrorInfo) => void) | undefined;
  readonly #onRunaway: (functionName: string) => void;
  /** Set when the run was ended because its isolate was disposed for its memory limit while its code was still inside. */
  #overLimitInside = false;

  constructor(job: SandboxJob, pool: IsolatePool, onRunaway: (functionName: string) => void) {
    this.#job = job;
    this.#pool = pool;
    this.#onRunaway = onRunaway;
    this.#deadline = this.started + job.limits.timeoutMs;
    // While the run waits for the engine (a fetch, a question) its isolate seat may serve a waiting call.
    const fetch: SandboxJob['fetch'] = (request, signal, stream) => this.#parked(job.fetch(request, signal, stream));
    const ask = job.ask;
    this.#bridge = new RunBridge({ ...job, fetch, ask: ask && ((request, signal) => this.#parked(ask(request, signal))) }, this);
  }

  /**
   * The run holds one seat however many waits it has at once (Promise.all of five fetches): it
   * lends it when its first wait starts and takes it back when its last one ends.
   */
  async #parked<T>(waiting: Promise<T>): Promise<T> {
    const slot = this.#slot;
    if (!slot || this.#released) return waiting;
    if (this.#parks++ === 0) this.#pool.park(slot);
    try {
      return await waiting;
    } finally {
      if (!this.#released && --this.#parks === 0) this.#pool.unpark(slot);
    }
  }

  get signal(): AbortSignal {
    if (this.#abort === undefined) {
      this.#abort = new AbortController();
      if (this.over()) this.#abort.abort(RUN_ENDED);
    }
    return this.#abort.signal;
  }

  over(): boolean {
    return this.#finished || this.#failure !== undefined;
  }

  cpuTime(): bigint {
    try {
      return this.#slot?.isolate.cpuTime ?? 0n;
    } catch {
      return 0n;
    }
  }

  remaining(): number {
    return Math.max(1, Math.ceil(this.#deadline - performance.now()));
  }

  /** Ends the run with memory_limit if its isolate was disposed for its memory limit (see SandboxExecutor.endOverLimit). */
  endIfOverLimit(): void {
    const slot = this.#slot;
    if (this.over() || !slot || !slot.isolate.isDisposed || slot.disposedByHost) return;
    this.#overLimitInside = true;
    const { code, message, details } = memoryLimitError(this.#job.limits.memoryMb);
    this.fail(code, message, details);
  }

  /** Ends the run now with `code`; the first failure wins. */
  fail(code: ErrorCode, message: string, details?: Record<string, unknown>): void {
    if (this.#finished || this.#failure) return;
    this.#failure = details ? { code, message, details } : { code, message };
    this.#abort?.abort(RUN_ENDED);
    this.#onFailure?.(this.#failure);
  }

  async execute(): Promise<SandboxOutcome> {
    const job = this.#job;
    const failed = new Promise<ErrorInfo>((resolve) => {
      this.#onFailure = resolve;
    });
    const deadlineTimer = setTimeout(
      () => this.fail('timeout', `the run exceeded its deadline of ${job.limits.timeoutMs} ms (timeoutMs); make it faster or raise timeoutMs`, { limit: 'timeoutMs' }),
      job.limits.timeoutMs,
    );
    const onCancel = (): void => this.fail('cancelled', 'the run was cancelled');
    if (job.signal?.aborted) onCancel();
    job.signal?.addEventListener('abort', onCancel, { once: true });

    let prepared: PreparedContext | undefined;
    let exportsRef: ivm.Reference | undefined;
    let result: { json: string } | ErrorInfo;
    let work: Promise<unknown> | undefined;
    try {
      if (this.#failure) throw new Error('failed before start');
      // Every seat of the function's isolates taken: wait for one (the deadline and a cancel end the wait).
      const slot = this.#pool.tryAcquire(job.functionName, job.limits.memoryMb) ?? (await this.#pool.wait(job.functionName, job.limits.memoryMb, this.signal));
      this.#slot = slot;
      const entry = (async (): Promise<{ json: string }> => {
        const script = await slot.script(job.compiled);
        prepared = await slot.takeContext(job.compiled);
        prepared.binding.sync = this.#bridge.sync;
        prepared.binding.start = this.#bridge.start;
        this.#bridge.attach(prepared.settle);
        for (const [level, message] of prepared.earlyLogs) this.#bridge.log(level, message);
        // The function's own code (module body, then the handler) always runs off the main thread,
        // each entry bounded by the time left.
        if (prepared.exports) {
          exportsRef = prepared.exports;
        } else {
          try {
            exportsRef = (await script.run(prepared.context, { reference: true, timeout: this.remaining() })) as ivm.Reference;
          } catch (error) {
            if (this.#isLoadError(slot)) throw new StudioError('function_error', `the function's module threw while loading: ${guestMessage(error)}`);
            throw error;
          }
        }
        const json = (await prepared.invoke.apply(undefined, [exportsRef.derefInto(), job.argsJson, job.functionName, job.runId, Date.now() + this.remaining()], {
          result: { promise: true, copy: true },
          timeout: this.remaining(),
        })) as string;
        return { json };
      })();
      work = entry;
      result = await Promise.race([entry, failed]);
      // A run that failed early may leave `entry` to reject later (abandoned promise): observe it.
      entry.catch(() => {});
    } catch (error) {
      result = this.#failure ?? this.classify(error);
    } finally {
      this.#finished = true;
      clearTimeout(deadlineTimer);
      job.signal?.removeEventListener('abort', onCancel);
      this.#abort?.abort(RUN_ENDED);
      this.#bridge.close();
      // Every Reference into the context is released: a held one keeps the context alive, and
      // leaked contexts make the isolate's GC pauses grow.
      try {
        if (exportsRef !== prepared?.exports) exportsRef?.release();
      } catch {
        /* the isolate is gone */
      }
      prepared?.release();
    }

    const slot = this.#slot;
    // isolated-vm rejects every entry into a disposed isolate once its code has left it: an entry
    // still open after the grace is code stuck in a builtin, past the limit.
    if (this.#overLimitInside && work && !(await settlesWithin(work, STOP_GRACE_MS))) this.#onRunaway(job.functionName);
    // Heap figures wait for the isolate's lock: only measured when asked (the studio console), or
    // to learn whether the guest of a run ended here has let go of its isolate.
    let heapBytes: number | undefined;
    if ((job.measureHeap || this.#failure) && slot && !slot.isolate.isDisposed) {
      const measured = await this.#heapOrStop(slot);
      if (job.measureHeap) heapBytes = measured;
    }
    if (slot) {
      if (this.#parks > 0) this.#pool.unpark(slot);
      this.#parks = 0;
      this.#released = true;
      this.#pool.release(slot);
      slot.prepareSpare(job.compiled, job.limits.timeoutMs);
    }
    const durationMs = Math.round((performance.now() - this.started) * 100) / 100;
    const base = { logs: this.#bridge.logs, durationMs, ...(heapBytes === undefined ? {} : { heapBytes }) };
    if ('code' in result) return { ok: false, error: result, ...base, resultBytes: 0 };
    return this.#decode(result.json, base);
  }

  /** The isolate's used heap once it is free; for a run ended here, its isolate is disposed if it is not free within STOP_GRACE_MS. */
  async #heapOrStop(slot: IsolateSlot): Promise<number | undefined> {
    const heap = slot.isolate.getHeapStatistics().then(
      (stats) => stats.used_heap_size,
      () => undefined,
    );
    if (!this.#failure) return heap;
    // Other calls share the isolate: one of them may be what holds it, and their own deadlines stand.
    if (slot.inflight > 1) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<'stuck'>((resolve) => (timer = setTimeout(() => resolve('stuck'), STOP_GRACE_MS)));
    const first = await Promise.race([heap, stuck]);
    clearTimeout(timer);
    if (first !== 'stuck') return first;
    this.#pool.discard(slot);
    return undefined;
  }

  #isLoadError(slot: IsolateSlot): boolean {
    return !slot.isolate.isDisposed && performance.now() < this.#deadline - 1 && !this.#failure;
  }

  /** Turns an exception from isolated-vm into the limit it stands for. */
  classify(error: unknown): ErrorInfo {
    if (error instanceof StudioError) return toErrorInfo(error);
    const slot = this.#slot;
    if (slot && slot.isolate.isDisposed && !slot.disposedByHost) return memoryLimitError(this.#job.limits.memoryMb);
    if (slot && slot.isolate.isDisposed && slot.stopped) {
      return { code: 'sandbox_crashed', message: `"${this.#job.functionName}" did not finish: another call of it kept running past its end and its isolate was stopped; call it again`, details: { function: this.#job.functionName } };
    }
    if (performance.now() >= this.#deadline - 2) {
      return {
        code: 'timeout',
        message: timeoutMessage(this.#job.limits.timeoutMs),
        details: { limit: 'timeoutMs' },
      };
    }
    return { code: 'internal', message: `the sandbox failed: ${error instanceof Error ? error.message : String(error)}` };
  }

  #decode(json: string, base: { logs: LogEntry[]; durationMs: number; heapBytes?: number }): SandboxOutcome {
    const limit = this.#job.limits.resultBytes;
    const bytes = Buffer.byteLength(json);
    if (bytes > limit + 32) {
      return {
        ok: false,
        error: { code: 'result_too_large', message: resultTooLargeMessage(bytes, limit), details: { limit: 'resultBytes' } },
        ...base,
        resultBytes: bytes,
      };
    }
    let parsed: { ok: boolean; value?: unknown; content?: unknown; error?: { name?: string; message?: string; stack?: string; code?: string } };
    try {
      parsed = JSON.parse(json) as typeof parsed;
    } catch {
      return { ok: false, error: { code: 'internal', message: 'the sandbox returned an unreadable result' }, ...base, resultBytes: bytes };
    }
    if (parsed.ok) {
      if (parsed.content !== undefined) return { ok: true, value: null, content: validateContent(parsed.content), ...base, resultBytes: bytes };
      // The guest wraps the value as {"ok":true,"value":<json>}: count only the value.
      return { ok: true, value: parsed.value ?? null, ...base, resultBytes: Math.max(0, bytes - ENVELOPE_BYTES) };
    }
    const e = parsed.error ?? {};
    const name = typeof e.name === 'string' ? e.name : 'Error';
    const message = typeof e.message === 'string' ? e.message : 'unknown error';
    const details: Record<string, unknown> = { name };
    if (typeof e.stack === 'string') details.stack = e.stack.slice(0, 8000);
    if (typeof e.code === 'string') details.guestCode = e.code;
    return { ok: false, error: { code: 'function_error', message: `${name}: ${message}`, details }, ...base, resultBytes: 0 };
  }
}

/** Whether `work` settles (either way) within `ms`. */
async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const settled = await Promise.race([work.then(() => true, () => true), late]);
  clearTimeout(timer);
  return settled;
}

function memoryLimitError(memoryMb: number): ErrorInfo & { details: Record<string, unknown> } {
  return {
    code: 'memory_limit',
    message: `the function used more than its memory limit of ${memoryMb} MB (memoryMb); use less memory or raise memoryMb`,
    details: { limit: 'memoryMb' },
  };
}

function guestMessage(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

function validateContent(raw: unknown): ContentItem[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter((item): item is ContentItem => {
    if (!item || typeof item !== 'object') return false;
    const t = (item as { type?: unknown }).type;
    return t === 'text' || t === 'image' || t === 'audio' || t === 'resource';
  });
}
