/** Checks on a raw JSON-RPC request body, made before it reaches JSON.parse or the MCP SDK. */

/** Deepest nesting of objects and arrays accepted in a request body. */
export const MAX_JSON_DEPTH = 256;
/** Longest string request id accepted, in characters. */
export const MAX_ID_LENGTH = 256;

/**
 * The nesting depth of JSON text, found with a single iterative pass (brackets inside strings do not
 * count). Stops as soon as `limit` is exceeded, so a hostile body costs one linear scan at most.
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > limit) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
}

/** Protocol revisions whose Streamable HTTP transport accepted JSON-RPC batches. */
const BATCH_REVISIONS = new Set(['2025-03-26', '2024-11-05']);

/**
 * Whether a batch (a JSON array body) may pass for this request: only for a revision that had
 * batches, named by the MCP-Protocol-Version header or, within a session, implied by its absence
 * (2025-03-26 clients do not send the header). A batch never carries initialize.
 */
export function batchAllowed(protocolHeader: string | undefined, hasSession: boolean): boolean {
  return protocolHeader === undefined ? hasSession : BATCH_REVISIONS.has(protocolHeader);
}

/** Why a parsed body is refused before the SDK sees it, or undefined when it may pass. */
export function refuseBody(body: unknown, protocolHeader: string | undefined, hasSession: boolean): string | undefined {
  if (Array.isArray(body)) {
    if (body.length === 0) return 'Invalid Request: an empty batch';
    if (!batchAllowed(protocolHeader, hasSession)) return 'Invalid Request: JSON-RPC batches are not supported by this protocol revision; send one message per request';
    if (body.some((m) => isObject(m) && m.method === 'initialize')) return 'Invalid Request: initialize must not be part of a batch';
  }
  for (const message of Array.isArray(body) ? body : [body]) {
    if (!isObject(message) || !('id' in message)) continue;
    const id = message.id;
    if (typeof id === 'string' && id.length > MAX_ID_LENGTH) return `Invalid Request: the request id is longer than ${MAX_ID_LENGTH} characters`;
    // A number beyond 2^53 does not survive the round trip; a client would never match the reply.
    if (typeof id === 'number' && !(Math.abs(id) <= Number.MAX_SAFE_INTEGER)) return 'Invalid Request: the request id is not a safe integer';
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
