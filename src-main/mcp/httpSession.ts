// Bookkeeping for 2025-era sessions: which request ids are in flight, so that a reused id is
// refused instead of stealing the first request's response stream, and a cancelled request's
// response stream is closed instead of waiting forever for a response that is never sent.
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { HandleRequestOptions, JSONRPCMessage } from '@modelcontextprotocol/server';
import type { IncomingMessage, ServerResponse } from 'node:http';

export type RequestId = string | number;

/** The requests (messages with a method and an id) of a body, single or batch. */
export function requestsOf(body: unknown): Array<{ id: RequestId; method: string }> {
  const out: Array<{ id: RequestId; method: string }> = [];
  for (const m of Array.isArray(body) ? body : [body]) {
    if (!isObject(m) || typeof m.method !== 'string') continue;
    if (typeof m.id === 'string' || typeof m.id === 'number') out.push({ id: m.id, method: m.method });
  }
  return out;
}

/** The request ids a body's notifications/cancelled name. */
export function cancelledIdOf(body: unknown): RequestId[] {
  const out: RequestId[] = [];
  for (const m of Array.isArray(body) ? body : [body]) {
    if (!isObject(m) || m.method !== 'notifications/cancelled' || 'id' in m || !isObject(m.params)) continue;
    const id = m.params.requestId;
    if (typeof id === 'string' || typeof id === 'number') out.push(id);
  }
  return out;
}

/** One POST of a session whose requests are not all answered yet. */
interface Exchange {
  pending: Set<RequestId>;
  /** The ids of this POST that are tool calls, each holding one unit of `slot`. */
  calls: Set<RequestId>;
  slot: { release(count?: number): void } | undefined;
  cancelled: boolean;
}

/**
 * The session transport, told of every response it sends, so the session knows which requests are
 * still in flight (answered, or cancelled by the client).
 */
export class TrackedTransport extends NodeStreamableHTTPServerTransport {
  readonly #inflight = new Map<RequestId, Exchange>();
  /** Requests answered by answerAll: their own late response has no stream left and is dropped. */
  readonly #answered = new Set<RequestId>();

