import { createMcpHandler, isLegacyRequest } from '@modelcontextprotocol/server';
import { hostHeaderValidation, localhostHostValidation, toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import { BoundedEventStore } from './eventStore.ts';
import { jsonDepthExceeds, MAX_JSON_DEPTH, refuseBody } from './httpGuards.ts';
import { CallGate, capConnections, DEFAULT_HTTP_LIMITS, RETRY_AFTER_SECONDS, type GateSlot, type HttpLimits } from './httpLimits.ts';
import { originAllowed, sameHostOrigins } from './httpOrigin.ts';
import { cancelledIdOf, requestsOf, TrackedTransport, type RequestId } from './httpSession.ts';
import type { McpEnginePort as Engine } from './port.ts';
import { ToolServer } from './server.ts';

export interface HttpOptions {
  host: string;
  port: number;
  /**
   * The bearer token clients must present, or a provider asked on each request (cheap: it must
   * cache), so a regenerated token takes effect at once; undefined only with an explicit --no-auth.
   */
  token: string | (() => Promise<string>) | undefined;
  diagnostic: (message: string) => void;
  maxBodyBytes?: number;
  /** Idle 2025-era sessions are closed after this long. */
  sessionIdleMs?: number;
  /**
   * Browser origins (canonical scheme://host[:port], see normalizeOrigin) whose requests are
   * accepted besides the server's own loopback origins; requests without an Origin header are not
   * browser requests and always pass.
   */
  allowedOrigins?: readonly string[];
  /** Resource bounds; each defaults to DEFAULT_HTTP_LIMITS. */
  limits?: Partial<HttpLimits>;
}

export interface RunningHttpServer {
  url: string;
  port: number;
  /** What the replay logs of the open sessions hold, over all of them. */
  replayHeld(): { sessions: number; events: number; bytes: number };
  /**
   * Starts stopping, at once: new requests are refused and calls waiting for a slot are answered
   * with a JSON-RPC error saying the server is shutting down. Calls running go on until the engine
   * stops their runs (engine.interrupt), which answers them the same way.
   */
  shutdown(): void;
  /** Shuts down, waits (briefly) for the calls in flight to be answered, then closes everything. */
  close(): Promise<void>;
}

/** Constant-time comparison of a presented token with the expected one. */
export function tokenMatches(presented: string, expected: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/**
 * Streamable HTTP MCP at /mcp (all enabled functions) and /mcp/<profile>. Host and Origin are
 * checked first (DNS rebinding), then the bearer token, then the body size. 2026-07-28 requests
 * go to the SDK's handler; 2025-11-25 clients get real sessions (Mcp-Session-Id, an SSE stream
 * for list-changed, DELETE), so list-changed, logging/setLevel and cancellation work for them.
 */
export async function startMcpHttpServer(engine: Engine, options: HttpOptions): Promise<RunningHttpServer> {
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const idleMs = options.sessionIdleMs ?? 30 * 60 * 1000;
  const validateHost = LOOPBACK.has(options.host) ? localhostHostValidation() : hostHeaderValidation([options.host, 'localhost', '127.0.0.1']);
  const allowedOrigins = new Set(options.allowedOrigins ?? []);
  const limits: HttpLimits = { ...DEFAULT_HTTP_LIMITS, ...options.limits };
  const calls = new CallGate(limits.maxRunningCalls, limits.maxQueuedCalls);
  let streams = 0;
  const onerror = (error: Error): void => options.diagnostic(`mcp http: ${error.message}`);

  interface Endpoint {
    tools: ToolServer;
    node: ReturnType<typeof toNodeHandler>;
    close: () => Promise<void>;
    notify: () => void;
  }
  const endpoints = new Map<string, Endpoint>();
  const endpointFor = (profile: string | undefined): Endpoint => {
    const key = profile ?? '';
    let endpoint = endpoints.get(key);
    if (!endpoint) {
      const tools = new ToolServer(engine, { profile, transport: 'http', diagnostic: options.diagnostic });
      const handler = createMcpHandler(tools.requestFactory, { legacy: 'reject', onerror, maxRequestBodySize: maxBody });
      endpoint = {
        tools,
        node: toNodeHandler(handler, { onerror, maxRequestBodySize: maxBody }),
        close: () => handler.close(),
        notify: () => {
          handler.notify.toolsChanged();
          tools.notifyToolsChanged();
        },
      };
      endpoints.set(key, endpoint);
    }
    return endpoint;
  };

  interface Session {
    transport: TrackedTransport;
    /** The replay log of its SSE streams (Last-Event-ID). */
    events: BoundedEventStore;
    profile: string;
    lastSeen: number;
    /** Its GET stream is open. */
    listening: boolean;
  }
  const sessions = new Map<string, Session>();
  /** Set once the server is stopping; aborts the waits for a call slot. */
  const stopping = new AbortController();
  /** The responses of 2026-era tool calls still running (2025-era ones are tracked by their session). */
  const modernCalls = new Map<ServerResponse, RequestId[]>();

  // The sandbox processes start beside the server, so the first call does not wait for them.
  engine.prewarm([]);
  const stopWatching = engine.onCatalogChange(() => {
    for (const endpoint of endpoints.values()) endpoint.notify();
  });
  const sweeper = setInterval(() => {
    const cutoff = Date.now() - idleMs;
    for (const s of sessions.values()) if (s.lastSeen < cutoff) void s.transport.close().catch(() => {});
  }, 60_000);
  sweeper.unref();

  /** Makes room for one more session: drops the longest-idle one with nothing in flight, if any. */
  const roomForSession = (): boolean => {
    if (sessions.size < limits.maxSessions) return true;
    let idlest: Session | undefined;
    for (const s of sessions.values()) {
      if (s.listening || s.transport.inflightCount > 0) continue;
      if (idlest === undefined || s.lastSeen < idlest.lastSeen) idlest = s;
    }
    if (idlest === undefined) return false;
    if (idlest.transport.sessionId !== undefined) sessions.delete(idlest.transport.sessionId);
    void idlest.transport.close().catch(() => {});
    return true;
  };

  /** Holds a listening-stream place until the response closes; false (and a 503 sent) when none is left. */
  const holdStream = (res: ServerResponse, id: unknown): boolean => {
    if (streams >= limits.maxStreams) {
      busy(res, id, `${limits.maxStreams} listening streams are open (the limit); close one or retry later`);
      return false;
    }
    streams++;
    res.once('close', () => streams--);
    return true;
  };

  /**
   * A place in the call gate for a POST's tool calls, held until they are answered (legacy) or the
   * response closes (modern). Undefined when the POST has no tool call; null when refused (sent).
   */
  const callSlot = async (res: ServerResponse, requests: Array<{ id: RequestId; method: string }>): Promise<GateSlot | undefined | null> => {
    const weight = requests.filter((r) => r.method === 'tools/call').length;
    if (weight === 0) return undefined;
    // A free slot is taken without the abort plumbing that only a wait needs.
    const free = stopping.signal.aborted ? undefined : calls.tryEnter(weight);
    if (free) return free;
    const gone = new AbortController();
    const onClose = (): void => gone.abort();
    res.once('close', onClose);
    const slot = await calls.enter(weight, AbortSignal.any([gone.signal, stopping.signal]));
    res.off('close', onClose);
    if (slot === 'gone') {
      if (stopping.signal.aborted && !res.headersSent) answerShutdown(res, requests.map((r) => r.id), NOT_STARTED);
      return null;
    }
    if (slot === 'busy') {
      const { running, queued } = calls.limits;
      busy(res, requests.length === 1 ? requests[0]!.id : null, `${running} tool calls are running and ${queued} waiting (the limit)`);
      return null;
    }
    return slot;
  };

  const legacySession = async (req: IncomingMessage, res: ServerResponse, body: unknown, profile: string | undefined): Promise<void> => {
    const header = req.headers['mcp-session-id'];
    const sid = Array.isArray(header) ? header[0] : header;
    let session = sid === undefined ? undefined : sessions.get(sid);
    if (session && session.profile !== (profile ?? '')) session = undefined;
    if (!session) {
      if (sid !== undefined || req.method !== 'POST') {
        sendJsonRpcError(res, sid !== undefined ? 404 : 400, -32000, sid !== undefined ? 'Session not found: start a new session with initialize' : 'Bad Request: no session; send initialize first');
        return;
      }
      if (!roomForSession()) {
        busy(res, requestsOf(body)[0]?.id ?? null, `${limits.maxSessions} sessions are busy (the limit); end one (DELETE) or retry later`);
        return;
      }
      const endpoint = endpointFor(profile);
      const events = new BoundedEventStore({ maxEvents: limits.replayEvents, maxBytes: limits.replayBytes, maxStreams: limits.replayStreams });
      const transport: TrackedTransport = new TrackedTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: events,
        retryInterval: limits.sseRetryMs,
        onsessioninitialized: (id: string) => {
          sessions.set(id, { transport, events, profile: profile ?? '', lastSeen: Date.now(), listening: false });
        },
        onsessionclosed: (id: string) => {
          sessions.delete(id);
        },
      });
      const server = await endpoint.tools.trackedFactory({ era: 'legacy' });
      transport.negotiated(initializeVersionOf(body));
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
        transport.releaseAll();
        events.clear();
        void server.close().catch(() => {});
      };
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    session.lastSeen = Date.now();
    const transport = session.transport;
    if (req.method === 'GET') {
      // A replay the log cannot serve is refused here with the reason (the SDK would say only
      // "Invalid event ID format"); the client starts that request again.
      const lastEventId = req.headers['last-event-id'];
      const refusal = typeof lastEventId === 'string' && lastEventId !== '' ? session.events.refusal(lastEventId) : undefined;
      if (refusal !== undefined) {
        sendJsonRpcError(res, 400, -32000, `Bad Request: cannot resume: ${refusal}; send the request again`);
        return;
      }
      if (!holdStream(res, null)) return;
      const listening = session;
      listening.listening = true;
      res.once('close', () => (listening.listening = false));
      await transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== 'POST') {
      await transport.handleRequest(req, res, body);
      return;
    }
    // A second request with an id already in flight would take over the first one's response
    // stream (and its result would be lost): it is refused instead.
    const requests = requestsOf(body);
    const reused = requests.find((r, i) => transport.inFlight(r.id) || requests.findIndex((o) => o.id === r.id) !== i);
    if (reused !== undefined) {
      sendJsonRpcError(res, 409, -32600, `Invalid Request: request id ${JSON.stringify(reused.id)} is already in flight in this session; use a new id`, reused.id);
      return;
    }
    // The ids count as in flight while the POST waits for a call slot too.
    const reserved = transport.begin(requests, undefined);
    const slot = await callSlot(res, requests);
    reserved();
    if (slot === null) return;
    const withdraw = transport.begin(requests, slot);
    // A POST the transport refuses (a 4xx before its messages are dispatched) gets no responses
    // through send(): its ids and slot are given back when it closes.
    res.once('close', () => {
      if (res.statusCode >= 400) withdraw();
    });
    await transport.handleRequest(req, res, body);
    const cancelled = cancelledIdOf(body);
    if (cancelled.length > 0) transport.cancelled(cancelled);
  };

  const serve = (req: IncomingMessage, res: ServerResponse): void => {
    // A connection over the bound was answered 503 when it opened; it gets nothing more.
    if (connections.refused.has(req.socket)) return;
    if (stopping.signal.aborted) {
      res.shouldKeepAlive = false;
      sendJsonRpcError(res, 503, -32000, 'Service Unavailable: the server is shutting down');
      return;
    }
    handle(req, res).catch((error: unknown) => {
      onerror(error instanceof Error ? error : new Error(String(error)));
      if (!res.headersSent) sendJsonRpcError(res, 500, -32603, 'Internal error');
      else res.end();
    });
  };
  // Node checks the header and request timeouts on an interval (30 s by default): a shorter one
  // makes a 10 s bound close to 10 s.
  const checkEvery = Math.max(50, Math.min(1000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)));
  const httpServer: HttpServer = createServer({ connectionsCheckingInterval: checkEvery }, serve);
  httpServer.headersTimeout = limits.headersTimeoutMs;
  httpServer.requestTimeout = limits.requestTimeoutMs;
  httpServer.keepAliveTimeout = limits.keepAliveTimeoutMs;
  const connections = capConnections(httpServer, limits.maxConnections, limits.pressureHeadersTimeoutMs);
  // With a listener Node no longer answers "Expect: 100-continue" by itself: the body is asked for
  // (writeContinue in readJsonBody) only after every check, so an oversized one gets 413 at once.
  httpServer.on('checkContinue', serve);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!validateHost(req, res)) return;
    const origin = originAllowed(req.headersDistinct.origin, allowedOrigins);
    if (!origin.ok) {
      sendJsonRpcError(res, 403, -32000, origin.message);
      return;
    }
    // A browser that sends no Origin still says where the request comes from.
    if (req.headers.origin === undefined && String(req.headers['sec-fetch-site'] ?? '').toLowerCase() === 'cross-site') {
      sendJsonRpcError(res, 403, -32000, 'Forbidden: cross-site requests are not accepted');
      return;
    }
    // The raw path, not a normalised one: /mcp/, //mcp, /mcp/../mcp and /MCP are not aliases.
    const rawPath = (req.url ?? '').split('?', 1)[0] ?? '';
    const match = /^\/mcp(?:\/([a-z][a-z0-9_-]{0,63}))?$/.exec(rawPath);
    if (!match) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: the MCP endpoint is /mcp (or /mcp/<profile>)\n');
      return;
    }
    if (options.token !== undefined) {
      // Node keeps only the first of duplicate Authorization headers: more than one is refused.
      const all = req.headersDistinct.authorization ?? [];
      const auth = all.length === 1 ? (all[0] ?? '') : '';
      const presented = /^Bearer (.+)$/i.exec(auth)?.[1] ?? '';
      let expected: string;
      try {
        expected = typeof options.token === 'string' ? options.token : await options.token();
      } catch (error) {
        // Fails closed: without the current token nothing is accepted.
        options.diagnostic(`mcp http: cannot read the bearer token: ${error instanceof Error ? error.message : String(error)}`);
        sendJsonRpcError(res, 503, -32000, 'Service Unavailable: the server cannot read its bearer token (is the keychain available?)');
        return;
      }
      if (!tokenMatches(presented, expected)) {
        res
          .writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer realm="callable-studio", error="invalid_token"' })
          .end(JSON.stringify({ error: 'invalid_token', error_description: 'Send "Authorization: Bearer <token>"; "callable token" prints it.' }));
        return;
      }
    }
    const profile = match[1];
    if (profile !== undefined && !engine.profiles.find(profile)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`Not found: no profile named "${profile}"\n`);
      return;
    }
    const endpoint = endpointFor(profile);
    let body: unknown;
    if (req.method === 'POST') {
      const read = await readJsonBody(req, res, maxBody);
      if ('error' in read) {
        sendJsonRpcError(res, read.status, read.code, read.error);
        return;
      }
      body = read.body;
      const version = req.headers['mcp-protocol-version'];
      const refused = refuseBody(body, Array.isArray(version) ? version[0] : version, req.headers['mcp-session-id'] !== undefined);
      if (refused !== undefined) {
        sendJsonRpcError(res, 400, -32600, refused);
        return;
      }
    }
    const legacy =
      req.headers['mcp-session-id'] !== undefined || (await isLegacyRequest(await toWebRequest(req, body), body, { maxRequestBodySize: maxBody }));
    if (legacy) {
      await legacySession(req, res, body, profile);
      return;
    }
    const requests = requestsOf(body);
    if (requests.some((r) => r.method === 'subscriptions/listen') && !holdStream(res, requests[0]!.id)) return;
    // A stateless call holds its slot until its response closes; a client that goes away cancels it.
    const slot = await callSlot(res, requests);
    if (slot === null) return;
    if (slot) {
      modernCalls.set(res, requests.map((r) => r.id));
      res.once('close', () => {
        modernCalls.delete(res);
        slot.release();
      });
    }
    await endpoint.node(req, res, body);
  };

  const shutdown = (): void => {
    if (stopping.signal.aborted) return;
    stopping.abort();
    httpServer.close();
  };

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(options.port, options.host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const port = (httpServer.address() as AddressInfo).port;
  // A page served from this very address and port is same-origin, not a rebinding attempt.
  if (LOOPBACK.has(options.host)) for (const origin of sameHostOrigins(port)) allowedOrigins.add(origin);
  const hostForUrl = options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
  return {
    url: `http://${hostForUrl}:${port}/mcp`,
    port,
    replayHeld() {
      let events = 0;
      let bytes = 0;
      for (const s of sessions.values()) {
        events += s.events.size.events;
        bytes += s.events.size.bytes;
      }
      return { sessions: sessions.size, events, bytes };
    },
    shutdown,
    async close() {
      shutdown();
      // Running calls are answered as the engine stops their runs; a straggler is answered here.
      const deadline = Date.now() + SHUTDOWN_GRACE_MS;
      const inFlight = (): number => modernCalls.size + [...sessions.values()].reduce((n, s) => n + s.transport.inflightCount, 0);
      while (inFlight() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      for (const s of sessions.values()) await s.transport.answerAll(NOT_FINISHED).catch(() => {});
      for (const [res, ids] of modernCalls) answerShutdown(res, ids, NOT_FINISHED);
      stopWatching();
      clearInterval(sweeper);
      for (const s of sessions.values()) await s.transport.close().catch(() => {});
      for (const e of endpoints.values()) await e.close().catch(() => {});
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}

/** How long closing waits for running calls to be answered by their functions' ends. */
const SHUTDOWN_GRACE_MS = 500;
/** What a call gets that was still waiting for a slot, or still running, when the server closed. */
const NOT_STARTED = 'the server is shutting down; this call did not start: call again once it is back';
const NOT_FINISHED = 'the server is shutting down; this call did not finish: call again once it is back';

/**
 * Answers the requests `ids` of a response with a shutting-down error: as a JSON body when nothing
 * was sent yet (HTTP 200, so the client reads the JSON-RPC error rather than a transport failure),
 * as a last event on an SSE stream otherwise; then ends it.
 */
function answerShutdown(res: ServerResponse, ids: RequestId[], message: string): void {
  if (res.writableEnded || res.destroyed) return;
  const errors = ids.map((id) => ({ jsonrpc: '2.0', id, error: { code: -32603, message } }));
  if (!res.headersSent) {
    res.shouldKeepAlive = false;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(errors.length === 1 ? errors[0] : errors));
    return;
  }
  if (/text\/event-stream/.test(String(res.getHeader('content-type') ?? ''))) {
    res.end(errors.map((e) => `event: message\ndata: ${JSON.stringify(e)}\n\n`).join(''));
    return;
  }
  res.end();
}

/** The protocolVersion an initialize request (single or first of a batch) asks for. */
function initializeVersionOf(body: unknown): unknown {
  const first: unknown = Array.isArray(body) ? body[0] : body;
  if (typeof first !== 'object' || first === null) return undefined;
  const params = (first as { method?: unknown; params?: { protocolVersion?: unknown } }).params;
  return (first as { method?: unknown }).method === 'initialize' ? params?.protocolVersion : undefined;
}

function sendJsonRpcError(res: ServerResponse, status: number, code: number, message: string, id: unknown = null, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }));
}

