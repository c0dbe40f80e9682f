// The engine's side of one sandbox host process: starts it with nothing but the channel, sends it
// runs, answers its fetches through the engine's guarded fetch, and decides what each of its runs
// became when it dies. A host is expendable: it is killed when it wedges (a run past its deadline
// plus a grace, or no heartbeat), when it breaks the protocol, or when it reports it went over its
// memory cap; every run it held ends with an error that says which of those happened.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
// The errors module alone: `callable mcp` starts a host before the rest of the model (and zod) has loaded.
import { StudioError, toErrorInfo, type ErrorInfo } from '../model/errors.ts';
import type { LogEntry } from '../model/index.ts';
import { compileCacheEnv } from '../nodeChild.ts';
import { cacheHomeEnv } from '../userCache.ts';
import { FrameReader, HEARTBEAT_MS, HostMessageCheck, PROTOCOL_VERSION, writeFrame, type EngineMessage, type HostMessage } from './protocol.ts';
import type { ResponseFlow, ResponseSink, SandboxJob, SandboxOutcome } from './protocol.ts';

const HOST_ENTRY = fileURLToPath(new URL('../../sandboxHost/main.ts', import.meta.url));
/** A run still going this long after its deadline is stuck where the deadline cannot reach it. */
export const WEDGE_GRACE_MS = 1500;
/** Missing heartbeats for this long: the host's event loop is stuck (generous: a loaded machine delays timers). */
export const SILENCE_MS = 50 * HEARTBEAT_MS;
const START_TIMEOUT_MS = 15_000;
/**
 * V8 flags of every host. isolated-vm sizes an isolate's young generation from its memoryLimit (1.4
 * MB at the default 64 MB), less than a few fresh contexts allocate: scavenges ran every few calls and
 * promoted the context prepared for the next call, so old-generation marking followed. A larger
 * semi-space lets each context die young (13% less host CPU a call back to back, median of six pairs).
 * It also widens what isolated-vm lets byte arrays hold past memoryMb (3 MB to 12 at 4 MB; 48 at 16,
 * where a memory bomb reached the host's cap before its isolate's limit): test/engine/limits.test.ts.
 */
const HOST_NODE_FLAGS = ['--no-node-snapshot', '--max-semi-space-size=4'];
/** Why a fetch the function aborted was closed: its trace entry says so. */
const FETCH_ABORTED = new StudioError('cancelled', 'the function aborted the request');

interface HostRun {
  job: SandboxJob;
  started: number;
  logs: LogEntry[];
  fetches: Map<number, AbortController>;
  /** Streamed fetches by op: where to say how much of the body the function took. */
  flows: Map<number, ResponseFlow>;
  wedgeTimer: NodeJS.Timeout;
  resolve: (outcome: SandboxOutcome) => void;
  onAbort: () => void;
}

/** Why the engine ended a host (absent when the host died on its own). */
type Ending = { kind: 'wedged'; runId: string } | { kind: 'silent' } | { kind: 'overCap'; suspects: Set<string>; capBytes: number } | { kind: 'violation'; reason: string } | { kind: 'disposed' };

export interface HostOptions {
  /** The most any host may grow to, whatever its isolates' limits add up to. */
  maxMemoryMb: number;
  /** A host without a heartbeat for this long is killed (default SILENCE_MS). */
  silenceMs?: number | undefined;
  diagnostic: (message: string) => void;
  onExit: (host: HostProcess) => void;
}

export class HostProcess {
  readonly ready: Promise<void>;
  readonly #child: ChildProcess;
  #options: HostOptions;
  readonly #runs = new Map<string, HostRun>();
  /**
   * The module version this host holds for each function (it keeps the last one sent), so code
   * crosses once per change: a function put back to an earlier version is sent again.
   */
  readonly #sent = new Map<string, string>();
  readonly #silenceWatch: NodeJS.Timeout;
  #ending: Ending | undefined;
  #exited = false;
  #started = false;
  #lastBeat = performance.now();
  /** The latest heartbeat: resident size and the cap the host holds itself to. */
  rssBytes = 0;
  capBytes = 0;
  peakRssBytes = 0;

