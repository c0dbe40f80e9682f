// The resource bounds of the HTTP MCP server: every one of them refuses with a clear answer (503
// and Retry-After) instead of letting a hostile or runaway client take the process down.
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface HttpLimits {
  /**
   * Open TCP connections. At the bound a new one replaces the oldest that has sent no complete
   * request, or the longest-idle keep-alive one; only if all have requests in progress is it 503.
   */
  maxConnections: number;
  /** Time for a client to send a request's headers (also a fresh connection that sends nothing). */
  headersTimeoutMs: number;
  /** The same for a connection opened while three quarters of maxConnections are open. */
  pressureHeadersTimeoutMs: number;
  /** Time for a client to send a whole request, headers and body. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long. */
  keepAliveTimeoutMs: number;
  /** 2025-era sessions held at once; at the bound the longest-idle one is dropped, or 503 if all are busy. */
  maxSessions: number;
  /** Long-lived listening streams (2025-era GET, 2026-era subscriptions/listen) open at once. */
  maxStreams: number;
  /** Tool calls running at once. */
  maxRunningCalls: number;
  /** Tool calls waiting for a running slot; one more is answered 503. */
  maxQueuedCalls: number;
  /** Events kept per SSE stream of a 2025-era session for replay (Last-Event-ID); the oldest go first. */
  replayEvents: number;
  /** Bytes of events kept per SSE stream for replay; the oldest go first. */
  replayBytes: number;
  /** SSE streams per session whose replay log is kept; the oldest stream's log goes first. */
  replayStreams: number;
  /** The `retry` (ms) of the priming event: how long a client waits before reconnecting. */
  sseRetryMs: number;
}

export const DEFAULT_HTTP_LIMITS: Readonly<HttpLimits> = {
  maxConnections: 256,
  headersTimeoutMs: 10_000,
  pressureHeadersTimeoutMs: 1_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxSessions: 256,
  maxStreams: 64,
  maxRunningCalls: 32,
  maxQueuedCalls: 64,
  replayEvents: 256,
  replayBytes: 64 * 1024,
  replayStreams: 8,
  sseRetryMs: 1000,
};

/** A connection this young (ms) is not closed to make room: its request may not have been read yet. */
const YOUNG_MS = 250;

/** What a refused client is told to wait before trying again, in seconds. */
export const RETRY_AFTER_SECONDS = 2;

/** A place held in the call gate: released once, in parts (a batch) or all at once. */
export interface GateSlot {
  /** Gives back `count` of the slot's units (all that remain when omitted). */
  release(count?: number): void;
}

/**
 * Bounds the tool calls running at once, with a bounded FIFO queue behind them. Entering returns a
 * slot, 'busy' when the queue is full, or 'gone' when the caller's signal ended the wait.
 */
export class CallGate {
  readonly #maxRunning: number;
  readonly #maxQueued: number;
  #running = 0;
  readonly #queue: Array<{ weight: number; admit: () => void }> = [];

  constructor(maxRunning: number, maxQueued: number) {
    this.#maxRunning = Math.max(1, maxRunning);
    this.#maxQueued = Math.max(0, maxQueued);
  }

