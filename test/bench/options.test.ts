// `npm run bench`'s options as the README documents them: --only limits a run to named sections
// (with --quick and --json FILE, the figures of those sections only). No timing is asserted: the
// bench reports, it does not judge the machine.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/tmp.ts';

const RUN = join(import.meta.dirname, 'run.ts');

function bench(args: string[], timeoutMs: number): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--no-node-snapshot', RUN, ...args], { timeout: timeoutMs }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

describe('npm run bench options', () => {
  it('refuses an unknown section in one line naming the sections, exit 2, and --help lists them', async () => {
    const bad = await bench(['--only', 'fetch,nosuch'], 20_000);
    expect([bad.code, bad.stdout, bad.stderr]).toEqual([
      2,
      '',
      'bench: --only has no section "nosuch": give some of startup, calls, memory, bombs, workerd, fetch, catalog, platform, sdk, comma-separated\n',
    ]);
    const help = await bench(['--help'], 20_000);
    expect(help.code).toBe(0);
    for (const section of ['startup', 'calls', 'memory', 'bombs', 'workerd', 'fetch', 'catalog', 'platform', 'sdk']) expect(help.stdout).toMatch(new RegExp(`^  ${section} +\\S`, 'm'));
  });

  it('--quick --only platform --json FILE measures that section alone and writes only its figures', async () => {
    const file = join(tempDir(), 'figures.json');
    const run = await bench(['--quick', '--only', 'platform', '--json', file], 60_000);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('QUICK run (fewer iterations) of platform only');
    expect(run.stdout).not.toContain('stdio_sparse_p50_vs_ideal');
    const figures = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    expect(Object.keys(figures)).toEqual(['fresh_context_base_runtime_ms', 'fresh_context_web_platform_ms']);
    for (const value of Object.values(figures)) expect(value).toBeGreaterThan(0);
  }, 90_000);
});
