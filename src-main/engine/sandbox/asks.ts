// The engine's side of ctx.elicit and ctx.sample: what a function may ask, of whom, how often, and
// what it gets back. The sandbox host only carries the question (as copied JSON) and the answer;
// every check is made here, before anyone is asked and again on the answer: the elicitation schema
// must be MCP's restricted form schema, an accepted answer must match it, and sampling is allowed
// only for functions whose `sampling` setting says so, at most `maxCalls` times per run. Each
// question becomes a TraceEntry beside the run's requests.
import { performance } from 'node:perf_hooks';
import type { SchemaValidator } from '../functions/schemas.ts';
import { SAMPLING_CALLS, StudioError, type ElicitAnswer, type ElicitRequest, type FunctionRecord, type SampleAnswer, type SampleRequest, type TraceEntry } from '../model/index.ts';
import type { AskRequest } from './protocol.ts';

/** Who answers a run's questions (the MCP client, or the studio in its place); absent: nobody can. */
export interface Askers {
  elicit?: ((request: ElicitRequest, signal: AbortSignal) => Promise<ElicitAnswer>) | undefined;
  sample?: ((request: SampleRequest, signal: AbortSignal) => Promise<SampleAnswer>) | undefined;
}

export interface AskContext {
  record: FunctionRecord;
  timeoutMs: number;
  schemas: SchemaValidator;
  trace: (entry: TraceEntry) => void;
  askers: Askers;
}

const MAX_MESSAGE_CHARS = 10_000;
const MAX_SAMPLE_MESSAGES = 50;
const MAX_SAMPLE_TEXT_CHARS = 100_000;
const MAX_TOKENS = 100_000;
const DEFAULT_MAX_TOKENS = 1000;
/** The largest answer (as JSON) handed back to the function; a bigger one is refused, not truncated. */
export const MAX_ANSWER_BYTES = 1024 * 1024;
const STRING_FORMATS = ['email', 'uri', 'date', 'date-time'];

/** The run's answerer for the sandbox: one per run (it counts the run's completions). */
export function asker(context: AskContext): (request: AskRequest, signal: AbortSignal) => Promise<unknown> {
  let samples = 0;
  return async (request, signal) => {
    if (request.kind === 'elicit') return elicit(context, request.payload, signal);
    samples++;
    return sample(context, request.payload, samples, signal);
  };
}

const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '');
const elapsed = (started: number): number => Math.round((performance.now() - started) * 100) / 100;

async function elicit(context: AskContext, payload: Record<string, unknown>, signal: AbortSignal): Promise<ElicitAnswer> {
  const started = performance.now();
  const message = typeof payload.message === 'string' ? payload.message : '';
  const schema = payload.requestedSchema;
  const entry = (fields: Partial<TraceEntry>): void =>
    context.trace({ kind: 'elicit', method: 'elicitation/create', url: 'none:', ms: elapsed(started), bytesOut: jsonBytes(payload), bytesIn: 0, ...fields });
  // The host bounded the message already; a host is not trusted, so it is checked again here.
  if (message.length === 0 || message.length > MAX_MESSAGE_CHARS) {
    entry({ refused: 'a message that is not a string of 1 to 10000 characters' });
    throw new StudioError('bad_input', `ctx.elicit: the message must be a string of 1 to ${MAX_MESSAGE_CHARS} characters`);
  }
  const problem = elicitationSchemaProblem(schema);
  if (problem !== undefined) {
    entry({ refused: `the requested schema is not an MCP form schema: ${problem}` });
    throw new StudioError('bad_input', `ctx.elicit: the requested schema is not an MCP elicitation form schema: ${problem}`);
  }
  const requestedSchema = schema as Record<string, unknown>;
  const ask = context.askers.elicit;
  if (!ask) {
    entry({ refused: 'no client elicitation and no studio open' });
    throw new StudioError(
      'ask_unavailable',
      'ctx.elicit: this client cannot answer elicitation requests and the studio is not open: call the function from a client that supports elicitation (form mode), open Callable Studio, or take the value as an argument',
    );
  }
  let answer: ElicitAnswer;
  try {
    answer = await ask({ functionName: context.record.name, message, requestedSchema, timeoutMs: context.timeoutMs }, signal);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (signal.aborted) {
      entry({ url: 'mcp:client', error: 'the run ended before the question was answered' });
      throw new StudioError('cancelled', 'ctx.elicit: the run ended before the question was answered');
    }
    // The studio's answerer says so itself when nobody can be asked (no studio open).
    if (error instanceof StudioError && error.code === 'ask_unavailable') {
      entry({ refused: 'no client elicitation and no studio open' });
      throw new StudioError('ask_unavailable', `ctx.elicit: ${reason}`);
    }
    entry({ url: 'mcp:client', error: reason });
    throw new StudioError('ask_unavailable', `ctx.elicit: the question was not answered: ${reason}`);
  }
  const url = answer.via === 'studio' ? 'studio:' : 'mcp:client';
  const action = answer.action;
  if (jsonBytes(answer) > MAX_ANSWER_BYTES) {
    entry({ url, bytesIn: jsonBytes(answer), error: `an answer over ${MAX_ANSWER_BYTES} bytes` });
    throw new StudioError('bad_input', `ctx.elicit: the answer is over ${MAX_ANSWER_BYTES} bytes as JSON; ask for less`);
  }
  if (action !== 'accept' && action !== 'decline' && action !== 'cancel') {
    entry({ url, bytesIn: jsonBytes(answer), error: `an answer with action ${JSON.stringify(action)}` });
    throw new StudioError('bad_input', `ctx.elicit: the answer has action ${JSON.stringify(action)}, not accept, decline or cancel`);
  }
  if (action !== 'accept') {
    entry({ url, bytesIn: jsonBytes(answer), action });
    return { action };
  }
  const content = answer.content ?? {};
  const mismatch = context.schemas.check(requestedSchema, content, 'the elicitation schema', 'content');
  if (mismatch !== undefined) {
    entry({ url, bytesIn: jsonBytes(answer), action, error: `the answer does not match the requested schema: ${mismatch}` });
    throw new StudioError('bad_input', `ctx.elicit: the answer does not match the requested schema: ${mismatch}`, { problem: mismatch });
  }
  entry({ url, bytesIn: jsonBytes(answer), action });
  return { action, content };
}

