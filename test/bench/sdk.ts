// What importing a vendor SDK costs: for each SDK of the README's table, a function that imports it
// and returns without a request, beside a plain function returning the same, all served by one
// `callable mcp`; and how long saving the `openai` function takes. `openai` is added as a user adds
// it (`callable add`, through the registry npm is configured with); when that fails (no registry),
// the figures are skipped with the reason. The data folder's packages are the ones the vendor SDK
// test keeps on this machine, so after its first run npm only resolves each SDK's lock.
import { execFile } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { KEPT_PACKAGES, PINNED_SDKS, pinnedSdk, sdkDependencies, type PinnedSdk } from '../support/vendors/sdkPins.ts';
import { fmt, median, table } from './stats.ts';
import { alternate, CALLABLE_BIN, checkedCall, productStdio, REPO, startStdio, type CallOutcome } from './targets.ts';

export const SDK_PACKAGE = 'openai';
const OPENAI = pinnedSdk(SDK_PACKAGE);
const sdkSource = (sdk: PinnedSdk): string => `${sdk.imports};\nexport default () => ({ ok: typeof ${sdk.binds} === 'function' });\n`;
const PLAIN_SOURCE = "export default () => ({ ok: typeof Object === 'function' });\n";
/** Saves of a new `openai` function timed, one after another: the median is the figure. */
const WARM_SAVES = 3;

/** Runs `callable ARGS` as a user would; resolves with its exit code and output. */
function callable(args: string[], timeoutMs: number): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CALLABLE_BIN, ...args], { cwd: REPO, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr: stderr || (error && !stderr ? error.message : '') });
    });
  });
}

async function must(args: string[], timeoutMs = 60_000): Promise<number> {
  const started = performance.now();
  const r = await callable(args, timeoutMs);
  if (r.code !== 0) throw new Error(`callable ${args[0]} ${args[1] ?? ''} exited ${r.code}: ${r.stderr.trim().split('\n')[0]}`);
  return performance.now() - started;
}

/** A function's folder as a user writes it; with `dependencies`, its package.json too. */
function writeFunction(dir: string, name: string, source: string, dependencies?: Record<string, string>): string {
  const at = join(dir, name);
  mkdirSync(at, { recursive: true });
  writeFileSync(join(at, 'function.json'), JSON.stringify({ name, description: `${name} (bench)`, inputSchema: { type: 'object', properties: {} } }));
  writeFileSync(join(at, 'index.js'), source);
  if (dependencies) writeFileSync(join(at, 'package.json'), JSON.stringify({ dependencies }));
  return at;
}

const fnName = (sdk: PinnedSdk): string => `sdk_${sdk.pkg.replace(/^@/, '').replace(/[^a-z0-9]+/g, '_')}`;

export interface SdkCalls {
  pkg: string;
  version: string;
  calls: CallOutcome[];
}

export type SdkResult =
  | { skipped: string }
  | {
      /** The `openai` function's calls (the headline figure), and the plain function's. */
      sdk: CallOutcome[];
      plain: CallOutcome[];
      /** Every SDK's calls, `openai` first. */
      each: SdkCalls[];
      addMs: number;
      added: string;
      /** A save of a new `openai` function in a running engine (as the studio saves), the same lock installed already. */
      saveWarmMs: number[];
      /** The same through `callable import` of its folder without a lock: CLI start-up and a check before the save included. */
      importWarmMs: number[];
      /** `callable import` of the `openai` function with its package-lock.json, an edit of its source. */
      saveLockedMs: number;
    };

