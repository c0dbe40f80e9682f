// npm run wpt -- DIR...: web-platform-tests (testharness.js `.any.js` files) run inside the real
// sandbox, with the guest globals every function gets.
//
//   npm run wpt -- url encoding                     table of passed/total per directory
//   npm run wpt -- --wpt-root /work/wpt fetch/api/headers --json out.json
//   options: --wpt-root DIR (or WPT_ROOT; default: the nearest folder above DIR holding
//   resources/testharness.js), --json FILE, --timeout MS (per file, default 20000; `timeout=long`
//   files get three times that), --jobs N (files at once, default 2), --filter TEXT (paths containing it)
//
// Each file becomes one function run in a sandbox host (src-main/engine/sandbox): testharness.js,
// a shim that makes the context look like a worker to it, the file's `// META: script=` includes
// and the file itself, as one classic script whose default export waits for the harness to
// complete and returns every subtest's status. The WPT folder is served over HTTP on 127.0.0.1,
// the only host the runs may fetch from. WPT's Python handlers (.py) cannot run here: requests for
// them get a 501, and the files that asked are listed. Files that only run in a window (`global=`
// without a worker or shell scope, `.window.js`, `.html`) or load their scripts with
// importScripts (`.worker.js`) are not run and are listed with the reason. Exit code: 0 when the
// run completed (whatever the pass rate), 2 for bad arguments, 1 when the runner itself failed.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, extname, join, relative, resolve, sep } from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import { guardedFetch, systemResolver } from '../src-main/engine/net/guardedFetch.ts';
import { StudioError } from '../src-main/engine/model/index.ts';
import { Sandbox } from '../src-main/engine/sandbox/sandbox.ts';

const STATUS = ['PASS', 'FAIL', 'TIMEOUT', 'NOTRUN', 'PRECONDITION_FAILED'] as const;
const HARNESS = ['OK', 'ERROR', 'TIMEOUT', 'PRECONDITION_FAILED'] as const;
/** Scopes of `// META: global=` that a sandbox context can stand in for. */
const WORKER_SCOPES = new Set(['worker', 'dedicatedworker', 'dedicatedworker-module', 'sharedworker', 'sharedworker-module', 'serviceworker', 'serviceworker-module', 'jsshell', 'shell']);

interface Subtest {
  name: string;
  status: (typeof STATUS)[number];
  message: string | null;
}
interface FileResult {
  file: string;
  dir: string;
  variant: string;
  /** OK/ERROR/TIMEOUT/PRECONDITION_FAILED from the harness, or RUN_FAILED when the sandbox run itself failed. */
  harness: string;
  harnessMessage: string | null;
  subtests: Subtest[];
  /** WPT Python handlers the file asked the server for (they cannot run here). */
  pythonHandlers: string[];
  durationMs: number;
}
interface Excluded {
  file: string;
  dir: string;
  reason: string;
}
interface Row {
  dir: string;
  files: number;
  passed: number;
  total: number;
}

class UsageError extends Error {}

interface Options {
  root: string;
  dirs: string[];
  json: string | undefined;
  timeoutMs: number;
  jobs: number;
  filter: string | undefined;
}

function parseArgs(argv: string[]): Options {
  const dirs: string[] = [];
  let root = process.env.WPT_ROOT || undefined;
  let json: string | undefined;
  let timeoutMs = 20_000;
  let jobs = 2;
  let filter: string | undefined;
  const value = (i: number, flag: string): string => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new UsageError(`${flag} needs a value`);
    return v;
  };
  const positive = (text: string, flag: string): number => {
    const n = Number(text);
    if (!Number.isInteger(n) || n <= 0) throw new UsageError(`${flag} must be a positive whole number, not "${text}"`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--wpt-root') root = value(i++, arg);
    else if (arg === '--json') json = value(i++, arg);
    else if (arg === '--timeout') timeoutMs = positive(value(i++, arg), arg);
    else if (arg === '--jobs') jobs = positive(value(i++, arg), arg);
    else if (arg === '--filter') filter = value(i++, arg);
    else if (arg.startsWith('--')) throw new UsageError(`unknown option ${arg}; use --wpt-root, --json, --timeout, --jobs or --filter`);
    else dirs.push(arg);
  }
  if (dirs.length === 0) throw new UsageError('name at least one WPT directory or file, e.g. npm run wpt -- --wpt-root ../wpt url');
  if (root === undefined) {
    // The checkout root is the nearest folder above the first DIR that holds the harness.
    for (let at = resolve(dirs[0]!); ; at = dirname(at)) {
      if (existsSync(join(at, 'resources', 'testharness.js'))) {
        root = at;
        break;
      }
      if (dirname(at) === at) throw new UsageError(`no resources/testharness.js above ${dirs[0]}; give the WPT checkout with --wpt-root or WPT_ROOT`);
    }
  }
  root = resolve(root);
  if (!existsSync(join(root, 'resources', 'testharness.js'))) throw new UsageError(`${root} is not a WPT checkout (no resources/testharness.js); give one with --wpt-root or WPT_ROOT`);
  const rel = dirs.map((d) => {
    const abs = existsSync(resolve(root, d)) ? resolve(root, d) : resolve(d);
    if (!existsSync(abs)) throw new UsageError(`${d} is not in the WPT checkout ${root}`);
    const r = relative(root, abs);
    if (r.startsWith('..')) throw new UsageError(`${d} is outside the WPT checkout ${root}`);
    return r.split(sep).join('/') || '.';
  });
  return { root, dirs: rel, json, timeoutMs, jobs, filter };
}