async function sample(context: AskContext, payload: Record<string, unknown>, count: number, signal: AbortSignal): Promise<SampleAnswer> {
  const started = performance.now();
  const { record } = context;
  const entry = (fields: Partial<TraceEntry>): void =>
    context.trace({ kind: 'sample', method: 'sampling/createMessage', url: 'none:', ms: elapsed(started), bytesOut: jsonBytes(payload), bytesIn: 0, ...fields });
  if (!record.sampling) {
    entry({ refused: 'sampling is not allowed for this function' });
    throw new StudioError(
      'forbidden',
      `ctx.sample: "${record.name}" may not ask the client's model; allow it in the function's settings with "sampling": { "maxCalls": N } (N at most ${SAMPLING_CALLS.max})`,
    );
  }
  const max = record.sampling.maxCalls ?? SAMPLING_CALLS.default;
  if (count > max) {
    entry({ refused: `over sampling.maxCalls (${max})` });
    throw new StudioError('sample_limit', `the function asked for more than ${max} completions (sampling.maxCalls); ask for fewer or raise sampling.maxCalls (at most ${SAMPLING_CALLS.max})`, {
      limit: 'sampling.maxCalls',
    });
  }
  const request = sampleRequestOf(payload, record.name, context.timeoutMs);
  if (typeof request === 'string') {
    entry({ refused: request });
    throw new StudioError('bad_input', `ctx.sample: ${request}`);
  }
  const ask = context.askers.sample;
  if (!ask) {
    entry({ refused: 'the client has no sampling' });
    throw new StudioError('ask_unavailable', "ctx.sample: this client cannot answer sampling requests (it did not declare the sampling capability); call the function from a client that lends its model");
  }
  let answer: SampleAnswer;
  try {
    answer = await ask(request, signal);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    entry({ url: 'mcp:client', error: reason });
    if (signal.aborted) throw new StudioError('cancelled', 'ctx.sample: the run ended before the completion came back');
    throw new StudioError('ask_unavailable', `ctx.sample: the client's model did not answer: ${reason}`);
  }
  if (jsonBytes(answer) > MAX_ANSWER_BYTES) {
    entry({ url: 'mcp:client', bytesIn: jsonBytes(answer), error: `a completion over ${MAX_ANSWER_BYTES} bytes` });
    throw new StudioError('bad_input', `ctx.sample: the completion is over ${MAX_ANSWER_BYTES} bytes as JSON; ask for fewer tokens`);
  }
  entry({ url: 'mcp:client', bytesIn: jsonBytes(answer) });
  return { role: answer.role, content: answer.content, model: answer.model, ...(answer.stopReason === undefined ? {} : { stopReason: answer.stopReason }) };
}

