// The channel between the engine and a sandbox host process: every message either side may send,
// defined once. Frames are a 4-byte length and the message as JSON, its bytes (a request or
// response body, a streamed chunk) appended raw after the JSON; a frame over
// MAX_FRAME_BYTES or a message that fails its schema is a protocol violation, and the engine ends
// a host that commits one. The host holds no secret and no database: all it may ask for is a
// fetch, which the engine answers through its guarded fetch.
import { DefaultSerializer, deserialize } from 'node:v8';
import type { ContentItem, EffectiveLimits, ErrorInfo, IncomingResponse, LogEntry, OutgoingRequest } from '../model/index.ts';

export type { IncomingResponse, OutgoingRequest };

/** Bumped on any incompatible change; a host of another version is refused at `ready`. */
export const PROTOCOL_VERSION = 5;

/** The largest response body (50 MiB) or result (16 MiB) plus room for the envelope. */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

export const HEARTBEAT_MS = 200;

// ---- checks: a few small combinators (the host loads no schema library, so it starts fast) ----

/** Returns undefined when `value` fits, else where and why it does not. */
export type Check<T> = ((value: unknown) => string | undefined) & { readonly __type?: T };

const check = <T>(fn: (value: unknown) => string | undefined): Check<T> => fn as Check<T>;
const str = (max: number, min = 0): Check<string> =>
  check((v) => (typeof v !== 'string' ? 'expected a string' : v.length > max ? `longer than ${max}` : v.length < min ? 'empty' : undefined));
const num: Check<number> = check((v) => (typeof v === 'number' && Number.isFinite(v) ? undefined : 'expected a finite number'));
const bool: Check<boolean> = check((v) => (typeof v === 'boolean' ? undefined : 'expected a boolean'));
const bytes: Check<Uint8Array> = check((v) => (v instanceof Uint8Array ? undefined : 'expected bytes'));
const unknownValue: Check<unknown> = check(() => undefined);
const oneOf = <const V extends string>(...values: V[]): Check<V> => check((v) => (values.includes(v as V) ? undefined : `expected one of ${values.join(', ')}`));
const optional = <T>(inner: Check<T>): Check<T | undefined> => check((v) => (v === undefined ? undefined : inner(v)));
const array = <T>(item: Check<T>, max: number): Check<T[]> =>
  check((v) => {
    if (!Array.isArray(v)) return 'expected an array';
    if (v.length > max) return `more than ${max} items`;
    for (let i = 0; i < v.length; i++) {
      const problem = item(v[i]);
      if (problem) return `[${i}]: ${problem}`;
    }
    return undefined;
  });
const pair = <A, B>(a: Check<A>, b: Check<B>): Check<[A, B]> => check((v) => (!Array.isArray(v) || v.length !== 2 ? 'expected a pair' : (a(v[0]) ?? b(v[1]))));
type Shape = Record<string, Check<unknown>>;
type Infer<S extends Shape> = { [K in keyof S]: S[K] extends Check<infer T> ? T : never };
const object = <S extends Shape>(shape: S): Check<Infer<S>> =>
  check((v) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'expected an object';
    for (const key of Object.keys(shape)) {
      const problem = shape[key]!((v as Record<string, unknown>)[key]);
      if (problem) return `${key}: ${problem}`;
    }
    return undefined;
  });
const record: Check<Record<string, unknown>> = check((v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? undefined : 'expected an object'));
/** A message union keyed by `t`: the shape of each kind. */
const union = <M extends Record<string, Shape>>(kinds: M): Check<{ [K in keyof M]: { t: K } & Infer<M[K]> }[keyof M]> => {
  const checks = new Map(Object.entries(kinds).map(([t, shape]) => [t, object(shape)]));
  return check((v) => {
    const t = (v as { t?: unknown } | null)?.t;
    const c = typeof t === 'string' ? checks.get(t) : undefined;
    return c ? c(v) : `unknown message type ${JSON.stringify(t)}`;
  });
};

const Id = str(100, 1);
const ErrorShape = object({ code: str(64), message: str(20_000), details: optional(record) });
const HeaderPairs = array(pair(str(8192), str(65_536)), 1000);
const Level = oneOf('debug', 'info', 'warn', 'error');

const OutgoingRequestCheck = object({
  url: str(16_384),
  method: str(32),
  headers: HeaderPairs,
  body: optional(bytes),
  credential: optional(str(200)),
  redirect: oneOf('follow', 'manual', 'error'),
});

