// The host side of the prelude's bridge: every operation a guest can ask of the sandbox host, in
// one place. The prelude reaches the host only through two isolated-vm Callbacks per context,
// `hostSync(op, ...)` and `hostStart(op, payload)`; a context's HostBinding routes them to whoever
// owns the context now: nobody (refused), the module evaluated ahead of its call (EarlyBridge), or
// a run (RunBridge). Every answer is a copy, every argument is checked here, and nothing here
// throws into the isolate: a refusal is an answer.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import ivm from 'isolated-vm';
import { StudioError, toErrorInfo, type ErrorCode, type ErrorInfo } from '../engine/model/errors.ts';
import type { LogEntry, LogLevel } from '../engine/model/index.ts';
import { credentialNotListedMessage, fetchLimitMessage, logLimitMessage } from '../engine/model/toolResults.ts';
import type { AskRequest, IncomingResponse, OutgoingRequest, ProgressUpdate, ResponseFlow, ResponseSink, SandboxJob } from '../engine/sandbox/protocol.ts';
import { encodeMultipart, readParts } from './multipart.ts';
import { SubtleKeys } from './subtle.ts';

/** What the host answers an operation of the prelude: a value, or an error the guest sees. */
export type HostAnswer = { ok: true; value?: unknown } | { ok: false; error: { code?: string; message: string } };

/** The host side of one context's bridge; its owner points it at itself for as long as it owns the context. */
export interface HostBinding {
  sync: (op: unknown, a?: unknown, b?: unknown, c?: unknown, d?: unknown) => HostAnswer;
  start: (op: unknown, payload: unknown) => HostAnswer;
}

export function refusal(message: string, code = 'bad_input'): HostAnswer {
  return { ok: false, error: { code, message } };
}

/**
 * An asynchronous operation that never settles: what a guest still running after its run ended
 * gets, so it stops at its next await. A refusal would let `for (;;) try { await op } catch {}`
 * spin in microtasks, where isolated-vm's timeout ends up caught by the guest's own catch.
 */
const NEVER_SETTLED: HostAnswer = Object.freeze({ ok: true, value: 0 });

/** What a context answers while no run owns it. */
export const REFUSE_ALL: Readonly<HostBinding> = Object.freeze({
  sync: () => refusal('no run owns this context'),
  start: () => NEVER_SETTLED,
});

// ------------------------------------------------------------ pure ops ----

const UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });
const URL_PARTS = new Set(['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash']);

/** Host operations that need no run: random bytes, URL parsing and multipart encoding. Never throws. */
export function pureHostOp(op: unknown, a?: unknown, b?: unknown, c?: unknown, d?: unknown): HostAnswer {
  switch (op) {
    case 'multipart': {
      // A FormData body (Request, Response, fetch): encoded as ctx.fetch's multipart is, same boundary for the same parts.
      const parts = readParts(a);
      if (typeof parts === 'string') return refusal(`FormData: ${parts}`);
      const encoded = encodeMultipart(parts);
      if (encoded.body.byteLength > MAX_REQUEST_BODY_BYTES) return refusal(`FormData: the encoded form is over ${MAX_REQUEST_BODY_BYTES} bytes`);
      return { ok: true, value: encoded };
    }
    case 'now':
      // performance.now(): the host's monotonic clock in 100 µs steps (Chrome's resolution for pages that are not cross-origin isolated).
      return { ok: true, value: Math.floor(performance.now() * 10) / 10 };
    case 'random': {
      const n = typeof a === 'number' && Number.isInteger(a) && a >= 0 && a <= 65536 ? a : -1;
      if (n < 0) return refusal('random: bad length');
      return { ok: true, value: new Uint8Array(randomBytes(n)) };
    }
    case 'url':
      return parseUrl(a, b, c, d);
    case 'utf8':
      // The guest's UTF-8 decoding of a large body, natively: bad bytes as U+FFFD, a BOM kept.
      if (!(a instanceof Uint8Array)) return refusal('utf8: expected bytes');
      return { ok: true, value: UTF8.decode(a) };
    default:
      return refusal('unknown host operation');
  }
}

