// The channel between the engine and a sandbox host process: every message either side may send,
// defined once. Frames are a 4-byte length and a V8-serialized message; a frame over
// MAX_FRAME_BYTES or a message that fails its schema is a protocol violation, and the engine ends
// a host that commits one. The host holds no secret and no database: all it may ask for is a
// fetch, which the engine answers through its guarded fetch.
import { deserialize, serialize } from 'node:v8';
import { z } from 'zod';
import type { ContentItem, EffectiveLimits, ErrorInfo, LogEntry } from '../model/index.ts';

/** Bumped on any incompatible change; a host of another version is refused at `ready`. */
export const PROTOCOL_VERSION = 1;

/** The largest response body (50 MiB) or result (16 MiB) plus room for the envelope. */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

const Id = z.string().min(1).max(100);
const Text = (max: number) => z.string().max(max);
const Count = z.number().finite();

const LimitsSchema = z.object({
  timeoutMs: Count,
  memoryMb: Count,
  resultBytes: Count,
  logBytes: Count,
  fetchCount: Count,
  responseBytes: Count,
});

const ErrorSchema = z.object({ code: Text(64), message: Text(20_000), details: z.record(z.string(), z.unknown()).optional() });
const Bytes = z.custom<Uint8Array>((v) => v instanceof Uint8Array, 'expected bytes');
const HeaderPairs = z.array(z.tuple([Text(8192), Text(65_536)])).max(1000);

export const OutgoingRequestSchema = z.object({
  url: Text(16_384),
  method: Text(32),
  headers: HeaderPairs,
  body: Bytes.optional(),
  credential: Text(200).optional(),
  redirect: z.enum(['follow', 'manual', 'error']),
});
export type OutgoingRequest = z.infer<typeof OutgoingRequestSchema>;

export const IncomingResponseSchema = z.object({
  status: Count,
  statusText: Text(1000),
  headers: HeaderPairs,
  url: Text(16_384),
  redirected: z.boolean(),
  body: Bytes,
});
export type IncomingResponse = z.infer<typeof IncomingResponseSchema>;

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
  /** The guarded fetch, already bound to this function's policy. Aborted when the run ends. */
  fetch: (request: OutgoingRequest, signal: AbortSignal) => Promise<IncomingResponse>;
}

export type SandboxOutcome = ({ ok: true; value: unknown; content?: ContentItem[] } | { ok: false; error: ErrorInfo }) & {
  logs: LogEntry[];
  durationMs: number;
  heapBytes?: number;
  resultBytes: number;
};

const ModuleFields = {
  fn: Text(64),
  hash: Text(128),
  /** Sent the first time this host meets this version of the module; omitted after. */
  code: Text(MAX_FRAME_BYTES).optional(),
};

// ---- engine → host ----

export const EngineMessageSchema = z.discriminatedUnion('t', [
  z.object({ t: z.literal('run'), runId: Id, ...ModuleFields, limits: LimitsSchema, argsJson: Text(MAX_FRAME_BYTES), measureHeap: z.boolean() }),
  z.object({ t: z.literal('warm'), ...ModuleFields, memoryMb: Count }),
  z.object({ t: z.literal('cancel'), runId: Id }),
  z.object({ t: z.literal('fetched'), runId: Id, op: Count, response: IncomingResponseSchema }),
  z.object({ t: z.literal('fetchFailed'), runId: Id, op: Count, error: ErrorSchema }),
]);
export type EngineMessage = z.infer<typeof EngineMessageSchema>;

// ---- host → engine ----

export const OutcomeSchema = z.intersection(
  z.union([
    z.object({ ok: z.literal(true), value: z.unknown(), content: z.array(z.record(z.string(), z.unknown())).optional() }),
    z.object({ ok: z.literal(false), error: ErrorSchema }),
  ]),
  z.object({
    logs: z.array(z.object({ level: z.enum(['debug', 'info', 'warn', 'error']), message: z.string(), at: Count })),
    durationMs: Count,
    heapBytes: Count.optional(),
    resultBytes: Count,
  }),
);

export const HostMessageSchema = z.discriminatedUnion('t', [
  z.object({ t: z.literal('ready'), version: z.number(), pid: z.number() }),
  z.object({ t: z.literal('log'), runId: Id, level: z.enum(['debug', 'info', 'warn', 'error']), message: z.string(), at: Count }),
  z.object({ t: z.literal('progress'), runId: Id, progress: Count, total: Count.optional(), message: Text(1000).optional() }),
  z.object({ t: z.literal('fetch'), runId: Id, op: Count, request: OutgoingRequestSchema }),
  z.object({ t: z.literal('done'), runId: Id, outcome: OutcomeSchema }),
  /** Every HEARTBEAT_MS: the host's resident size and the cap it holds itself to. */
  z.object({ t: z.literal('beat'), rssBytes: Count, capBytes: Count, runs: Count }),
  /** The host went over its memory cap and is about to end itself; `suspects` are the runs that were allocating. */
  z.object({ t: z.literal('overCap'), rssBytes: Count, capBytes: Count, suspects: z.array(Id) }),
]);
export type HostMessage = z.infer<typeof HostMessageSchema>;

export const HEARTBEAT_MS = 200;

// ---- framing ----

export function encodeFrame(message: EngineMessage | HostMessage): Buffer {
  const body = serialize(message);
  if (body.length > MAX_FRAME_BYTES) throw new RangeError(`sandbox message of ${body.length} bytes is over ${MAX_FRAME_BYTES}`);
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(body.length, 0);
  return Buffer.concat([head, body]);
}

/**
 * Reassembles frames from a byte stream and checks each message against `schema`. A frame over the
 * size bound, bytes that do not deserialize, or a message that fails the schema calls `onViolation`
 * once and stops reading: the peer is not to be trusted after that.
 */
export class FrameReader<T> {
  readonly #schema: z.ZodType<T>;
  readonly #onMessage: (message: T) => void;
  readonly #onViolation: (reason: string) => void;
  #chunks: Buffer[] = [];
  #buffered = 0;
  #broken = false;

  constructor(schema: z.ZodType<T>, onMessage: (message: T) => void, onViolation: (reason: string) => void) {
    this.#schema = schema;
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
        value = deserialize(frame);
      } catch {
        return this.#violate('a frame that does not deserialize');
      }
      const parsed = this.#schema.safeParse(value);
      if (!parsed.success) return this.#violate(`a malformed message (${parsed.error.issues[0]?.path.join('.') ?? '?'}: ${parsed.error.issues[0]?.message ?? ''})`);
      this.#onMessage(parsed.data);
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