  get limits(): { running: number; queued: number } {
    return { running: this.#maxRunning, queued: this.#maxQueued };
  }

  /** A slot at once when one is free and nobody waits (what `enter` would give without waiting), else undefined. */
  tryEnter(weight: number): GateSlot | undefined {
    const units = Math.min(Math.max(1, weight), this.#maxRunning);
    return this.#queue.length === 0 && this.#running + units <= this.#maxRunning ? this.#admit(units) : undefined;
  }

  enter(weight: number, signal: AbortSignal): Promise<GateSlot | 'busy' | 'gone'> {
    const units = Math.min(Math.max(1, weight), this.#maxRunning);
    if (signal.aborted) return Promise.resolve('gone');
    if (this.#queue.length === 0 && this.#running + units <= this.#maxRunning) return Promise.resolve(this.#admit(units));
    if (this.#queue.length >= this.#maxQueued) return Promise.resolve('busy');
    return new Promise((resolve) => {
      const entry = {
        weight: units,
        admit: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.#admit(units));
        },
      };
      const onAbort = (): void => {
        const at = this.#queue.indexOf(entry);
        if (at >= 0) this.#queue.splice(at, 1);
        resolve('gone');
        this.#pump();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(entry);
    });
  }

  #admit(units: number): GateSlot {
    this.#running += units;
    let held = units;
    return {
      release: (count = held) => {
        const n = Math.min(count, held);
        if (n <= 0) return;
        held -= n;
        this.#running -= n;
        this.#pump();
      },
    };
  }

  #pump(): void {
    while (this.#queue.length > 0 && this.#running + this.#queue[0]!.weight <= this.#maxRunning) this.#queue.shift()!.admit();
  }
}

/**
 * Caps a server's open connections without letting the cap itself lock clients out: at the bound, a
 * new connection makes room by closing the oldest connection that has not sent a complete request
 * (silent or slow-loris sockets) or else the longest-idle keep-alive one. Only when none can go is
 * the new one answered 503 (Retry-After) and closed, so the client learns why instead of seeing a
 * reset. Under pressure (three quarters of the bound open), a new connection must send its headers
 * within `pressureHeadersMs`.
 * Returns the sockets refused this way, whose requests the server must then ignore.
 */
export function capConnections(server: HttpServer, max: number, pressureHeadersMs: number): { refused: WeakSet<Socket> } {
  interface Connection {
    opened: number;
    /** Requests whose headers arrived and whose response has not closed. */
    inFlight: number;
    /** It has sent at least one complete request head. */
    spoke: boolean;
    /** When its last response closed. */
    idleSince: number;
  }
  // Insertion order is opening order: the first silent one found is the oldest.
  const open = new Map<Socket, Connection>();
  const refused = new WeakSet<Socket>();
  const pressureAt = Math.max(1, Math.floor((max * 3) / 4));
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: null,
    error: { code: -32000, message: `Server busy: ${max} connections are open and busy (the limit); retry after ${RETRY_AFTER_SECONDS} s` },
  });
  const answer =
    `HTTP/1.1 503 Service Unavailable\r\nRetry-After: ${RETRY_AFTER_SECONDS}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;

  /**
   * Closes one connection to make room, if one may go: the oldest that has sent no complete request
   * and is old enough that a prompt client would have; 'young' when there are such connections but
   * all too young to judge yet; else the longest-idle keep-alive one (closing it races with a
   * client reusing it, so that is the last resort).
   */
  const makeRoom = (): 'closed' | 'young' | 'none' => {
    const now = Date.now();
    let victim: Socket | undefined;
    let young = false;
    for (const [socket, c] of open) {
      if (c.spoke) continue;
      if (now - c.opened >= YOUNG_MS) victim = socket;
      else young = true;
      // Those after it are younger still.
      break;
    }
    if (victim === undefined && young) return 'young';
    if (victim === undefined) {
      let idlest: Connection | undefined;
      for (const [socket, c] of open) {
        if (c.spoke && c.inFlight === 0 && (idlest === undefined || c.idleSince < idlest.idleSince)) {
          idlest = c;
          victim = socket;
        }
      }
    }
    if (victim === undefined) return 'none';
    open.delete(victim);
    victim.destroy();
    return 'closed';
  };
  // The connections of a burst are accepted before any request that came with them is read, so a
  // client that sent its request may look silent for a moment: room is made once the server has
  // read what is waiting (setImmediate runs after this poll phase), and a connection younger than
  // YOUNG_MS is not closed for it. Meanwhile up to `slack` more than the bound may be open.
  const slack = Math.max(1, Math.floor(max / 4));
  let trimming = false;
  const trim = (): void => {
    trimming = false;
    let room: ReturnType<typeof makeRoom> = 'closed';
    while (open.size > max && (room = makeRoom()) === 'closed');
    if (open.size > max) {
      trimming = true;
      setTimeout(trim, room === 'young' ? YOUNG_MS : 100).unref();
    }
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const c = open.get(req.socket);
    if (c === undefined) return;
    c.spoke = true;
    c.inFlight++;
    res.once('close', () => {
      c.inFlight--;
      c.idleSince = Date.now();
    });
  };
  // Ahead of the server's own handlers, so a request is counted before it is served.
  server.prependListener('request', onRequest);
  server.prependListener('checkContinue', onRequest);

  server.on('connection', (socket: Socket) => {
    // Refused at once when every connection has a request in progress: none will make room soon.
    const full = open.size >= max && ![...open.values()].some((c) => !c.spoke || c.inFlight === 0);
    if (full || (open.size >= max + slack && makeRoom() !== 'closed')) {
      refused.add(socket);
      socket.end(answer);
      // A peer that never closes its side does not keep the socket.
      setTimeout(() => socket.destroy(), 1000).unref();
      return;
    }
    const c: Connection = { opened: Date.now(), inFlight: 0, spoke: false, idleSince: Date.now() };
    open.set(socket, c);
    if (open.size > max && !trimming) {
      trimming = true;
      setImmediate(trim);
    }
    socket.once('close', () => {
      if (open.get(socket) === c) open.delete(socket);
    });
    if (open.size >= pressureAt) {
      // Spread out, so that sockets opened together do not all close, and re-open, together.
      setTimeout(
        () => {
          if (!c.spoke && open.get(socket) === c) socket.destroy();
        },
        pressureHeadersMs * (1 + Math.random()),
      ).unref();
    }
  });
  return { refused };
}
