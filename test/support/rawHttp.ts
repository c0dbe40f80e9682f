import { request, type IncomingHttpHeaders } from 'node:http';
import { connect as tcpConnect, type Socket } from 'node:net';
import { vendorServer } from './vendor.ts';

/** A 2025-11-25 initialize body. */
/** The headers of an authorized MCP POST (JSON body, JSON or SSE answer), plus `extra`. */
export function mcpHeaders(token: string, extra: Record<string, string> = {}): Record<string, string> {
  return { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, ...extra };
}

export const INIT_2025 = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
});

/** The `_meta` envelope a 2026-07-28 request carries. */
export const ENVELOPE_2026 = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** The headers a 2026-07-28 request must carry beside its body. */
export function headers2026(method: string, name?: string): Record<string, string> {
  return { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) };
}

/** A 2026-07-28 request body (stateless: no session). */
export function request2026(id: string | number, method: string, params: Record<string, unknown> = {}): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: ENVELOPE_2026 } });
}

export interface Exchange {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body received so far. */
  body: () => string;
  /** Resolves with the whole body when the server ends the response (rejects if the socket fails). */
  ended: Promise<string>;
  /** Closes the connection from the client side. */
  abort: () => void;
}

/**
 * Sends one request on its own connection and resolves as soon as the response head arrives; the
 * body keeps streaming (an SSE stream stays open until the server or `abort` ends it).
 */
export function open(port: number, options: { path?: string; method?: string; headers?: Record<string, string | string[]>; body?: string }): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: options.path ?? '/mcp', method: options.method ?? 'POST', headers: options.headers ?? {}, agent: false }, (res) => {
      let body = '';
      const ended = new Promise<string>((done, fail) => {
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => done(body));
        res.on('error', fail);
        res.on('aborted', () => fail(new Error('response aborted')));
      });
      ended.catch(() => {});
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: () => body, ended, abort: () => req.destroy() });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** One request, its whole response. */
export async function exchange(port: number, options: Parameters<typeof open>[1]): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  const reply = await open(port, options);
  return { status: reply.status, headers: reply.headers, body: await reply.ended };
}

/** The JSON-RPC messages of an SSE or JSON response body. */
export function messagesOf(body: string): Array<Record<string, unknown>> {
  const trimmed = body.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) return [JSON.parse(trimmed) as Record<string, unknown>].flat();
  return body
    .split('\n')
    .filter((l) => l.startsWith('data: ') && l.length > 6)
    .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
}

/** A bare TCP connection to the server, with what it received and when it was closed. */
export function socketTo(port: number): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    let received = '';
    const socket = tcpConnect(port, '127.0.0.1');
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.once('connect', () => resolve({ socket, received: () => received, closed }));
    socket.once('error', (error) => {
      if (socket.connecting) reject(error);
    });
  });
}

/** Resolves when the condition holds, polling; fails with `what` after `ms`. */
/**
 * A vendor that holds every request until `release()` (which answers those held so far): the
 * functions that call it are slow tool calls for as long as the test wants. Counts requests whose connection the caller closed.
 */
export async function heldVendor(): Promise<{ port: number; seen: () => number; closed: () => number; release: () => void }> {
  const held: Array<import('node:http').ServerResponse> = [];
  let closed = 0;
  const vendor = await vendorServer((_req, res) => {
    res.on('close', () => {
      if (!res.writableFinished) closed++;
    });
    held.push(res);
  });
  return {
    port: vendor.port,
    seen: () => vendor.seen.length,
    closed: () => closed,
    release: () => {
      for (const res of held.splice(0)) res.end('ok');
    },
  };
}