function parseUrl(href: unknown, base: unknown, part: unknown, value: unknown): HostAnswer {
  if (typeof href !== 'string' || (base !== undefined && typeof base !== 'string')) return refusal('URL: expected strings');
  let url: URL;
  try {
    url = base === undefined ? new URL(href) : new URL(href, base);
  } catch {
    return { ok: false, error: { code: 'bad_input', message: `Invalid URL: ${href.slice(0, 200)}` } };
  }
  if (part !== undefined) {
    if (typeof part !== 'string' || !URL_PARTS.has(part) || typeof value !== 'string') return refusal('URL: bad property');
    try {
      (url as unknown as Record<string, string>)[part] = value;
    } catch {
      return { ok: false, error: { code: 'bad_input', message: `Invalid URL: ${value.slice(0, 200)}` } };
    }
  }
  const { href: h, origin, protocol, username, password, host, hostname, port, pathname, search, hash } = url;
  return { ok: true, value: { href: h, origin, protocol, username, password, host, hostname, port, pathname, search, hash } };
}

// ------------------------------------------------- ahead of the call ----

const MAX_EARLY_LOGS = 100;
/** Host memory held for logs written ahead of a call; past it the module is evaluated at call time (where logBytes applies). */
const MAX_EARLY_LOG_BYTES = 64 * 1024;

/**
 * The bridge while a module is evaluated ahead of its call: logs are kept for the call, random
 * bytes and URLs work, and anything that needs a run (fetch, timers, progress) marks the module
 * version as one to evaluate at call time instead.
 */
export class EarlyBridge implements HostBinding {
  readonly logs: Array<[string, string]> = [];
  needsRun = false;
  #logBytes = 0;

