// The MCP overhead benchmark (issues #5 and #8).
//
//   npm run bench                      full run (a few minutes on 2 cores)
//   npm run bench -- --quick           under two minutes, fewer iterations
//   npm run bench -- --json FILE       also write the headline figures as JSON
//   npm run bench -- --only fetch,sdk  only these sections (see SECTIONS), e.g. with --quick
//
// One run, one process tree: the same trivial function ({ text, n }) => ({ echo: text, n: n * 2 })
// served by `callable mcp` (stdio) and `callable serve` (Streamable HTTP), by a plain MCP SDK
// server with no sandbox (the floor, test/bench/plainServer.ts), and by a fresh node process per
// call (a reference). Targets are called round-robin (the order rotates every round) so machine
// noise hits them alike; ratios are product over plain from the same run. The floor of the
// fresh-context model (bare isolated-vm in this process, test/bench/bare.ts) takes its turn in the
// burst and 16-in-flight rounds like a target, and the plain server with a fresh context per call
// (plainServer.ts stdio-context) is the ideal fresh-context server: the issue's figures computed
// for it (ideal_*) bound what any design can reach on this machine. The hop floor (plainServer.ts
// stdio-hop, hop.ts) is the ideal with the isolate one process away: the plain server forwards each
// call to one long-lived child process running the ideal's fresh-context echo; its figures (hop_*,
// *_vs_hop) are the least a design with isolates outside the server process pays. Memory figures count `callable mcp`'s sandbox host
// processes; three memory bombs (test/bench/bombs.ts) run against a live `callable mcp` at the end,
// with its hosts' resident size sampled from /proc. Then, each beside its reference in the same run:
// ctx.fetch against Node's fetch (vendorBench.ts), 1,000 functions against the plain server with
// 1,000 tools (catalog.ts), a fresh context with and without the web platform (platform.ts), and a
// function importing an SDK against a plain one (sdk.ts). It only reports: the
// exit code is 0 even when a target is missed (1 only when the bench itself could not run).
// Every loop is bounded in count and time, every child process and temp folder is removed, and
// everything talks to 127.0.0.1 only, but the sdk section's `callable add` (the npm registry).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { arch, cpus, platform, release, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { stop as stopEsbuild } from 'esbuild';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { BareFloor } from './bare.ts';
import { CATALOG_SIZE, catalogComparison, type CatalogResult } from './catalog.ts';
import { freshContextCost, type PlatformVariant } from './platform.ts';
import { SDK_PACKAGE, sdkComparison, sdkOverheads, sdkReport, type SdkResult } from './sdk.ts';
import { BIG_JSON_BYTES, fetchComparison, type FetchResult } from './vendorBench.ts';
import { BOMB_TIMEOUT_MS, bombs, HostSampler, namedCapMb, outcomeOf, startHangServer } from './bombs.ts';
import { echoProblem, ECHO_INPUT_SCHEMA, ECHO_SOURCE } from './fixture.ts';
import { fmt, maxOf, mean, median, minOf, quantile, rotate, round, table } from './stats.ts';
import {
  killEverything,
  plainStdio,
  plainStdioContext,
  plainStdioHop,
  productStdio,
  REPO,
  sandboxHostPids,
  startHttp,
  startStdio,
  subprocessTarget,
  trackDir,
  treeCpuMs,
  treeRssKiB,
  NO_SNAPSHOT,
  type CallOutcome,
  type Target,
} from './targets.ts';

// ---------------------------------------------------------------- options ----

/** The sections a run can be limited to with --only, in the order they run. */
const SECTIONS = {
  startup: 'spawn → first tools/list, and the first tools/call after it',
  calls: 'sparse, back-to-back and 16 in flight beside the plain and ideal servers, the hop floor and the floor; memlimit',
  memory: 'resident size of 100 warm functions',
  bombs: 'three memory bombs against a live callable mcp',
  workerd: 'a call through the workerd gateway',
  fetch: 'ctx.fetch to a loopback vendor: one small request, an 8 MiB JSON answer',
  catalog: '1,000 functions against the plain server with 1,000 tools',
  platform: 'a fresh context with the web platform against the base runtime only',
  sdk: 'a function importing each vendor SDK of the README against a plain one; saving the openai one (needs the npm registry)',
} as const;
type Section = keyof typeof SECTIONS;
const isSection = (name: string): name is Section => Object.hasOwn(SECTIONS, name);

const USAGE = `usage: npm run bench [-- --quick] [-- --json FILE] [-- --only SECTION,…]\nsections: ${Object.keys(SECTIONS).join(', ')}`;
const argv = process.argv.slice(2);
let quick = false;
let jsonFile: string | undefined;
let onlyList: string | undefined;
for (let k = 0; k < argv.length; k++) {
  const a = argv[k]!;
  if (a === '--quick') quick = true;
  else if (a === '--json') jsonFile = argv[++k];
  else if (a.startsWith('--json=')) jsonFile = a.slice('--json='.length);
  else if (a === '--only') onlyList = argv[++k] ?? '';
  else if (a.startsWith('--only=')) onlyList = a.slice('--only='.length);
  else if (a === '--help' || a === '-h') {
    process.stdout.write(`${USAGE}\n`);
    for (const [name, what] of Object.entries(SECTIONS)) process.stdout.write(`  ${name.padEnd(9)} ${what}\n`);
    process.exit(0);
  } else {
    process.stderr.write(`bench: unknown argument ${a}\n${USAGE}\n`);
    process.exit(2);
  }
}
if (argv.includes('--json') && !jsonFile) {
  process.stderr.write(`bench: --json needs a file name\n${USAGE}\n`);
  process.exit(2);
}
const onlyNames = onlyList === undefined ? [] : onlyList
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');
const unknownSection = onlyNames.find((x) => !isSection(x));
if (onlyList !== undefined && (onlyNames.length === 0 || unknownSection !== undefined)) {
  process.stderr.write(`bench: --only ${unknownSection ? `has no section "${unknownSection}"` : 'needs section names'}: give some of ${Object.keys(SECTIONS).join(', ')}, comma-separated\n`);
  process.exit(2);
}
/** The sections this run measures (all without --only). */
const selected = new Set<Section>(onlyList === undefined ? (Object.keys(SECTIONS) as Section[]) : onlyNames.filter(isSection));
const jsonPath = jsonFile === undefined ? undefined : resolve(process.env.INIT_CWD ?? process.cwd(), jsonFile);

const FULL_MEMLIMIT_CALLS = 15_000;
/** Counts and time bounds (ms) of every phase. */
const CFG = quick
  ? {
      warmupCalls: 40,
      startupReps: 2,
      startupMaxMs: 10_000,
      gapMs: 5,
      sparseRounds: 120,
      subprocessEvery: 6,
      settleAfterSubprocessMs: 20,
      sparseMaxMs: 5_000,
      burstRounds: 10,
      burstBlockMs: 50,
      burstMaxMs: 5_000,
      inflight: 16,
      inflightRounds: 4,
      inflightBlockMs: 150,
      inflightMaxMs: 6_000,
      blockMaxCalls: 20_000,
      memlimitCalls: 1_500,
      memlimitMaxMs: 10_000,
      rssFunctions: 100,
      rssIdleMs: 500,
      rssMaxMs: 10_000,
      bombSampleMs: 5,
      bombsMaxMs: 20_000,
      watchdogMs: 58_000,
      fetch: { warmup: 5, sparseRounds: 40, bigRounds: 3, gapMs: 5, maxMs: 30_000 },
      catalog: { starts: 2, listsPerStart: 5, gapMs: 5, maxMs: 60_000 },
      platform: { rounds: 6, blockMs: 50, maxMs: 10_000 },
      sdk: { warmup: 5, rounds: 40, gapMs: 5, maxMs: 20_000 },
    }
  : {
      warmupCalls: 300,
      startupReps: 15,
      startupMaxMs: 90_000,
      gapMs: 5,
      sparseRounds: 600,
      subprocessEvery: 6,
      settleAfterSubprocessMs: 20,
      sparseMaxMs: 90_000,
      burstRounds: 40,
      burstBlockMs: 150,
      burstMaxMs: 60_000,
      inflight: 16,
      inflightRounds: 12,
      inflightBlockMs: 400,
      inflightMaxMs: 60_000,
      blockMaxCalls: 50_000,
      memlimitCalls: FULL_MEMLIMIT_CALLS,
      memlimitMaxMs: 150_000,
      rssFunctions: 100,
      rssIdleMs: 3_000,
      rssMaxMs: 60_000,
      bombSampleMs: 5,
      bombsMaxMs: 60_000,
      watchdogMs: 9 * 60_000,
      fetch: { warmup: 30, sparseRounds: 400, bigRounds: 20, gapMs: 5, maxMs: 120_000 },
      catalog: { starts: 10, listsPerStart: 10, gapMs: 5, maxMs: 180_000 },
      platform: { rounds: 30, blockMs: 150, maxMs: 30_000 },
      sdk: { warmup: 30, rounds: 400, gapMs: 5, maxMs: 90_000 },
    };