  constructor(options: HostOptions) {
    this.#options = options;
    // No environment beyond the compile cache and the user's cache folder (the engine's, so both keep
    // their files in one place): the host is told nothing it does not need (no secrets from CALLABLE_SECRET_*).
    this.#child = spawn(process.execPath, [...HOST_NODE_FLAGS, HOST_ENTRY, '--max-memory-mb', String(options.maxMemoryMb)], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
      env: { ...compileCacheEnv(), ...cacheHomeEnv(), ...(process.platform === 'win32' ? { SYSTEMROOT: process.env.SYSTEMROOT } : {}) },
    });
    const channel = this.#child.stdio[3] as unknown as import('node:net').Socket;
    let readyResolve!: () => void;
    let readyReject!: (error: Error) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      readyResolve = resolve;
      readyReject = reject;
    });
    this.ready.catch(() => {});
    const startTimer = setTimeout(() => {
      readyReject(new Error(`the sandbox host did not start within ${START_TIMEOUT_MS / 1000} s`));
      this.#end({ kind: 'silent' });
    }, START_TIMEOUT_MS);

    const reader = new FrameReader<HostMessage>(
      HostMessageCheck,
      (message) => {
        if (message.t === 'ready') {
          clearTimeout(startTimer);
          if (message.version === PROTOCOL_VERSION) readyResolve();
          else {
            readyReject(new Error(`the sandbox host speaks protocol ${message.version}, not ${PROTOCOL_VERSION}`));
            this.#end({ kind: 'violation', reason: 'a protocol version mismatch' });
          }
          return;
        }
        this.#onMessage(message);
      },
      (reason) => this.#end({ kind: 'violation', reason }),
    );
    channel.on('data', (chunk: Buffer) => reader.push(chunk));
    channel.on('error', () => {});
    let errText = '';
    this.#child.stderr!.setEncoding('utf8');
    this.#child.stderr!.on('data', (text: string) => {
      errText += text;
      for (let nl = errText.indexOf('\n'); nl >= 0; nl = errText.indexOf('\n')) {
        this.#options.diagnostic(`sandbox host ${this.pid}: ${errText.slice(0, nl)}`);
        errText = errText.slice(nl + 1);
      }
    });
    this.#child.on('error', (error) => {
      readyReject(new Error(`the sandbox host could not start: ${error.message}`));
    });
    this.#child.on('exit', (code, signal) => {
      clearTimeout(startTimer);
      readyReject(new Error(`the sandbox host exited while starting (${signal ?? `exit code ${code}`})`));
      this.#onExit(code, signal);
    });
    this.ready.then(() => {
      this.#started = true;
      this.#lastBeat = performance.now();
    }, () => {});
    this.#silenceWatch = setInterval(() => {
      if (this.#started && performance.now() - this.#lastBeat > (this.#options.silenceMs ?? SILENCE_MS)) this.#end({ kind: 'silent' });
    }, HEARTBEAT_MS * 2);
    this.#silenceWatch.unref();
    // A host never keeps the engine's process alive by itself: a run in flight does (its deadline timer).
    this.#child.unref();
    channel.unref();
    (this.#child.stderr as unknown as { unref(): void }).unref();
  }

  get pid(): number {
    return this.#child.pid ?? 0;
  }

  get alive(): boolean {
    return !this.#exited && this.#ending === undefined;
  }

  /** Alive and ready for runs (its start is over). */
  get started(): boolean {
    return this.#started && this.alive;
  }

  get inflight(): number {
    return this.#runs.size;
  }

  run(job: SandboxJob): Promise<SandboxOutcome> {
    return new Promise<SandboxOutcome>((resolve) => {
      const started = performance.now();
      if (!this.alive) {
        resolve(failed({ code: 'sandbox_crashed', message: `the sandbox for "${job.functionName}" is restarting; call again` }, [], started));
        return;
      }
      const onAbort = (): void => {
        this.#send({ t: 'cancel', runId: job.runId });
        const run = this.#runs.get(job.runId);
        for (const c of run?.fetches.values() ?? []) c.abort();
      };
      const run: HostRun = {
        job,
        started,
        logs: [],
        fetches: new Map(),
        flows: new Map(),
        onAbort,
        resolve,
        wedgeTimer: setTimeout(() => this.#end({ kind: 'wedged', runId: job.runId }), job.limits.timeoutMs + WEDGE_GRACE_MS),
      };
      this.#runs.set(job.runId, run);
      const code = this.#sent.get(job.functionName) === job.compiled.hash ? undefined : job.compiled.code;
      this.#sent.set(job.functionName, job.compiled.hash);
      this.#send({
        t: 'run',
        runId: job.runId,
        fn: job.functionName,
        hash: job.compiled.hash,
        ...(code === undefined ? {} : { code }),
        limits: job.limits,
        argsJson: job.argsJson,
        measureHeap: job.measureHeap === true,
        secrets: job.secrets ?? [],
      });
      if (job.signal?.aborted) onAbort();
      else job.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Creates a function's isolate and compiles its module ahead of its first call. */
  warm(functionName: string, memoryMb: number, compiled: { code: string; hash: string }): void {
    if (!this.alive) return;
    const code = this.#sent.get(functionName) === compiled.hash ? undefined : compiled.code;
    this.#sent.set(functionName, compiled.hash);
    this.#send({ t: 'warm', fn: functionName, hash: compiled.hash, ...(code === undefined ? {} : { code }), memoryMb });
  }

  /**
   * Hands a host started before its owner existed to that owner (its diagnostics, its exit, its
   * heartbeat bound). Refused (false) when it is gone or was started with another memory cap.
   */
  adopt(options: HostOptions): boolean {
    if (!this.alive || options.maxMemoryMb !== this.#options.maxMemoryMb) return false;
    this.#options = options;
    return true;
  }

  /** Ends the host; its runs end with `sandbox_crashed` unless a reason says otherwise. */
  dispose(): void {
    this.#end({ kind: 'disposed' });
  }

  #send(message: EngineMessage): void {
    if (this.#exited) return;
    const channel = this.#child.stdio[3] as import('node:net').Socket | null;
    if (channel) writeFrame(channel, message);
  }

  #onMessage(message: HostMessage): void {
    switch (message.t) {
      case 'beat':
        this.#lastBeat = performance.now();
        this.rssBytes = message.rssBytes;
        this.capBytes = message.capBytes;
        this.peakRssBytes = Math.max(this.peakRssBytes, message.rssBytes);
        return;
      case 'overCap':
        this.rssBytes = message.rssBytes;
        this.peakRssBytes = Math.max(this.peakRssBytes, message.rssBytes);
        this.#end({ kind: 'overCap', suspects: new Set(message.suspects), capBytes: message.capBytes });
        return;
      case 'log': {
        const run = this.#runs.get(message.runId);
        if (!run) return;
        const entry: LogEntry = { level: message.level, message: message.message, at: message.at };
        run.logs.push(entry);
        run.job.onLog?.(entry);
        return;
      }
      case 'progress': {
        const { t: _t, runId, ...update } = message;
        this.#runs.get(runId)?.job.onProgress?.(update);
        return;
      }
      case 'fetch':
        this.#fetch(message);
        return;
      case 'fetchAbort':
        this.#runs.get(message.runId)?.fetches.get(message.op)?.abort(FETCH_ABORTED);
        return;
      case 'fetchTaken':
        this.#runs.get(message.runId)?.flows.get(message.op)?.taken(message.bytes);
        return;
      case 'ask':
        this.#ask(message);
        return;
      case 'done': {
        const run = this.#runs.get(message.runId);
        if (!run) return;
        this.#finish(message.runId, message.outcome);
        return;
      }
      case 'ready':
        return;
    }
  }

  #fetch(message: Extract<HostMessage, { t: 'fetch' }>): void {
    const run = this.#runs.get(message.runId);
    if (!run) return;
    const controller = new AbortController();
    run.fetches.set(message.op, controller);
    const { runId, op } = message;
    const current = () => this.#runs.get(runId) === run;
    // Streamed: the head and each chunk go to the host as they arrive; the settled response is then only the end.
    let streamed = false;
    const sink: ResponseSink | undefined = message.stream
      ? {
          head: (head, flow) => {
            streamed = true;
            run.flows.set(op, flow);
            if (current()) this.#send({ t: 'fetchHead', runId, op, head });
          },
          chunk: (chunk) => {
            if (current()) this.#send({ t: 'fetchChunk', runId, op, chunk });
          },
        }
      : undefined;
    run.job.fetch(message.request, controller.signal, sink).then(
      (response) => {
        run.fetches.delete(message.op);
        run.flows.delete(op);
        if (current()) this.#send(streamed ? { t: 'fetchEnd', runId, op } : { t: 'fetched', runId, op, response });
      },
      (error: unknown) => {
        run.fetches.delete(message.op);
        run.flows.delete(op);
        if (this.#runs.get(message.runId) === run) this.#send({ t: 'fetchFailed', runId: message.runId, op: message.op, error: toErrorInfo(error) });
      },
    );
  }

  /** ctx.elicit / ctx.sample: asked through the job's `ask`, aborted with the run like a fetch. */
  #ask(message: Extract<HostMessage, { t: 'ask' }>): void {
    const run = this.#runs.get(message.runId);
    if (!run) return;
    const controller = new AbortController();
    run.fetches.set(message.op, controller);
    const answer = (ok: boolean, value: unknown, error?: ErrorInfo): void => {
      run.fetches.delete(message.op);
      if (this.#runs.get(message.runId) === run) this.#send({ t: 'answer', runId: message.runId, op: message.op, ok, value, ...(error ? { error } : {}) });
    };
    const asked = run.job.ask
      ? run.job.ask({ kind: message.kind, payload: message.payload }, controller.signal)
      : Promise.reject(new StudioError('ask_unavailable', `ctx.${message.kind} is not available in this run`));
    asked
      .then(
        (value) => answer(true, value),
        (error: unknown) => answer(false, null, toErrorInfo(error)),
      )
      .catch((error: unknown) => this.#options.diagnostic(`sandbox host ${this.pid}: an answer could not be sent: ${error instanceof Error ? error.message : String(error)}`));
  }

  #finish(runId: string, outcome: SandboxOutcome): void {
    const run = this.#runs.get(runId);
    if (!run) return;
    this.#runs.delete(runId);
    clearTimeout(run.wedgeTimer);
    run.job.signal?.removeEventListener('abort', run.onAbort);
    // The run is over: anything it still had in flight towards a vendor is closed.
    for (const c of run.fetches.values()) c.abort();
    run.resolve(outcome);
  }

  #end(ending: Ending): void {
    if (this.#ending || this.#exited) return;
    this.#ending = ending;
    if (ending.kind === 'violation') this.#options.diagnostic(`sandbox host ${this.pid} sent ${ending.reason}; it was stopped`);
    if (ending.kind === 'wedged') this.#options.diagnostic(`sandbox host ${this.pid} did not end a run past its deadline; it was stopped`);
    if (ending.kind === 'silent') this.#options.diagnostic(`sandbox host ${this.pid} stopped answering; it was stopped`);
    // Its runs settle when it has exited: until then the engine's process must not end for want of
    // anything else to wait for (a `callable run` whose wedged host was just killed).
    this.#child.ref();
    this.#child.kill('SIGKILL');
  }

  #onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.#exited = true;
    clearInterval(this.#silenceWatch);
    const ending = this.#ending;
    for (const [runId, run] of [...this.#runs]) {
      const name = run.job.functionName;
      const limits = run.job.limits;
      let error: ErrorInfo;
      if (ending?.kind === 'overCap' && ending.suspects.has(runId)) {
        error = {
          code: 'memory_limit',
          message: `the function used more memory than its sandbox allows (memoryMb is ${limits.memoryMb} MB; the sandbox process reached its cap of ${Math.round(ending.capBytes / 1048576)} MB); use less memory or raise memoryMb`,
          details: { limit: 'memoryMb' },
        };
      } else if (ending?.kind === 'wedged' && ending.runId === runId) {
        error = {
          code: 'timeout',
          message: `the run exceeded its deadline of ${limits.timeoutMs} ms (timeoutMs) inside a built-in that could not be interrupted; its sandbox was restarted. Make it faster or raise timeoutMs`,
          details: { limit: 'timeoutMs' },
        };
      } else {
        const why =
          ending?.kind === 'overCap' || ending?.kind === 'wedged'
            ? 'another run in the same sandbox process went over a limit and the process was restarted'
            : ending?.kind === 'silent'
              ? 'its sandbox process stopped answering and was restarted'
              : ending?.kind === 'violation'
                ? 'its sandbox process broke the protocol and was restarted'
                : ending?.kind === 'disposed'
                  ? 'the sandbox was shut down'
                  : `its sandbox process crashed (${signal ?? `exit code ${code}`}) and was restarted`;
        error = { code: 'sandbox_crashed', message: `"${name}" did not finish: ${why}; call it again`, details: { function: name } };
      }
      this.#finish(runId, failed(error, run.logs, run.started));
    }
    this.#options.onExit(this);
  }
}

function failed(error: ErrorInfo, logs: LogEntry[], started: number): SandboxOutcome {
  return { ok: false, error, logs, durationMs: Math.round((performance.now() - started) * 100) / 100, resultBytes: 0 };
}