export async function sdkComparison(root: string, cfg: { warmup: number; rounds: number; gapMs: number; maxMs: number }): Promise<SdkResult> {
  const dataDir = join(root, 'data-sdk');
  mkdirSync(dataDir, { recursive: true });
  mkdirSync(KEPT_PACKAGES, { recursive: true });
  // Removing the bench's folder removes the link, never the kept packages.
  symlinkSync(KEPT_PACKAGES, join(dataDir, 'packages'), 'dir');
  const src = join(root, 'sdk-src');
  const openaiFn = fnName(OPENAI);
  writeFunction(src, 'sdk_plain', PLAIN_SOURCE);
  writeFunction(src, openaiFn, PLAIN_SOURCE);
  await must(['import', src, '--data-dir', dataDir]);
  const started = performance.now();
  const added = await callable(['add', openaiFn, `${SDK_PACKAGE}@${OPENAI.version}`, '--data-dir', dataDir], 300_000);
  const addMs = performance.now() - started;
  if (added.code !== 0) return { skipped: `callable add ${openaiFn} ${SDK_PACKAGE}@${OPENAI.version} exited ${added.code}: ${added.stderr.trim().split('\n')[0] ?? ''}` };
  // The source that imports it, as a user edits it: export, change index.js, import with the lock.
  const edit = join(root, 'sdk-edit');
  await must(['export', edit, '--name', openaiFn, '--data-dir', dataDir]);
  writeFileSync(join(edit, openaiFn, 'index.js'), sdkSource(OPENAI));
  const saveLockedMs = await must(['import', join(edit, openaiFn), '--data-dir', dataDir], 120_000);
  // A new function asking for the same package: npm resolves it, and the install made for that lock is taken.
  const importWarmMs: number[] = [];
  for (let i = 1; i <= WARM_SAVES; i++) {
    importWarmMs.push(await must(['import', writeFunction(join(root, 'sdk-warm'), `${openaiFn}_import_${i}`, sdkSource(OPENAI), sdkDependencies(OPENAI)), '--data-dir', dataDir], 120_000));
  }
  const saveWarmMs: number[] = [];
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  try {
    for (let i = 1; i <= WARM_SAVES; i++) {
      const at = performance.now();
      await engine.saveFunction({ spec: { name: `${openaiFn}_save_${i}` }, source: sdkSource(OPENAI), packages: { dependencies: sdkDependencies(OPENAI) } });
      saveWarmMs.push(performance.now() - at);
    }
  } finally {
    engine.close();
  }
  // The other SDKs, three saves at a time: each mostly waits on the registry.
  const others = PINNED_SDKS.filter((s) => s !== OPENAI);
  for (let i = 0; i < others.length; i += 3) {
    await Promise.all(others.slice(i, i + 3).map((s) => must(['import', writeFunction(join(root, 'sdk-others'), fnName(s), sdkSource(s), sdkDependencies(s)), '--data-dir', dataDir], 300_000)));
  }

  const t = await startStdio({ ...productStdio(dataDir), key: 'product-sdk', label: 'callable mcp (sdk)' }, 60_000);
  try {
    const ok = (v: unknown): string | undefined => ((v as { ok?: unknown }).ok === true ? undefined : `wrong answer: ${JSON.stringify(v).slice(0, 200)}`);
    const sdks = [OPENAI, ...others];
    const callers = [() => checkedCall(t, 'sdk_plain', {}, ok), ...sdks.map((s) => () => checkedCall(t, fnName(s), {}, ok))];
    const until = performance.now() + cfg.maxMs;
    await alternate(callers, cfg.warmup, 0, until);
    const [plain, ...each] = await alternate(callers, cfg.rounds, cfg.gapMs, until);
    return {
      sdk: each[0]!,
      plain: plain!,
      each: sdks.map((s, i) => ({ pkg: s.pkg, version: s.version, calls: each[i]! })),
      addMs,
      added: added.stdout.trim().split('\n')[0] ?? '',
      saveWarmMs,
      importWarmMs,
      saveLockedMs,
    };
  } finally {
    await t.close();
  }
}

const okMs = (list: readonly CallOutcome[]): number[] => list.filter((o) => o.ok).map((o) => o.ms);

/** Each SDK's overhead over the plain function (p50 − p50, same run), as `sdk_call_overhead_ms.<package>` keys. */
export function sdkOverheads(result: SdkResult | undefined): Record<string, number | null> {
  if (!result || 'skipped' in result) return {};
  const plain = median(okMs(result.plain));
  const finite = (n: number): number | null => (Number.isFinite(n) ? Math.round(n * 1000) / 1000 : null);
  return {
    ...Object.fromEntries(result.each.map((s) => [`sdk_call_overhead_ms.${s.pkg}`, finite(median(okMs(s.calls)) - plain)])),
    sdk_import_warm_ms: finite(median(result.importWarmMs)),
    sdk_import_locked_ms: finite(result.saveLockedMs),
  };
}

/** The per-SDK lines of the report. */
export function sdkReport(result: SdkResult | undefined): string[] {
  if (!result || 'skipped' in result) return [];
  const plain = median(okMs(result.plain));
  const rows = result.each.map((s) => {
    const ms = okMs(s.calls);
    return [`${s.pkg}@${s.version}`, String(s.calls.length), String(s.calls.length - ms.length), fmt(median(ms), 3), fmt(median(ms) - plain, 3)];
  });
  return [
    `Per SDK: a function importing it and returning without a request, over the plain function (p50 ${fmt(plain, 3)} ms, ${okMs(result.plain).length} calls), one callable mcp, calls alternating`,
    table(['sdk_call_overhead_ms.<package>', 'calls', 'err', 'p50', 'over plain'], rows),
    `  (saves of a new ${SDK_PACKAGE} function, its lock installed already: in the engine ${result.saveWarmMs.map((ms) => fmt(ms, 0)).join(', ')} ms; callable import of its folder ${result.importWarmMs.map((ms) => fmt(ms, 0)).join(', ')} ms (sdk_import_warm_ms, CLI start-up included); callable import of the edited function with its package-lock.json ${fmt(result.saveLockedMs, 0)} ms (sdk_import_locked_ms))`,
    '',
  ];
}
