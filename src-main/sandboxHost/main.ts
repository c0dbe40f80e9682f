// A sandbox host process: isolated-vm isolates and the in-isolate prelude, nothing else. It is
// started by the engine with a minimal environment and one open descriptor besides stdio, the
// channel (fd 3); it holds no database handle, no keychain and no secret, so a guest that escaped
// its isolate would find nothing here. It ends itself when the channel closes, when its parent
// goes away, or when its resident size goes over its memory cap (after saying which runs were
// allocating). The engine watches its heartbeat and kills it when it wedges.
import module from 'node:module';
import { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { ERROR_CODES, StudioError, type ErrorCode } from '../engine/model/errors.ts';
import { EngineMessageCheck, FrameReader, HEARTBEAT_MS, PROTOCOL_VERSION, flushFrames, writeFrame, type EngineMessage, type HostMessage, type IncomingResponse, type ResponseHead, type ResponseSink } from '../engine/sandbox/protocol.ts';
import { FETCH_ABORTED } from './bridge.ts';
import { SandboxExecutor } from './executor.ts';

const MB = 1024 * 1024;
/** Room over the resident size at start-up before any isolate's own allowance counts. */
const HEADROOM_BYTES = 64 * MB;
/** Each live isolate may make the process grow by this many times its memoryMb (V8's limit is a guideline). */
const ISOLATE_FACTOR = 2;
const WATCH_MS = 10;
/**
 * The host acts this far below its cap: a function can grow the process by tens of MB between two
 * samples (measured: 37 MB in 20 ms), and the cap is a ceiling the process must not cross.
 */
const TRIGGER_MARGIN_BYTES = 48 * MB;
/** CPU samples kept to tell which runs were busy when the cap was crossed (WATCH_MS apart). */
const CPU_WINDOW = 5;

const maxCapBytes = Number(argValue('--max-memory-mb') ?? 2048) * MB;
const parentPid = process.ppid;
const channel = new Socket({ fd: 3, readable: true, writable: true });
const executor = new SandboxExecutor({ onDiagnostic: (message) => process.stderr.write(`${message}\n`) });
const modules = new Map<string, { hash: string; code: string }>();
const runs = new Map<
  string,
  {
    fetches: Map<number, Waiter<IncomingResponse>>;
    /** The fetches that stream, by op: where their head and chunks go, and the head once it came. */
    sinks: Map<number, { sink: ResponseSink; head?: ResponseHead }>;
    asks: Map<number, Waiter<unknown>>;
  }
>();
let nextOp = 1;

function send(message: HostMessage): void {
  writeFrame(channel, message);
}

/** Sends `message` and what is queued before it at once: something a run waits on (flushFrames). */
function sendNow(message: HostMessage): void {
  writeFrame(channel, message);
  flushFrames(channel);
}

/** Ends this process at once: isolates stuck in a builtin would keep a normal exit waiting. */
function die(): never {
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
}

const reader = new FrameReader<EngineMessage>(EngineMessageCheck, handle, (reason) => {
  process.stderr.write(`sandbox host: the engine sent ${reason}; exiting\n`);
  die();
});
channel.on('data', (chunk: Buffer) => reader.push(chunk));
channel.on('end', die);
channel.on('close', die);
channel.on('error', die);

function handle(message: EngineMessage): void {
  switch (message.t) {
    case 'run':
      watchMemory();
      void startRun(message);
      return;
    case 'warm': {
      watchMemory();
      const compiled = moduleOf(message);
      if (compiled) void executor.warm(message.fn, message.memoryMb, compiled).catch(() => {});
      return;
    }
    case 'cancel':
      executor.cancel(message.runId);
      return;
    case 'fetched':
      runs.get(message.runId)?.sinks.delete(message.op);
      runs.get(message.runId)?.fetches.get(message.op)?.resolve(message.response);
      return;
    case 'fetchHead': {
      const streaming = runs.get(message.runId)?.sinks.get(message.op);
      if (streaming && !streaming.head) {
        streaming.head = message.head;
        const { runId, op } = message;
        // What the guest took frees the vendor's paused socket: it leaves at once.
        streaming.sink.head(message.head, { taken: (bytes) => sendNow({ t: 'fetchTaken', runId, op, bytes }) });
      }
      return;
    }
    case 'fetchChunk': {
      const streaming = runs.get(message.runId)?.sinks.get(message.op);
      if (streaming?.head) streaming.sink.chunk(message.chunk);
      return;
    }
    case 'fetchEnd': {
      const run = runs.get(message.runId);
      const head = run?.sinks.get(message.op)?.head;
      run?.sinks.delete(message.op);
      // The body went out in chunks: the settled response carries none.
      if (head) run?.fetches.get(message.op)?.resolve({ ...head, body: new Uint8Array(0) });
      return;
    }
    case 'answer': {
      const waiting = runs.get(message.runId)?.asks.get(message.op);
      if (message.ok) waiting?.resolve(message.value);
      else waiting?.reject(new StudioError(knownCode(message.error?.code ?? 'internal'), message.error?.message ?? 'the question was not answered', message.error?.details));
      return;
    }
    case 'fetchFailed': {
      const { code, message: text, details } = message.error;
      runs.get(message.runId)?.sinks.delete(message.op);
      runs.get(message.runId)?.fetches.get(message.op)?.reject(new StudioError(knownCode(code), text, details));
      return;
    }
  }
}

function moduleOf(message: { fn: string; hash: string; code?: string | undefined }): { code: string; hash: string } | undefined {
  if (message.code !== undefined) modules.set(message.fn, { hash: message.hash, code: message.code });
  const known = modules.get(message.fn);
  return known && known.hash === message.hash ? known : undefined;
}

async function startRun(message: Extract<EngineMessage, { t: 'run' }>): Promise<void> {
  const { runId } = message;
  const compiled = moduleOf(message);
  if (!compiled) {
    send({ t: 'done', runId, outcome: { ok: false, error: { code: 'internal', message: 'the sandbox host does not have this version of the function' }, logs: [], durationMs: 0, resultBytes: 0 } });
    return;
  }
  const state = {
    fetches: new Map<number, Waiter<IncomingResponse>>(),
    sinks: new Map<number, { sink: ResponseSink; head?: ResponseHead }>(),
    asks: new Map<number, Waiter<unknown>>(),
  };
  runs.set(runId, state);
  try {
    const outcome = await executor.run({
      functionName: message.fn,
      compiled,
      limits: message.limits,
      argsJson: message.argsJson,
      runId,
      measureHeap: message.measureHeap,
      secrets: message.secrets,
      onLog: (entry) => send({ t: 'log', runId, ...entry }),
      onProgress: (update) => send({ t: 'progress', runId, ...update }),
      // The engine performs the request (policy, credentials, trace) and answers with the response.
      // A fetch the function aborts is closed by the engine now (one in flight when the run ends, when the run is over).
      fetch: (request, signal, stream) =>
        answerOf(
          state.fetches,
          signal,
          (op) => {
            if (stream) state.sinks.set(op, { sink: stream });
            sendNow({ t: 'fetch', runId, op, request, ...(stream ? { stream: true } : {}) });
          },
          (op) => {
            if (signal.reason === FETCH_ABORTED) send({ t: 'fetchAbort', runId, op });
          },
        ),
      // ctx.elicit / ctx.sample: the engine asks (the client, the studio) and answers.
      ask: (request, signal) => answerOf(state.asks, signal, (op) => sendNow({ t: 'ask', runId, op, ...request })),
    });
    send({ t: 'done', runId, outcome });
    // Sent after the outcome, so the engine has its memory_limit before this host goes.
    if (executor.runaway !== undefined) endRunaway(executor.runaway);
  } catch (error) {
    send({ t: 'done', runId, outcome: { ok: false, error: { code: 'internal', message: `the sandbox failed: ${error instanceof Error ? error.message : String(error)}` }, logs: [], durationMs: 0, resultBytes: 0 } });
  } finally {
    runs.delete(runId);
    // The spare context prepared next may evaluate the module's top level.
    watchMemory();
  }
}

type Waiter<T> = { resolve: (value: T) => void; reject: (e: Error) => void };

/**
 * Sends a request to the engine under a new op number and waits for its answer (`handle` settles
 * it), or for `signal` (the run's end, or the function's abort), which calls `cancel` if still waiting.
 */
function answerOf<T>(waiting: Map<number, Waiter<T>>, signal: AbortSignal, ask: (op: number) => void, cancel?: (op: number) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const op = nextOp++;
    const settled = <A>(settle: (a: A) => void) => (a: A): void => {
      waiting.delete(op);
      settle(a);
    };
    waiting.set(op, { resolve: settled(resolve), reject: settled(reject) });
    signal.addEventListener('abort', () => {
      if (waiting.delete(op)) cancel?.(op);
      reject(new StudioError('cancelled', 'the run has ended'));
    });
    ask(op);
  });
}