/** Time for what the new sections do besides measuring: saving 1,000 functions, npm installing openai. */
const SETUP_ALLOWANCE_MS = { fetch: 15_000, catalog: 180_000, platform: 10_000, sdk: 300_000 };
const OLD_SECTIONS: Section[] = ['startup', 'calls', 'memory', 'bombs', 'workerd'];
const watchdogMs =
  (OLD_SECTIONS.some((x) => selected.has(x)) ? CFG.watchdogMs : 0) +
  (['fetch', 'catalog', 'platform', 'sdk'] as const).reduce((sum, x) => sum + (selected.has(x) ? CFG[x].maxMs + SETUP_ALLOWANCE_MS[x] : 0), 0);

/**
 * Targets from the issues. `info` figures have no target; `<=cap` compares each bomb's peak with
 * the cap its host was held to; `=` on a boolean figure compares 1 (true) / 0 (false).
 */
interface FigureTarget {
  op: '<=' | '>=' | '=' | 'info' | '<=cap';
  value: number;
  shown: string;
  /** The section that measures it: a run limited with --only reports only its sections' figures. */
  section: Section;
}
// The targets against the plain server and the floor loop were below what any server with a fresh
// context reaches on 2 cores: they are shown as retired ("was …"), and the *_vs_ideal figures
// (the plain server with a fresh context per call, same run) hold the goals now.
const TARGETS = {
  stdio_sparse_p50_vs_ideal: { op: '<=', value: 1.0, shown: '1.0', section: 'calls' },
  stdio_sparse_p99_vs_ideal: { op: '<=', value: 1.2, shown: '1.2', section: 'calls' },
  stdio_burst_p50_vs_ideal: { op: '<=', value: 1.25, shown: '1.25', section: 'calls' },
  stdio_16_inflight_vs_ideal: { op: '>=', value: 0.8, shown: '0.8', section: 'calls' },
  cpu_per_call_vs_ideal: { op: '<=', value: 1.3, shown: '1.3', section: 'calls' },
  first_call_ms: { op: '<=', value: 30, shown: '30 ms', section: 'startup' },
  stdio_sparse_p50_ratio: { op: 'info', value: Number.NaN, shown: 'was ≤ 2.0', section: 'calls' },
  stdio_sparse_p99_ratio: { op: 'info', value: Number.NaN, shown: 'was ≤ 1.5', section: 'calls' },
  stdio_burst_p50_ratio: { op: 'info', value: Number.NaN, shown: 'was ≤ 2.0', section: 'calls' },
  stdio_16_inflight_throughput_ratio: { op: 'info', value: Number.NaN, shown: 'was ≥ 0.3', section: 'calls' },
  http_sparse_p50_ratio: { op: '<=', value: 1.3, shown: '1.3', section: 'calls' },
  subprocess_p50_over_callable_p50: { op: 'info', value: Number.NaN, shown: 'was ≥ 50', section: 'calls' },
  startup_ratio: { op: '<=', value: 1.1, shown: '1.1', section: 'startup' },
  warm_function_rss_mib: { op: '<=', value: 1.5, shown: '1.5 MiB', section: 'memory' },
  memlimit_spurious_failures: { op: '=', value: 0, shown: '0', section: 'calls' },
  fresh_context_floor_ms: { op: 'info', value: Number.NaN, shown: '(floor)', section: 'calls' },
  stdio_burst_overhead_over_floor: { op: 'info', value: Number.NaN, shown: 'was ≤ 1.0', section: 'calls' },
  stdio_16_inflight_vs_floor: { op: 'info', value: Number.NaN, shown: 'was ≥ 0.8', section: 'calls' },
  ideal_sparse_p50_ratio: { op: 'info', value: Number.NaN, shown: '(ideal)', section: 'calls' },
  ideal_burst_overhead_over_floor: { op: 'info', value: Number.NaN, shown: '(ideal)', section: 'calls' },
  ideal_16_inflight_vs_floor: { op: 'info', value: Number.NaN, shown: '(ideal)', section: 'calls' },
  hop_sparse_p50_vs_ideal: { op: 'info', value: Number.NaN, shown: '(hop floor)', section: 'calls' },
  hop_burst_p50_vs_ideal: { op: 'info', value: Number.NaN, shown: '(hop floor)', section: 'calls' },
  hop_16_inflight_vs_ideal: { op: 'info', value: Number.NaN, shown: '(hop floor)', section: 'calls' },
  hop_cpu_per_call_vs_ideal: { op: 'info', value: Number.NaN, shown: '(hop floor)', section: 'calls' },
  stdio_sparse_p50_vs_hop: { op: 'info', value: Number.NaN, shown: '(over the hop floor)', section: 'calls' },
  stdio_burst_p50_vs_hop: { op: 'info', value: Number.NaN, shown: '(over the hop floor)', section: 'calls' },
  stdio_16_inflight_vs_hop: { op: 'info', value: Number.NaN, shown: '(over the hop floor)', section: 'calls' },
  cpu_per_call_vs_hop: { op: 'info', value: Number.NaN, shown: '(over the hop floor)', section: 'calls' },
  fetch_sparse_p50_ratio: { op: '<=', value: 1.3, shown: '1.3', section: 'fetch' },
  fetch_8mib_json_ratio: { op: '>=', value: 0.5, shown: '0.5', section: 'fetch' },
  hop_fetch_sparse_p50_ratio: { op: 'info', value: Number.NaN, shown: '(hop floor)', section: 'fetch' },
  fetch_sparse_p50_vs_hop: { op: 'info', value: Number.NaN, shown: '(over the hop floor)', section: 'fetch' },
  catalog_1000_list_ratio: { op: '<=', value: 1.5, shown: '1.5', section: 'catalog' },
  catalog_1000_startup_ratio: { op: '<=', value: 1.2, shown: '1.2', section: 'catalog' },
  fresh_context_base_runtime_ms: { op: 'info', value: Number.NaN, shown: '(before)', section: 'platform' },
  fresh_context_web_platform_ms: { op: 'info', value: Number.NaN, shown: '(after)', section: 'platform' },
  sdk_call_overhead_ms: { op: '<=', value: 2, shown: '2 ms', section: 'sdk' },
  sdk_save_warm_ms: { op: '<=', value: 2000, shown: '2,000 ms', section: 'sdk' },
  bomb_peak_host_rss_mib: { op: '<=cap', value: Number.NaN, shown: 'cap', section: 'bombs' },
  bomb_host_cap_mib: { op: 'info', value: Number.NaN, shown: '(cap)', section: 'bombs' },
  server_alive_after_bombs: { op: '=', value: 1, shown: 'true', section: 'bombs' },
} satisfies Record<string, FigureTarget>;
type FigureKey = keyof typeof TARGETS;
const BOOLEAN_FIGURES = new Set<FigureKey>(['server_alive_after_bombs']);
const reportedKeys = (Object.keys(TARGETS) as FigureKey[]).filter((key) => selected.has(TARGETS[key].section));

// ------------------------------------------------------------- bookkeeping ----

const benchStarted = performance.now();
const watchdog = setTimeout(() => {
  process.stderr.write(`bench: watchdog: still running after ${watchdogMs / 1000} s; stopping everything\n`);
  process.exit(1);
}, watchdogMs);
watchdog.unref();

const progress = (text: string): void => void process.stderr.write(`bench [${((performance.now() - benchStarted) / 1000).toFixed(1)} s] ${text}\n`);
const notes: string[] = [];
const problems: string[] = [];

class Series {
  readonly samples: number[] = [];
  errors = 0;
  readonly errorMessages = new Map<string, number>();
  /** Wall time of the measured stretches, for calls/s. */
  wallMs = 0;

  add(o: CallOutcome): void {
    if (o.ok) this.samples.push(o.ms);
    else {
      this.errors++;
      const key = (o.error ?? 'unknown').slice(0, 160);
      this.errorMessages.set(key, (this.errorMessages.get(key) ?? 0) + 1);
    }
  }
  get calls(): number {
    return this.samples.length + this.errors;
  }
  get perSecond(): number {
    return this.wallMs > 0 ? (this.calls / this.wallMs) * 1000 : Number.NaN;
  }
  p(q: number): number {
    return quantile(this.samples, q);
  }
}

const series = new Map<string, Series>();
function S(phase: string, key: string): Series {
  const id = `${phase}/${key}`;
  let s = series.get(id);
  if (!s) series.set(id, (s = new Series()));
  return s;
}

async function guarded(what: string, fn: () => Promise<void>): Promise<boolean> {
  try {
    await fn();
    return true;
  } catch (error) {
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    problems.push(`${what}: ${text.split('\n').slice(0, 12).join('\n')}`);
    progress(`FAILED ${what}: ${text.split('\n')[0]}`);
    return false;
  }
}

/** Keeps `n` small and varied so every answer is checked. */
let callCounter = 0;
const nextN = (): number => (callCounter = (callCounter + 1) % 10_000);

async function sequential(t: Target, calls: number, s: Series | undefined, tool = 'echo', until = Number.POSITIVE_INFINITY): Promise<void> {
  for (let k = 0; k < calls && performance.now() < until; k++) {
    const o = await t.call(nextN(), tool);
    s?.add(o);
  }
}