  readonly sync = (op: unknown, a?: unknown, b?: unknown, c?: unknown, d?: unknown): HostAnswer => {
    if (op === 'log' && typeof a === 'string' && typeof b === 'string') {
      this.#logBytes += b.length;
      if (this.logs.length >= MAX_EARLY_LOGS || this.#logBytes > MAX_EARLY_LOG_BYTES) this.needsRun = true;
      else this.logs.push([a, b]);
      return { ok: true };
    }
    if (op === 'random' || op === 'url' || op === 'multipart' || op === 'now' || op === 'utf8') return pureHostOp(op, a, b, c, d);
    this.needsRun = true;
    return refusal('not available before the call');
  };

  readonly start = (): HostAnswer => {
    this.needsRun = true;
    return refusal('not available before the call');
  };
}

// ------------------------------------------------------------ a run ----

/** Why a fetch the guest aborted was closed (a reason of our own, like the run's: no DOMException per abort). */
export const FETCH_ABORTED = new StudioError('cancelled', 'the function aborted the request');
/** What a streamed fetch settles with at its end: its head was the operation's answer. */
const STREAMED = Symbol('streamed');
/** A body at least this large moves into the isolate (its memory handed over, counted against memoryMb there) instead of being copied. */
const MOVE_MIN_BYTES = 64 * 1024;
/**
 * ...and at most this share of the function's memoryMb. A copy that does not fit fails in the one
 * run that asked for it (a RangeError there); moved memory is counted only after it arrives, and an
 * isolate found over its limit then is ended with every run it holds.
 */
const MOVE_MAX_SHARE = 1 / 4;
const MIB = 1024 * 1024;
/** Errors from inside a fetch that end the whole run (a limit), not just reject the guest's promise. */
const RUN_ENDING_CODES = new Set<ErrorCode>(['response_too_large', 'fetch_limit']);
/** Errors from a question (ctx.elicit, ctx.sample) that end the whole run. */
const ASK_ENDING_CODES = new Set<ErrorCode>(['sample_limit']);
/** The largest question the guest may ask: its message and its schema or messages, as JSON text. */
const MAX_ASK_MESSAGE_CHARS = 10_000;
const MAX_ASK_JSON_CHARS = 256 * 1024;
const LOG_LEVELS = new Set<LogLevel>(['debug', 'info', 'warn', 'error']);
/** The largest request body a guest may send: what the engine's channel carries with room to spare (the largest response body allowed). */
export const MAX_REQUEST_BODY_BYTES = 50 * 1024 * 1024;

/**
 * A streamed response body waiting for the guest: the chunks not yet read, how it ended, and the
 * `fetchRead` waiting for the next chunk. The engine reads the vendor only a window ahead of what
 * the guest took (`flow.taken`), which bounds the queue.
 */
interface BodyQueue {
  chunks: Uint8Array[];
  flow: ResponseFlow;
  end?: { ok: true } | { ok: false; error: { code: string; message: string } };
  reader?: number;
}

/** What a run lends its bridge: its clock, its end, and how it fails. */
export interface RunControl {
  /** performance.now() when the run started (log times are relative to it). */
  readonly started: number;
  /** Milliseconds left before the deadline, at least 1. */
  remaining(): number;
  /** True once the run has ended or failed: every operation is refused from then on. */
  over(): boolean;
  /** Aborted when the run ends: pending vendor requests are closed. */
  readonly signal: AbortSignal;
  /** Ends the run now with `code` (the first failure wins). */
  fail(code: ErrorCode, message: string, details?: Record<string, unknown>): void;
  /** Turns an exception from isolated-vm into the limit it stands for. */
  classify(error: unknown): ErrorInfo;
}

/**
 * The host side of the bridge for one run: logs and their byte limit, progress, timers, and
 * fetches (counted against fetchCount, performed by the job's fetch, settled back in the isolate
 * with the time left as their CPU budget).
 */
export class RunBridge implements HostBinding {
  readonly logs: LogEntry[] = [];
  readonly #job: SandboxJob;
  readonly #run: RunControl;
  readonly #timers = new Set<NodeJS.Timeout>();
  /** crypto.subtle's keys and calls: they end with the run. */
  readonly #subtle = new SubtleKeys();
  /** The fetches in flight, by operation id: the guest aborts one with `fetchAbort` (its AbortSignal). */
  readonly #fetching = new Map<number, AbortController>();
  /** Streamed response bodies, by their fetch's operation id: the guest reads each with `fetchRead`. */
  readonly #bodies = new Map<number, BodyQueue>();
  #logBytes = 0;
  #fetches = 0;
  #watchingEnd = false;
  #nextOp = 1;
  #settleRef: ivm.Reference | undefined;

  constructor(job: SandboxJob, run: RunControl) {
    this.#job = job;
    this.#run = run;
  }

  /** The context's settle function: where finished host operations are delivered. */
  attach(settle: ivm.Reference): void {
    this.#settleRef = settle;
  }

  /** Clears the run's timers (its vendor requests are closed by the run's signal). */
  close(): void {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#subtle.close();
    this.#bodies.clear();
  }

