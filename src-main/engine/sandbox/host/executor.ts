import ivm from 'isolated-vm';
import { performance } from 'node:perf_hooks';
import { StudioError, toErrorInfo, type ErrorCode, type ErrorInfo } from '../../model/errors.ts';
import type { ContentItem, LogEntry, LogLevel } from '../../model/index.ts';
import type { CompiledModule as CompiledFunction, OutgoingRequest, ProgressUpdate, SandboxJob, SandboxOutcome } from '../protocol.ts';
import { callablePrelude } from './prelude.js';
import { pureHostOp, refusal, type HostAnswer } from './hostOps.ts';
import { IsolatePool } from './pool.ts';
import type { PreparedContext, WarmIsolate as IsolateSlot } from './warmIsolate.ts';

/** Errors from inside a fetch that end the whole run (a limit), not just reject the guest's promise. */
const RUN_ENDING_CODES = new Set<ErrorCode>(['response_too_large', 'fetch_limit']);
const LOG_LEVELS = new Set<LogLevel>(['debug', 'info', 'warn', 'error']);
const ENVELOPE_BYTES = '{"ok":true,"value":}'.length;
const PRELUDE_SOURCE = `(${callablePrelude.toString()})`;


/**
 * Runs functions in isolated-vm: a fresh Context per call inside a warm per-function isolate.
 * Every entry into the isolate carries the time left before the deadline as its timeout, so CPU
 * spent after an `await` is bounded too; awaited host work is bounded by the deadline timer.
 * Every crossing ends in a SandboxOutcome: the host never throws because of what a function did.
 */
export class SandboxExecutor {
  readonly #pool: IsolatePool;
  readonly #active = new Map<string, Run>();

  constructor(options: { maxWarmIsolates?: number; onDiagnostic?: (message: string) => void } = {}) {
    this.#pool = new IsolatePool(PRELUDE_SOURCE, options);
  }