const ResponseHeadFields = { status: num, statusText: str(1000), headers: HeaderPairs, url: str(16_384), redirected: bool };
const IncomingResponseCheck = object({ ...ResponseHeadFields, body: bytes });

/** A response before its body: what a streamed fetch gives the function first. */
export type ResponseHead = Omit<IncomingResponse, 'body'>;

/**
 * Where a fetch that streams delivers its final response as it arrives: the head once, then the
 * body's chunks (already redacted). The fetch's promise still settles with the whole response (for
 * the recording and trace) once the body has ended, or with its error.
 */
export interface ResponseSink {
  head(head: ResponseHead, flow: ResponseFlow): void;
  chunk(bytes: Uint8Array): void;
}

/** Given with a streamed head: the receiver says how many bytes the function has taken; the vendor is read at most a window ahead of that. */
export interface ResponseFlow {
  taken(bytes: number): void;
}

/** A function's module compiled for the sandbox: a classic script whose completion value is its exports. */
export interface CompiledModule {
  code: string;
  hash: string;
}

// ---- what a run is, on both sides of the channel ----

export interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}

/**
 * A question the function asks through the engine: ctx.elicit (a person, through the client or the
 * studio) or ctx.sample (the client's model). The payload is what the prelude copied out; the
 * engine checks it before anyone is asked.
 */
export type AskKind = 'elicit' | 'sample';
export interface AskRequest {
  kind: AskKind;
  payload: Record<string, unknown>;
}

/**
 * What ctx.secret(name) answers for a credential the function lists: the run's placeholder for it,
 * or why it may not have one (not granted, no such credential). A name it does not list has no entry.
 */
export interface SecretEntry {
  name: string;
  placeholder?: string | undefined;
  refused?: string | undefined;
}

/** One call of one function. Arguments are already validated; `argsJson` is their JSON text. */
export interface SandboxJob {
  functionName: string;
  compiled: CompiledModule;
  limits: EffectiveLimits;
  argsJson: string;
  runId: string;
  /** Cancels the run (an MCP cancellation, a closed console). */
  signal?: AbortSignal | undefined;
  onLog?: ((entry: LogEntry) => void) | undefined;
  onProgress?: ((update: ProgressUpdate) => void) | undefined;
  /** Report the isolate's heap use after the run (costs a wait for the isolate; the console wants it). */
  measureHeap?: boolean | undefined;
  /** The guarded fetch, already bound to this function's policy. Aborted when the run ends. `stream` (when given) may receive the response as it arrives. */
  fetch: (request: OutgoingRequest, signal: AbortSignal, stream?: ResponseSink) => Promise<IncomingResponse>;
  /** ctx.secret's answers, minted by the engine for this run only. */
  secrets?: readonly SecretEntry[] | undefined;
  /** Answers ctx.elicit and ctx.sample (absent: refused). Aborted when the run ends; the run's deadline covers the wait. */
  ask?: ((request: AskRequest, signal: AbortSignal) => Promise<unknown>) | undefined;
}

export type SandboxOutcome = ({ ok: true; value: unknown; content?: ContentItem[] } | { ok: false; error: ErrorInfo }) & {
  logs: LogEntry[];
  durationMs: number;
  heapBytes?: number;
  resultBytes: number;
};

const ModuleFields = {
  fn: str(64, 1),
  hash: str(128, 1),
  /** Sent the first time this host meets this version of the module; omitted after. */
  code: optional(str(MAX_FRAME_BYTES)),
};
const SecretEntryCheck = object({ name: str(200, 1), placeholder: optional(str(100)), refused: optional(str(2000)) });
const LimitsCheck = object({ timeoutMs: num, memoryMb: num, resultBytes: num, logBytes: num, fetchCount: num, responseBytes: num });

// ---- engine → host ----

export const EngineMessageCheck = union({
  run: { runId: Id, ...ModuleFields, limits: LimitsCheck, argsJson: str(MAX_FRAME_BYTES), measureHeap: bool, secrets: array(SecretEntryCheck, 1000) },
  warm: { ...ModuleFields, memoryMb: num },
  cancel: { runId: Id },
  fetched: { runId: Id, op: num, response: IncomingResponseCheck },
  fetchFailed: { runId: Id, op: num, error: ErrorShape },
  fetchHead: { runId: Id, op: num, head: object(ResponseHeadFields) },
  fetchChunk: { runId: Id, op: num, chunk: bytes },
  fetchEnd: { runId: Id, op: num },
  answer: { runId: Id, op: num, ok: bool, value: unknownValue, error: optional(ErrorShape) },
});