// ---- finding the tests ----

interface Meta {
  globals: string[] | undefined;
  scripts: string[];
  variants: string[];
  long: boolean;
  title: string | undefined;
}

function readMeta(source: string): Meta {
  const meta: Meta = { globals: undefined, scripts: [], variants: [], long: false, title: undefined };
  for (const line of source.split('\n')) {
    const m = /^\/\/\s*META:\s*(\w+)=(.*)$/.exec(line.trim());
    if (!m) {
      if (line.trim() === '' || line.startsWith('//')) continue;
      break;
    }
    const [, key, raw] = m;
    const val = raw!.trim();
    if (key === 'global') meta.globals = val.split(',').map((s) => s.trim()).filter(Boolean);
    else if (key === 'script') meta.scripts.push(val);
    else if (key === 'variant') meta.variants.push(val);
    else if (key === 'timeout') meta.long = val === 'long';
    else if (key === 'title') meta.title = val;
  }
  return meta;
}

function walk(root: string, rel: string, out: string[]): void {
  const abs = join(root, rel);
  if (statSync(abs).isFile()) {
    out.push(rel);
    return;
  }
  for (const entry of readdirSync(abs, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    // Helpers and data live in resources/ and support/ folders; they are not tests.
    if (entry.isDirectory() && (entry.name === 'resources' || entry.name === 'support')) continue;
    walk(root, rel === '.' ? entry.name : `${rel}/${entry.name}`, out);
  }
}

interface Planned {
  file: string;
  dir: string;
  variant: string;
  meta: Meta;
  source: string;
}

function plan(options: Options): { planned: Planned[]; excluded: Excluded[] } {
  const planned: Planned[] = [];
  const excluded: Excluded[] = [];
  for (const dir of options.dirs) {
    const files: string[] = [];
    walk(options.root, dir, files);
    for (const file of files) {
      if (options.filter && !file.includes(options.filter)) continue;
      const exclude = (reason: string): void => void excluded.push({ file, dir, reason });
      if (/\.(html?|xhtml|svg)$/.test(file)) exclude('an HTML page: runs only in a browser window');
      else if (file.endsWith('.window.js')) exclude('a .window.js test: runs only in a browser window');
      else if (file.endsWith('.worker.js')) exclude('a .worker.js test: loads its scripts with importScripts, which the sandbox does not have');
      else if (file.endsWith('.any.js')) {
        const source = readFileSync(join(options.root, file), 'utf8');
        const meta = readMeta(source);
        const globals = meta.globals ?? ['window', 'dedicatedworker'];
        if (!globals.some((g) => WORKER_SCOPES.has(g))) {
          exclude(`global=${globals.join(',')}: no worker or shell scope (browser only)`);
          continue;
        }
        for (const variant of meta.variants.length > 0 ? meta.variants : ['']) planned.push({ file, dir, variant, meta, source });
      }
    }
  }
  return { planned, excluded };
}

// ---- the static server standing in for WPT's ----

const TYPES: Record<string, string> = {
  '.js': 'text/javascript',
  '.json': 'application/json',
  '.html': 'text/html',
  '.txt': 'text/plain',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.gif': 'image/gif',
  '.svg': 'image/svg+xml',
  '.xml': 'application/xml',
  '.css': 'text/css',
  '.idl': 'text/plain',
  '.wasm': 'application/wasm',
};

/** `.sub.` files: the few template fields WPT's server fills that make sense on one host and port. */
function substitute(text: string, port: number): string {
  return text
    .replace(/\{\{host\}\}/g, '127.0.0.1')
    .replace(/\{\{(?:hosts|domains)\[[^\]]*\](?:\[[^\]]*\])?\}\}/g, '127.0.0.1')
    .replace(/\{\{ports\[[^\]]*\]\[\d+\]\}\}/g, String(port))
    .replace(/\{\{GET\[[^\]]*\]\}\}/g, '');
}