  /**
   * A POST is answered here rather than through the Node adapter: its SSE stream opens with a
   * priming event (the id a client resumes from), which the adapter sends at once or after a
   * 1 ms wait, so a quick call's answer went out in a second write (and often waited for that
   * timer). Here the headers and the priming event wait for the next event, at most
   * PRIMING_WAIT_MS, and a quick answer leaves in one write with them; any other event (a
   * notification, a question to the client) is sent as soon as it is written. GET and DELETE
   * go through the adapter.
   */
  override async handleRequest(req: IncomingMessage, res: ServerResponse, parsedBody?: unknown): Promise<void> {
    const web = (this as unknown as { _webStandardTransport?: { handleRequest?(req: Request, options?: HandleRequestOptions): Promise<Response> } })._webStandardTransport;
    if (req.method !== 'POST' || typeof web?.handleRequest !== 'function') return super.handleRequest(req, res, parsedBody);
    const headers = new Headers();
    for (const [name, values] of Object.entries(req.headersDistinct)) for (const value of values ?? []) headers.append(name, value);
    const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, { method: 'POST', headers });
    await writeResponse(await web.handleRequest(request, { parsedBody }), res);
  }

  /**
   * Resumability follows the version the session negotiated at initialize, not each request's
   * MCP-Protocol-Version header: a 2025-11-25 session whose client labels a later POST with an
   * older version still gets the priming event (id and retry) that lets it resume that stream.
   */
  negotiated(version: unknown): void {
    const inner = (this as unknown as { _webStandardTransport: { supportsEmptySSEData(v: string): boolean } })._webStandardTransport;
    if (typeof version !== 'string' || typeof inner?.supportsEmptySSEData !== 'function') return;
    const perRequest = inner.supportsEmptySSEData.bind(inner);
    inner.supportsEmptySSEData = (v: string) => perRequest(v) || perRequest(version);
  }

  /** Whether any of these ids is in flight in this session. */
  inFlight(id: RequestId): boolean {
    return this.#inflight.has(id);
  }

  get inflightCount(): number {
    return this.#inflight.size;
  }

  /**
   * Records a POST's requests as in flight; `slot` holds one unit per tool call among them and is
   * given back as each is answered or cancelled. Returns a function that withdraws them all (the
   * POST never reached the session).
   */
  begin(requests: Array<{ id: RequestId; method: string }>, slot: { release(count?: number): void } | undefined): () => void {
    const exchange: Exchange = {
      pending: new Set(requests.map((r) => r.id)),
      calls: new Set(requests.filter((r) => r.method === 'tools/call').map((r) => r.id)),
      slot,
      cancelled: false,
    };
    for (const id of exchange.pending) this.#inflight.set(id, exchange);
    return () => {
      for (const id of exchange.pending) if (this.#inflight.get(id) === exchange) this.#inflight.delete(id);
      exchange.pending.clear();
      exchange.slot?.release();
    };
  }

  /**
   * The client cancelled these requests: the server sends them no response, so once nothing else
   * of their POST is pending, that POST's stream is closed here.
   */
  cancelled(ids: RequestId[]): void {
    for (const id of ids) {
      const exchange = this.#inflight.get(id);
      if (!exchange) continue;
      exchange.cancelled = true;
      this.#settle(id, exchange);
    }
  }

  /** Answers every request still in flight with a JSON-RPC error saying `message` (the server is stopping). */
  async answerAll(message: string): Promise<void> {
    for (const id of [...this.#inflight.keys()]) {
      await this.send({ jsonrpc: '2.0', id, error: { code: -32603, message } }).catch(() => {});
      this.#answered.add(id);
    }
  }

  override async send(message: JSONRPCMessage, options?: Parameters<NodeStreamableHTTPServerTransport['send']>[1]): Promise<void> {
    const response = !('method' in message) && 'id' in message && (typeof message.id === 'string' || typeof message.id === 'number');
    if (response && this.#answered.has(message.id as RequestId)) return;
    try {
      await super.send(message, options);
    } finally {
      if (response) {
        const id = message.id as RequestId;
        const exchange = this.#inflight.get(id);
        if (exchange) this.#settle(id, exchange);
      }
    }
  }

  /** Gives back every slot still held (the session is closing). */
  releaseAll(): void {
    for (const exchange of new Set(this.#inflight.values())) exchange.slot?.release();
    this.#inflight.clear();
  }

  #settle(id: RequestId, exchange: Exchange): void {
    this.#inflight.delete(id);
    exchange.pending.delete(id);
    if (exchange.calls.delete(id)) exchange.slot?.release(1);
    // The SDK closes a POST's stream when every request of it has a response; a cancelled one never
    // gets one, so the stream is closed here (through any request id of that POST).
    if (exchange.pending.size === 0 && exchange.cancelled) this.closeSSEStream(id);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** How long the headers and priming event of a POST's SSE stream wait for its next event. */
const PRIMING_WAIT_MS = 20;
/** An SSE event with an id and no data: the priming event a stream opens with. */
const PRIMING = /^id: [^\n]*\n(?:retry: \d+\n)?data: ?\n\n$/;

function isPriming(chunk: Uint8Array): boolean {
  return chunk.byteLength < 256 && PRIMING.test(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('latin1'));
}

/**
 * Writes a web Response to `res`: status, headers, then its body as it comes (waiting for the
 * socket to drain when it is full); the body is cancelled when the client goes away.
 */
async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  if (response.body === null) {
    res.writeHead(response.status, headers).end();
    return;
  }
  if (!/^text\/event-stream\b/i.test(response.headers.get('content-type') ?? '')) {
    // A whole answer (JSON, an error): sent with its length, in one write.
    const bytes = new Uint8Array(await response.arrayBuffer());
    res.writeHead(response.status, { ...headers, 'content-length': String(bytes.byteLength) }).end(bytes);
    return;
  }
  const reader = response.body.getReader();
  /** Stops the body: the transport then keeps what it sends for a replay (the client went away). */
  const cancel = (): void => void reader.cancel().catch(() => {});
  if (res.destroyed) return cancel();
  res.once('close', cancel);
  try {
    let chunk = await reader.read();
    if (!chunk.done && isPriming(chunk.value)) {
      const primer = chunk.value;
      const next = reader.read();
      // Observed even when the client left before it settled (the stream is then cancelled).
      next.catch(() => {});
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), PRIMING_WAIT_MS);
      });
      const waited = await Promise.race([next, timeout]);
      clearTimeout(timer);
      if (res.destroyed) return cancel();
      res.writeHead(response.status, headers);
      res.write(primer);
      chunk = waited ?? (await next);
    } else {
      res.writeHead(response.status, headers);
    }
    while (!chunk.done) {
      if (res.destroyed) return cancel();
      if (!res.write(chunk.value)) await drained(res);
      chunk = await reader.read();
    }
  } catch (error) {
    // A body that fails before anything was sent is the caller's error to answer (500).
    if (!res.headersSent) throw error;
    res.destroy();
    return;
  } finally {
    res.off('close', cancel);
  }
  res.end();
}

/** Resolves once `res` can take more, or is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}
