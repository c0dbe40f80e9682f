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