function knownCode(code: string): ErrorCode {
  return (ERROR_CODES as readonly string[]).includes(code) ? (code as ErrorCode) : 'fetch_failed';
}

// ---- memory cap, heartbeat, parent watch ----

const baseline = process.memoryUsage.rss();
/**
 * The cap does not shrink while runs are in flight, nor below what the process still holds: an
 * isolate V8 just gave up on (or one disposed after its run's limit) releases its memory a moment
 * after its reservation is gone, and the next run must not be blamed for it. It never exceeds the
 * process's own ceiling.
 */
let heldCap = 0;
const capBytes = (rss: number): number => {
  const now = Math.min(maxCapBytes, baseline + HEADROOM_BYTES + ISOLATE_FACTOR * executor.reservedMb * MB);
  heldCap = runs.size > 0 || rss > now - TRIGGER_MARGIN_BYTES ? Math.max(heldCap, now) : now;
  return heldCap;
};
const cpuSamples: Array<Map<string, bigint>> = [];

/** The runs whose isolates used the most CPU over the last samples: the ones allocating. */
function suspects(): string[] {
  const now = executor.cpuTimes();
  const then = cpuSamples[0] ?? new Map<string, bigint>();
  let best = 0n;
  let busiest: string[] = [];
  for (const [runId, cpu] of now) {
    const delta = cpu - (then.get(runId) ?? 0n);
    if (delta > best) [best, busiest] = [delta, [runId]];
    else if (delta === best && delta > 0n) busiest.push(runId);
  }
  return busiest.length > 0 ? busiest : [...now.keys()];
}