  readonly sync = (op: unknown, a?: unknown, b?: unknown, c?: unknown, d?: unknown): HostAnswer => {
    try {
      if (this.#run.over()) return refusal('the run has ended');
      switch (op) {
        case 'log':
          return this.log(a, b);
        case 'progress':
          return this.#progress(a, b, c);
        case 'secret':
          return this.#secret(a);
        case 'fetchAbort':
          // Closes the vendor connection of fetch `a` (the guest has already rejected its promise).
          this.#fetching.get(a as number)?.abort(FETCH_ABORTED);
          this.#bodies.delete(a as number);
          return { ok: true };
        default:
          return pureHostOp(op, a, b, c, d);
      }
    } catch (error) {
      return refusal(error instanceof StudioError ? error.message : 'host operation failed');
    }
  };

  readonly start = (op: unknown, payload: unknown): HostAnswer => {
    try {
      if (this.#run.over()) return NEVER_SETTLED;
      const id = this.#nextOp++;
      if (op === 'sleep') return this.#sleep(id, payload);
      if (op === 'subtle') {
        this.#subtle.start(payload, (ok, value) => this.#settle(id, ok, value));
        return { ok: true, value: id };
      }
      if (op === 'fetch') return this.#fetch(id, payload);
      if (op === 'fetchRead') return this.#fetchRead(id, payload);
      if (op === 'elicit' || op === 'sample') return this.#ask(id, op, payload);
      return refusal('unknown host operation');
    } catch {
      return refusal('host operation failed');
    }
  };

  /** A log line from the guest (also the logs its module wrote ahead of the call). */
  log(level: unknown, text: unknown): HostAnswer {
    if (typeof level !== 'string' || !LOG_LEVELS.has(level as LogLevel) || typeof text !== 'string') return refusal('log: bad entry');
    this.#logBytes += Buffer.byteLength(text) + 1;
    const limit = this.#job.limits.logBytes;
    if (this.#logBytes > limit) {
      this.#run.fail('log_limit', logLimitMessage(limit), { limit: 'logBytes' });
      return refusal('log limit reached', 'log_limit');
    }
    const entry: LogEntry = { level: level as LogLevel, message: text, at: Math.round(performance.now() - this.#run.started) };
    this.logs.push(entry);
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

  /** ctx.secret(name): the placeholder the engine minted for this run, or why there is none (one line the guest throws). */
  #secret(name: unknown): HostAnswer {
    if (typeof name !== 'string' || name.length === 0) return refusal('ctx.secret: give the name of a credential the function lists, e.g. ctx.secret("github")');
    const entry = this.#job.secrets?.find((s) => s.name === name);
    if (entry?.placeholder !== undefined) return { ok: true, value: entry.placeholder };
    return refusal(`ctx.secret: ${entry?.refused ?? credentialNotListedMessage(name.slice(0, 200))}`, 'credential_refused');
  }

  #sleep(id: number, payload: unknown): HostAnswer {
    const ms = typeof payload === 'number' && Number.isFinite(payload) ? Math.max(0, payload) : 0;
    if (ms > this.#run.remaining()) return { ok: true, value: id }; // would fire after the deadline: never does
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#settle(id, true, undefined);
    }, ms);
    this.#timers.add(timer);
    return { ok: true, value: id };
  }

  #fetch(id: number, payload: unknown): HostAnswer {
    // Every call counts, refused ones too (here or by the engine's policy): a loop of refused requests ends at the limit.
    this.#fetches++;
    if (this.#fetches > this.#job.limits.fetchCount) {
      const limit = this.#job.limits.fetchCount;
      this.#run.fail('fetch_limit', fetchLimitMessage(limit), { limit: 'fetchCount' });
      return refusal('fetch limit reached', 'fetch_limit');
    }
    const request = readRequest(payload);
    if (typeof request === 'string') return refusal(`ctx.fetch: ${request}`, 'bad_input');
    const controller = new AbortController();
    this.#fetching.set(id, controller);
    this.#watchRunEnd();
    // A fetch that asks to stream is settled with the response's head ({ stream: true }, no body) when the engine streams it.
    let body: BodyQueue | undefined;
    const sink: ResponseSink | undefined =
      (payload as { stream?: unknown }).stream === true
        ? {
            head: (head, flow) => {
              body = { chunks: [], flow };
              this.#bodies.set(id, body);
              this.#settle(id, true, { ...head, stream: true });
            },
            chunk: (bytes) => {
              if (body === undefined || body.end) return;
              body.chunks.push(bytes);
              this.#pump(id, body);
            },
          }
        : undefined;
    const work = this.#job.fetch(request, controller.signal, sink);
    void work.finally(() => this.#fetching.delete(id)).catch(() => {});
    this.#deliver(
      id,
      work.then((response) => {
        if (body === undefined) return response;
        body.end = { ok: true };
        this.#pump(id, body);
        return STREAMED;
      }),
      RUN_ENDING_CODES,
      (error) => {
        if (body === undefined) return false;
        body.end = { ok: false, error };
        this.#pump(id, body);
        return true;
      },
      (response) => (response as IncomingResponse).body,
    );
    return { ok: true, value: id };
  }

  /**
   * The run's end aborts every fetch still in flight, with the run's reason (one listener for the
   * run, not a composite AbortSignal per fetch).
   */
  #watchRunEnd(): void {
    if (this.#watchingEnd) return;
    this.#watchingEnd = true;
    const signal = this.#run.signal;
    signal.addEventListener('abort', () => {
      for (const controller of this.#fetching.values()) controller.abort(signal.reason);
    }, { once: true });
  }

  /** The guest's read of streamed body `payload` (a fetch's id): settled with its next bytes, null at its end, or its error. */
  #fetchRead(id: number, payload: unknown): HostAnswer {
    const body = typeof payload === 'number' ? this.#bodies.get(payload) : undefined;
    if (body === undefined) return refusal('fetchRead: no such response body');
    if (body.reader !== undefined) return refusal('fetchRead: a read of this body is already waiting');
    body.reader = id;
    this.#pump(payload as number, body);
    return { ok: true, value: id };
  }

  /** Gives a waiting read what the body has: every chunk queued, as one, else its end. */
  #pump(fetchId: number, body: BodyQueue): void {
    const reader = body.reader;
    if (reader === undefined || this.#bodies.get(fetchId) !== body) return;
    if (body.chunks.length > 0) {
      const joined = body.chunks.length === 1 ? body.chunks[0]! : Buffer.concat(body.chunks);
      // A view of a larger buffer (Node's pool) is copied out, as the isolate would be given the whole buffer; bytes with a buffer of their own cross as they are.
      const bytes = joined.byteOffset === 0 && joined.byteLength === joined.buffer.byteLength ? new Uint8Array(joined.buffer, 0, joined.byteLength) : new Uint8Array(joined);
      body.chunks = [];
      body.reader = undefined;
      body.flow.taken(bytes.byteLength);
      this.#settle(reader, true, bytes, bytes);
    } else if (body.end) {
      body.reader = undefined;
      this.#bodies.delete(fetchId);
      this.#settle(reader, body.end.ok, body.end.ok ? null : body.end.error);
    }
  }

  /** ctx.elicit / ctx.sample: the payload crosses as JSON text, is bounded here and checked again by the engine. */
  #ask(id: number, kind: 'elicit' | 'sample', payload: unknown): HostAnswer {
    const request = readAsk(kind, payload);
    if (typeof request === 'string') return refusal(`ctx.${kind}: ${request}`, 'bad_input');
    const ask = this.#job.ask;
    if (!ask) return refusal(`ctx.${kind} is not available in this run`, 'ask_unavailable');
    this.#deliver(id, ask(request, this.#run.signal), ASK_ENDING_CODES);
    return { ok: true, value: id };
  }