/** 503 with Retry-After: a bound is reached; the client may come back shortly. */
function busy(res: ServerResponse, id: unknown, why: string): void {
  sendJsonRpcError(res, 503, -32000, `Server busy: ${why}; retry after ${RETRY_AFTER_SECONDS} s`, id, { 'retry-after': String(RETRY_AFTER_SECONDS) });
}

async function readJsonBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<{ body: unknown } | { error: string; status: number; code: number }> {
  const type = String(req.headers['content-type'] ?? '');
  if (!/^application\/json\b/i.test(type)) return { error: 'Unsupported Media Type: send Content-Type: application/json', status: 415, code: -32000 };
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return { error: `Request body too large (limit ${limit} bytes)`, status: 413, code: -32000 };
  }
  if (/\b100-continue\b/i.test(String(req.headers.expect ?? ''))) res.writeContinue();
  // Read with events, not an async iterator: a small body is one chunk, and the iterator's machinery cost more than reading it.
  const read = await new Promise<Buffer | 'too large' | Error>((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.byteLength;
      chunks.push(chunk);
      if (size <= limit) return;
      done();
      // As the iterator did on an early return: the rest of the body is not read.
      req.destroy();
      resolve('too large');
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    };
    const onError = (error: Error): void => {
      done();
      resolve(error);
    };
    const done = (): void => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    // Closed before its end (the client went away): as the iterator, a premature close is an error.
    const onClose = (): void => {
      if (req.complete) return;
      done();
      resolve(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    };
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
  if (read === 'too large') return { error: `Request body too large (limit ${limit} bytes)`, status: 413, code: -32000 };
  if (read instanceof Error) throw read;
  const text = read.toString('utf8');
  // Bounded before parsing and validation: deep nesting overflowed the stack in the SDK's validators.
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) return { error: `Invalid Request: the body is nested deeper than ${MAX_JSON_DEPTH} levels`, status: 400, code: -32600 };
  try {
    return { body: JSON.parse(text) };
  } catch {
    return { error: 'Parse error: the body is not valid JSON', status: 400, code: -32700 };
  }
}