/** Ends the process, saying so, when it is over its cap; true when it is. */
function overCap(rss: number): boolean {
  const cap = capBytes(rss);
  if (rss <= cap - TRIGGER_MARGIN_BYTES) return false;
  exitOverCap(rss, cap, suspects());
  return true;
}

/** Tells the engine this host is over its cap, then ends (the write is flushed first, with a fallback in case it never is). */
function exitOverCap(rss: number, cap: number, runIds: string[]): void {
  send({ t: 'overCap', rssBytes: rss, capBytes: cap, suspects: runIds });
  channel.end(() => die());
  setTimeout(die, 100);
}

/**
 * An isolate disposed for its memory limit still runs guest code stuck in a builtin (its run has
 * ended with memory_limit): it holds a core and grows past its limit until the builtin returns,
 * seconds later. The process ends as it does over its cap; the engine ends the runs it still
 * held with sandbox_crashed and starts another host.
 */
let endingRunaway = false;
function endRunaway(functionName: string): void {
  if (endingRunaway) return;
  endingRunaway = true;
  process.stderr.write(`sandbox host: "${functionName}" kept running inside a builtin after its isolate went over its memory limit; exiting\n`);
  const rss = process.memoryUsage.rss();
  exitOverCap(rss, capBytes(rss), []);
}

/**
 * The cap is watched every WATCH_MS while guest code may allocate: while a run is in flight, while
 * any isolate uses CPU (a warm-up, the spare context prepared after a run, which may evaluate a
 * module's top level, a run stuck in a builtin after its end was sent), and for WATCH_GRACE_MS
 * after. An idle host is checked at the heartbeat's pace only (sampling every 10 ms cost an idle
 * host about 1% of a core), and the heartbeat starts the close watch again if an isolate ran since.
 */
const WATCH_GRACE_MS = 1000;
let watchUntil = 0;
let watch: NodeJS.Timeout | undefined;
let guestCpuSeen = 0n;
/** Whether any isolate used CPU since the last look. */
function guestRan(): boolean {
  const now = executor.guestCpuNs();
  const ran = now !== guestCpuSeen;
  guestCpuSeen = now;
  return ran;
}
function watchMemory(): void {
  watchUntil = performance.now() + WATCH_GRACE_MS;
  watch ??= setInterval(() => {
    // A run whose isolate V8 gave up on ends now, not when its code next looks for termination.
    executor.endOverLimit();
    if (overCap(process.memoryUsage.rss())) return;
    cpuSamples.push(executor.cpuTimes());
    if (cpuSamples.length > CPU_WINDOW) cpuSamples.shift();
    if (runs.size > 0 || performance.now() <= watchUntil) return;
    // Guest code still running keeps the watch on; the isolates' CPU is read only here.
    if (guestRan()) watchUntil = performance.now() + WATCH_MS * 2;
    else {
      clearInterval(watch);
      watch = undefined;
      cpuSamples.length = 0;
    }
  }, WATCH_MS);
}

setInterval(() => {
  const rss = process.memoryUsage.rss();
  if (watch === undefined) {
    if (overCap(rss)) return;
    if (guestRan()) watchMemory();
  }
  send({ t: 'beat', rssBytes: rss, capBytes: capBytes(rss), runs: runs.size });
  // Reparented: the engine died without closing the channel (it always closes on SIGKILL, but be sure).
  if (process.ppid !== parentPid) die();
}, HEARTBEAT_MS);

process.on('uncaughtException', (error) => {
  process.stderr.write(`sandbox host: ${error instanceof Error ? error.message : String(error)}\n`);
  die();
});
process.on('unhandledRejection', (error) => {
  process.stderr.write(`sandbox host: unhandled rejection (kept running): ${error instanceof Error ? error.message : String(error)}\n`);
});

send({ t: 'ready', version: PROTOCOL_VERSION, pid: process.pid });
// A host ends by SIGKILL, which skips the compile cache's write at exit: the next host starts from
// it only if it is written now (the engine passes NODE_COMPILE_CACHE when it has one).
module.flushCompileCache?.();

function argValue(flag: string): string | undefined {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
