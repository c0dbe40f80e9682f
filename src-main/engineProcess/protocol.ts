// The channel between Electron main and the engine process: every message either side may send,
// defined once. Messages travel over Node's IPC channel as JSON text; each side bounds that text
// before parsing it and checks the parsed message against its schema, dropping (and reporting)
// anything else. Pure: zod, the contract and the model only, so Electron main may load it.
import { z } from 'zod';
import { EVENT_NAMES, type EventName } from '../../src-preload/contract.ts';
import { ERROR_CODES } from '../engine/model/index.ts';

/** Bumped on any incompatible change; an engine of another version is refused at `ready`. */
export const PROTOCOL_VERSION = 1;

/** The largest run result (16 MiB) as escaped JSON, plus its logs and trace, with room to spare. */
export const MAX_MESSAGE_CHARS = 64 * 1024 * 1024;

/** The events the engine process emits; `engine:status` is main's own. */
export const ENGINE_EVENT_NAMES = EVENT_NAMES.filter((name): name is Exclude<EventName, 'engine:status'> => name !== 'engine:status');

const Id = z.number().int().nonnegative();

const ErrorInfoSchema = z.object({ code: z.enum(ERROR_CODES), message: z.string().max(100_000), details: z.record(z.string(), z.unknown()).optional() });
const EnvelopeSchema = z.union([z.object({ ok: z.literal(true), value: z.unknown() }), z.object({ ok: z.literal(false), error: ErrorInfoSchema })]);

/** Main → engine: one bridge call. The engine validates `payload` against the contract again. */
export const InvokeMessageSchema = z.object({ type: z.literal('invoke'), id: Id, channel: z.string().max(100), payload: z.unknown() }).strict();

export const MainToEngineSchema = z.discriminatedUnion('type', [InvokeMessageSchema]);
export type MainToEngine = z.infer<typeof MainToEngineSchema>;

export const EngineToMainSchema = z.discriminatedUnion('type', [
  /** The engine is open and listening; sent once. */
  z.object({ type: z.literal('ready'), version: z.number().int(), pid: z.number().int().positive() }).strict(),
  /** The answer to the invoke with the same id. */
  z.object({ type: z.literal('reply'), id: Id, envelope: EnvelopeSchema }).strict(),
  /** A contract event, forwarded as is. */
  z.object({ type: z.literal('event'), name: z.enum(ENGINE_EVENT_NAMES), payload: z.unknown() }).strict(),
  /** Open an OAuth sign-in page in the system browser; main opens it only if it is an authorization request on `authorizationEndpoint`. */
  z.object({ type: z.literal('open-url'), url: z.string().max(8192), authorizationEndpoint: z.string().max(2048), credential: z.string().max(100) }).strict(),
  /** The engine cannot start (unreadable data folder, …) and will exit: restarting would not help. */
  z.object({ type: z.literal('fatal'), message: z.string().max(10_000) }).strict(),
]);
export type EngineToMain = z.infer<typeof EngineToMainSchema>;

export type Encoded = { ok: true; text: string } | { ok: false; message: string };

/** The text to send for `message`, or why it is too large to send. */
export function encodeMessage(message: MainToEngine | EngineToMain): Encoded {
  let text: string;
  try {
    text = JSON.stringify(message);
  } catch (error) {
    return { ok: false, message: `the message cannot be sent as JSON (${error instanceof Error ? error.message : String(error)})` };
  }
  if (text.length > MAX_MESSAGE_CHARS) return { ok: false, message: `the message is ${mib(text.length)}, more than the ${mib(MAX_MESSAGE_CHARS)} the engine channel carries` };
  return { ok: true, text };
}

/** A refused message still names its `id` when it had one, so its caller can be answered. */
export type Decoded<T> = { ok: true; message: T } | { ok: false; reason: string; id?: number };

/** Parses and validates what arrived on the channel; never throws. */
export function decodeMessage<T>(schema: z.ZodType<T>, raw: unknown): Decoded<T> {
  if (typeof raw !== 'string') return { ok: false, reason: `expected JSON text, got ${typeof raw}` };
  if (raw.length > MAX_MESSAGE_CHARS) return { ok: false, reason: `a message of ${mib(raw.length)} is over the ${mib(MAX_MESSAGE_CHARS)} bound` };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { ok: false, reason: 'a message is not valid JSON' };
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const reason = `a message fails the protocol: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(message)'}: ${i.message}`).join('; ').slice(0, 500)}`;
    const id = Id.safeParse((value as { id?: unknown } | null)?.id);
    return id.success ? { ok: false, reason, id: id.data } : { ok: false, reason };
  }
  return { ok: true, message: parsed.data };
}

function mib(chars: number): string {
  return `${(chars / 1024 / 1024).toFixed(1)} MiB`;
}