/** ctx.sample's arguments as MCP sampling params: a string is one user message. Returns a problem as a string. */
export function sampleRequestOf(payload: Record<string, unknown>, functionName: string, timeoutMs: number): SampleRequest | string {
  const raw = typeof payload.messages === 'string' ? [{ role: 'user', content: payload.messages }] : payload.messages;
  if (!Array.isArray(raw) || raw.length === 0) return 'messages must be a string or a non-empty array of { role, content }';
  if (raw.length > MAX_SAMPLE_MESSAGES) return `at most ${MAX_SAMPLE_MESSAGES} messages`;
  const messages: SampleRequest['messages'] = [];
  let chars = 0;
  for (let i = 0; i < raw.length; i++) {
    const m = raw[i] as { role?: unknown; content?: unknown } | null;
    if (!m || typeof m !== 'object') return `messages[${i}] must be { role, content }`;
    if (m.role !== 'user' && m.role !== 'assistant') return `messages[${i}].role must be "user" or "assistant"`;
    const text = typeof m.content === 'string' ? m.content : (m.content as { type?: unknown; text?: unknown } | null)?.type === 'text' ? (m.content as { text?: unknown }).text : undefined;
    if (typeof text !== 'string') return `messages[${i}].content must be a string or { type: "text", text }`;
    chars += text.length;
    messages.push({ role: m.role, content: { type: 'text', text } });
  }
  if (chars > MAX_SAMPLE_TEXT_CHARS) return `the messages are over ${MAX_SAMPLE_TEXT_CHARS} characters`;
  const options = (payload.options ?? {}) as Record<string, unknown>;
  if (typeof options !== 'object' || Array.isArray(options)) return 'options must be an object';
  const known = new Set(['maxTokens', 'systemPrompt', 'temperature', 'stopSequences', 'modelPreferences']);
  const stray = Object.keys(options).find((k) => !known.has(k));
  if (stray !== undefined) return `unknown option "${stray}" (known: ${[...known].join(', ')})`;
  const request: SampleRequest = { functionName, messages, maxTokens: DEFAULT_MAX_TOKENS, timeoutMs };
  if (options.maxTokens !== undefined) {
    if (!Number.isInteger(options.maxTokens) || (options.maxTokens as number) < 1 || (options.maxTokens as number) > MAX_TOKENS) return `maxTokens must be a whole number from 1 to ${MAX_TOKENS}`;
    request.maxTokens = options.maxTokens as number;
  }
  if (options.systemPrompt !== undefined) {
    if (typeof options.systemPrompt !== 'string' || options.systemPrompt.length > MAX_SAMPLE_TEXT_CHARS) return 'systemPrompt must be a string';
    request.systemPrompt = options.systemPrompt;
  }
  if (options.temperature !== undefined) {
    if (typeof options.temperature !== 'number' || !Number.isFinite(options.temperature)) return 'temperature must be a number';
    request.temperature = options.temperature;
  }
  if (options.stopSequences !== undefined) {
    if (!Array.isArray(options.stopSequences) || options.stopSequences.length > 20 || !options.stopSequences.every((s) => typeof s === 'string')) return 'stopSequences must be at most 20 strings';
    request.stopSequences = options.stopSequences as string[];
  }
  if (options.modelPreferences !== undefined) {
    if (!options.modelPreferences || typeof options.modelPreferences !== 'object' || Array.isArray(options.modelPreferences)) return 'modelPreferences must be an object';
    request.modelPreferences = options.modelPreferences as Record<string, unknown>;
  }
  return request;
}

// ---- MCP's restricted elicitation schema (2025-11-25): a flat object of primitive properties ----

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');
const isTitledOptions = (v: unknown): boolean =>
  Array.isArray(v) && v.length > 0 && v.every((o) => isObject(o) && typeof o.const === 'string' && typeof o.title === 'string' && Object.keys(o).every((k) => k === 'const' || k === 'title'));

function strayKey(value: Record<string, unknown>, allowed: string[]): string | undefined {
  return Object.keys(value).find((k) => !allowed.includes(k));
}

/**
 * Why `schema` is not an elicitation form schema (undefined when it is): `type: "object"` with
 * `properties` whose each value is a string (optionally a format, a length range, or a
 * single-select enum: `enum`, `enum` + `enumNames`, or `oneOf` of `{ const, title }`), a number or
 * integer (optionally a range), a boolean, or a multi-select array of such enum values; `default`
 * of the property's type; `required` naming properties.
 */