/** What the engine sends a host (the compile-time twin of EngineMessageCheck). */
export type EngineMessage =
  | { t: 'run'; runId: string; fn: string; hash: string; code?: string; limits: EffectiveLimits; argsJson: string; measureHeap: boolean; secrets: readonly SecretEntry[] }
  | { t: 'warm'; fn: string; hash: string; code?: string; memoryMb: number }
  | { t: 'cancel'; runId: string }
  | { t: 'fetched'; runId: string; op: number; response: IncomingResponse }
  | { t: 'fetchFailed'; runId: string; op: number; error: ErrorInfo | { code: string; message: string; details?: Record<string, unknown> } }
  /** A streamed response (the fetch asked for `stream`): its head, its chunks, its end; an error after the head is a `fetchFailed`. */
  | { t: 'fetchHead'; runId: string; op: number; head: ResponseHead }
  | { t: 'fetchChunk'; runId: string; op: number; chunk: Uint8Array }
  | { t: 'fetchEnd'; runId: string; op: number }
  /** The answer to an `ask`: a value, or the error the function's promise rejects with. */
  | { t: 'answer'; runId: string; op: number; ok: boolean; value: unknown; error?: ErrorInfo | undefined };

// ---- host → engine ----

const OutcomeCheck = check((v) => {
  const base = object({ ok: bool, logs: array(object({ level: Level, message: str(MAX_FRAME_BYTES), at: num }), 1_000_000), durationMs: num, heapBytes: optional(num), resultBytes: num })(v);
  if (base) return base;
  const o = v as { ok: boolean };
  return o.ok ? object({ value: unknownValue, content: optional(array(record, 10_000)) })(v) : object({ error: ErrorShape })(v);
});

export const HostMessageCheck = union({
  ready: { version: num, pid: num },
  log: { runId: Id, level: Level, message: str(MAX_FRAME_BYTES), at: num },
  progress: { runId: Id, progress: num, total: optional(num), message: optional(str(1000)) },
  /** `stream`: answer with fetchHead, fetchChunk… and fetchEnd when the response can be streamed. */
  fetch: { runId: Id, op: num, request: OutgoingRequestCheck, stream: optional(bool) },
  /** The function aborted fetch `op` (its AbortSignal): the engine closes the vendor connection. */
  fetchAbort: { runId: Id, op: num },
  /** The function has taken `bytes` more of streamed fetch `op`'s body (the engine reads the vendor a window ahead). */
  fetchTaken: { runId: Id, op: num, bytes: num },
  /** ctx.elicit / ctx.sample: the payload is bounded by the frame and checked again by the engine. */
  ask: { runId: Id, op: num, kind: oneOf('elicit', 'sample'), payload: record },
  done: { runId: Id, outcome: OutcomeCheck },
  /** Every HEARTBEAT_MS: the host's resident size and the cap it holds itself to. */
  beat: { rssBytes: num, capBytes: num, runs: num },
  /** The host went over its memory cap and is about to end itself; `suspects` are the runs that were allocating. */
  overCap: { rssBytes: num, capBytes: num, suspects: array(Id, 10_000) },
});

/** What a host sends the engine (the compile-time twin of HostMessageCheck). */
export type HostMessage =
  | { t: 'ready'; version: number; pid: number }
  | ({ t: 'log'; runId: string } & LogEntry)
  | { t: 'progress'; runId: string; progress: number; total?: number | undefined; message?: string | undefined }
  | { t: 'fetch'; runId: string; op: number; request: OutgoingRequest; stream?: boolean }
  | { t: 'fetchAbort'; runId: string; op: number }
  | { t: 'fetchTaken'; runId: string; op: number; bytes: number }
  | ({ t: 'ask'; runId: string; op: number } & AskRequest)
  | { t: 'done'; runId: string; outcome: SandboxOutcome }
  | { t: 'beat'; rssBytes: number; capBytes: number; runs: number }
  | { t: 'overCap'; rssBytes: number; capBytes: number; suspects: string[] };

// ---- framing ----

