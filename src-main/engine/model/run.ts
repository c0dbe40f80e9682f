import type { ErrorInfo } from './errors.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface LogEntry {
  level: LogLevel;
  message: string;
  /** Milliseconds since the run started. */
  at: number;
}

/** One outgoing request of a run, or the reason it was refused. Never carries a secret. */
export interface TraceEntry {
  method: string;
  url: string;
  status?: number;
  ms: number;
  bytesOut: number;
  bytesIn: number;
  credential?: string;
  refused?: string;
  error?: string;
  /** Set on a hop reached by following a redirect. */
  redirectFrom?: string;
  /**
   * What the entry is: absent for an outgoing request (ctx.fetch); `elicit` or `sample` for a
   * question the function asked (ctx.elicit, ctx.sample), whose `method` is the MCP method and
   * whose `url` says who was asked (`mcp:client`, `studio:`, or `none:` when nobody could be).
   */
  kind?: 'request' | 'elicit' | 'sample';
  /** For an elicitation: the action of the answer (accept, decline, cancel). */
  action?: string;
}

/** What ctx.elicit asks (form mode): a message and a restricted flat object schema. */
export interface ElicitRequest {
  functionName: string;
  message: string;
  requestedSchema: Record<string, unknown>;
  /** The run's deadline in ms: how long the question may wait for an answer. */
  timeoutMs: number;
}

/** An answer to ctx.elicit; `content` only with `accept`. */
export interface ElicitAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown> | undefined;
  /** Who answered (traced with the run; not shown to the function); default the client. */
  via?: 'client' | 'studio' | undefined;
}

/** What ctx.sample asks the client's model (the params of MCP sampling/createMessage). */
export interface SampleRequest {
  functionName: string;
  messages: Array<{ role: 'user' | 'assistant'; content: { type: 'text'; text: string } }>;
  maxTokens: number;
  systemPrompt?: string | undefined;
  temperature?: number | undefined;
  stopSequences?: string[] | undefined;
  modelPreferences?: Record<string, unknown> | undefined;
  timeoutMs: number;
}

/** The client's completion (the MCP sampling result). */
export interface SampleAnswer {
  role: string;
  content: unknown;
  model: string;
  stopReason?: string | undefined;
}

/** MCP content a function can return instead of JSON. */
export type ContentItem =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'audio'; data: string; mimeType: string }
  | { type: 'resource'; resource: { uri: string; mimeType?: string; text?: string; blob?: string } };

export interface RunMetrics {
  durationMs: number;
  /** Isolate heap used at the end of the run, in bytes (approximate: shared by concurrent runs). */
  heapBytes?: number;
  resultBytes: number;
}

interface RunBase {
  runId: string;
  logs: LogEntry[];
  trace: TraceEntry[];
  metrics: RunMetrics;
}

export interface RunSuccess extends RunBase {
  ok: true;
  /** The JSON value the function returned (undefined becomes null). */
  value: unknown;
  /** Set when the function returned MCP content (image, audio, resource) instead of JSON. */
  content?: ContentItem[];
}

export interface RunFailure extends RunBase {
  ok: false;
  error: ErrorInfo;
}

export type RunResult = RunSuccess | RunFailure;

export type Caller = 'cli' | 'console' | 'mcp' | 'test';

export interface RunRecord {
  id: string;
  functionName: string;
  caller: Caller;
  clientName?: string;
  clientVersion?: string;
  transport?: string;
  profile?: string;
  args: unknown;
  startedAt: string;
  durationMs: number;
  ok: boolean;
  errorCode?: string;
  errorMessage?: string;
  bytesOut: number;
  /** How a call that needed a person's approval was decided (see engine/prompts/approval.ts). */
  approval?: ApprovalDecision;
}

/**
 * The decision on an MCP call that needed approval: allowed once or for the session (by the client's
 * elicitation or the studio's prompt), allowed because the session already was, denied, refused
 * because there was no way to ask, nobody answered in time, or the caller gave up first.
 */
export const APPROVAL_DECISIONS = [
  'client:allow_once',
  'client:allow_session',
  'client:deny',
  'studio:allow_once',
  'studio:allow_session',
  'studio:deny',
  'session',
  'no_way_to_ask',
  'timeout',
  'cancelled',
] as const;
export type ApprovalDecision = (typeof APPROVAL_DECISIONS)[number];

/** A question put to the person at the studio: approve an MCP call, or fill in a function's elicitation form. */
export type PromptKind = 'approval' | 'elicitation';

/** What the person answered, in the shape of an MCP elicitation result. */
export interface PromptAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown> | undefined;
}

/** A prompt as the studio shows it. */
export interface PromptView {
  id: string;
  kind: PromptKind;
  functionName: string;
  /** The MCP client that made the call (`name version`), when it said. */
  client?: string;
  args: unknown;
  message: string;
  /** The requested JSON Schema (an object of primitive fields); for approvals, the one choice. */
  schema?: Record<string, unknown>;
  /** Whether "allow for this session" means something for this call (the caller has a session). */
  sessionScoped: boolean;
  createdAt: string;
  /** When the asker stops waiting (ms since the epoch). */
  expiresAt: number;
}

/** The Streamable HTTP MCP server as the desktop app hosts it. */
export interface McpStatus {
  running: boolean;
  url?: string;
  host: string;
  port: number;
  auth: boolean;
  /** Why the server is not running, when it failed to start. */
  error?: string;
}

/** A request a function makes through ctx.fetch, as the sandbox hands it to the guarded fetch. */
export interface OutgoingRequest {
  url: string;
  method: string;
  headers: Array<[string, string]>;
  body?: Uint8Array | undefined;
  credential?: string | undefined;
  redirect: 'follow' | 'manual' | 'error';
}

/** What the guarded fetch answers: the body already read, bounded and decompressed. */
export interface IncomingResponse {
  status: number;
  statusText: string;
  headers: Array<[string, string]>;
  url: string;
  redirected: boolean;
  body: Uint8Array;
}
