import { ERROR_CODES, StudioError, type ErrorCode, type Exchange, type IncomingResponse, type OutgoingRequest, type RecordedRequest, type TestDifference } from '../model/index.ts';
import { decodeBody, recordRequest } from './recorder.ts';

/** A request of the replay that the recording does not have (or has differently). */
export interface ReplayMismatch {
  /** 1-based, in the order the function made its requests. */
  number: number;
  expected: RecordedRequest | undefined;
  actual: RecordedRequest | undefined;
}

/**
 * Answers ctx.fetch from a case's recording, in order: the Nth request must have the recorded Nth
 * request's method, URL and body. Nothing goes to the network and no credential is read.
 */
export class Replayer {
  readonly #exchanges: readonly Exchange[];
  #next = 0;
  mismatch: ReplayMismatch | undefined;

  constructor(exchanges: readonly Exchange[]) {
    this.#exchanges = exchanges;
  }

  readonly fetch = async (request: OutgoingRequest): Promise<IncomingResponse> => {
    const number = this.#next + 1;
    const actual = recordRequest(request, Number.MAX_SAFE_INTEGER);
    const exchange = this.#exchanges[this.#next];
    this.#next++;
    if (this.mismatch) throw new StudioError('fetch_failed', `replay: request #${number} not answered, an earlier request did not match the recording`);
    const problem = exchange === undefined ? `the recording has only ${this.#exchanges.length} request(s)` : requestProblem(exchange.request, actual);
    if (problem !== undefined) {
      this.mismatch = { number, expected: exchange?.request, actual };
      throw new StudioError('fetch_failed', `replay: request #${number} ${actual.method} ${actual.url} does not match the recording: ${problem}`);
    }
    if ('error' in exchange!) {
      const code = (ERROR_CODES as readonly string[]).includes(exchange.error.code) ? (exchange.error.code as ErrorCode) : 'fetch_failed';
      throw new StudioError(code, exchange.error.message);
    }
    const response = exchange!.response;
    return {
      status: response.status,
      statusText: response.statusText ?? '',
      headers: response.headers.map(([k, v]) => [k, v]),
      url: actual.url,
      redirected: false,
      body: decodeBody(response) ?? new Uint8Array(0),
    };
  };

  /** After the run: a recorded request the replay never made counts as a mismatch too. */
  finish(): ReplayMismatch | undefined {
    if (!this.mismatch && this.#next < this.#exchanges.length) {
      this.mismatch = { number: this.#next + 1, expected: this.#exchanges[this.#next]!.request, actual: undefined };
    }
    return this.mismatch;
  }
}

function requestProblem(expected: RecordedRequest, actual: RecordedRequest): string | undefined {
  if (expected.method !== actual.method) return `the method is ${actual.method}, the recording has ${expected.method}`;
  if (expected.url !== actual.url) return `the URL differs, the recording has ${expected.url}`;
  if (!sameBytes(decodeBody(expected), decodeBody(actual))) return 'the body differs from the recorded one';
  return undefined;
}

function sameBytes(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (a === undefined || b === undefined) return (a?.byteLength ?? 0) === (b?.byteLength ?? 0);
  return Buffer.from(a).equals(Buffer.from(b));
}

/** The mismatch as differences a diff view shows: the request line, then the body. */
export function mismatchDifferences(m: ReplayMismatch): TestDifference[] {
  const line = (r: RecordedRequest | undefined): string | undefined => (r ? `${r.method} ${r.url}` : undefined);
  const body = (r: RecordedRequest | undefined): string | null | undefined => (r ? (r.bodyBase64 !== undefined ? `base64:${r.bodyBase64}` : r.body) : undefined);
  const path = `request #${m.number}`;
  const out: TestDifference[] = [];
  if (m.actual === undefined) return [{ path, expected: line(m.expected), actual: undefined, note: 'the replay did not make this recorded request' }];
  if (m.expected === undefined) return [{ path, expected: undefined, actual: line(m.actual), note: 'not in the recording' }];
  if (line(m.expected) !== line(m.actual)) out.push({ path, expected: line(m.expected), actual: line(m.actual) });
  if (body(m.expected) !== body(m.actual)) out.push({ path: `${path} body`, expected: body(m.expected), actual: body(m.actual) });
  return out;
}
