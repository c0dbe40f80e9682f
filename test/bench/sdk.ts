// What importing a vendor SDK costs a call: a function that imports `openai` and returns without a
// request, beside a plain function returning the same, both served by one `callable mcp`. The
// package is added as a user adds it (`callable add`, through the registry npm is configured with);
// when that fails (no registry), the figure is skipped with the reason.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { alternate, CALLABLE_BIN, checkedCall, NO_SNAPSHOT, productStdio, REPO, startStdio, type CallOutcome } from './targets.ts';

export const SDK_PACKAGE = 'openai';
const SDK_SOURCE = `import OpenAI from '${SDK_PACKAGE}';\nexport default () => ({ ok: typeof OpenAI === 'function' });\n`;
const PLAIN_SOURCE = "export default () => ({ ok: typeof Object === 'function' });\n";

/** Runs `callable ARGS` as a user would; resolves with its exit code and output. */
function callable(args: string[], timeoutMs: number): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [NO_SNAPSHOT, CALLABLE_BIN, ...args], { cwd: REPO, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr: stderr || (error && !stderr ? error.message : '') });
    });
  });
}

async function must(args: string[], timeoutMs = 60_000): Promise<void> {
  const r = await callable(args, timeoutMs);
  if (r.code !== 0) throw new Error(`callable ${args[0]} exited ${r.code}: ${r.stderr.trim().split('\n')[0]}`);
}

export type SdkResult = { skipped: string } | { sdk: CallOutcome[]; plain: CallOutcome[]; addMs: number; added: string };

export async function sdkComparison(root: string, cfg: { warmup: number; rounds: number; gapMs: number; maxMs: number }): Promise<SdkResult> {
  const dataDir = join(root, 'data-sdk');
  const src = join(root, 'sdk-src');
  for (const [name, source] of [
    ['sdk_plain', PLAIN_SOURCE],
    ['sdk_openai', PLAIN_SOURCE],
  ] as const) {
    mkdirSync(join(src, name), { recursive: true });
    writeFileSync(join(src, name, 'function.json'), JSON.stringify({ name, description: `${name} (bench)`, inputSchema: { type: 'object', properties: {} } }));
    writeFileSync(join(src, name, 'index.js'), source);
  }
  await must(['import', src, '--data-dir', dataDir]);
  const started = performance.now();
  const added = await callable(['add', 'sdk_openai', SDK_PACKAGE, '--data-dir', dataDir], 300_000);
  const addMs = performance.now() - started;
  if (added.code !== 0) return { skipped: `callable add sdk_openai ${SDK_PACKAGE} exited ${added.code}: ${added.stderr.trim().split('\n')[0] ?? ''}` };
  // The source that imports it, as a user edits it: export, change index.js, import.
  const edit = join(root, 'sdk-edit');
  await must(['export', edit, '--name', 'sdk_openai', '--data-dir', dataDir]);
  writeFileSync(join(edit, 'sdk_openai', 'index.js'), SDK_SOURCE);
  await must(['import', join(edit, 'sdk_openai'), '--data-dir', dataDir], 120_000);

  const t = await startStdio({ ...productStdio(dataDir), key: 'product-sdk', label: 'callable mcp (sdk)' }, 60_000);
  try {
    const ok = (v: unknown): string | undefined => ((v as { ok?: unknown }).ok === true ? undefined : `wrong answer: ${JSON.stringify(v).slice(0, 200)}`);
    const callers = [() => checkedCall(t, 'sdk_openai', {}, ok), () => checkedCall(t, 'sdk_plain', {}, ok)];
    const until = performance.now() + cfg.maxMs;
    await alternate(callers, cfg.warmup, 0, until);
    const [sdk, plain] = await alternate(callers, cfg.rounds, cfg.gapMs, until);
    return { sdk: sdk!, plain: plain!, addMs, added: added.stdout.trim().split('\n')[0] ?? '' };
  } finally {
    await t.close();
  }
}
