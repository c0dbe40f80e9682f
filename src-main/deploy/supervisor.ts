import { spawn, type ChildProcess } from 'node:child_process';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { connect, createServer as createTcpServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { StudioError } from '../engine/model/errors.ts';
import { describeToolFailure, timeoutMessage, toolErrorResult } from '../engine/model/toolResults.ts';

// Not an ES import: node:http's module namespace reads its lazy exports, loading undici (~100 ms of every CLI start).
const { createServer, get: httpGet, request: httpRequest } = process.getBuiltinModule('node:http');

/**
 * `callable deploy --serve`: workerd behind a small proxy of ours on the port the user asked for.
 * workerd runs every isolate on one thread and enforces no CPU limit, so a function that keeps the
 * CPU busy holds the whole process. The proxy knows each tools/call's function and so its deadline:
 * when a call passes it and workerd no longer answers, that call gets its timeout error, workerd
 * is replaced, and the other calls that were in it get an error saying so.
 */

/** How long past a call's deadline workerd may take to answer it itself (its own timer ends the call). */
const GRACE_MS = 1000;
/** How long a health check waits for a stuck workerd. */
const PROBE_MS = 500;
/** The largest request the proxy holds (it reads a request whole to see which function it calls). */
const MAX_BODY_BYTES = 16 * 1024 * 1024;
/** How long workerd has to stop after SIGTERM before it is killed (the CLI exits a second after a signal). */
const STOP_MS = 500;

export interface SupervisorOptions {
  config: string;
  cwd: string;
  /** The port clients connect to, on 127.0.0.1. */
  port: number;
  env: NodeJS.ProcessEnv;
  /** Each deployed function's deadline (timeoutMs). */
  timeouts: Readonly<Record<string, number>>;
  /** workerd's own output (its audit lines among it). */
  output: (data: Buffer) => void;
  /** One line for the person running --serve. */
  notice: (line: string) => void;
}

/** A request passed to workerd, until its answer ends. */
interface Flight {
  res: ServerResponse;
  id: string | number | null;
  /** A tools/call: its function and deadline. */
  call?: { name: string; timeoutMs: number };
  upstream?: IncomingMessage;
  timer?: NodeJS.Timeout;
  settled: boolean;
  /** The 2026-07-28 revision and later: a result says it is complete. */
  modern: boolean;
}

interface Running {
  child: ChildProcess;
  port: number;
  exited: Promise<number | string | null>;
}

/** The npm `workerd` binary. */
export function workerdBinary(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('workerd/package.json')), 'bin', 'workerd');
}

export class WorkerdSupervisor {
  readonly #options: SupervisorOptions;
  readonly #flights = new Set<Flight>();
  #current: Running | undefined;
  #server: Server | undefined;
  /** Settles when workerd can take requests (pending while it is replaced). */
  #ready: Promise<void> = Promise.resolve();
  #replacing = false;
  #stopping = false;
  #stopped: Promise<void> | undefined;
  #failed: (how: number | string | null) => void = () => {};
  /** Resolves with workerd's exit code (or signal) when it stops by itself. */
  readonly failed: Promise<number | string | null>;