  async run(job: SandboxJob): Promise<SandboxOutcome> {
    const run = new Run(job, this.#pool);
    this.#active.set(job.runId, run);
    try {
      return await run.execute();
    } finally {
      this.#active.delete(job.runId);
    }
  }

  /** CPU time used so far by the isolate of each run in flight (ns): busy runs are the ones whose figure moves. */
  cpuTimes(): Map<string, bigint> {
    const times = new Map<string, bigint>();
    for (const [runId, run] of this.#active) times.set(runId, run.cpuTime());
    return times;
  }

  /** The memory limits of the live isolates added up (MB). */
  get reservedMb(): number {
    return this.#pool.reservedMb;
  }

  /** Creates the isolate of a function and compiles its module ahead of its first call. */
  async warm(functionName: string, memoryMb: number, compiled: CompiledFunction): Promise<void> {
    const slot = this.#pool.acquire(functionName, memoryMb);
    try {
      await slot.script(compiled);
    } finally {
      this.#pool.release(slot);
    }
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

class Run {
  readonly #job: SandboxJob;
  readonly #pool: IsolatePool;
  readonly #started = performance.now();
  readonly #deadline: number;
  readonly #abort = new AbortController();
  readonly #logs: LogEntry[] = [];
  #logBytes = 0;
  #fetches = 0;
  #nextOp = 1;
  #timers = new Set<NodeJS.Timeout>();
  #failure: ErrorInfo | undefined;
  #finished = false;
  #settleRef: ivm.Reference | undefined;
  #slot: IsolateSlot | undefined;
  #onFailure: ((error: ErrorInfo) => void) | undefined;

  constructor(job: SandboxJob, pool: IsolatePool) {
    this.#job = job;
    this.#pool = pool;
    this.#deadline = this.#started + job.limits.timeoutMs;
  }

  cpuTime(): bigint {
    try {
      return this.#slot?.isolate.cpuTime ?? 0n;
    } catch {
      return 0n;
    }
  }

  #remaining(): number {
    return Math.max(1, Math.ceil(this.#deadline - performance.now()));
  }

  /** Ends the run now with `code`; the first failure wins. */
  #fail(code: ErrorCode, message: string, details?: Record<string, unknown>): void {
    if (this.#finished || this.#failure) return;
    this.#failure = details ? { code, message, details } : { code, message };
    this.#abort.abort();
    this.#onFailure?.(this.#failure);
  }

  async execute(): Promise<SandboxOutcome> {
    const job = this.#job;
    const failed = new Promise<ErrorInfo>((resolve) => {
      this.#onFailure = resolve;
    });
    const deadlineTimer = setTimeout(
      () => this.#fail('timeout', `the run exceeded its deadline of ${job.limits.timeoutMs} ms (timeoutMs); make it faster or raise timeoutMs`, { limit: 'timeoutMs' }),
      job.limits.timeoutMs,
    );
    const onCancel = (): void => this.#fail('cancelled', 'the run was cancelled');
    if (job.signal?.aborted) onCancel();
    job.signal?.addEventListener('abort', onCancel, { once: true });

    let prepared: PreparedContext | undefined;
    let exportsRef: ivm.Reference | undefined;
    let result: { json: string } | ErrorInfo;
    try {
      if (this.#failure) throw new Error('failed before start');
      const slot = this.#pool.acquire(job.functionName, job.limits.memoryMb);
      this.#slot = slot;
      const work = (async (): Promise<{ json: string }> => {
        const script = await slot.script(job.compiled);
        prepared = await slot.takeContext(job.compiled);
        prepared.binding.sync = this.#hostSync;
        prepared.binding.start = this.#hostStart;
        this.#settleRef = prepared.settle;
        for (const [level, message] of prepared.earlyLogs) this.#log(level, message);
        // The function's own code (module body, then the handler) always runs off the main thread,
        // each entry bounded by the time left.
        if (prepared.exports) {
          exportsRef = prepared.exports;
        } else {
          try {
            exportsRef = (await script.run(prepared.context, { reference: true, timeout: this.#remaining() })) as ivm.Reference;
          } catch (error) {
            if (this.#isLoadError(slot)) throw new StudioError('function_error', `the function's module threw while loading: ${guestMessage(error)}`);
            throw error;
          }
        }
        const json = (await prepared.invoke.apply(undefined, [exportsRef.derefInto(), job.argsJson, job.functionName, job.runId, Date.now() + this.#remaining()], {
          result: { promise: true, copy: true },
          timeout: this.#remaining(),
        })) as string;
        return { json };
      })();
      result = await Promise.race([work, failed]);
      // A run that failed early may leave `work` to reject later (abandoned promise): observe it.
      work.catch(() => {});
    } catch (error) {
      result = this.#failure ?? this.#classify(error);
    } finally {
      this.#finished = true;
      clearTimeout(deadlineTimer);
      job.signal?.removeEventListener('abort', onCancel);
      this.#abort.abort();
      for (const t of this.#timers) clearTimeout(t);
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
    // Heap figures wait for the isolate's lock: only measured when asked (the studio console).
    let heapBytes: number | undefined;
    if (job.measureHeap && slot && !slot.isolate.isDisposed) {
      try {
        heapBytes = (await slot.isolate.getHeapStatistics()).used_heap_size;
      } catch {
        heapBytes = undefined;
      }
    }
    if (slot) {
      this.#pool.release(slot);
      slot.prepareSpare(job.compiled, job.limits.timeoutMs);
    }
    const durationMs = Math.round((performance.now() - this.#started) * 100) / 100;
    const base = { logs: this.#logs, durationMs, ...(heapBytes === undefined ? {} : { heapBytes }) };
    if ('code' in result) return { ok: false, error: result, ...base, resultBytes: 0 };
    return this.#decode(result.json, base);
  }

  #isLoadError(slot: IsolateSlot): boolean {
    return !slot.isolate.isDisposed && performance.now() < this.#deadline - 1 && !this.#failure;
  }

  /** Turns an exception from isolated-vm into the limit it stands for. */
  #classify(error: unknown): ErrorInfo {
    if (error instanceof StudioError) return toErrorInfo(error);
    const slot = this.#slot;
    if (slot && slot.isolate.isDisposed && !slot.disposedByHost) {
      return {
        code: 'memory_limit',
        message: `the function used more than its memory limit of ${this.#job.limits.memoryMb} MB (memoryMb); use less memory or raise memoryMb`,
        details: { limit: 'memoryMb' },
      };
    }
    if (performance.now() >= this.#deadline - 2) {
      return {
        code: 'timeout',
        message: `the run exceeded its deadline of ${this.#job.limits.timeoutMs} ms (timeoutMs); make it faster or raise timeoutMs`,
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
        error: { code: 'result_too_large', message: `the result is ${bytes} bytes, over the result size limit of ${limit} bytes (limits.resultBytes); return less or raise the limit`, details: { limit: 'resultBytes' } },
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
      // The prelude wraps the value as {"ok":true,"value":<json>}: count only the value.
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

  // ---- host side of the prelude's bridge. Never throws: answers { ok, value | error }. ----

  readonly #hostSync = (op: unknown, a?: unknown, b?: unknown, c?: unknown, d?: unknown): HostAnswer => {
    try {
      if (this.#finished || this.#failure) return refusal('the run has ended');
      switch (op) {
        case 'log':
          return this.#log(a, b);
        case 'progress':
          return this.#progress(a, b, c);
        default:
          return pureHostOp(op, a, b, c, d);
      }
    } catch (error) {
      return refusal(error instanceof StudioError ? error.message : 'host operation failed');
    }
  };

  readonly #hostStart = (op: unknown, payload: unknown): HostAnswer => {
    try {
      if (this.#finished || this.#failure) return refusal('the run has ended');
      const id = this.#nextOp++;
      if (op === 'sleep') {
        const ms = typeof payload === 'number' && Number.isFinite(payload) ? Math.max(0, payload) : 0;
        if (ms > this.#remaining()) return { ok: true, value: id }; // would fire after the deadline: never does
        const timer = setTimeout(() => {
          this.#timers.delete(timer);
          this.#settle(id, true, undefined);
        }, ms);
        this.#timers.add(timer);
        return { ok: true, value: id };
      }
      if (op === 'fetch') {
        const request = readRequest(payload);
        if (typeof request === 'string') return refusal(`ctx.fetch: ${request}`, 'bad_input');
        this.#fetches++;
        if (this.#fetches > this.#job.limits.fetchCount) {
          const limit = this.#job.limits.fetchCount;
          this.#fail('fetch_limit', `the function made more than ${limit} requests (limits.fetchCount); make fewer or raise the limit`, { limit: 'fetchCount' });
          return refusal('fetch limit reached', 'fetch_limit');
        }
        this.#job
          .fetch(request, this.#abort.signal)
          .then(
            (response) => this.#settle(id, true, { ...response }),
            (error: unknown) => {
              const info = toErrorInfo(error);
              if (RUN_ENDING_CODES.has(info.code)) this.#fail(info.code, info.message, info.details);
              else this.#settle(id, false, { code: info.code, message: info.message });
            },
          )
          .catch(() => {});
        return { ok: true, value: id };
      }
      return refusal('unknown host operation');
    } catch {
      return refusal('host operation failed');
    }
  };

  #log(level: unknown, text: unknown): HostAnswer {
    if (typeof level !== 'string' || !LOG_LEVELS.has(level as LogLevel) || typeof text !== 'string') return refusal('log: bad entry');
    this.#logBytes += Buffer.byteLength(text) + 1;
    const limit = this.#job.limits.logBytes;
    if (this.#logBytes > limit) {
      this.#fail('log_limit', `the function logged more than ${limit} bytes (limits.logBytes); log less or raise the limit`, { limit: 'logBytes' });
      return refusal('log limit reached', 'log_limit');
    }
    const entry: LogEntry = { level: level as LogLevel, message: text, at: Math.round(performance.now() - this.#started) };
    this.#logs.push(entry);
    this.#job.onLog?.(entry);
    return { ok: true };
  }

  #progress(progress: unknown, total: unknown, message: unknown): HostAnswer {
    if (typeof progress !== 'number' || !Number.isFinite(progress)) return refusal('ctx.progress: progress must be a number');
    const update: ProgressUpdate = { progress };
    if (typeof total === 'number' && Number.isFinite(total)) update.total = total;
    if (typeof message === 'string') update.message = message.slice(0, 1000);
    this.#job.onProgress?.(update);
    return { ok: true };
  }

  /** Finishes an async host operation inside the isolate, with the time left as its CPU budget. */
  #settle(id: number, ok: boolean, value: unknown): void {
    const ref = this.#settleRef;
    if (this.#finished || this.#failure || !ref) return;
    ref
      .apply(undefined, [id, ok, value], { arguments: { copy: true }, timeout: this.#remaining() })
      .catch((error: unknown) => {
        if (this.#finished || this.#failure) return;
        const info = this.#classify(error);
        this.#fail(info.code, info.message, info.details);
      });
  }
}


function guestMessage(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

function readRequest(payload: unknown): OutgoingRequest | string {
  if (!payload || typeof payload !== 'object') return 'bad request';
  const p = payload as Record<string, unknown>;
  if (typeof p.url !== 'string' || p.url.length > 16_384) return 'the URL must be a string of at most 16384 characters';
  if (typeof p.method !== 'string') return 'method must be a string';
  if (!Array.isArray(p.headers) || !p.headers.every((h) => Array.isArray(h) && h.length === 2 && typeof h[0] === 'string' && typeof h[1] === 'string')) {
    return 'headers must be name/value pairs';
  }
  if (p.body !== undefined && !(p.body instanceof Uint8Array)) return 'body must be bytes';
  if (p.credential !== undefined && typeof p.credential !== 'string') return 'credential must be a string';
  if (p.redirect !== 'follow' && p.redirect !== 'manual' && p.redirect !== 'error') return 'redirect must be "follow", "manual" or "error"';
  return {
    url: p.url,
    method: p.method,
    headers: p.headers as Array<[string, string]>,
    body: p.body as Uint8Array | undefined,
    credential: p.credential as string | undefined,
    redirect: p.redirect,
  };
}

function validateContent(raw: unknown): ContentItem[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter((item): item is ContentItem => {
    if (!item || typeof item !== 'object') return false;
    const t = (item as { type?: unknown }).type;
    return t === 'text' || t === 'image' || t === 'audio' || t === 'resource';
  });
}