class WptServer {
  readonly #root: string;
  readonly #server: Server;
  /** Python handlers asked for, by the test file whose run asked (its id is in the path's query). */
  readonly python = new Map<string, Set<string>>();
  port = 0;

  constructor(root: string) {
    this.#root = root;
    this.#server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const path = decodeURIComponent(url.pathname);
      const file = resolve(this.#root, `.${path}`);
      if (!file.startsWith(this.#root)) {
        res.writeHead(403).end();
        return;
      }
      req.resume();
      if (path.endsWith('.py')) {
        const from = req.headers['x-wpt-file'];
        const who = typeof from === 'string' ? from : '?';
        let set = this.python.get(who);
        if (!set) this.python.set(who, (set = new Set()));
        set.add(path);
        res.writeHead(501, { 'content-type': 'text/plain' }).end(`WPT python handler ${path} cannot run outside WPT's server`);
        return;
      }
      if (!existsSync(file) || !statSync(file).isFile()) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      let body: Buffer = readFileSync(file);
      if (/\.sub\./.test(path)) body = Buffer.from(substitute(body.toString('utf8'), this.port));
      const headers: Record<string, string> = { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' };
      // WPT's `<file>.headers`: extra response headers, one `name: value` a line.
      if (existsSync(`${file}.headers`)) {
        for (const line of readFileSync(`${file}.headers`, 'utf8').split('\n')) {
          const colon = line.indexOf(':');
          if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
      }
      res.writeHead(200, headers).end(req.method === 'HEAD' ? undefined : body);
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((done) => this.#server.listen(0, '127.0.0.1', done));
    this.port = (this.#server.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((done) => this.#server.close(() => done()));
  }
}

// ---- one file as one sandbox run ----

/** Before testharness.js: what WPT's worker wrapper gives a `.any.js` test (self, GLOBAL, a location). */
function preShim(href: string, title: string | undefined): string {
  return `
if (typeof globalThis.self === 'undefined') globalThis.self = globalThis;
globalThis.GLOBAL = { isWindow: () => false, isWorker: () => true, isShadowRealm: () => false };
${title === undefined ? '' : `globalThis.META_TITLE = ${JSON.stringify(title)};`}
if (typeof globalThis.location === 'undefined') {
  const u = new URL(${JSON.stringify(href)});
  globalThis.location = { href: u.href, origin: u.origin, protocol: u.protocol, host: u.host, hostname: u.hostname, port: u.port,
    pathname: u.pathname, search: u.search, hash: u.hash, toString() { return u.href; } };
}
// A worker resolves relative URLs given to fetch() and new Request() against its own URL.
(() => {
  const base = ${JSON.stringify(href)};
  const RequestClass = globalThis.Request;
  // Anything but a Request is a URL string to the Fetch standard (String(input), parsed against the base).
  const resolveInput = (args) => {
    if (args.length > 0 && !(typeof RequestClass === 'function' && args[0] instanceof RequestClass)) {
      try { args[0] = new URL(String(args[0]), base).href; } catch {}
    }
    return args;
  };
  if (typeof globalThis.fetch === 'function') {
    const fetch = globalThis.fetch;
    globalThis.fetch = new Proxy(fetch, { apply: (target, self, args) => Reflect.apply(target, self, resolveInput([...args])) });
  }
  if (typeof globalThis.Request === 'function') {
    const Request = globalThis.Request;
    globalThis.Request = new Proxy(Request, { construct: (target, args, newTarget) => Reflect.construct(target, resolveInput([...args]), newTarget === globalThis.Request ? target : newTarget) });
  }
})();
`;
}

/** After testharness.js: collect results; the default export resolves when the harness completes. */
function postShim(budgetMs: number): string {
  return `
const __wptDone = new Promise((resolveDone) => {
  add_completion_callback((tests, status) => {
    // As JSON text: a test may leave Object.prototype.then set, which would make an object result a thenable.
    resolveDone(JSON.stringify({
      harness: __wptUncaught !== null && status.status === 0 ? 1 : status.status,
      message: __wptUncaught !== null && status.status === 0 ? 'uncaught at the top level: ' + __wptUncaught : status.message == null ? null : String(status.message),
      tests: tests.map((t) => ({ name: String(t.name), status: t.status, message: t.message == null ? null : String(t.message) })),
    }));
  });
});
// A test file that throws at its top level: what a browser does with an uncaught error (the harness
// reports ERROR, the subtests already defined still count).
let __wptUncaught = null;
const __wptThrew = (error) => {
  try { __wptUncaught = String(error); } catch { __wptUncaught = 'a value that cannot be shown'; }
  try { done(); } catch {}
};
// Shells have no harness timeout: past the budget, the unfinished subtests are timed out.
const __wptTimer = setTimeout(() => { try { timeout(); } catch {} }, ${budgetMs});
__wptDone.then(() => clearTimeout(__wptTimer));
`;
}

function assemble(root: string, p: Planned, href: string, port: number, budgetMs: number): string {
  const read = (path: string): string => {
    const text = readFileSync(path, 'utf8');
    return /\.sub\./.test(path) ? substitute(text, port) : text;
  };
  const parts = [preShim(href, p.meta.title), read(join(root, 'resources', 'testharness.js')), postShim(budgetMs)];
  for (const script of p.meta.scripts) {
    const path = script.startsWith('/') ? join(root, script) : join(root, dirname(p.file), script);
    parts.push(`// ${script}\n${read(path.split('?')[0]!)}`);
  }
  // The test file in a function of its own (its 'use strict' stays a directive), so an error at its
  // top level is caught and reported rather than losing the subtests it defined before.
  // Then done(), as WPT's worker wrapper calls it: every subtest has been defined.
  parts.push(`try { (function () {\n${read(join(root, p.file))}\n}).call(globalThis); done(); } catch (error) { __wptThrew(error); }`);
  // One function body (not a module): included files share its scope as scripts share a global.
  return `(function () {\n${parts.join('\n;\n')}\n;\nreturn { default: () => __wptDone };\n}).call(globalThis)`;
}

async function runFile(sandbox: Sandbox, server: WptServer, root: string, p: Planned, timeoutMs: number): Promise<FileResult> {
  const started = Date.now();
  const id = randomUUID();
  const href = `http://127.0.0.1:${server.port}/${p.file.replace(/\.any\.js$/, '.any.worker.html')}${p.variant}`;
  const limitMs = p.meta.long ? timeoutMs * 3 : timeoutMs;
  const base = { file: p.file, dir: p.dir, variant: p.variant };
  let code: string;
  try {
    code = assemble(root, p, href, server.port, Math.max(500, limitMs - 2000));
  } catch (error) {
    return { ...base, harness: 'RUN_FAILED', harnessMessage: `could not assemble: ${(error as Error).message}`, subtests: [], pythonHandlers: [], durationMs: 0 };
  }
  const abort = new AbortController();
  const outcome = await sandbox.run({
    functionName: `wpt-${createHash('sha256').update(p.file + p.variant).digest('hex').slice(0, 16)}`,
    compiled: { code, hash: createHash('sha256').update(code).digest('hex').slice(0, 16) },
    limits: { timeoutMs: limitMs, memoryMb: 256, resultBytes: 16 * 1024 * 1024, logBytes: 1024 * 1024, fetchCount: 10_000, responseBytes: 50 * 1024 * 1024 },
    argsJson: '{}',
    runId: id,
    measureHeap: false,
    signal: abort.signal,
    fetch: (request, signal) =>
      guardedFetch(
        { ...request, headers: [...request.headers, ['x-wpt-file', id]] },
        {
          allowedHosts: [`127.0.0.1:${server.port}`],
          maxResponseBytes: 50 * 1024 * 1024,
          credential: () => Promise.reject(new StudioError('credential_refused', 'WPT runs have no credentials')),
          resolver: systemResolver,
          signal,
          trace: () => {},
        },
      ),
  });
  const pythonHandlers = [...(server.python.get(id) ?? [])].sort();
  server.python.delete(id);
  const durationMs = Date.now() - started;
  if (!outcome.ok) return { ...base, harness: 'RUN_FAILED', harnessMessage: `${outcome.error.code}: ${outcome.error.message}`, subtests: [], pythonHandlers, durationMs };
  const value = JSON.parse(outcome.value as string) as { harness: number; message: string | null; tests: Array<{ name: string; status: number; message: string | null }> };
  return {
    ...base,
    harness: HARNESS[value.harness] ?? String(value.harness),
    harnessMessage: value.message,
    subtests: value.tests.map((t) => ({ name: t.name, status: STATUS[t.status] ?? 'FAIL', message: t.message })),
    pythonHandlers,
    durationMs,
  };
}

// ---- counting ----

/**
 * Passed/total per directory (files counted once however many variants they run). A file whose harness failed before reporting any subtest (a syntax
 * error, a run that did not finish) counts as one failed subtest, so it is never dropped.
 */
function tally(dirs: string[], results: FileResult[]): Row[] {
  const rows = dirs.map((dir) => ({ dir, files: 0, passed: 0, total: 0 }));
  for (const row of rows) row.files = new Set(results.filter((r) => r.dir === row.dir).map((r) => r.file)).size;
  for (const r of results) {
    const row = rows.find((x) => x.dir === r.dir)!;
    if (r.subtests.length === 0 && r.harness !== 'OK') {
      row.total++;
      continue;
    }
    row.total += r.subtests.length;
    row.passed += r.subtests.filter((s) => s.status === 'PASS').length;
  }
  return rows;
}

const pct = (passed: number, total: number): string => (total === 0 ? '-' : `${((100 * passed) / total).toFixed(1)}%`);

function table(rows: Row[]): string {
  const all = rows.reduce((a, r) => ({ dir: 'total', files: a.files + r.files, passed: a.passed + r.passed, total: a.total + r.total }), { dir: 'total', files: 0, passed: 0, total: 0 });
  const lines = [...rows, all].map((r) => [r.dir, String(r.files), `${r.passed}/${r.total}`, pct(r.passed, r.total)]);
  const head = ['directory', 'files', 'subtests passed', 'percent'];
  const width = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(width[i]!) : c.padStart(width[i]!))).join('  ');
  return [fmt(head), fmt(width.map((w) => '-'.repeat(w))), ...lines.map(fmt)].join('\n');
}

async function pool<T>(items: T[], jobs: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(jobs, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

async function main(argv: string[]): Promise<number> {
  let options: Options;
  try {
    options = parseArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`npm run wpt: ${error.message}\n`);
    return 2;
  }
  const { planned, excluded } = plan(options);
  const server = new WptServer(options.root);
  await server.start();
  const sandbox = new Sandbox({ hosts: Math.min(options.jobs, 4), diagnostic: () => {} });
  sandbox.start();
  const results: FileResult[] = [];
  try {
    await pool(planned, options.jobs, async (p) => {
      const r = await runFile(sandbox, server, options.root, p, options.timeoutMs);
      results.push(r);
      const passed = r.subtests.filter((s) => s.status === 'PASS').length;
      process.stderr.write(`${r.harness === 'OK' ? '  ' : '! '}${r.file}${r.variant} ${passed}/${r.subtests.length}${r.harness === 'OK' ? '' : ` ${r.harness}: ${(r.harnessMessage ?? '').slice(0, 160)}`}\n`);
    });
  } finally {
    sandbox.dispose();
    await server.close();
  }
  results.sort((a, b) => (a.file + a.variant).localeCompare(b.file + b.variant));
  const rows = tally(options.dirs, results);
  const out: string[] = [table(rows)];
  const broken = results.filter((r) => r.harness !== 'OK');
  if (broken.length > 0) {
    out.push('', `Files whose harness did not complete OK (${broken.length}):`);
    for (const r of broken) out.push(`  ${r.file}${r.variant}: ${r.harness}${r.harnessMessage ? ` (${r.harnessMessage.slice(0, 200)})` : ''}`);
  }
  const python = results.filter((r) => r.pythonHandlers.length > 0);
  if (python.length > 0) {
    out.push('', `Files that asked for WPT Python handlers, which cannot run here (their subtests that needed one fail) (${python.length}):`);
    for (const r of python) out.push(`  ${r.file}${r.variant}: ${r.pythonHandlers.join(', ')}`);
  }
  if (excluded.length > 0) {
    out.push('', `Not run (${excluded.length} files):`);
    const byReason = new Map<string, string[]>();
    for (const e of excluded) byReason.set(e.reason, [...(byReason.get(e.reason) ?? []), e.file]);
    for (const [reason, files] of byReason) out.push(`  ${reason} (${files.length}): ${files.join(', ')}`);
  }
  process.stdout.write(`${out.join('\n')}\n`);
  if (options.json) writeFileSync(options.json, `${JSON.stringify({ root: options.root, rows, files: results, excluded }, null, 1)}\n`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`npm run wpt: the runner failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
