// The memory bombs of issue #8, run against a live `callable mcp`: three functions that try to take
// their sandbox host down, a local HTTP server that never answers (for the one that leaves fetches
// pending), and a sampler of the hosts' resident size read from /proc while they run (Linux).
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { sandboxHostPids, statusKiB } from './targets.ts';

/** The functions' own deadline (ms): a bomb that no limit stops ends here, as a timeout. */
export const BOMB_TIMEOUT_MS = 10_000;

export interface Bomb {
  name: string;
  what: string;
  source: string;
  memoryMb?: number;
  allowedHosts?: string[];
}

export function bombs(hangPort: number): Bomb[] {
  const hang = `127.0.0.1:${hangPort}`;
  return [
    {
      name: 'bomb_array',
      what: 'new Array(1024*1024*60).fill(), memoryMb 64',
      memoryMb: 64,
      source: 'export default () => {\n  const a = new Array(1024 * 1024 * 60).fill();\n  return a.length;\n}',
    },
    {
      name: 'bomb_string',
      what: 'a string that doubles forever (flattened; kept at V8 max length, then again)',
      // s + s alone builds a rope of O(1) size; indexOf flattens it, so every doubling allocates.
      source:
        "export default () => {\n  const kept = [];\n  let s = 'ab';\n  for (;;) {\n    try {\n      s = s + s;\n      s.indexOf('!');\n    } catch {\n      kept.push(s);\n      s = 'c' + s.slice(1, 1024);\n    }\n  }\n}",
    },
    {
      name: 'bomb_fetch',
      what: `3 ctx.fetch to ${hang} (never answers) pending, then allocates forever`,
      allowedHosts: [hang],
      source: `export default async (input, ctx) => {\n  const pending = [0, 1, 2].map((k) => ctx.fetch('http://${hang}/never/' + k).then((r) => r.status, (e) => String(e)));\n  const kept = [];\n  for (let k = 0; ; k++) kept.push(new Array(1024 * 1024).fill(k));\n  return Promise.all(pending);\n}`,
    },
  ];
}

/** An HTTP server on 127.0.0.1 that accepts requests and never answers them. */
export async function startHangServer(): Promise<{ port: number; requests(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let requests = 0;
  const server: Server = createServer(() => {
    requests++; // and never answer
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    requests: () => requests,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Samples the resident size of an engine's sandbox hosts every `everyMs`: VmRSS, and VmHWM (the
 * process's own peak, which catches what falls between samples; it is lost when the process dies,
 * so the last read is at most one interval before). Stops by itself after `maxMs`.
 */
export class HostSampler {
  readonly #enginePid: number;
  readonly #timer: NodeJS.Timeout;
  readonly #stopAt: number;
  peakRssKiB = 0;
  peakHwmKiB = 0;
  samples = 0;
  readonly pids = new Set<number>();

  constructor(enginePid: number, everyMs: number, maxMs: number) {
    this.#enginePid = enginePid;
    this.#stopAt = Date.now() + maxMs;
    this.sample();
    this.#timer = setInterval(() => {
      if (Date.now() > this.#stopAt) clearInterval(this.#timer);
      else this.sample();
    }, everyMs);
  }

  sample(): void {
    this.samples++;
    for (const pid of sandboxHostPids(this.#enginePid)) {
      this.pids.add(pid);
      const rss = statusKiB(pid, 'VmRSS');
      const hwm = statusKiB(pid, 'VmHWM');
      if (rss > this.peakRssKiB) this.peakRssKiB = rss;
      if (hwm > this.peakHwmKiB) this.peakHwmKiB = hwm;
    }
  }

  /** The highest resident size seen, either way (KiB). */
  get peakKiB(): number {
    return Math.max(this.peakRssKiB, this.peakHwmKiB);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** The error code a tools/call error text names (see describeFailure in the MCP server). */
export function outcomeOf(text: string, isError: boolean): string {
  if (!isError) return 'ok';
  const code = /\((memory_limit|timeout|result_too_large|log_limit|fetch_limit|response_too_large)\)/.exec(text)?.[1];
  if (code) return code;
  if (/sandbox process stopped/.test(text)) return 'sandbox_crashed';
  if (/ failed \((\w+)\)/.test(text)) return /failed \((\w+)\)/.exec(text)![1]!;
  if (/ failed: /.test(text)) return 'function_error';
  return 'error';
}

/** The host cap a memory_limit message names ("the sandbox process reached its cap of N MB"), or NaN. */
export function namedCapMb(text: string): number {
  const m = /reached its cap of (\d+) MB/.exec(text);
  return m ? Number(m[1]) : Number.NaN;
}
