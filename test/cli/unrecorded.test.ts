import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createEngine } from '../../src-main/engine/index.ts';
import { REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

describe('a run the database refuses to record', () => {
  it('is reported as not recorded, kept pending, and never crashes the process', async () => {
    const data = tempDir();
    expect((await cli(['import', join(REPO, 'resources/examples/word_stats'), '--data-dir', data])).code).toBe(0);
    const diagnostics: string[] = [];
    const engine = createEngine({ dataDir: data, diagnostic: (m) => diagnostics.push(m) });
    // Reported beside a failed assertion, never instead of it (closing flushes, which throws while the database refuses writes).
    onTestFinished(() => engine.close());
    // The database turns read-only after it was opened (a remount, a disk that filled up).
    engine.database.pragma('query_only = ON');
    const result = await engine.run('word_stats', { text: 'a b' }, { caller: 'cli' });
    expect(result.ok).toBe(true);
    expect(() => engine.runs.flush()).toThrow(/1 run\(s\) \(word_stats\) could not be recorded in .*callable\.db: attempt to write a readonly database/);
    expect(engine.runs.unwritten).toBe(1);
    expect(engine.runs.list()).toEqual([]);

    // The background writer reports instead of throwing out of a timer.
    await engine.run('word_stats', { text: 'c' }, { caller: 'cli' });
    await new Promise((r) => setImmediate(r));
    expect(diagnostics.join('\n')).toContain('2 run(s) (word_stats) could not be recorded');

    engine.database.pragma('query_only = OFF');
    engine.runs.flush();
    expect(engine.runs.list()).toHaveLength(2);
  });
});