const LENGTH_PLACE = Buffer.alloc(4);
/** The first byte of a frame's body: JSON text, JSON followed by the message's bytes, or V8's serializer (its header starts 0xFF). */
const JSON_TEXT = 0x7b;
const JSON_AND_BYTES = 0x01;
const V8_SERIALIZED = 0xff;
/** Tails larger than this are written beside their frame's head (one writev), not copied into it. */
const COPY_TAIL_BYTES = 64 * 1024;

/** Where each message kind that carries bytes keeps them (one field at most): they cross raw, after the JSON. */
interface BytesField {
  get(m: Record<string, unknown>): unknown;
  /** A shallow copy of `m` with its bytes set to `bytes` (undefined: left out of the JSON). */
  with(m: Record<string, unknown>, bytes: Uint8Array | undefined): Record<string, unknown>;
}
/** A Map, not an object: a peer's `t` of "toString" or "__proto__" finds nothing here. */
const BYTES_FIELD = new Map<string, BytesField>([
  ['fetch', nested('request', 'body')],
  ['fetched', nested('response', 'body')],
  ['fetchChunk', { get: (m) => m.chunk, with: (m, bytes) => ({ ...m, chunk: bytes }) }],
]);

function nested(outer: string, inner: string): BytesField {
  const holder = (m: Record<string, unknown>): Record<string, unknown> | undefined => {
    const h = m[outer];
    return h !== null && typeof h === 'object' ? (h as Record<string, unknown>) : undefined;
  };
  return {
    get: (m) => holder(m)?.[inner],
    with: (m, bytes) => {
      const h = holder(m);
      return h ? { ...m, [outer]: { ...h, [inner]: bytes } } : m;
    },
  };
}

/**
 * A message as the pieces of one frame, to be written in order. JSON, not V8's serializer: for the
 * small messages of every call it costs a fraction (measured about 5 µs against 40 to encode, 30 to
 * decode). A message's bytes are not re-encoded: they follow the JSON as they are.
 */
export function frameParts(message: EngineMessage | HostMessage): Buffer[] {
  const bytesField = BYTES_FIELD.get(message.t);
  const bytes = bytesField?.get(message as unknown as Record<string, unknown>);
  let json: string;
  try {
    // The bytes are left out of the JSON (a Buffer's toJSON would spell out every byte).
    json = JSON.stringify(bytes instanceof Uint8Array ? bytesField!.with(message as unknown as Record<string, unknown>, undefined) : message);
  } catch {
    // Not JSON data (a BigInt in an error's details): the structured clone carries it.
    return [serializedFrame(message)];
  }
  const jsonBytes = Buffer.byteLength(json);
  if (!(bytes instanceof Uint8Array)) {
    checkLength(jsonBytes);
    const frame = Buffer.allocUnsafe(4 + jsonBytes);
    frame.writeUInt32BE(jsonBytes, 0);
    frame.write(json, 4);
    return [frame];
  }
  const length = 1 + 4 + jsonBytes + bytes.byteLength;
  checkLength(length);
  const inline = bytes.byteLength <= COPY_TAIL_BYTES;
  const head = Buffer.allocUnsafe(4 + 1 + 4 + jsonBytes + (inline ? bytes.byteLength : 0));
  head.writeUInt32BE(length, 0);
  head[4] = JSON_AND_BYTES;
  head.writeUInt32BE(jsonBytes, 5);
  head.write(json, 9);
  if (!inline) return [head, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)];
  head.set(bytes, 9 + jsonBytes);
  return [head];
}

