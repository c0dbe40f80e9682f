import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/tmp.ts';

/**
 * `npm run wpt` (scripts/wpt.ts) on a tiny WPT-shaped folder of our own (test/fixtures/wpt-mini:
 * a stand-in testharness.js and a few tests), run in the real sandbox hosts: what it counts,
 * what it times out, and what it lists as not run.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const MINI = join(ROOT, 'test', 'fixtures', 'wpt-mini');

/** The runner as `node scripts/wpt.ts ARGS`, or as the README writes it, `npm run wpt -- ARGS`. */
function wpt(args: string[], env: NodeJS.ProcessEnv = process.env, via: 'node' | 'npm' = 'node'): { code: number | null; stdout: string; stderr: string } {
  const command = via === 'npm' ? ['npm', ['run', '--silent', 'wpt', '--', ...args]] as const : [process.execPath, ['--no-node-snapshot', join(ROOT, 'scripts', 'wpt.ts'), ...args]] as const;
  const run = spawnSync(command[0], [...command[1]], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

interface Report {
  rows: Array<{ dir: string; files: number; passed: number; total: number }>;
  files: Array<{ file: string; variant: string; harness: string; harnessMessage: string | null; subtests: Array<{ name: string; status: string }> }>;
  excluded: Array<{ file: string; reason: string }>;
}

describe('npm run wpt', () => {
  it('runs each .any.js file in the sandbox and counts every subtest: passes, failures, timeouts, a top-level throw, a hung file and fetches from the served folder', () => {
    const json = join(tempDir(), 'wpt.json');
    // The checkout root is found by walking up from the directory to resources/testharness.js.
    const run = wpt([join(MINI, 'mini'), '--timeout', '3000', '--json', json]);
    expect(run.stderr).not.toContain('the runner failed');
    expect(run.code).toBe(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as Report;
    const byFile = Object.fromEntries(report.files.map((f) => [f.file + f.variant, f]));
    expect(Object.keys(byFile).sort()).toEqual(['mini/fetches.any.js', 'mini/hangs.any.js', 'mini/pass-fail.any.js', 'mini/slow.any.js', 'mini/throws.any.js', 'mini/variants.any.js?first', 'mini/variants.any.js?second']);

    // META: script= includes share the test's scope; the scope looks like a worker at the test's URL.
    expect(byFile['mini/pass-fail.any.js']!.subtests).toEqual([
      { name: 'the included helper is in scope', status: 'PASS', message: null },
      { name: 'the scope looks like a worker', status: 'PASS', message: null },
      { name: 'a failing subtest', status: 'FAIL', message: expect.stringContaining('expected 3 but got 2') },
      { name: 'location is the test file under the WPT root', status: 'PASS', message: null },
    ]);
    // A subtest that never settles is timed out by the per-file budget; the finished one still counts.
    expect(byFile['mini/slow.any.js']!.subtests.map((s) => s.status)).toEqual(['PASS', 'TIMEOUT']);
    expect(byFile['mini/throws.any.js']).toMatchObject({ harness: 'ERROR', harnessMessage: 'uncaught at the top level: Error: broken on purpose', subtests: [{ status: 'PASS' }] });
    expect(byFile['mini/variants.any.js?second']!.subtests).toEqual([{ name: 'runs as ?second', status: 'PASS', message: null }]);
    // A file that never yields is stopped at its deadline and counts as one failed subtest.
    expect(byFile['mini/hangs.any.js']).toMatchObject({ harness: 'RUN_FAILED', harnessMessage: expect.stringContaining('timeout'), subtests: [] });

    // The WPT folder is served on 127.0.0.1: relative fetches work, Python handlers answer 501 and are listed.
    expect(byFile['mini/fetches.any.js']!.subtests).toEqual([
      { name: 'fetches a file of the checkout by a URL relative to the test', status: 'PASS', message: null },
      { name: 'asks for a Python handler', status: 'FAIL', message: expect.stringContaining('expected 200 but got 501') },
    ]);
    expect(run.stdout).toContain('  mini/fetches.any.js: /mini/resources/handler.py');

    // 6 files (one runs as two variants): 1 + 3 + 1 + 1 + 1 + 1 passed; 2 + 4 + 2 + 1 + 1 + 1 subtests and the hung file.
    expect(report.rows).toEqual([{ dir: 'mini', files: 6, passed: 8, total: 12 }]);
    expect(run.stdout).toMatch(/^mini\s+6\s+8\/12\s+66\.7%$/m);
    expect(run.stdout).toMatch(/^total\s+6\s+8\/12\s+66\.7%$/m);
    expect(run.stdout).toContain('mini/throws.any.js: ERROR (uncaught at the top level: Error: broken on purpose)');
    expect(run.stdout).toContain('mini/hangs.any.js: RUN_FAILED');

    // Browser-only files are not run, and each is listed with its reason.
    expect(report.excluded.sort((a, b) => a.file.localeCompare(b.file))).toEqual([
      { file: 'mini/dom.window.js', dir: 'mini', reason: 'a .window.js test: runs only in a browser window' },
      { file: 'mini/page.html', dir: 'mini', reason: 'an HTML page: runs only in a browser window' },
      { file: 'mini/window-only.any.js', dir: 'mini', reason: 'global=window: no worker or shell scope (browser only)' },
    ]);
    expect(run.stdout).toContain('Not run (3 files):');
    expect(run.stdout).toContain('global=window: no worker or shell scope (browser only) (1): mini/window-only.any.js');
  });

  it('takes the checkout from WPT_ROOT, a directory relative to it, and only the files --filter names (one file, two variants), one at a time with --jobs 1', () => {
    const run = wpt(['mini', '--filter', 'variants', '--jobs', '1'], { ...process.env, WPT_ROOT: MINI }, 'npm');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^mini\s+1\s+2\/2\s+100\.0%$/m);
    expect(run.stderr).not.toContain('pass-fail');
  });

  it('refuses bad arguments with one line and exit code 2', () => {
    const noRoot = wpt([tempDir()], { ...process.env, WPT_ROOT: '' });
    expect(noRoot.code).toBe(2);
    expect(noRoot.stderr.trim()).toMatch(/^npm run wpt: no resources\/testharness\.js above .*; give the WPT checkout with --wpt-root or WPT_ROOT$/);
    const missing = wpt(['--wpt-root', MINI, 'nowhere']);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim()).toBe(`npm run wpt: nowhere is not in the WPT checkout ${MINI}`);
    const badOption = wpt(['--wpt-root', MINI, 'mini', '--timeout', 'soon']);
    expect(badOption.code).toBe(2);
    expect(badOption.stderr.trim()).toBe('npm run wpt: --timeout must be a positive whole number, not "soon"');
  });
});