/**
 * Up to `calls` calls with `concurrency` in flight, issuing new ones until `until`; the wall time
 * (until the last answer) is added to the series, for calls/s.
 */
async function inflight(t: Target, calls: number, concurrency: number, s: Series, tool = 'echo', until = Number.POSITIVE_INFINITY): Promise<number> {
  let issued = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (issued < calls && performance.now() < until) {
      issued++;
      s.add(await t.call(nextN(), tool));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  s.wallMs += performance.now() - started;
  return issued;
}

// ------------------------------------------------------------------- seed ----

const root = trackDir(mkdtempSync(join(tmpdir(), 'callable-bench-')));
const mainDir = join(root, 'data');
const rssDir = join(root, 'data-rss');
const echoModule = join(root, 'echo.mjs');
writeFileSync(echoModule, `${ECHO_SOURCE}\n`);

async function seed(): Promise<void> {
  if (selected.has('startup') || selected.has('calls')) await seedMain();
  if (selected.has('memory')) await seedRss();
  await stopEsbuild(); // the compiler service the engine started for the saves
}

async function seedMain(): Promise<void> {
  const engine = createEngine({ dataDir: mainDir, secrets: new MemorySecretStore() });
  try {
    await engine.saveFunction({ spec: { name: 'echo', description: 'Echoes text and doubles n.', inputSchema: ECHO_INPUT_SCHEMA }, source: ECHO_SOURCE });
    await engine.saveFunction({
      spec: { name: 'echo_mem32', description: 'The same, with a 32 MB memory limit.', inputSchema: ECHO_INPUT_SCHEMA, memoryMb: 32 },
      source: ECHO_SOURCE,
    });
  } finally {
    engine.close();
  }
}

async function seedRss(): Promise<void> {
  const rssEngine = createEngine({ dataDir: rssDir, secrets: new MemorySecretStore() });
  try {
    for (let k = 0; k < CFG.rssFunctions; k++) {
      // Distinct sources, so every function has its own compiled script.
      await rssEngine.saveFunction({
        spec: { name: fnName(k), description: `Echo number ${k}.`, inputSchema: ECHO_INPUT_SCHEMA },
        source: `export default ({ text, n }) => ({ echo: text, n: n * 2, k: ${k} })`,
      });
    }
  } finally {
    rssEngine.close();
  }
}
const fnName = (k: number): string => `fn_${String(k).padStart(3, '0')}`;

// ----------------------------------------------------------------- phases ----

const startup = new Map<string, number[]>();
const firstCall = new Map<string, number[]>();

async function startupPhase(): Promise<void> {
  const specs = [productStdio(mainDir), plainStdio(), plainStdio([NO_SNAPSHOT])];
  const until = performance.now() + CFG.startupMaxMs;
  for (let rep = 0; rep < CFG.startupReps; rep++) {
    if (performance.now() > until) {
      notes.push(`startup: stopped at its time bound after ${rep} repetitions`);
      break;
    }
    for (const spec of rotate(specs, rep)) {
      const t = await startStdio(spec);
      if (!t.toolNames.includes('echo')) throw new Error(`${spec.label} does not list echo`);
      const list = startup.get(spec.key) ?? [];
      list.push(t.startupMs);
      startup.set(spec.key, list);
      // What an agent waits for next: the first tools/call of a fresh server.
      const first = await t.call(nextN());
      if (first.ok) firstCall.set(spec.key, [...(firstCall.get(spec.key) ?? []), first.ms]);
      else problems.push(`startup: first call to ${spec.label} failed: ${first.error}`);
      await t.close();
      await sleep(50);
    }
  }
}

let A: Target | undefined; // callable mcp
let B: Target | undefined; // plain stdio
let F: Target | undefined; // plain stdio + a fresh context per call (the ideal fresh-context reference)
let H: Target | undefined; // plain stdio → one child process + a fresh context per call (the hop floor)
let D: Target | undefined; // callable serve
let E: Target | undefined; // plain HTTP
const C = subprocessTarget(echoModule);
const idleRss = new Map<string, TreeRss>();
/** The floor: bare isolated-vm in this process; takes a turn in the burst and 16-in-flight rounds. */
let floor: BareFloor | undefined;
const FLOOR = 'floor';
type Turn = Target | typeof FLOOR;

/**
 * Each target in turn gets two calls 5 ms apart and the second is recorded: it follows exactly a
 * 5 ms idle gap, on its server and on the whole machine. The first follows the rest of the round
 * (~30–60 ms idle) and is kept apart ("after a round idle"). The subprocess gets one call.
 */
async function sparsePhase(): Promise<void> {
  const targets = [A, B, F, H, D, E].filter((t): t is Target => t !== undefined);
  const until = performance.now() + CFG.sparseMaxMs;
  for (let r = 0; r < CFG.sparseRounds; r++) {
    if (performance.now() > until) {
      notes.push(`sparse: stopped at its time bound after ${r} of ${CFG.sparseRounds} rounds`);
      break;
    }
    const list = r % CFG.subprocessEvery === 0 ? [...targets, C] : targets;
    for (const t of rotate(list, r)) {
      await sleep(CFG.gapMs);
      if (t === C) {
        S('sparse', t.key).add(await t.call(nextN()));
        await sleep(CFG.settleAfterSubprocessMs);
        continue;
      }
      S('sparse-long', t.key).add(await t.call(nextN()));
      await sleep(CFG.gapMs);
      S('sparse', t.key).add(await t.call(nextN()));
    }
  }
}

/** CPU used by each target's server process and by its children (sandbox hosts) over its burst blocks (ms). */
const burstCpu = new Map<string, { own: number; children: number; calls: number }>();

/** Rounds of back-to-back calls, each target (and the floor) for the same stretch of time per round. */
async function burstPhase(): Promise<void> {
  const targets: Turn[] = [A, B, F, H, D, E].filter((t): t is Target => t !== undefined);
  if (floor) targets.push(FLOOR);
  const until = performance.now() + CFG.burstMaxMs;
  for (let r = 0; r < CFG.burstRounds; r++) {
    if (performance.now() > until) {
      notes.push(`burst: stopped at its time bound after ${r} of ${CFG.burstRounds} rounds`);
      break;
    }
    for (const t of rotate(targets, r)) {
      if (t === FLOOR) {
        const s = S('burst', FLOOR);
        s.wallMs += floor!.syncBlock(CFG.burstBlockMs, until, CFG.blockMaxCalls, (o) => s.add(o));
        continue;
      }
      const s = S('burst', t.key);
      await t.call(nextN()); // the block's first call follows an idle stretch: not counted
      const cpuBefore = treeCpuMs(t.pid());
      const started = performance.now();
      const blockEnd = Math.min(until, started + CFG.burstBlockMs);
      for (let k = 0; k < CFG.blockMaxCalls && performance.now() < blockEnd; k++) s.add(await t.call(nextN()));
      s.wallMs += performance.now() - started;
      const cpuAfter = treeCpuMs(t.pid());
      const cpu = burstCpu.get(t.key) ?? { own: 0, children: 0, calls: 0 };
      burstCpu.set(t.key, { own: cpu.own + cpuAfter.own - cpuBefore.own, children: cpu.children + cpuAfter.children - cpuBefore.children, calls: s.calls });
    }
  }
}

/**
 * Rounds of 16 calls in flight, each target for the same stretch of time per round; the floor's
 * turn is 16 bare loops in flight over one isolate per core (async API).
 */
async function inflightPhase(): Promise<void> {
  const targets: Turn[] = [A, B, F, H, D, E].filter((t): t is Target => t !== undefined);
  if (floor) targets.push(FLOOR);
  const until = performance.now() + CFG.inflightMaxMs;
  for (let r = 0; r < CFG.inflightRounds; r++) {
    if (performance.now() > until) {
      notes.push(`16 in flight: stopped at its time bound after ${r} of ${CFG.inflightRounds} rounds`);
      break;
    }
    for (const t of rotate(targets, r)) {
      if (t === FLOOR) {
        const s = S('inflight', FLOOR);
        s.wallMs += await floor!.concurrent(CFG.inflight, Math.min(until, performance.now() + CFG.inflightBlockMs), CFG.blockMaxCalls, (o) => s.add(o));
        continue;
      }
      await inflight(t, CFG.blockMaxCalls, CFG.inflight, S('inflight', t.key), 'echo', Math.min(until, performance.now() + CFG.inflightBlockMs));
    }
  }
}

async function memlimitPhase(): Promise<void> {
  if (!A) return;
  const s = S('memlimit', A.key);
  const issued = await inflight(A, CFG.memlimitCalls, CFG.inflight, s, 'echo_mem32', performance.now() + CFG.memlimitMaxMs);
  if (issued < CFG.memlimitCalls) notes.push(`memlimit: stopped at its time bound after ${s.calls} of ${CFG.memlimitCalls} calls`);
}

/** VmRSS of a server process plus its child processes (its sandbox hosts), KiB. */
interface TreeRss {
  kib: number;
  childrenKiB: number;
  processes: number;
}
const NO_RSS: TreeRss = { kib: Number.NaN, childrenKiB: Number.NaN, processes: 0 };
let rss = { one: NO_RSS, all: NO_RSS, perFunctionMiB: Number.NaN, errors: 0 };

/** Medians of 5 readings 100 ms apart of the process tree's VmRSS. */
async function sampleRss(pid: number | null): Promise<TreeRss> {
  const samples: TreeRss[] = [];
  for (let k = 0; k < 5; k++) {
    samples.push(treeRssKiB(pid));
    await sleep(100);
  }
  return { kib: median(samples.map((x) => x.kib)), childrenKiB: median(samples.map((x) => x.childrenKiB)), processes: maxOf(samples.map((x) => x.processes)) };
}

async function rssPhase(): Promise<void> {
  const until = performance.now() + CFG.rssMaxMs;
  const R = await startStdio({ ...productStdio(rssDir), key: 'product-rss', label: 'callable mcp (100 functions)' });
  const s = new Series();
  try {
    if (!R.toolNames.includes(fnName(CFG.rssFunctions - 1))) throw new Error(`the server lists ${R.toolNames.length} functions, not ${CFG.rssFunctions}`);
    // One warm function, host warmed up with it, then idle.
    await sequential(R, 50, s, fnName(0), until);
    await sleep(CFG.rssIdleMs);
    const one = await sampleRss(R.pid());
    for (let k = 1; k < CFG.rssFunctions && performance.now() < until; k++) s.add(await R.call(nextN(), fnName(k)));
    await sleep(CFG.rssIdleMs);
    const all = await sampleRss(R.pid());
    rss = { one, all, perFunctionMiB: (all.kib - one.kib) / (CFG.rssFunctions - 1) / 1024, errors: s.errors };
    if (one.processes < 2) notes.push(`memory: no sandbox host process was found under callable mcp (pid ${R.pid()}); the figure counts the engine process only`);
    if (s.errors > 0) problems.push(`rss: ${s.errors} calls failed: ${[...s.errorMessages.keys()].join(' | ')}`);
  } finally {
    await R.close();
  }
}

interface BombResult {
  name: string;
  what: string;
  outcome: string;
  text: string;
  ms: number;
  /** Highest VmRSS / VmHWM of the hosts seen while it ran (KiB). */
  peakKiB: number;
  peakRssKiB: number;
  peakHwmKiB: number;
  samples: number;
  /** The host cap the memory_limit message names (MB), NaN when it names none. */
  capMb: number;
  hostsBefore: number[];
  hostsAfter: number[];
}
const bombResults: BombResult[] = [];
let bombRequests = Number.NaN;
let alive: { ok: boolean; detail: string } | undefined;
const bombDir = join(root, 'data-bombs');

/**
 * A fresh `callable mcp` with echo and the three bombs; each bomb is called once (in turn) while the
 * hosts' resident size is sampled, then echo is called once: the server must still answer it.
 */
async function bombsPhase(): Promise<void> {
  const until = performance.now() + CFG.bombsMaxMs;
  const hang = await startHangServer();
  try {
    const list = bombs(hang.port);
    const engine = createEngine({ dataDir: bombDir, secrets: new MemorySecretStore() });
    try {
      await engine.saveFunction({ spec: { name: 'echo', description: 'Echoes text and doubles n.', inputSchema: ECHO_INPUT_SCHEMA }, source: ECHO_SOURCE });
      for (const b of list) {
        await engine.saveFunction({
          spec: { name: b.name, description: b.what, language: 'js', timeoutMs: BOMB_TIMEOUT_MS, ...(b.memoryMb ? { memoryMb: b.memoryMb } : {}), ...(b.allowedHosts ? { allowedHosts: b.allowedHosts } : {}) },
          source: b.source,
        });
      }
    } finally {
      engine.close();
    }
    await stopEsbuild();

    const R = await startStdio({ ...productStdio(bombDir), key: 'product-bombs', label: 'callable mcp (bombs)' });
    try {
      const pid = R.pid();
      if (pid === null) throw new Error('callable mcp has no pid');
      const first = await R.call(nextN());
      if (!first.ok) throw new Error(`echo failed before the bombs: ${first.error}`);
      for (const b of list) {
        if (performance.now() > until) {
          notes.push(`bombs: stopped at the time bound before ${b.name}`);
          break;
        }
        const hostsBefore = sandboxHostPids(pid);
        const sampler = new HostSampler(pid, CFG.bombSampleMs, BOMB_TIMEOUT_MS * 3);
        const r = await R.callRaw(b.name, {}, BOMB_TIMEOUT_MS * 3);
        sampler.sample();
        sampler.stop();
        const text = r.error ?? r.text;
        bombResults.push({
          name: b.name,
          what: b.what,
          outcome: r.error ? 'no answer' : outcomeOf(r.text, r.isError),
          text,
          ms: r.ms,
          peakKiB: sampler.peakKiB,
          peakRssKiB: sampler.peakRssKiB,
          peakHwmKiB: sampler.peakHwmKiB,
          samples: sampler.samples,
          capMb: namedCapMb(text),
          hostsBefore,
          hostsAfter: sandboxHostPids(pid),
        });
        progress(`bombs: ${b.name}: ${bombResults.at(-1)!.outcome} after ${fmt(r.ms, 0)} ms, host peak ${fmt(sampler.peakKiB / 1024, 0)} MiB`);
      }
      bombRequests = hang.requests();
      // One call: the server answers it correctly, or it is not alive.
      let serverUp = true;
      try {
        process.kill(pid, 0);
      } catch {
        serverUp = false;
      }
      const after = await R.callRaw('echo', { text: 'hello', n: 21 }, 30_000);
      let problem: string | undefined = after.error ?? (after.isError ? `isError: ${after.text.slice(0, 300)}` : undefined);
      if (problem === undefined) {
        try {
          problem = echoProblem(JSON.parse(after.text), 21);
        } catch {
          problem = `not JSON: ${after.text.slice(0, 200)}`;
        }
      }
      alive = { ok: serverUp && problem === undefined, detail: problem === undefined ? `echo answered in ${fmt(after.ms, 1)} ms${serverUp ? '' : ' (but the process is gone?)'}` : `echo: ${problem}` };
    } finally {
      await R.close();
    }
  } finally {
    await hang.close();
  }
}

// ------------------------------------------------------------------- main ----

async function main(): Promise<number> {
  progress(`${quick ? 'quick' : 'full'} run of ${[...selected].join(', ')}; temp folder ${root}`);
  if (!(await guarded('seeding the data folders', seed))) return 1;
  if (selected.has('startup') || selected.has('calls')) progress('seeded: echo, echo_mem32 (memoryMb 32)');
  if (selected.has('memory')) progress(`seeded: ${CFG.rssFunctions} functions for the memory figure`);

  if (selected.has('startup')) {
    progress('startup: spawn → first tools/list answer, product / plain / plain with --no-node-snapshot, rotating; then the first tools/call');
    await guarded('startup', startupPhase);
  }
  if (selected.has('calls')) await callsSection();
  if (selected.has('memory')) {
    progress(`memory: ${CFG.rssFunctions} warm functions in one callable mcp`);
    await guarded('memory', rssPhase);
  }
  if (selected.has('bombs')) {
    progress('bombs: three memory bombs against a fresh callable mcp, hosts sampled every ' + `${CFG.bombSampleMs} ms; then echo`);
    await guarded('bombs', bombsPhase);
  }
  if (selected.has('workerd')) {
    progress('workerd: a call through the workerd gateway (callable deploy --serve) against callable serve');
    await guarded('workerd', async () => {
      for (const line of (await (await import('./workerd.ts')).workerdComparison({ quick, progress })).lines) progress(line);
    });
  }
  if (selected.has('fetch')) {
    progress(`fetch: ctx.fetch to a vendor on 127.0.0.1 beside Node's fetch in the plain server: ${CFG.fetch.sparseRounds} rounds of one small request, ${CFG.fetch.bigRounds} of an 8 MiB JSON answer`);
    await guarded('fetch', async () => void (fetchResult = await fetchComparison(join(root, 'data-fetch'), CFG.fetch)));
  }
  if (selected.has('catalog')) {
    progress(`catalog: saving ${CATALOG_SIZE.toLocaleString('en-US')} functions, then ${CFG.catalog.starts} starts each of callable mcp and the plain server with as many tools`);
    await guarded('catalog', async () => void (catalogResult = await catalogComparison(join(root, 'data-catalog'), CFG.catalog)));
  }
  if (selected.has('platform')) {
    progress(`platform: fresh contexts with the guest runtime, with and without the web platform, ${CFG.platform.rounds} rounds of ${CFG.platform.blockMs} ms each`);
    await guarded('platform', async () => void (platformResult = await freshContextCost(CFG.platform.rounds, CFG.platform.blockMs, performance.now() + CFG.platform.maxMs)));
  }
  if (selected.has('sdk')) {
    progress(`sdk: callable add ${SDK_PACKAGE} through the registry, saves, then ${CFG.sdk.rounds} rounds of a function importing each vendor SDK beside a plain one`);
    await guarded('sdk', async () => {
      sdkResult = await sdkComparison(root, CFG.sdk);
      if ('skipped' in sdkResult) notes.push(`sdk_call_overhead_ms not measured: ${sdkResult.skipped}`);
    });
  }

  report();
  return problems.length > 0 ? 1 : 0;
}

let fetchResult: FetchResult | undefined;
let catalogResult: CatalogResult | undefined;
let platformResult: PlatformVariant[] | undefined;
let sdkResult: SdkResult | undefined;

/** The long-lived targets, called sparse, back-to-back and 16 in flight, then memlimit. */
async function callsSection(): Promise<void> {
  await guarded('the bare isolated-vm floor', async () => {
    floor = new BareFloor();
  });

  progress('starting the long-lived targets');
  await guarded('callable mcp', async () => void (A = await startStdio(productStdio(mainDir))));
  await guarded('plain stdio server', async () => void (B = await startStdio(plainStdio())));
  await guarded('plain stdio server + fresh context', async () => void (F = await startStdio(plainStdioContext())));
  await guarded('plain stdio server → child process + fresh context', async () => void (H = await startStdio(plainStdioHop())));
  await guarded('callable serve', async () => void (D = await startHttp('product', mainDir)));
  await guarded('plain HTTP server', async () => void (E = await startHttp('plain', mainDir)));
  const live = [A, B, F, H, D, E].filter((t): t is Target => t !== undefined);

  await guarded('warm-up', async () => {
    for (const t of live) {
      await sequential(t, CFG.warmupCalls, S('warmup', t.key));
      await inflight(t, 64, CFG.inflight, S('warmup', t.key));
    }
    if (A) await inflight(A, 64, CFG.inflight, S('warmup', 'mem32'), 'echo_mem32');
    await C.call(nextN());
    await sleep(500);
    for (const t of live) idleRss.set(t.key, treeRssKiB(t.pid()));
  });

  progress(`sparse: ${CFG.sparseRounds} rounds of 2 calls ${CFG.gapMs} ms apart per target; the subprocess every ${CFG.subprocessEvery} rounds`);
  await guarded('sparse', sparsePhase);
  progress(`burst: ${CFG.burstRounds} rounds of ${CFG.burstBlockMs} ms of back-to-back calls per target, the bare isolated-vm floor included`);
  await guarded('burst', burstPhase);
  progress(`16 in flight: ${CFG.inflightRounds} rounds of ${CFG.inflightBlockMs} ms per target, the floor on ${floor?.cores ?? '?'} isolates included`);
  await guarded('16 in flight', inflightPhase);
  floor?.dispose();
  progress(`memlimit: ${CFG.memlimitCalls.toLocaleString('en-US')} calls of echo_mem32 (memoryMb 32), 16 in flight`);
  await guarded('memlimit', memlimitPhase);

  progress('stopping the long-lived targets');
  for (const t of live) await t.close();
}

// ----------------------------------------------------------------- report ----

function ratio(a: number, b: number): number {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : Number.NaN;
}

/** Each bomb's peak against the cap its host was held to; n/a when no bomb's message named a cap. */
function bombsWithinCap(): string {
  const judged = bombResults.filter((b) => Number.isFinite(b.capMb) && Number.isFinite(b.peakKiB));
  if (judged.length === 0) return 'n/a';
  return judged.every((b) => b.peakKiB / 1024 <= b.capMb) ? 'met' : 'MISSED';
}

function met(key: FigureKey, value: number): string {
  const t: FigureTarget = TARGETS[key];
  if (t.op === 'info') return '';
  if (t.op === '<=cap') return bombsWithinCap();
  if (!Number.isFinite(value)) return 'n/a';
  const ok = t.op === '<=' ? value <= t.value : t.op === '>=' ? value >= t.value : value === t.value;
  return ok ? 'met' : 'MISSED';
}

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(join(REPO, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}

function report(): void {
  const pA = 'product-stdio';
  const pB = 'plain-stdio';
  const pF = 'plain-stdio-ctx';
  const pH = 'plain-stdio-hop';
  const pD = 'product-http';
  const pE = 'plain-http';
  const get = (phase: string, key: string): Series => series.get(`${phase}/${key}`) ?? new Series();
  const mem = get('memlimit', pA);
  const startupProduct = median(startup.get(pA) ?? []);
  const startupPlain = median(startup.get(pB) ?? []);
  const floorMs = get('burst', FLOOR).p(0.5);
  const burstExtra = get('burst', pA).p(0.5) - get('burst', pB).p(0.5);
  // The bomb with the highest peak, and the cap its host was held to (as its error message names it).
  const worstBomb = bombResults.reduce<BombResult | undefined>((w, b) => (w === undefined || b.peakKiB > w.peakKiB ? b : w), undefined);
  const namedCaps = bombResults.filter((b) => Number.isFinite(b.capMb));
  const cpuPerCall = (key: string): number => {
    const c = burstCpu.get(key);
    return c && c.calls > 0 ? (c.own + c.children) / c.calls : Number.NaN;
  };
  const firstProduct = median(firstCall.get(pA) ?? []);
  const firstPlain = median(firstCall.get(pB) ?? []);
  const okMs = (list: readonly CallOutcome[] | undefined): number[] => (list ?? []).filter((o) => o.ok).map((o) => o.ms);
  const fetchOne = fetchResult ? fetchResult.sparse.map((l) => median(okMs(l))) : [Number.NaN, Number.NaN, Number.NaN];
  const fetchBig = fetchResult ? fetchResult.big.map((l) => median(okMs(l))) : [Number.NaN, Number.NaN];
  const mibPerS = (ms: number): number => BIG_JSON_BYTES / 1024 / 1024 / (ms / 1000);
  const catalogStart = catalogResult ? catalogResult.startup.map(median) : [Number.NaN, Number.NaN];
  const catalogList = catalogResult ? catalogResult.list.map((l) => median(okMs(l))) : [Number.NaN, Number.NaN];
  const [withWeb, baseOnly] = platformResult ?? [];
  const webMs = median(withWeb?.samples ?? []);
  const baseMs = median(baseOnly?.samples ?? []);
  const sdkMs = sdkResult && !('skipped' in sdkResult) ? [median(okMs(sdkResult.sdk)), median(okMs(sdkResult.plain))] : [Number.NaN, Number.NaN];

  const figures: Record<FigureKey, number> = {
    stdio_sparse_p50_vs_ideal: ratio(get('sparse', pA).p(0.5), get('sparse', pF).p(0.5)),
    stdio_sparse_p99_vs_ideal: ratio(get('sparse', pA).p(0.99), get('sparse', pF).p(0.99)),
    stdio_burst_p50_vs_ideal: ratio(get('burst', pA).p(0.5), get('burst', pF).p(0.5)),
    stdio_16_inflight_vs_ideal: ratio(get('inflight', pA).perSecond, get('inflight', pF).perSecond),
    cpu_per_call_vs_ideal: ratio(cpuPerCall(pA), cpuPerCall(pF)),
    first_call_ms: firstProduct,
    fetch_sparse_p50_ratio: ratio(fetchOne[0]!, fetchOne[1]!),
    // Throughput over the same bytes: the plain server's time over the product's.
    fetch_8mib_json_ratio: ratio(fetchBig[1]!, fetchBig[0]!),
    catalog_1000_list_ratio: ratio(catalogList[0]!, catalogList[1]!),
    catalog_1000_startup_ratio: ratio(catalogStart[0]!, catalogStart[1]!),
    fresh_context_base_runtime_ms: baseMs,
    fresh_context_web_platform_ms: webMs,
    sdk_call_overhead_ms: sdkMs[0]! - sdkMs[1]!,
    sdk_save_warm_ms: sdkResult && !('skipped' in sdkResult) ? median(sdkResult.saveWarmMs) : Number.NaN,
    stdio_sparse_p50_ratio: ratio(get('sparse', pA).p(0.5), get('sparse', pB).p(0.5)),
    stdio_sparse_p99_ratio: ratio(get('sparse', pA).p(0.99), get('sparse', pB).p(0.99)),
    stdio_burst_p50_ratio: ratio(get('burst', pA).p(0.5), get('burst', pB).p(0.5)),
    stdio_16_inflight_throughput_ratio: ratio(get('inflight', pA).perSecond, get('inflight', pB).perSecond),
    http_sparse_p50_ratio: ratio(get('sparse', pD).p(0.5), get('sparse', pE).p(0.5)),
    subprocess_p50_over_callable_p50: ratio(get('sparse', 'subprocess').p(0.5), get('sparse', pA).p(0.5)),
    startup_ratio: ratio(startupProduct, startupPlain),
    warm_function_rss_mib: rss.perFunctionMiB,
    memlimit_spurious_failures: mem.calls > 0 ? mem.errors : Number.NaN,
    fresh_context_floor_ms: floorMs,
    stdio_burst_overhead_over_floor: ratio(burstExtra, floorMs),
    stdio_16_inflight_vs_floor: ratio(get('inflight', pA).perSecond, get('inflight', FLOOR).perSecond),
    ideal_sparse_p50_ratio: ratio(get('sparse', pF).p(0.5), get('sparse', pB).p(0.5)),
    ideal_burst_overhead_over_floor: ratio(get('burst', pF).p(0.5) - get('burst', pB).p(0.5), floorMs),
    ideal_16_inflight_vs_floor: ratio(get('inflight', pF).perSecond, get('inflight', FLOOR).perSecond),
    hop_sparse_p50_vs_ideal: ratio(get('sparse', pH).p(0.5), get('sparse', pF).p(0.5)),
    hop_burst_p50_vs_ideal: ratio(get('burst', pH).p(0.5), get('burst', pF).p(0.5)),
    hop_16_inflight_vs_ideal: ratio(get('inflight', pH).perSecond, get('inflight', pF).perSecond),
    hop_cpu_per_call_vs_ideal: ratio(cpuPerCall(pH), cpuPerCall(pF)),
    stdio_sparse_p50_vs_hop: ratio(get('sparse', pA).p(0.5), get('sparse', pH).p(0.5)),
    stdio_burst_p50_vs_hop: ratio(get('burst', pA).p(0.5), get('burst', pH).p(0.5)),
    stdio_16_inflight_vs_hop: ratio(get('inflight', pA).perSecond, get('inflight', pH).perSecond),
    cpu_per_call_vs_hop: ratio(cpuPerCall(pA), cpuPerCall(pH)),
    hop_fetch_sparse_p50_ratio: ratio(fetchOne[2]!, fetchOne[1]!),
    fetch_sparse_p50_vs_hop: ratio(fetchOne[0]!, fetchOne[2]!),
    bomb_peak_host_rss_mib: worstBomb ? worstBomb.peakKiB / 1024 : Number.NaN,
    bomb_host_cap_mib: worstBomb ? worstBomb.capMb : Number.NaN,
    server_alive_after_bombs: alive === undefined ? Number.NaN : alive.ok ? 1 : 0,
  };
  const vsIdeal = (phase: string, q: number): string => `${fmt(get(phase, pA).p(q), 3)} / ${fmt(get(phase, pF).p(q), 3)} ms (callable mcp / ideal)`;
  const calls = (list: readonly CallOutcome[] | undefined): number => okMs(list).length;
  const basis: Record<FigureKey, string> = {
    stdio_sparse_p50_vs_ideal: vsIdeal('sparse', 0.5),
    stdio_sparse_p99_vs_ideal: vsIdeal('sparse', 0.99),
    stdio_burst_p50_vs_ideal: vsIdeal('burst', 0.5),
    stdio_16_inflight_vs_ideal: `${fmt(get('inflight', pA).perSecond, 0)} / ${fmt(get('inflight', pF).perSecond, 0)} calls/s (callable mcp / ideal)`,
    cpu_per_call_vs_ideal: `${fmt(cpuPerCall(pA), 3)} / ${fmt(cpuPerCall(pF), 3)} ms CPU a call, back-to-back, server + its children`,
    first_call_ms: `p50 of ${firstCall.get(pA)?.length ?? 0} starts, the call right after tools/list answered (plain server: ${fmt(firstPlain, 2)} ms)`,
    fetch_sparse_p50_ratio: `${fmt(fetchOne[0]!, 3)} / ${fmt(fetchOne[1]!, 3)} ms (ctx.fetch in callable mcp / Node's fetch in the plain server; ${calls(fetchResult?.sparse[0])} + ${calls(fetchResult?.sparse[1])} calls)`,
    fetch_8mib_json_ratio: `${fmt(mibPerS(fetchBig[0]!), 1)} / ${fmt(mibPerS(fetchBig[1]!), 1)} MiB/s (p50 call ${fmt(fetchBig[0]!, 1)} / ${fmt(fetchBig[1]!, 1)} ms; ${calls(fetchResult?.big[0])} + ${calls(fetchResult?.big[1])} calls)`,
    catalog_1000_list_ratio: `${fmt(catalogList[0]!, 2)} / ${fmt(catalogList[1]!, 2)} ms tools/list p50 (${calls(catalogResult?.list[0])} + ${calls(catalogResult?.list[1])} lists)`,
    catalog_1000_startup_ratio: `${fmt(catalogStart[0]!, 1)} / ${fmt(catalogStart[1]!, 1)} ms spawn → first tools/list, medians of ${catalogResult?.startup[0].length ?? 0} + ${catalogResult?.startup[1].length ?? 0} starts`,
    fresh_context_base_runtime_ms: `median of ${(baseOnly?.samples.length ?? 0).toLocaleString('en-US')} fresh contexts + the guest without installWeb (${fmt((baseOnly?.bytes ?? Number.NaN) / 1024, 0)} KiB), in process`,
    fresh_context_web_platform_ms: `median of ${(withWeb?.samples.length ?? 0).toLocaleString('en-US')} with the product's guest (${fmt((withWeb?.bytes ?? Number.NaN) / 1024, 0)} KiB): ${fmt(ratio(webMs, baseMs), 2)}× the base runtime's`,
    sdk_call_overhead_ms:
      sdkResult === undefined
        ? 'not measured'
        : 'skipped' in sdkResult
          ? 'skipped: the package could not be added (the note below says why)'
          : `${fmt(sdkMs[0]!, 3)} − ${fmt(sdkMs[1]!, 3)} ms p50 (imports ${SDK_PACKAGE} − plain; ${calls(sdkResult.sdk)} + ${calls(sdkResult.plain)} calls)`,
    sdk_save_warm_ms: sdkResult && !('skipped' in sdkResult) ? `median of ${sdkResult.saveWarmMs.length} saves of a new ${SDK_PACKAGE} function in a running engine (as the studio saves), its lock installed already` : 'not measured',
    stdio_sparse_p50_ratio: `${fmt(get('sparse', pA).p(0.5), 3)} / ${fmt(get('sparse', pB).p(0.5), 3)} ms`,
    stdio_sparse_p99_ratio: `${fmt(get('sparse', pA).p(0.99), 3)} / ${fmt(get('sparse', pB).p(0.99), 3)} ms`,
    stdio_burst_p50_ratio: `${fmt(get('burst', pA).p(0.5), 3)} / ${fmt(get('burst', pB).p(0.5), 3)} ms`,
    stdio_16_inflight_throughput_ratio: `${fmt(get('inflight', pA).perSecond, 0)} / ${fmt(get('inflight', pB).perSecond, 0)} calls/s`,
    http_sparse_p50_ratio: `${fmt(get('sparse', pD).p(0.5), 3)} / ${fmt(get('sparse', pE).p(0.5), 3)} ms`,
    subprocess_p50_over_callable_p50: `${fmt(get('sparse', 'subprocess').p(0.5), 1)} / ${fmt(get('sparse', pA).p(0.5), 3)} ms`,
    startup_ratio: `${fmt(startupProduct, 1)} / ${fmt(startupPlain, 1)} ms (medians)`,
    warm_function_rss_mib: `(${fmt(rss.all.kib / 1024, 1)} − ${fmt(rss.one.kib / 1024, 1)} MiB) / ${CFG.rssFunctions - 1}, engine + ${Math.max(0, rss.all.processes - 1)} child process(es)`,
    memlimit_spurious_failures: `${mem.errors} of ${mem.calls.toLocaleString('en-US')} calls${quick ? ` (quick: ${CFG.memlimitCalls.toLocaleString('en-US')}, not ${FULL_MEMLIMIT_CALLS.toLocaleString('en-US')})` : ''}`,
    fresh_context_floor_ms: `median of ${get('burst', FLOOR).samples.length.toLocaleString('en-US')} sync iterations, in process, no MCP`,
    stdio_burst_overhead_over_floor: `(${fmt(get('burst', pA).p(0.5), 3)} − ${fmt(get('burst', pB).p(0.5), 3)}) / ${fmt(floorMs, 3)} ms`,
    stdio_16_inflight_vs_floor: `${fmt(get('inflight', pA).perSecond, 0)} / ${fmt(get('inflight', FLOOR).perSecond, 0)} calls/s (bare: ${floor?.cores ?? '?'} isolates, async)`,
    ideal_sparse_p50_ratio: `the same figure for the plain server + a fresh context per call: ${fmt(get('sparse', pF).p(0.5), 3)} / ${fmt(get('sparse', pB).p(0.5), 3)} ms`,
    ideal_burst_overhead_over_floor: `the same for the plain server + fresh context: (${fmt(get('burst', pF).p(0.5), 3)} − ${fmt(get('burst', pB).p(0.5), 3)}) / ${fmt(floorMs, 3)} ms`,
    ideal_16_inflight_vs_floor: `the same for the plain server + fresh context: ${fmt(get('inflight', pF).perSecond, 0)} / ${fmt(get('inflight', FLOOR).perSecond, 0)} calls/s`,
    hop_sparse_p50_vs_ideal: `${fmt(get('sparse', pH).p(0.5), 3)} / ${fmt(get('sparse', pF).p(0.5), 3)} ms (hop floor / ideal)`,
    hop_burst_p50_vs_ideal: `${fmt(get('burst', pH).p(0.5), 3)} / ${fmt(get('burst', pF).p(0.5), 3)} ms (hop floor / ideal)`,
    hop_16_inflight_vs_ideal: `${fmt(get('inflight', pH).perSecond, 0)} / ${fmt(get('inflight', pF).perSecond, 0)} calls/s (hop floor / ideal)`,
    hop_cpu_per_call_vs_ideal: `${fmt(cpuPerCall(pH), 3)} / ${fmt(cpuPerCall(pF), 3)} ms CPU a call, back-to-back, server + its child (hop floor / ideal)`,
    stdio_sparse_p50_vs_hop: `${fmt(get('sparse', pA).p(0.5), 3)} / ${fmt(get('sparse', pH).p(0.5), 3)} ms (callable mcp / hop floor)`,
    stdio_burst_p50_vs_hop: `${fmt(get('burst', pA).p(0.5), 3)} / ${fmt(get('burst', pH).p(0.5), 3)} ms (callable mcp / hop floor)`,
    stdio_16_inflight_vs_hop: `${fmt(get('inflight', pA).perSecond, 0)} / ${fmt(get('inflight', pH).perSecond, 0)} calls/s (callable mcp / hop floor)`,
    cpu_per_call_vs_hop: `${fmt(cpuPerCall(pA), 3)} / ${fmt(cpuPerCall(pH), 3)} ms CPU a call, back-to-back, server + its children (callable mcp / hop floor)`,
    hop_fetch_sparse_p50_ratio: `${fmt(fetchOne[2]!, 3)} / ${fmt(fetchOne[1]!, 3)} ms (hop floor: the child's function asks the server to fetch / Node's fetch in the plain server; ${calls(fetchResult?.sparse[2])} + ${calls(fetchResult?.sparse[1])} calls)`,
    fetch_sparse_p50_vs_hop: `${fmt(fetchOne[0]!, 3)} / ${fmt(fetchOne[2]!, 3)} ms (ctx.fetch in callable mcp / hop floor; ${calls(fetchResult?.sparse[0])} + ${calls(fetchResult?.sparse[2])} calls)`,
    bomb_peak_host_rss_mib: worstBomb ? `${worstBomb.name}; max of VmRSS / VmHWM every ${CFG.bombSampleMs} ms; each bomb vs its own cap below` : 'no bomb ran',
    bomb_host_cap_mib: worstBomb
      ? Number.isFinite(worstBomb.capMb)
        ? `named by ${worstBomb.name}'s memory_limit message`
        : `${worstBomb.name}'s message names no cap${namedCaps.length ? ` (caps named: ${namedCaps.map((b) => `${b.name} ${b.capMb}`).join(', ')})` : ''}`
      : 'no bomb ran',
    server_alive_after_bombs: alive === undefined ? 'not measured' : alive.detail,
  };

  const out: string[] = [];
  const cpu = cpus();
  out.push('');
  out.push(`Callable Studio MCP benchmark: ${quick ? 'QUICK run (fewer iterations)' : 'full run'}${selected.size < Object.keys(SECTIONS).length ? ` of ${[...selected].join(', ')} only` : ''}, ${((performance.now() - benchStarted) / 1000).toFixed(0)} s`);
  out.push(
    `node ${process.version} (${platform()} ${release()} ${arch()}), ${cpu.length} × ${cpu[0]?.model ?? 'cpu'}; ` +
      `client @modelcontextprotocol/client ${packageVersion('@modelcontextprotocol/client')} (era 2025-11-25, initialize), ` +
      `server ${packageVersion('@modelcontextprotocol/server')}, node ${packageVersion('@modelcontextprotocol/node')}, isolated-vm ${packageVersion('isolated-vm')}`,
  );
  out.push(`function: ${ECHO_SOURCE}`);
  out.push('');

  out.push('Figures (product over its reference from the same run: the ideal fresh-context server, the hop floor, the plain server, plain Node)');
  out.push(
    table(
      ['figure', 'value', 'target', '', 'from'],
      reportedKeys.map((key) => {
        const t: FigureTarget = TARGETS[key];
        const digits = key === 'memlimit_spurious_failures' ? 0 : key === 'subprocess_p50_over_callable_p50' || key.startsWith('bomb_') || key === 'first_call_ms' ? 1 : key.startsWith('fresh_context_') ? 3 : 2;
        const value = BOOLEAN_FIGURES.has(key) ? (Number.isFinite(figures[key]) ? String(figures[key] === 1) : '—') : fmt(figures[key], digits);
        const op = t.op === 'info' ? '' : t.op === '=' ? '= ' : t.op === '>=' ? '≥ ' : '≤ ';
        return [key, value, t.op === 'info' ? (t.shown.startsWith('was') ? `(${t.shown})` : '') : `${op}${t.shown}`, met(key, figures[key]), basis[key]];
      }),
    ),
  );
  out.push('');

  if (selected.has('calls')) {
    const labels: Record<string, string> = {
      [pA]: 'product  callable mcp (stdio)',
      [pB]: 'plain    SDK server (stdio)',
      [pF]: 'ideal    SDK server + fresh context',
      [pH]: 'hop      SDK server → child process + fresh context',
      [pD]: 'product  callable serve (HTTP)',
      [pE]: 'plain    SDK server (HTTP, stateless)',
      subprocess: 'ref      fresh node per call',
      [FLOOR]: 'floor    bare isolated-vm, in process',
    };
    const plainOf: Record<string, string> = { [pA]: pB, [pF]: pB, [pH]: pB, [pD]: pE, subprocess: pB };
    const phases: Array<[string, string]> = [
      ['sparse', `sparse (${CFG.gapMs} ms idle before each call)`],
      ['sparse-long', 'after a round idle (~30-60 ms)'],
      ['burst', 'burst (back-to-back)'],
      ['inflight', `${CFG.inflight} in flight`],
      ['memlimit', `memoryMb 32, ${CFG.inflight} in flight`],
    ];
    const rows: string[][] = [];
    for (const [phase, title] of phases) {
      for (const key of [pA, pB, pF, pH, pD, pE, 'subprocess', FLOOR]) {
        const s = series.get(`${phase}/${key}`);
        if (!s || s.calls === 0) continue;
        const base = series.get(`${phase}/${plainOf[key] ?? ''}`);
        const isRef = key === pB || key === pE;
        rows.push([
          `${title.padEnd(36)} ${labels[key] ?? key}`,
          String(s.calls),
          String(s.errors),
          fmt(s.p(0.5), 3),
          fmt(s.p(0.9), 3),
          fmt(s.p(0.99), 3),
          fmt(maxOf(s.samples), 2),
          fmt(mean(s.samples), 3),
          phase.startsWith('sparse') ? '—' : fmt(s.perSecond, 0),
          !isRef && base ? `${fmt(ratio(s.p(0.5), base.p(0.5)), 2)}×` : '',
          !isRef && base ? `${fmt(ratio(s.p(0.99), base.p(0.99)), 2)}×` : '',
          !isRef && base && !phase.startsWith('sparse') ? `${fmt(ratio(s.perSecond, base.perSecond), 2)}×` : '',
        ]);
      }
    }
    out.push('Latency per call (ms, as the client sees it: request written → result parsed)');
    out.push(table(['phase / target', 'calls', 'err', 'p50', 'p90', 'p99', 'max', 'mean', 'calls/s', 'p50 ×plain', 'p99 ×plain', 'calls/s ×plain'], rows));
    out.push('  (the subprocess row is compared with the plain stdio server; the headline figure divides it by callable mcp)');
    out.push(`  (floor: fresh context + the echo body + release in this process, no MCP; burst = createContextSync/runSync on one isolate, 16 in flight = the async API over ${floor?.cores ?? '?'} isolates, one per core)`);
    out.push('  (ideal: the plain SDK server whose tool runs the echo in a fresh isolated-vm context per call, synchronously, in its own process: a fresh-context MCP server with no other cost; the ideal_* figures are the issue\'s figures computed for it, the bound any design meets at best here)');
    out.push('  (hop: the same plain SDK server forwarding each call to one long-lived child node process over a pipe, newline-framed JSON, one write a message, calls told apart by id; the child runs the ideal\'s fresh-context echo and writes the answer back: the least a design with the isolates outside the server process pays; its CPU counts the child)');
    out.push('');

    const cpuRows: string[][] = [];
    for (const key of [pA, pB, pF, pH, pD, pE]) {
      const c = burstCpu.get(key);
      if (!c || c.calls === 0) continue;
      cpuRows.push([labels[key] ?? key, c.calls.toLocaleString('en-US'), fmt(c.own / c.calls, 3), fmt(c.children / c.calls, 3), fmt((c.own + c.children) / c.calls, 3)]);
    }
    out.push('CPU per call, back-to-back (ms of user + system time over the burst blocks, from /proc; 10 ms ticks, so read over thousands of calls)');
    out.push(table(['target', 'calls', 'server', 'its children (hosts, hop child)', 'all'], cpuRows));
    out.push('');
  }

  if (selected.has('startup')) {
    const srows: string[][] = [];
    for (const [key, label] of [
      [pA, 'product  callable mcp'],
      [pB, 'plain    SDK server'],
      ['plain-stdio-flag', 'plain    SDK server + --no-node-snapshot'],
    ] as const) {
      const list = startup.get(key) ?? [];
      if (list.length === 0) continue;
      srows.push([
        label,
        String(list.length),
        fmt(median(list), 1),
        fmt(minOf(list), 1),
        fmt(maxOf(list), 1),
        key === pB ? '' : `${fmt(ratio(median(list), startupPlain), 2)}×`,
        fmt(median(firstCall.get(key) ?? []), 2),
      ]);
    }
    out.push('Startup (ms, spawn → first tools/list answer over stdio: initialize + tools/list), then the first tools/call');
    out.push(table(['target', 'reps', 'median', 'min', 'max', '×plain', 'first call p50'], srows));
    out.push('');
  }

  if (selected.has('memory')) {
    const memRow = (what: string, r: TreeRss | undefined): string[] => [what, fmt((r?.kib ?? Number.NaN) / 1024, 1), fmt((r?.childrenKiB ?? Number.NaN) / 1024, 1), String(r?.processes ?? 0)];
    out.push('Memory (VmRSS of the server process + VmRSS of its child processes: the sandbox hosts, found via /proc/<pid>/task/*/children)');
    out.push(
      table(
        ['what', 'MiB, all', 'of which children', 'processes'],
        [
          memRow('callable mcp, 1 warm function (after 50 calls, idle)', rss.one),
          memRow(`callable mcp, ${CFG.rssFunctions} warm functions (each called once, idle)`, rss.all),
          ['  per additional warm function', fmt(rss.perFunctionMiB, 2), fmt((rss.all.childrenKiB - rss.one.childrenKiB) / (CFG.rssFunctions - 1) / 1024, 2), ''],
          memRow('callable mcp after warm-up (echo + echo_mem32 isolates)', idleRss.get(pA)),
          memRow('plain SDK server (stdio) after warm-up', idleRss.get(pB)),
          memRow('callable serve after warm-up', idleRss.get(pD)),
          memRow('plain SDK server (HTTP) after warm-up', idleRss.get(pE)),
        ],
      ),
    );
    out.push('  (the 1-function baseline already holds the isolates callable mcp pre-warms when a client lists its tools: up to 8, compiled, never called)');
    out.push('');
  }

  if (bombResults.length > 0 || alive !== undefined) {
    out.push(`Memory bombs (one fresh callable mcp; function deadline ${BOMB_TIMEOUT_MS / 1000} s; host resident size sampled every ${CFG.bombSampleMs} ms: VmRSS, and VmHWM while the host lives)`);
    out.push(
      table(
        ['bomb', 'outcome', 'ms', 'peak MiB', 'VmRSS max', 'VmHWM max', 'cap MiB (named)', 'within', 'host replaced', 'samples'],
        bombResults.map((b) => [
          `${b.name}: ${b.what}`,
          b.outcome,
          fmt(b.ms, 0),
          fmt(b.peakKiB / 1024, 1),
          fmt(b.peakRssKiB / 1024, 1),
          fmt(b.peakHwmKiB / 1024, 1),
          Number.isFinite(b.capMb) ? String(b.capMb) : '—',
          Number.isFinite(b.capMb) ? (b.peakKiB / 1024 <= b.capMb ? 'yes' : 'NO') : '—',
          b.hostsBefore.join(',') === b.hostsAfter.join(',') ? 'no' : `${b.hostsBefore.join(',')} → ${b.hostsAfter.join(',')}`,
          String(b.samples),
        ]),
      ),
    );
    for (const b of bombResults) out.push(`  ${b.name}: ${b.text.slice(0, 300)}`);
    if (Number.isFinite(bombRequests)) out.push(`  requests that reached the never-answering 127.0.0.1 server: ${bombRequests}`);
    out.push(`  after the bombs: ${alive ? `${alive.ok ? 'alive' : 'NOT ALIVE'}: ${alive.detail}` : 'not measured'}`);
    out.push('  (a cap is reported only as the memory_limit message names it; the bench cannot read a host\'s heartbeat from outside)');
    out.push('');
  }

  if (selected.has('calls')) {
    out.push(`memlimit: ${mem.errors} failed of ${mem.calls.toLocaleString('en-US')} calls of a function that uses almost no memory, memoryMb 32, ${CFG.inflight} in flight${quick ? ` — QUICK mode: ${CFG.memlimitCalls.toLocaleString('en-US')} calls, the full run makes ${FULL_MEMLIMIT_CALLS.toLocaleString('en-US')}` : ''}`);
    for (const [message, count] of mem.errorMessages) out.push(`  ${count} × ${message}`);
    out.push('');
  }

  const moreRows: string[][] = [];
  const moreFailed: string[] = [];
  const moreRow = (what: string, list: readonly CallOutcome[] | undefined): void => {
    if (!list || list.length === 0) return;
    const ok = okMs(list);
    moreRows.push([what, String(list.length), String(list.length - ok.length), fmt(quantile(ok, 0.5), 3), fmt(quantile(ok, 0.9), 3), fmt(quantile(ok, 0.99), 3), fmt(maxOf(ok), 2)]);
    const failed = new Map<string, number>();
    for (const o of list) if (!o.ok) failed.set((o.error ?? 'unknown').slice(0, 160), (failed.get((o.error ?? 'unknown').slice(0, 160)) ?? 0) + 1);
    for (const [message, count] of failed) moreFailed.push(`  ${what.replace(/\s+/g, ' ')}: ${count} × ${message}`);
  };
  moreRow('fetch, one small request    callable mcp, ctx.fetch', fetchResult?.sparse[0]);
  moreRow("fetch, one small request    plain server, Node's fetch", fetchResult?.sparse[1]);
  moreRow("fetch, one small request    hop: child's context asks the server, Node's fetch", fetchResult?.sparse[2]);
  moreRow('fetch, 8 MiB JSON .json()   callable mcp, ctx.fetch', fetchResult?.big[0]);
  moreRow("fetch, 8 MiB JSON .json()   plain server, Node's fetch", fetchResult?.big[1]);
  moreRow(`tools/list, ${CATALOG_SIZE} tools       callable mcp`, catalogResult?.list[0]);
  moreRow(`tools/list, ${CATALOG_SIZE} tools       plain server`, catalogResult?.list[1]);
  if (sdkResult && !('skipped' in sdkResult)) {
    moreRow(`sdk                         imports ${SDK_PACKAGE}`, sdkResult.sdk);
    moreRow('sdk                         plain function', sdkResult.plain);
  }
  if (moreRows.length > 0) {
    out.push(`Calls of the fetch, catalog and sdk sections (ms; each after ${CFG.gapMs} ms idle, product and reference alternating)`);
    out.push(table(['what', 'calls', 'err', 'p50', 'p90', 'p99', 'max'], moreRows));
    if (catalogResult) out.push(`  (saving the ${CATALOG_SIZE.toLocaleString('en-US')} functions took ${fmt(catalogResult.seedMs / 1000, 1)} s)`);
    if (sdkResult && !('skipped' in sdkResult)) out.push(`  (callable add: ${sdkResult.added}, in ${fmt(sdkResult.addMs / 1000, 1)} s)`);
    out.push('');
  }

  out.push(...sdkReport(sdkResult));
  const otherErrors = [...series.entries()].filter(([id, s]) => !id.startsWith('memlimit/') && s.errors > 0);
  if (otherErrors.length > 0 || moreFailed.length > 0) {
    out.push('Failed calls (not counted in latencies):');
    for (const [id, s] of otherErrors) for (const [message, count] of s.errorMessages) out.push(`  ${id}: ${count} × ${message}`);
    out.push(...moreFailed);
    out.push('');
  }
  if (selected.has('calls')) {
    out.push('Method: targets are called round-robin and the order rotates every round; burst and 16-in-flight run in equal stretches of time per target, also rotating.');
    out.push(`Sparse: per target and round, two calls ${CFG.gapMs} ms apart; the second (after exactly ${CFG.gapMs} ms of idle machine) is the sparse figure, the first is the "round idle" row. Burst drops each stretch's first call.`);
    out.push("HTTP: callable serve gives 2025-era clients a session; the plain server is the SDK's stateless legacy fallback (a fresh server per request).");
  }
  for (const note of notes) out.push(`note: ${note}`);
  for (const p of problems) out.push(`PROBLEM: ${p}`);
  process.stdout.write(`${out.join('\n')}\n`);

  if (jsonPath) {
    const json = {
      ...Object.fromEntries(reportedKeys.map((key) => [key, BOOLEAN_FIGURES.has(key) ? (Number.isFinite(figures[key]) ? figures[key] === 1 : null) : round(figures[key])])),
      ...sdkOverheads(sdkResult),
    };
    writeFileSync(jsonPath, `${JSON.stringify(json, null, 2)}\n`);
    process.stdout.write(`wrote ${jsonPath}\n`);
  }
}

let code = 1;
try {
  code = await main();
} catch (error) {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
} finally {
  for (const t of [A, B, F, H, D, E]) await t?.close().catch(() => {});
  killEverything();
}
process.exit(code);