export function encodeFrame(message: EngineMessage | HostMessage): Buffer {
  const parts = frameParts(message);
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/** Channels corked until the end of this turn of the event loop. */
const corked = new WeakSet<object>();

/**
 * Writes one message. The channel stays corked until the code that is running now returns (a
 * process.nextTick, which comes before promise continuations), so the messages it sends (the
 * answers of several runs that ended together, a frame in two pieces) go out in one writev: one
 * wake-up of the other side, not one per message.
 */
export function writeFrame(channel: NodeJS.WritableStream & { cork(): void; uncork(): void }, message: EngineMessage | HostMessage): void {
  const parts = frameParts(message);
  if (!corked.has(channel)) {
    corked.add(channel);
    channel.cork();
    process.nextTick(() => {
      if (corked.delete(channel)) channel.uncork();
    });
  }
  for (const part of parts) channel.write(part);
}

/**
 * Sends what the channel holds now, for a message its sender waits on (a run's fetch or question).
 * Code that isolated-vm calls from a guest runs outside Node's callback scope, so the next tick
 * that uncorks comes only when isolated-vm's task loop returns (0.2 to 0.3 ms later, measured).
 */
export function flushFrames(channel: NodeJS.WritableStream & { uncork(): void }): void {
  if (corked.delete(channel)) channel.uncork();
}

function serializedFrame(message: EngineMessage | HostMessage): Buffer {
  // The length goes in front of the serialized bytes in the serializer's own buffer: a body is not copied again to prefix it.
  const serializer = new DefaultSerializer();
  serializer.writeRawBytes(LENGTH_PLACE);
  serializer.writeHeader();
  serializer.writeValue(message);
  const frame = serializer.releaseBuffer();
  const length = frame.length - 4;
  checkLength(length);
  frame.writeUInt32BE(length, 0);
  return frame;
}

function checkLength(length: number): void {
  if (length > MAX_FRAME_BYTES) throw new RangeError(`sandbox message of ${length} bytes is over ${MAX_FRAME_BYTES}`);
}

/** A frame's body as the message it holds; throws when it is none. */
function decodeFrame(frame: Buffer): unknown {
  const first = frame[0];
  if (first === JSON_TEXT) return JSON.parse(frame.toString('utf8'));
  if (first === V8_SERIALIZED) return deserialize(frame);
  if (first !== JSON_AND_BYTES || frame.length < 5) throw new Error('an unknown frame');
  const jsonBytes = frame.readUInt32BE(1);
  if (5 + jsonBytes > frame.length) throw new Error('a frame shorter than its JSON');
  const message = JSON.parse(frame.toString('utf8', 5, 5 + jsonBytes)) as Record<string, unknown> | null;
  const bytesField = typeof message?.t === 'string' ? BYTES_FIELD.get(message.t) : undefined;
  if (!message || !bytesField) throw new Error('bytes for a message that has none');
  // Bytes of their own (not a view of the frame, which holds more than them): they may be handed to an isolate as they are.
  const bytes = new Uint8Array(frame.length - 5 - jsonBytes);
  bytes.set(frame.subarray(5 + jsonBytes));
  return bytesField.with(message, bytes);
}

/**
 * Reassembles frames from a byte stream and checks each message. A frame over the size bound,
 * bytes that do not deserialize, or a message that fails its check calls `onViolation` once and
 * stops reading: the peer is not to be trusted after that.
 */
export class FrameReader<T> {
  readonly #check: Check<unknown>;
  readonly #onMessage: (message: T) => void;
  readonly #onViolation: (reason: string) => void;
  #chunks: Buffer[] = [];
  #buffered = 0;
  #broken = false;

  constructor(check: Check<unknown>, onMessage: (message: T) => void, onViolation: (reason: string) => void) {
    this.#check = check;
    this.#onMessage = onMessage;
    this.#onViolation = onViolation;
  }
  push(chunk: Buffer): void {
    if (this.#broken) return;
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    while (this.#buffered >= 4) {
      const head = this.#peek(4);
      const length = head.readUInt32BE(0);
      if (length > MAX_FRAME_BYTES) return this.#violate(`a frame of ${length} bytes (the bound is ${MAX_FRAME_BYTES})`);
      if (this.#buffered < 4 + length) return;
      const frame = this.#take(4 + length).subarray(4);
      let value: unknown;
      try {
        value = decodeFrame(frame);
      } catch {
        return this.#violate('a frame that does not deserialize');
      }
      const problem = this.#check(value);
      if (problem !== undefined) return this.#violate(`a malformed message (${problem})`);
      this.#onMessage(value as T);
      if (this.#broken) return;
    }
  }

  #violate(reason: string): void {
    this.#broken = true;
    this.#chunks = [];
    this.#buffered = 0;
    this.#onViolation(reason);
  }

  #peek(n: number): Buffer {
    if (this.#chunks[0]!.length < n) this.#chunks = [Buffer.concat(this.#chunks)];
    return this.#chunks[0]!.subarray(0, n);
  }

  #take(n: number): Buffer {
    const all = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks);
    const rest = all.subarray(n);
    this.#chunks = rest.length > 0 ? [rest] : [];
    this.#buffered = rest.length;
    return all.subarray(0, n);
  }
}