export function elicitationSchemaProblem(schema: unknown): string | undefined {
  if (!isObject(schema)) return 'it must be an object schema ({ type: "object", properties: { … } })';
  if (schema.type !== 'object') return 'its "type" must be "object"';
  const rootStray = strayKey(schema, ['type', 'properties', 'required', 'title', 'description', '$schema']);
  if (rootStray !== undefined) return `"${rootStray}" is not allowed at the top (only type, properties, required, title, description)`;
  const properties = schema.properties ?? {};
  if (!isObject(properties)) return '"properties" must be an object';
  const names = Object.keys(properties);
  if (names.length > 100) return 'at most 100 properties';
  for (const name of names) {
    const problem = propertyProblem(properties[name]);
    if (problem !== undefined) return `properties.${name}: ${problem}`;
  }
  if (schema.required !== undefined) {
    if (!isStringArray(schema.required)) return '"required" must be an array of property names';
    const unknown = schema.required.find((r) => !names.includes(r));
    if (unknown !== undefined) return `"required" names "${unknown}", which is not in properties`;
  }
  return undefined;
}

function propertyProblem(p: unknown): string | undefined {
  if (!isObject(p)) return 'must be a schema object';
  const common = ['type', 'title', 'description', 'default'];
  const flat = 'only string, number, integer, boolean and arrays of enum strings are allowed (no nested objects)';
  switch (p.type) {
    case 'string': {
      const stray = strayKey(p, [...common, 'minLength', 'maxLength', 'format', 'enum', 'enumNames', 'oneOf']);
      if (stray !== undefined) return `"${stray}" is not allowed on a string property`;
      if (p.format !== undefined && !STRING_FORMATS.includes(p.format as string)) return `format must be one of ${STRING_FORMATS.join(', ')}`;
      for (const k of ['minLength', 'maxLength'] as const) if (p[k] !== undefined && !(Number.isInteger(p[k]) && (p[k] as number) >= 0)) return `${k} must be a whole number`;
      if (p.enum !== undefined && (!isStringArray(p.enum) || p.enum.length === 0)) return 'enum must be a non-empty array of strings';
      if (p.enumNames !== undefined && (!isStringArray(p.enumNames) || !Array.isArray(p.enum) || p.enumNames.length !== p.enum.length)) return 'enumNames must be strings, as many as enum';
      if (p.oneOf !== undefined && !isTitledOptions(p.oneOf)) return 'oneOf must be a non-empty array of { const, title } strings';
      if (p.oneOf !== undefined && p.enum !== undefined) return 'give enum or oneOf, not both';
      if (p.default !== undefined && typeof p.default !== 'string') return 'default must be a string';
      return undefined;
    }
    case 'number':
    case 'integer': {
      const stray = strayKey(p, [...common, 'minimum', 'maximum']);
      if (stray !== undefined) return `"${stray}" is not allowed on a ${p.type} property`;
      for (const k of ['minimum', 'maximum', 'default'] as const) if (p[k] !== undefined && !(typeof p[k] === 'number' && Number.isFinite(p[k]))) return `${k} must be a number`;
      return undefined;
    }
    case 'boolean': {
      const stray = strayKey(p, common);
      if (stray !== undefined) return `"${stray}" is not allowed on a boolean property`;
      if (p.default !== undefined && typeof p.default !== 'boolean') return 'default must be a boolean';
      return undefined;
    }
    case 'array': {
      const stray = strayKey(p, [...common, 'items', 'minItems', 'maxItems']);
      if (stray !== undefined) return `"${stray}" is not allowed on an array property`;
      for (const k of ['minItems', 'maxItems'] as const) if (p[k] !== undefined && !(Number.isInteger(p[k]) && (p[k] as number) >= 0)) return `${k} must be a whole number`;
      const items = p.items;
      if (!isObject(items)) return `an array property needs "items" with enum strings (${flat})`;
      const untitled = items.type === 'string' && isStringArray(items.enum) && items.enum.length > 0 && strayKey(items, ['type', 'enum']) === undefined;
      const titled = isTitledOptions(items.anyOf) && strayKey(items, ['anyOf', 'type']) === undefined && (items.type === undefined || items.type === 'string');
      if (!untitled && !titled) return 'items must be { type: "string", enum: [...] } or { anyOf: [{ const, title }, ...] } (a multi-select)';
      if (p.default !== undefined && !isStringArray(p.default)) return 'default must be an array of strings';
      return undefined;
    }
    default:
      return `type must be string, number, integer, boolean or array (${flat})`;
  }
}
