// Benchmark targets (issue #5): MCP servers over stdio and Streamable HTTP behind real v2 clients,
// and the fresh-subprocess-per-call reference. Every process started here is tracked, so the
// bench always leaves none behind (including when it is interrupted), and so are temp folders.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { echoArgs, echoProblem } from './fixture.ts';

export const REPO = join(import.meta.dirname, '../..');
export const CALLABLE_BIN = join(REPO, 'bin/callable.js');
export const PLAIN_SERVER = join(import.meta.dirname, 'plainServer.ts');
export const SUBPROCESS_CALL = join(import.meta.dirname, 'subprocessCall.mjs');
export const CLIENT_INFO = { name: 'callable-bench', version: '1.0.0' };
/** isolated-vm needs it in the process that loads it: the plain servers with a context, and the product's sandbox hosts (which callable starts with it), not callable itself. */
export const NO_SNAPSHOT = '--no-node-snapshot';

// ---------------------------------------------------------------- cleanup ----

const children = new Set<ChildProcess>();
const transports = new Set<StdioClientTransport>();
const dirs = new Set<string>();

export function trackDir(dir: string): string {
  dirs.add(dir);
  return dir;
}

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Synchronous last resort (process 'exit', signals, watchdog): kill what is left, remove temp folders. */
export function killEverything(): void {
  for (const child of children) if (alive(child)) child.kill('SIGKILL');
  for (const t of transports) {
    const pid = t.pid; // null once the transport closed its process
    if (pid !== null) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  dirs.clear();
}

process.on('exit', killEverything);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\nbench: ${signal}: stopping children and removing temp folders\n`);
    process.exit(130);
  });
}

/** Stops a child process: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 3000): Promise<void> {
  if (!alive(child)) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => {
    if (alive(child)) child.kill('SIGKILL');
  }, graceMs);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Resident memory of a process in KiB (Linux /proc), or NaN when it cannot be read. */
export function rssKiB(pid: number | null): number {
  if (pid === null) return Number.NaN;
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** A `/proc/<pid>/status` field in kB (VmRSS, VmHWM), or NaN when it cannot be read (gone, not Linux). */
export function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** The direct children of a process (Linux: /proc/<pid>/task/<tid>/children, else a scan of /proc/<n>/stat). */
export function childPids(pid: number): number[] {
  const found = new Set<number>();
  let viaTasks = false;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
        viaTasks = true;
        for (const c of text.split(/\s+/)) if (c) found.add(Number(c));
      } catch {
        // no children file (kernel without CONFIG_PROC_CHILDREN) or the thread ended
      }
    }
  } catch {
    return [];
  }
  if (viaTasks) return [...found];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 4 of stat is the parent pid; the command (field 2) may hold spaces, so split after its ")".
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) found.add(Number(entry));
    } catch {
      // gone
    }
  }
  return [...found];
}

/** Every process below `pid` (children, their children, …). */
export function descendantPids(pid: number): number[] {
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0 && out.length < 1000) {
    for (const c of childPids(queue.shift()!)) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

/** The sandbox host processes started by an engine process (its children running the host entry). */
export function sandboxHostPids(enginePid: number): number[] {
  return childPids(enginePid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('sandboxHost/main');
    } catch {
      return false;
    }
  });
}

/** VmRSS of a process plus every process below it (KiB), and how many processes that is. */
export function treeRssKiB(pid: number | null): { kib: number; childrenKiB: number; processes: number } {
  if (pid === null) return { kib: Number.NaN, childrenKiB: Number.NaN, processes: 0 };
  const own = rssKiB(pid);
  let childrenKiB = 0;
  let processes = 1;
  for (const c of descendantPids(pid)) {
    const kib = rssKiB(c);
    if (Number.isFinite(kib)) {
      childrenKiB += kib;
      processes++;
    }
  }
  return { kib: own + childrenKiB, childrenKiB, processes };
}

/** CPU time (user + system, ms) used so far by a process and, separately, by its descendants (the sandbox hosts). */
export function treeCpuMs(pid: number | null): { own: number; children: number } {
  if (pid === null) return { own: Number.NaN, children: Number.NaN };
  let children = 0;
  for (const c of descendantPids(pid)) {
    const ms = cpuMs(c);
    if (Number.isFinite(ms)) children += ms;
  }
  return { own: cpuMs(pid), children };
}

/** utime + stime of one process from /proc/<pid>/stat, in ms (NaN once it is gone). */
function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}
/** USER_HZ: 100 on Linux on every architecture Node runs on. */
const CLOCK_TICKS = 100;

// ---------------------------------------------------------------- targets ----

export interface CallOutcome {
  ms: number;
  ok: boolean;
  error?: string;
}

export interface Target {
  key: string;
  label: string;
  pid(): number | null;
  /** One call of `tool` with echoArgs(i), checked; never throws. */
  call(i: number, tool?: string): Promise<CallOutcome>;
  close(): Promise<void>;
}

export const CALL_TIMEOUT_MS = 30_000;

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Checks a tools/call result: no isError, one text item holding the JSON of the right answer. */
function resultProblem(result: unknown, i: number): string | undefined {
  const r = result as { isError?: boolean; content?: Array<{ type?: string; text?: string }> };
  const text = r.content?.[0]?.type === 'text' ? r.content[0].text : undefined;
  if (r.isError) return `isError: ${String(text).slice(0, 300)}`;
  if (text === undefined) return 'no text content';
  try {
    return echoProblem(JSON.parse(text), i);
  } catch {
    return `not JSON: ${text.slice(0, 200)}`;
  }
}

async function timedCall(client: Client, tool: string, i: number): Promise<CallOutcome> {
  const started = performance.now();
  try {
    const result = await client.callTool({ name: tool, arguments: echoArgs(i) }, { timeout: CALL_TIMEOUT_MS });
    const ms = performance.now() - started;
    const problem = resultProblem(result, i);
    return problem === undefined ? { ms, ok: true } : { ms, ok: false, error: problem };
  } catch (error) {
    return { ms: performance.now() - started, ok: false, error: message(error) };
  }
}

function newClient(): Client {
  // Default version negotiation: the 2025-11-25 initialize handshake, one spawn per stdio client.
  return new Client(CLIENT_INFO);
}

export interface StdioSpec {
  key: string;
  label: string;
  command: string;
  args: string[];
}

export function productStdio(dataDir: string): StdioSpec {
  return { key: 'product-stdio', label: 'callable mcp (stdio)', command: process.execPath, args: [CALLABLE_BIN, 'mcp', '--data-dir', dataDir] };
}

export function plainStdio(extraNodeFlags: string[] = []): StdioSpec {
  return {
    key: extraNodeFlags.length ? 'plain-stdio-flag' : 'plain-stdio',
    label: extraNodeFlags.length ? `plain SDK server (stdio, ${extraNodeFlags.join(' ')})` : 'plain SDK server (stdio)',
    command: process.execPath,
    args: [...extraNodeFlags, PLAIN_SERVER, 'stdio'],
  };
}

/** The plain server with the echo run in a fresh isolated-vm context per call, in process: the ideal fresh-context reference. */
export function plainStdioContext(): StdioSpec {
  return { key: 'plain-stdio-ctx', label: 'plain SDK server + fresh context (stdio)', command: process.execPath, args: [NO_SNAPSHOT, PLAIN_SERVER, 'stdio-context'] };
}

/** The hop floor: the plain server forwarding each call to one long-lived child process that runs the ideal's fresh-context echo (hop.ts). */
export function plainStdioHop(): StdioSpec {
  return { key: 'plain-stdio-hop', label: 'plain SDK server → child process + fresh context (stdio)', command: process.execPath, args: [PLAIN_SERVER, 'stdio-hop'] };
}

/** The plain server in another mode of plainServer.ts (fetch, fetch-hop, catalog N). */
export function plainStdioMode(mode: 'fetch' | 'fetch-hop' | 'catalog', extra: string[] = []): StdioSpec {
  return { key: `plain-${mode}`, label: `plain SDK server (${[mode, ...extra].join(' ')})`, command: process.execPath, args: [PLAIN_SERVER, mode, ...extra] };
}

/** A tools/call answer as it came, unchecked: for functions that are meant to fail. */
export interface RawOutcome {
  ms: number;
  /** The result's isError flag (false when the call itself failed: see `error`). */
  isError: boolean;
  /** The first text item of the result. */
  text: string;
  /** Set when there was no result at all (transport closed, timeout). */
  error?: string;
}

export interface StdioTarget extends Target {
  startupMs: number;
  toolNames: string[];
  callRaw(tool: string, args: Record<string, unknown>, timeoutMs: number): Promise<RawOutcome>;
  /** One tools/list, timed; fails when it lists another number of tools than `expected`. */
  list(expected: number): Promise<CallOutcome>;
}

/**
 * Spawns a stdio server behind a v2 client and waits for its first tools/list answer.
 * `startupMs` runs from just before the spawn to that answer.
 */
export async function startStdio(spec: StdioSpec, timeoutMs = 20_000): Promise<StdioTarget> {
  let stderrTail = '';
  const transport = new StdioClientTransport({ command: spec.command, args: spec.args, stderr: 'pipe', cwd: REPO });
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderrTail = (stderrTail + chunk.toString()).slice(-4000);
  });
  transports.add(transport);
  const client = newClient();
  const started = performance.now();
  let toolNames: string[];
  try {
    await withTimeout(client.connect(transport), timeoutMs, `${spec.label}: initialize`);
    const listed = await withTimeout(client.listTools(), timeoutMs, `${spec.label}: tools/list`);
    toolNames = listed.tools.map((t) => t.name);
  } catch (error) {
    await client.close().catch(() => {});
    transports.delete(transport);
    throw new Error(`${message(error)}\n--- stderr of ${spec.label} ---\n${stderrTail}`);
  }
  const startupMs = performance.now() - started;
  return {
    key: spec.key,
    label: spec.label,
    startupMs,
    toolNames,
    pid: () => transport.pid,
    call: (i, tool = 'echo') => timedCall(client, tool, i),
    async callRaw(tool, args, callTimeoutMs) {
      const t0 = performance.now();
      try {
        const r = (await client.callTool({ name: tool, arguments: args }, { timeout: callTimeoutMs })) as { isError?: boolean; content?: Array<{ type?: string; text?: string }> };
        const text = r.content?.[0]?.type === 'text' ? (r.content[0].text ?? '') : '';
        return { ms: performance.now() - t0, isError: r.isError === true, text };
      } catch (error) {
        return { ms: performance.now() - t0, isError: false, text: '', error: message(error) };
      }
    },
    async list(expected) {
      const t0 = performance.now();
      try {
        const n = (await client.listTools(undefined, { timeout: CALL_TIMEOUT_MS })).tools.length;
        const ms = performance.now() - t0;
        return n === expected ? { ms, ok: true } : { ms, ok: false, error: `listed ${n} tools, not ${expected}` };
      } catch (error) {
        return { ms: performance.now() - t0, ok: false, error: message(error) };
      }
    },
    async close() {
      await client.close().catch(() => {});
      transports.delete(transport);
    },
  };
}

/** Spawns an HTTP server and waits for the URL it prints on stderr. */
async function spawnHttpServer(label: string, command: string, args: string[], pattern: RegExp, timeoutMs = 20_000): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(command, args, { stdio: ['pipe', 'ignore', 'pipe'], env: getDefaultEnvironment(), cwd: REPO });
  children.add(child);
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label} printed no URL within ${timeoutMs} ms:\n${stderr}`)), timeoutMs);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-8000);
      const m = pattern.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited (${code ?? signal}) before printing its URL:\n${stderr}`));
    });
  }).catch(async (error: unknown) => {
    await stopChild(child, 500);
    throw error;
  });
  const host = new URL(url).hostname;
  if (host !== '127.0.0.1') {
    await stopChild(child, 500);
    throw new Error(`${label} listens on ${host}, not 127.0.0.1`);
  }
  return { child, url };
}

export async function startHttp(kind: 'product' | 'plain', dataDir: string, timeoutMs = 20_000): Promise<Target & { url: string }> {
  const spec =
    kind === 'product'
      ? {
          key: 'product-http',
          label: 'callable serve (HTTP)',
          args: [CALLABLE_BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--no-auth', '--data-dir', dataDir],
          pattern: /MCP on (http:\/\/\S+\/mcp)/,
        }
      : { key: 'plain-http', label: 'plain SDK server (HTTP)', args: [PLAIN_SERVER, 'http'], pattern: /PLAIN on (http:\/\/\S+\/mcp)/ };
  const { child, url } = await spawnHttpServer(spec.label, process.execPath, spec.args, spec.pattern, timeoutMs);
  const client = newClient();
  try {
    await withTimeout(client.connect(new StreamableHTTPClientTransport(new URL(url))), timeoutMs, `${spec.label}: initialize`);
    const listed = await withTimeout(client.listTools(), timeoutMs, `${spec.label}: tools/list`);
    if (!listed.tools.some((t) => t.name === 'echo')) throw new Error(`${spec.label}: no echo tool`);
  } catch (error) {
    await client.close().catch(() => {});
    await stopChild(child, 500);
    throw error;
  }
  return {
    key: spec.key,
    label: spec.label,
    url,
    pid: () => child.pid ?? null,
    call: (i, tool = 'echo') => timedCall(client, tool, i),
    async close() {
      await withTimeout(client.close(), 5000, `${spec.label}: close`).catch(() => {});
      await stopChild(child);
    },
  };
}

/** The reference: a new `node` process per call that imports the function and prints its JSON result. */
export function subprocessTarget(modulePath: string, timeoutMs = 10_000): Target {
  return {
    key: 'subprocess',
    label: 'fresh node process per call',
    pid: () => null,
    call(i) {
      const started = performance.now();
      return new Promise<CallOutcome>((resolve) => {
        const child = spawn(process.execPath, [SUBPROCESS_CALL, modulePath, JSON.stringify(echoArgs(i))], {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: getDefaultEnvironment(),
        });
        children.add(child);
        let out = '';
        let err = '';
        child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
        child.stderr!.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-2000)));
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
        child.once('error', (e) => {
          clearTimeout(timer);
          children.delete(child);
          resolve({ ms: performance.now() - started, ok: false, error: e.message });
        });
        child.once('close', (code) => {
          clearTimeout(timer);
          children.delete(child);
          const ms = performance.now() - started;
          if (code !== 0) return resolve({ ms, ok: false, error: `exit ${code}: ${err}` });
          let problem: string | undefined;
          try {
            problem = echoProblem(JSON.parse(out), i);
          } catch {
            problem = `not JSON: ${out.slice(0, 200)}`;
          }
          resolve(problem === undefined ? { ms, ok: true } : { ms, ok: false, error: problem });
        });
      });
    },
    async close() {},
  };
}

/**
 * Sparse calls for side-by-side figures: per round, each caller in turn (the order rotating) after
 * `gapMs` of idle; its outcome is added to its own list. Stops after `rounds` or at `until`.
 */
export async function alternate(callers: Array<() => Promise<CallOutcome>>, rounds: number, gapMs: number, until: number): Promise<CallOutcome[][]> {
  const out: CallOutcome[][] = callers.map(() => []);
  for (let r = 0; r < rounds && performance.now() < until; r++) {
    for (let k = 0; k < callers.length; k++) {
      const which = (r + k) % callers.length;
      await new Promise((resolve) => setTimeout(resolve, gapMs));
      out[which]!.push(await callers[which]!());
    }
  }
  return out;
}

/** A tools/call outcome of a function whose answer is JSON text, checked by `check` (a problem, or undefined). */
export async function checkedCall(t: StdioTarget, tool: string, args: Record<string, unknown>, check: (value: unknown) => string | undefined): Promise<CallOutcome> {
  const r = await t.callRaw(tool, args, CALL_TIMEOUT_MS);
  if (r.error !== undefined) return { ms: r.ms, ok: false, error: r.error };
  if (r.isError) return { ms: r.ms, ok: false, error: `isError: ${r.text.slice(0, 300)}` };
  let problem: string | undefined;
  try {
    problem = check(JSON.parse(r.text));
  } catch {
    problem = `not JSON: ${r.text.slice(0, 200)}`;
  }
  return problem === undefined ? { ms: r.ms, ok: true } : { ms: r.ms, ok: false, error: problem };
}
