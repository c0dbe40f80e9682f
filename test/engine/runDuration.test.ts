import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

/** The figure of `ok in N ms` / `failed in N ms` that `callable run` prints. */
function printed(stderr: string): number {
  const match = /(?:ok|failed) in ([\d.]+) ms/.exec(stderr);
  expect(match, stderr).not.toBeNull();
  return Number(match![1]);
}

describe("a run's duration", () => {
  it('is the same number in what `callable run` prints and in `callable runs`, for a run that passes and one with bad arguments', async () => {
    const data = tempDir();
    expect((await cli(['import', join(REPO, 'resources/examples/word_stats'), '--data-dir', data])).code).toBe(0);
    const ok = await cli(['run', 'word_stats', '--args', '{"text":"one two"}', '--data-dir', data]);
    expect(ok.code).toBe(0);
    const bad = await cli(['run', 'word_stats', '--args', '{"txt":1}', '--data-dir', data]);
    expect(bad.code).toBe(2);

    const figures = [printed(ok.stderr), printed(bad.stderr)];
    // A bad-argument run took time too (loading the function, checking the arguments): it is not "0 ms".
    expect(figures[1]).toBeGreaterThan(0);
    const runs = await cli(['runs', '--json', '--data-dir', data]);
    const recorded = (JSON.parse(runs.stdout) as Array<{ durationMs: number; ok: boolean }>).reverse();
    expect(recorded.map((r) => r.durationMs)).toEqual(figures);
    const listed = await cli(['runs', '--data-dir', data]);
    for (const figure of figures) expect(listed.stdout).toContain(`  ${figure} ms  cli`);
  });
});
