import {
  MAX_RECORDED_BODY_BYTES,
  MAX_RECORDED_EXCHANGES,
  StudioError,
  type Exchange,
  type IncomingResponse,
  type OutgoingRequest,
  type RecordedRequest,
  type RecordedResponse,
  type RunResult,
  type TestExpect,
} from '../model/index.ts';

/** The most body bytes one run's recording keeps in all (past it, further bodies are marked truncated). */
export const MAX_RECORDED_RUN_BYTES = 2 * 1024 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A body as a case holds it: text when it is valid UTF-8, else base64; `truncated` when over the bound. */
export function encodeBody(bytes: Uint8Array | undefined, room: number): { body: string | null; bodyBase64?: string; truncated?: true } {
  if (bytes === undefined) return { body: null };
  if (bytes.byteLength > Math.min(MAX_RECORDED_BODY_BYTES, room)) return { body: null, truncated: true };
  try {
    return { body: utf8.decode(bytes) };
  } catch {
    return { body: null, bodyBase64: Buffer.from(bytes).toString('base64') };
  }
}

/** The bytes of a recorded body (undefined for none). */
export function decodeBody(part: { body: string | null; bodyBase64?: string | undefined }): Uint8Array | undefined {
  if (part.bodyBase64 !== undefined) return new Uint8Array(Buffer.from(part.bodyBase64, 'base64'));
  if (part.body === null) return undefined;
  return new Uint8Array(Buffer.from(part.body, 'utf8'));
}

/** The request as the function sent it: its own headers, URL and body (credentials are added later, host-side). */
export function recordRequest(request: OutgoingRequest, room = MAX_RECORDED_RUN_BYTES): RecordedRequest {
  return { method: request.method.toUpperCase(), url: request.url, headers: request.headers.map(([k, v]) => [k, v]), ...encodeBody(request.body, room) };
}

/**
 * Records the ctx.fetch exchanges of one run, in order, bounded: MAX_RECORDED_EXCHANGES calls,
 * MAX_RECORDED_BODY_BYTES per body, MAX_RECORDED_RUN_BYTES in all. What is cut is marked, so a
 * case made from it refuses to save instead of replaying something else.
 */
export class ExchangeRecorder {
  readonly exchanges: Exchange[] = [];
  /** Why the recording is incomplete, when it is. */
  truncated: string | undefined;
  #bytes = 0;

  /** Wraps one ctx.fetch call: records its request and its response (or the error it ended with). */
  async track(request: OutgoingRequest, response: Promise<IncomingResponse>): Promise<IncomingResponse> {
    if (this.exchanges.length >= MAX_RECORDED_EXCHANGES) {
      this.truncated ??= `the run made more than ${MAX_RECORDED_EXCHANGES} requests; a test case holds at most ${MAX_RECORDED_EXCHANGES}`;
      return response;
    }
    const recorded = recordRequest(request, MAX_RECORDED_RUN_BYTES - this.#bytes);
    this.#count(recorded, 'request', request.url);
    // The slot is taken now, so concurrent fetches keep the order the function made them in.
    const index = this.exchanges.push({ request: recorded, error: { code: 'cancelled', message: 'the run ended before the response arrived' } }) - 1;
    try {
      const answer = await response;
      const out: RecordedResponse = {
        status: answer.status,
        ...(answer.statusText ? { statusText: answer.statusText.slice(0, 200) } : {}),
        headers: answer.headers.map(([k, v]) => [k, v]),
        ...encodeBody(answer.body, MAX_RECORDED_RUN_BYTES - this.#bytes),
      };
      this.#count(out, 'response', request.url);
      this.exchanges[index] = { request: recorded, response: out };
      return answer;
    } catch (error) {
      const code = error instanceof StudioError ? error.code : 'fetch_failed';
      this.exchanges[index] = { request: recorded, error: { code, message: (error instanceof Error ? error.message : String(error)).slice(0, 2000) } };
      throw error;
    }
  }

  #count(part: { body: string | null; bodyBase64?: string; truncated?: true }, what: string, url: string): void {
    if (part.truncated) {
      this.truncated ??= `the ${what} body of ${url.slice(0, 200)} is larger than a test case keeps (${MAX_RECORDED_BODY_BYTES} bytes per body, ${MAX_RECORDED_RUN_BYTES} per run)`;
      return;
    }
    this.#bytes += part.bodyBase64 !== undefined ? (part.bodyBase64.length * 3) / 4 : Buffer.byteLength(part.body ?? '');
  }
}

/** What a case expects from a run that ended as `result`: its value (and content), or its error code. */
export function expectOf(result: RunResult): TestExpect {
  if (!result.ok) return { ok: false, code: result.error.code };
  return { ok: true, value: result.value ?? null, ...(result.content ? { content: result.content } : {}) };
}