  /**
   * Settles operation `id` in the isolate with what `work` gives, or its error; an error with one of
   * `ending` codes ends the whole run instead. `elsewhere` may take an error for somewhere else (a
   * streamed body): true when it did. A value of STREAMED was delivered already. `bodyOf` names the
   * bytes of the value that may move into the isolate (see #settle).
   */
  #deliver(
    id: number,
    work: Promise<unknown>,
    ending: ReadonlySet<ErrorCode>,
    elsewhere?: (error: { code: string; message: string }) => boolean,
    bodyOf?: (value: unknown) => Uint8Array | undefined,
  ): void {
    work
      .then(
        (value) => {
          if (value !== STREAMED) this.#settle(id, true, value, bodyOf?.(value));
        },
        (error: unknown) => {
          const info = toErrorInfo(error);
          if (ending.has(info.code)) this.#run.fail(info.code, info.message, info.details);
          else if (!elsewhere?.({ code: info.code, message: info.message })) this.#settle(id, false, { code: info.code, message: info.message });
        },
      )
      .catch(() => {});
  }

  /**
   * Finishes an async host operation inside the isolate, with the time left as its CPU budget. The
   * value is copied in; `body`, bytes the value holds that nothing on the host uses again (a
   * response body, a streamed chunk), is moved instead when it is large and has a buffer of its own.
   */
  #settle(id: number, ok: boolean, value: unknown, body?: Uint8Array): void {
    const ref = this.#settleRef;
    if (this.#run.over() || !ref) return;
    let settled: Promise<unknown>;
    if (
      body !== undefined &&
      body.byteLength >= MOVE_MIN_BYTES &&
      body.byteLength <= this.#job.limits.memoryMb * MIB * MOVE_MAX_SHARE &&
      body.byteOffset === 0 &&
      body.buffer instanceof ArrayBuffer &&
      body.byteLength === body.buffer.byteLength
    ) {
      try {
        const moved = new ivm.ExternalCopy(value, { transferList: [body.buffer] }).copyInto({ release: true, transferIn: true });
        settled = ref.apply(undefined, [id, ok, moved], { timeout: this.#run.remaining() });
      } catch (error) {
        settled = Promise.reject(error);
      }
    } else {
      settled = ref.apply(undefined, [id, ok, value], { arguments: { copy: true }, timeout: this.#run.remaining() });
    }
    settled.catch((error: unknown) => {
      if (this.#run.over()) return;
      const info = this.#run.classify(error);
      this.#run.fail(info.code, info.message, info.details);
    });
  }
}

function readAsk(kind: 'elicit' | 'sample', payload: unknown): AskRequest | string {
  if (!payload || typeof payload !== 'object') return 'bad request';
  const p = payload as Record<string, unknown>;
  const parse = (text: unknown, what: string): { value: unknown } | { problem: string } => {
    if (typeof text !== 'string') return { problem: `${what} must be JSON data` };
    if (text.length > MAX_ASK_JSON_CHARS) return { problem: `${what} is over ${MAX_ASK_JSON_CHARS} characters as JSON` };
    try {
      return { value: JSON.parse(text) as unknown };
    } catch {
      return { problem: `${what} must be JSON data` };
    }
  };
  if (kind === 'elicit') {
    if (typeof p.message !== 'string' || p.message.length === 0) return 'the message must be a non-empty string';
    if (p.message.length > MAX_ASK_MESSAGE_CHARS) return `the message is over ${MAX_ASK_MESSAGE_CHARS} characters`;
    const schema = parse(p.schema, 'the requested schema');
    if ('problem' in schema) return schema.problem;
    return { kind, payload: { message: p.message, requestedSchema: schema.value } };
  }
  const messages = parse(p.messages, 'the messages');
  if ('problem' in messages) return messages.problem;
  const options = p.options === undefined ? { value: {} } : parse(p.options, 'the options');
  if ('problem' in options) return options.problem;
  return { kind, payload: { messages: messages.value, options: options.value } };
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
  if (p.body !== undefined && p.body.byteLength > MAX_REQUEST_BODY_BYTES) return `the request body is over ${MAX_REQUEST_BODY_BYTES} bytes`;
  if (p.credential !== undefined && typeof p.credential !== 'string') return 'credential must be a string';
  if (p.redirect !== 'follow' && p.redirect !== 'manual' && p.redirect !== 'error') return 'redirect must be "follow", "manual" or "error"';
  let headers = p.headers as Array<[string, string]>;
  let body = p.body as Uint8Array | undefined;
  if (p.multipart !== undefined) {
    const parts = readParts(p.multipart);
    if (typeof parts === 'string') return parts;
    if (body !== undefined) return 'give either body or multipart, not both';
    const encoded = encodeMultipart(parts);
    if (encoded.body.byteLength > MAX_REQUEST_BODY_BYTES) return `the multipart body is over ${MAX_REQUEST_BODY_BYTES} bytes`;
    headers = [...headers, ['content-type', encoded.contentType]];
    body = encoded.body;
  }
  return {
    url: p.url,
    method: p.method,
    headers,
    body,
    credential: p.credential as string | undefined,
    redirect: p.redirect,
  };
}