  constructor(options: SupervisorOptions) {
    this.#options = options;
    this.failed = new Promise((resolve) => (this.#failed = resolve));
  }

  get pid(): number | undefined {
    return this.#current?.child.pid;
  }

  /** Starts workerd and, once it listens, the proxy. */
  async start(interrupted: AbortSignal): Promise<'ready' | 'exited' | 'stopped'> {
    const started = await this.#launch(interrupted);
    if (started !== 'ready') return started;
    this.#server = createServer((req, res) => this.#handle(req, res));
    const listened = await new Promise<Error | undefined>((resolve) => {
      this.#server!.once('error', resolve);
      this.#server!.listen(this.#options.port, '127.0.0.1', () => resolve(undefined));
    });
    if (listened) {
      // Taken since it was checked: workerd goes with the refusal.
      await this.stop();
      throw new StudioError('conflict', `port ${this.#options.port} is already in use on 127.0.0.1; pick another with --port`);
    }
    return 'ready';
  }

  /** Stops the proxy and workerd (once, however often it is called). */
  stop(): Promise<void> {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  async #stop(): Promise<void> {
    this.#stopping = true;
    this.#server?.close();
    this.#server?.closeAllConnections();
    const running = this.#current;
    if (!running || running.child.exitCode !== null || running.child.signalCode !== null) return;
    running.child.kill('SIGTERM');
    // A workerd held by a spinning function does not get to its SIGTERM handler.
    const timer = setTimeout(() => running.child.kill('SIGKILL'), STOP_MS);
    await running.exited;
    clearTimeout(timer);
  }

  /** Kills workerd now (this process is on its way out and cannot wait for it). */
  kill(): void {
    const child = this.#current?.child;
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }

  async #launch(interrupted?: AbortSignal): Promise<'ready' | 'exited' | 'stopped'> {
    const port = await freeTcpPort();
    const child = spawn(workerdBinary(), ['serve', '--experimental', this.#options.config, '--socket-addr', `http=127.0.0.1:${port}`], {
      cwd: this.#options.cwd,
      env: this.#options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', this.#options.output);
    child.stderr!.on('data', this.#options.output);
    const running: Running = { child, port, exited: new Promise((done) => child.once('exit', (code, signal) => done(code ?? signal))) };
    this.#current = running;
    void running.exited.then((how) => {
      if (this.#current === running && !this.#replacing && !this.#stopping) this.#failed(how);
    });
    const stop = new AbortController();
    try {
      return await Promise.race([
        listening(port, stop.signal).then(() => 'ready' as const),
        running.exited.then(() => 'exited' as const),
        ...(interrupted ? [aborted(interrupted).then(() => 'stopped' as const)] : []),
      ]);
    } finally {
      stop.abort();
    }
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.byteLength;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on('end', () => {
      if (size <= MAX_BODY_BYTES) return void this.#forward(req, Buffer.concat(chunks), res);
      res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: `Request body too large (limit ${MAX_BODY_BYTES} bytes)` } }));
    });
  }

  async #forward(req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> {
    const flight: Flight = { res, id: null, settled: false, modern: String(req.headers['mcp-protocol-version'] ?? '') >= '2026-07-28' };
    const message = jsonRpcOf(body);
    if (message) {
      flight.id = message.id;
      const timeoutMs = message.name === undefined ? undefined : this.#options.timeouts[message.name];
      if (message.name !== undefined && timeoutMs !== undefined) flight.call = { name: message.name, timeoutMs };
    }
    await this.#ready;
    if (res.destroyed) return;
    const running = this.#current!;
    this.#flights.add(flight);
    const upstream = httpRequest({ host: '127.0.0.1', port: running.port, method: req.method, path: req.url, headers: req.headers, agent: false }, (up) => {
      if (flight.settled) {
        up.resume();
        return;
      }
      flight.upstream = up;
      res.writeHead(up.statusCode ?? 502, up.statusMessage, up.headers);
      up.pipe(res);
      up.once('error', () => res.destroy());
    });
    upstream.once('error', () => {
      // workerd went away under this request: replaced (this call is answered already) or stopped.
      if (!flight.settled && !res.destroyed) this.#answer(flight, undefined, 'workerd stopped while it ran; call again');
    });
    res.once('close', () => {
      this.#flights.delete(flight);
      if (res.writableFinished) return void clearTimeout(flight.timer);
      // The client went away (a cancelled call): so does the request to workerd. Its deadline is
      // still watched, since an isolate that keeps the CPU busy does not notice.
      upstream.destroy();
    });
    upstream.end(body);
    if (flight.call) flight.timer = setTimeout(() => void this.#overdue(flight, running), flight.call.timeoutMs + GRACE_MS);
  }

  /** A call past its deadline and grace: if workerd no longer answers, the call is why. */
  async #overdue(flight: Flight, running: Running): Promise<void> {
    if (flight.settled || flight.res.writableFinished || this.#current !== running || this.#replacing) return;
    if (await answers(running.port, PROBE_MS)) return;
    if (flight.settled || this.#current !== running || this.#replacing) return;
    await this.#replace(flight);
  }

  async #replace(culprit: Flight): Promise<void> {
    const { name, timeoutMs } = culprit.call!;
    this.#replacing = true;
    let release!: () => void;
    this.#ready = new Promise((resolve) => (release = resolve));
    const others = [...this.#flights].filter((f) => f !== culprit && !f.settled);
    this.#options.notice(
      `callable deploy: ${name} kept workerd busy past its deadline (${timeoutMs} ms): restarting workerd${others.length > 0 ? `; ${others.length} other request(s) in it get an error` : ''}`,
    );
    this.#answer(culprit, { code: 'timeout', message: timeoutMessage(timeoutMs) });
    const why = `workerd was restarted because a call to ${name} kept the CPU busy past its deadline; call again`;
    for (const f of others) this.#answer(f, { code: 'sandbox_crashed', message: why }, why);
    const old = this.#current!;
    old.child.kill('SIGKILL');
    await old.exited;
    // Stopped meanwhile (interrupted): no new workerd to outlive this process.
    if (this.#stopping) return release();
    try {
      if ((await this.#launch()) === 'ready') this.#options.notice(`callable deploy: workerd restarted (pid ${this.#current!.child.pid})`);
    } finally {
      this.#replacing = false;
      release();
    }
    // A replacement that would not start is workerd failing: --serve ends.
    if (this.#current!.child.exitCode !== null || this.#current!.child.signalCode !== null) this.#failed(this.#current!.child.exitCode ?? this.#current!.child.signalCode);
  }

  /**
   * Answers a request workerd will not: a tools/call with a tool error in the servers' wording,
   * anything else with a JSON-RPC error. On a stream workerd had begun, the answer is its last event.
   */
  #answer(flight: Flight, failure: { code: string; message: string } | undefined, other = failure?.message ?? ''): void {
    flight.settled = true;
    clearTimeout(flight.timer);
    const { res } = flight;
    flight.upstream?.unpipe(res);
    const payload =
      flight.call && failure
        ? { jsonrpc: '2.0', id: flight.id, result: { ...toolErrorResult(describeToolFailure(flight.call.name, failure)), ...(flight.modern ? { resultType: 'complete' } : {}) } }
        : { jsonrpc: '2.0', id: flight.id, error: { code: -32000, message: other } };
    const json = JSON.stringify(payload);
    if (!res.headersSent) {
      res.writeHead(flight.id === null ? 503 : 200, { 'content-type': 'application/json' });
      res.end(json);
    } else if (String(res.getHeader('content-type') ?? '').startsWith('text/event-stream')) {
      res.end(`event: message\ndata: ${json}\n\n`);
    } else res.destroy();
  }
}

/** The id of a single JSON-RPC request, and for tools/call the tool it names. */
function jsonRpcOf(body: Buffer): { id: string | number | null; name?: string } | undefined {
  if (body.length === 0) return undefined;
  let message: unknown;
  try {
    message = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return undefined;
  const m = message as { id?: unknown; method?: unknown; params?: { name?: unknown } };
  const id = typeof m.id === 'string' || typeof m.id === 'number' ? m.id : null;
  const name = m.method === 'tools/call' && typeof m.params?.name === 'string' ? m.params.name : undefined;
  return { id, ...(name === undefined ? {} : { name }) };
}

async function freeTcpPort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resolves once something accepts connections on 127.0.0.1:port. */
async function listening(port: number, stop: AbortSignal): Promise<void> {
  for (;;) {
    if (stop.aborted) return;
    const ok = await new Promise<boolean>((done) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        done(true);
      });
      socket.once('error', () => done(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** Whether the gateway answers its health check within `timeoutMs`. */
function answers(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((done) => {
    const req = httpGet({ host: '127.0.0.1', port, path: '/healthz', timeout: timeoutMs, agent: false }, (res) => {
      res.resume();
      done(res.statusCode === 200);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => done(false));
  });
}
