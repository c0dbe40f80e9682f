/**
 * The closed set of error codes the engine reports. Expected failures (a limit crossed, a refused
 * host, bad input) carry one of these; anything else is a bug and stays an exception.
 */
export const ERROR_CODES = [
  'bad_input',
  'not_found',
  'conflict',
  'compile_error',
  'disabled',
  'timeout',
  'memory_limit',
  'result_too_large',
  'log_limit',
  'fetch_limit',
  'response_too_large',
  'egress_refused',
  'fetch_failed',
  'credential_refused',
  'keychain_unavailable',
  /** The keychain is locked: unlock it and retry. */
  'keychain_locked',
  /** The keychain did not answer in time (stopped, or waiting on an unlock prompt). */
  'keychain_not_answering',
  'function_error',
  'output_invalid',
  'cancelled',
  /** The process serving the run was stopped (Ctrl-C, SIGTERM) while it ran. */
  'interrupted',
  'sandbox_crashed',
  /** Electron main could not reach the engine process (starting, restarting, or no Node 24). */
  'engine_unavailable',
  /** Another process held the database's write lock past the busy timeout. */
  'database_busy',
  /** The disk holding the data folder is full. */
  'disk_full',
  /** The data folder or its database became read-only after it was opened. */
  'read_only',
  /** Another version of Callable Studio changed the database's schema while this process had it open. */
  'schema_changed',
  /** A person denied an MCP call that needed approval (a destructive function, or "ask before every call"). */
  'denied',
  /** A call needed a person's approval and there was no way to ask (no elicitation, no studio open). */
  'approval_required',
  /** Nobody answered the approval prompt before the function's deadline. */
  'approval_timeout',
  /** A function asked for more completions (ctx.sample) than its sampling.maxCalls allows. */
  'sample_limit',
  /** ctx.elicit or ctx.sample with nobody to ask (the client lacks the capability, no studio open). */
  'ask_unavailable',
  'forbidden',
  'internal',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** An expected failure with a code, safe to show to a user or a model. */
export class StudioError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'StudioError';
    this.code = code;
    this.details = details;
  }
}

export function isStudioError(value: unknown): value is StudioError {
  return value instanceof StudioError;
}

/** The shape an error takes when it crosses a process or bridge boundary. */
export interface ErrorInfo {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export function toErrorInfo(error: unknown): ErrorInfo {
  if (error instanceof StudioError) {
    return error.details ? { code: error.code, message: error.message, details: error.details } : { code: error.code, message: error.message };
  }
  return { code: 'internal', message: error instanceof Error ? error.message : String(error) };
}
