/**
 * What an MCP client reads when a call fails: one wording for the local MCP server and the
 * deployed gateway Worker (which bundles this module), so a model gets the same sentence from both.
 * Pure: no Node built-in, no SDK type.
 */

export interface ToolErrorResult {
  isError: true;
  content: Array<{ type: 'text'; text: string }>;
}

/** A failed run as both servers see it: its code and message, and for bad arguments the problem found. */
export interface ToolFailure {
  code: string;
  message: string;
  /** bad_input: what is wrong with the arguments (the message otherwise). */
  problem?: string | undefined;
}

/** The codes a sandbox limit ends a run with. */
const LIMIT_CODES = new Set(['timeout', 'memory_limit', 'result_too_large', 'log_limit', 'fetch_limit', 'response_too_large', 'sample_limit']);

export function toolErrorResult(text: string): ToolErrorResult {
  return { isError: true, content: [{ type: 'text', text }] };
}

/** A message a model can act on: what went wrong and what to change. */
export function describeToolFailure(name: string, failure: ToolFailure): string {
  const { code, message } = failure;
  if (code === 'bad_input') return `Invalid arguments for ${name}: ${failure.problem ?? message}. Fix the arguments to match the tool's input schema and call again.`;
  if (code === 'function_error') return `${name} failed: ${message}`;
  if (code === 'cancelled') return `${name} was cancelled.`;
  if (code === 'sandbox_crashed') return `${name} did not finish because its sandbox process stopped: ${message}`;
  if (LIMIT_CODES.has(code)) return `${name} stopped at a sandbox limit (${code}): ${message}`;
  return `${name} failed (${code}): ${message}`;
}

/** A run that passed its deadline. */
export function timeoutMessage(timeoutMs: number): string {
  return `the run exceeded its deadline of ${timeoutMs} ms (timeoutMs); make it faster or raise timeoutMs`;
}

/** A result over its size limit; `fixedLimit` names a limit no setting raises, instead of limits.resultBytes. */
export function resultTooLargeMessage(bytes: number, limitBytes: number, fixedLimit?: string): string {
  if (fixedLimit !== undefined) return `the result is ${bytes} bytes, over ${fixedLimit} (${limitBytes} bytes); return less`;
  return `the result is ${bytes} bytes, over the result size limit of ${limitBytes} bytes (limits.resultBytes); return less or raise the limit`;
}

/** A run that asked for more fetches than limits.fetchCount allows. */
export function fetchLimitMessage(limit: number): string {
  return `the function made more than ${limit} requests (limits.fetchCount); make fewer or raise the limit`;
}

/** A run that logged more than limits.logBytes. */
export function logLimitMessage(limit: number): string {
  return `the function logged more than ${limit} bytes (limits.logBytes); log less or raise the limit`;
}

/** Why a function may not use a credential it does not list (ctx.fetch's `credential:`, ctx.secret). */
export function credentialNotListedMessage(name: string): string {
  return `this function may not use credential "${name}": add it to the function's "credentials" list`;
}

/** Why a request to `host` is refused: it is not on the function's allowedHosts. */
export function notAllowedHostReason(host: string, allowedHosts: readonly string[]): string {
  const allowed = allowedHosts.length === 0 ? 'the function has no allowedHosts (no network)' : `allowedHosts is ${allowedHosts.join(', ')}`;
  return `${host} is not an allowed host: ${allowed}; add it to the function's allowedHosts`;
}
