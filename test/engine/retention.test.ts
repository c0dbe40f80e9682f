import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore, type Engine, type RunRecord } from '../../src-main/engine/index.ts';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { pruneRunBodies, readKeepSettings, SUMMARY_OVER_BYTES, summariseBody, Upkeep, writeKeepSettings } from '../../src-main/engine/store/retention.ts';
import { REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { scratch } from '../support/scratch.ts';

// A real database and real runs through the sandbox: run bodies (arguments) are kept whole while they
// are recent and within the size bound, and summarised past it, while every run keeps its row.

const made = scratch();
const MIB = 1024 * 1024;
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const fileSize = (file: string): number => (existsSync(file) ? statSync(file).size : 0);

async function engineWithFunction(settings: Parameters<typeof writeKeepSettings>[1]): Promise<Engine> {
  const dataDir = made.dir('callable-retention-');
  const engine = made.engine(createEngine({ dataDir, secrets: new MemorySecretStore() }));
  writeKeepSettings(engine.database, { backupEveryDays: 0, ...settings });
  await engine.saveFunction({ spec: { name: 'take', inputSchema: { type: 'object' } }, source: 'export default (a) => String(a.text).length' });
  return engine;
}

/** `count` calls of `take` with `bytes`-long text, `inParallel` at a time; calls `each` after every group. */
async function calls(engine: Engine, count: number, bytes: number, inParallel = 10, each?: () => void): Promise<void> {
  for (let i = 0; i < count; i += inParallel) {
    const group = Array.from({ length: Math.min(inParallel, count - i) }, (_, j) => engine.run('take', { text: `${i + j}:`.padEnd(bytes, 'x') }, { caller: 'test' }));
    for (const result of await Promise.all(group)) expect(result.ok).toBe(true);
    each?.();
  }
  engine.runs.flush();
}

const isSummary = (args: unknown): args is { summarised: true; bytes: number; sha256: string; head: string } =>
  typeof args === 'object' && args !== null && (args as { summarised?: unknown }).summarised === true;

describe('run retention', () => {
  it('1,000 calls with 60 KB arguments stay under the bound: the old bodies are summarised, every run is still listed', async () => {
    const engine = await engineWithFunction({ runsMib: 4 });
    const dbFile = join(engine.dataDir, DATABASE_FILE);
    let peak = 0;
    await calls(engine, 1000, 60_000, 10, () => (peak = Math.max(peak, fileSize(dbFile))));
    // What is left after the last call is summarised by the next pass, as the engine's own would.
    await pruneRunBodies(engine.database);

    const runs: RunRecord[] = engine.runs.list({ limit: 1000 });
    expect(runs).toHaveLength(1000);
    const whole = runs.filter((r) => !isSummary(r.args));
    const summarised = runs.filter((r) => isSummary(r.args));
    const bodyBytes = JSON.stringify({ text: '0:'.padEnd(60_000, 'x') }).length;
    expect(whole).toHaveLength(Math.floor((4 * MIB) / bodyBytes));
    expect(summarised).toHaveLength(1000 - whole.length);
    // The whole ones are the newest.
    const oldestWhole = whole.map((r) => r.startedAt).sort()[0]!;
    expect(summarised.every((r) => r.startedAt <= oldestWhole)).toBe(true);
    // A summary: the size, the SHA-256 and the beginning of what was recorded; the row itself intact.
    const sample = summarised.at(-1)!;
    const n = /^\{"text":"(\d+):/.exec((sample.args as { head: string }).head)![1]!;
    const original = JSON.stringify({ text: `${n}:`.padEnd(60_000, 'x') });
    expect(sample.args).toEqual({ summarised: true, bytes: original.length, sha256: sha256(original), head: original.slice(0, 256) });
    expect(sample).toMatchObject({ functionName: 'take', caller: 'test', ok: true });
    expect(sample.durationMs).toBeGreaterThan(0);

    // Every body whole would be 59 MiB. The file stays within a few MiB of the bound all along (the
    // passes run between calls, so a burst gets ahead of them a little), pages freed by summaries reused.
    console.log(`retention: 1000 x 60 KB, bound 4 MiB: database peak ${(peak / MIB).toFixed(1)} MiB, final ${(fileSize(dbFile) / MIB).toFixed(1)} MiB, -wal ${(fileSize(`${dbFile}-wal`) / MIB).toFixed(1)} MiB`);
    expect(peak).toBeLessThan(20 * MIB);
    expect(fileSize(dbFile)).toBeLessThan(20 * MIB);

    const listed = await cli(['runs', '--limit', '1000', '--data-dir', engine.dataDir]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.trim().split('\n')).toHaveLength(1000);
    expect(listed.stdout.trim().split('\n').every((line) => / take {2}ok {2}[\d.]+ ms {2}test$/.test(line))).toBe(true);
  });

  it('summarises bodies older than the age limit, leaves small ones, and never deletes a run', async () => {
    const engine = await engineWithFunction({});
    await calls(engine, 5, 2000, 5);
    expect((await engine.run('take', { text: 'small' }, { caller: 'test' })).ok).toBe(true);
    engine.runs.flush();
    expect(readKeepSettings(engine.database)).toMatchObject({ runsDays: 30, runsMib: 200 });

    expect((await pruneRunBodies(engine.database)).summarised).toBe(0);
    const later = await pruneRunBodies(engine.database, { now: Date.now() + 31 * 86_400_000 });
    expect(later.summarised).toBe(5);
    const runs = engine.runs.list();
    expect(runs).toHaveLength(6);
    expect(runs.filter((r) => isSummary(r.args))).toHaveLength(5);
    expect(runs.find((r) => !isSummary(r.args))?.args).toEqual({ text: 'small' });
    // A second pass finds nothing left to do.
    expect((await pruneRunBodies(engine.database, { now: Date.now() + 32 * 86_400_000 })).summarised).toBe(0);
  });

  it('a summary stays small whatever the body holds', () => {
    for (const body of ['x'.repeat(100_000), '\u0001'.repeat(5000), JSON.stringify({ text: '"\\'.repeat(3000) })]) {
      const summary = summariseBody(body);
      expect(Buffer.byteLength(summary)).toBeLessThan(SUMMARY_OVER_BYTES);
      expect(JSON.parse(summary)).toMatchObject({ summarised: true, bytes: Buffer.byteLength(body), sha256: sha256(body) });
    }
  });

  it('calls go on while a pass works through a backlog', async () => {
    const engine = await engineWithFunction({ runsMib: 1000 });
    await calls(engine, 400, 60_000, 20);
    // The engine's own check after the last call finds nothing to do under 1000 MiB; then the bound drops.
    await new Promise((r) => setTimeout(r, 500));
    writeKeepSettings(engine.database, { runsMib: 1 });
    let pruneDone = false;
    const pass = pruneRunBodies(engine.database).then((result) => {
      pruneDone = true;
      return result;
    });
    const call = await engine.run('take', { text: 'meanwhile' }, { caller: 'test' });
    expect(call.ok).toBe(true);
    expect(pruneDone, 'the call had to wait for the whole pass').toBe(false);
    await pass;
    // The engine's own upkeep may take part of the backlog meanwhile: what counts is where the history ends.
    const bodies = engine.runs.list({ limit: 1000 }).filter((r) => r.functionName === 'take' && (r.args as { text?: string }).text !== 'meanwhile');
    expect(bodies.filter((r) => isSummary(r.args))).toHaveLength(400 - Math.floor(MIB / 60_011));
  });

  it('a pass does not wait behind another process holding the write lock: it says busy and the next pass finishes', async () => {
    const engine = await engineWithFunction({ runsMib: 1000 });
    await calls(engine, 40, 60_000, 20);
    await new Promise((r) => setTimeout(r, 500));
    writeKeepSettings(engine.database, { runsMib: 1 });
    const holder = made.child(
      spawn(
        process.execPath,
        ['-e', `const db = new (require('better-sqlite3'))(process.env.DB); db.exec('BEGIN IMMEDIATE'); db.prepare("INSERT OR REPLACE INTO settings VALUES ('lock_test', '1')").run(); process.stdout.write('locked\\n'); process.stdin.on('data', () => { db.exec('COMMIT'); db.close(); process.exit(0); });`],
        { cwd: REPO, env: { ...process.env, DB: join(engine.dataDir, DATABASE_FILE) }, stdio: ['pipe', 'pipe', 'inherit'] },
      ),
    );
    await new Promise<void>((resolve) => holder.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve()));
    await expect(pruneRunBodies(engine.database)).rejects.toMatchObject({ code: 'database_busy' });
    expect(engine.runs.list({ limit: 40 }).filter((r) => isSummary(r.args))).toHaveLength(0);
    const exited = new Promise((resolve) => holder.once('exit', resolve));
    holder.stdin!.write('go\n');
    await exited;
    expect((await pruneRunBodies(engine.database)).summarised).toBe(40 - Math.floor(MIB / 60_011));
  });
});

describe('the periodic check', () => {
  it('prunes what other processes wrote, without a run in this one', async () => {
    const writer = await engineWithFunction({ runsMib: 1000 });
    await calls(writer, 30, 60_000, 10);
    // The writer's own check after its last call finds nothing to do under 1000 MiB; then the bound drops.
    await new Promise((r) => setTimeout(r, 500));
    writeKeepSettings(writer.database, { runsMib: 1 });
    expect(writer.runs.list({ limit: 30 }).filter((r) => isSummary(r.args))).toHaveLength(0);
    // Another engine on the folder that runs nothing: only its periodic check can prune (every hour; here every 100 ms).
    const reader = made.engine(createEngine({ dataDir: writer.dataDir, secrets: new MemorySecretStore() }));
    const upkeep = new Upkeep(reader.database, join(writer.dataDir, DATABASE_FILE), { checkMs: 100 });
    try {
      for (const end = Date.now() + 10_000; reader.runs.list({ limit: 30 }).filter((r) => isSummary(r.args)).length < 30 - Math.floor(MIB / 60_011); ) {
        if (Date.now() > end) throw new Error('the periodic check did not prune');
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      upkeep.stop();
    }
  });
});

describe('callable retention', () => {
  it('shows and changes the limits, and refuses a value out of range', async () => {
    const engine = await engineWithFunction({});
    const dataDir = engine.dataDir;
    engine.close();
    const shown = await cli(['retention', '--data-dir', dataDir]);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(shown.stdout).toContain('run bodies are kept whole for 30 day(s), at most the newest 200 MiB of them');
    const set = await cli(['retention', '--days', '7', '--max-mib', '50', '--data-dir', dataDir]);
    expect(set.stdout).toContain('kept whole for 7 day(s), at most the newest 50 MiB');
    for (const bad of [['--days', '0'], ['--max-mib', 'lots'], ['--days', '1.5']]) {
      const run = await cli(['retention', ...bad, '--data-dir', dataDir]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(new RegExp(`^callable retention: ${bad[0]} must be a whole number from 1 to \\d+, not "${bad[1]}"\\nUsage: callable retention`));
    }
    expect((await cli(['retention', '--data-dir', dataDir])).stdout).toContain('7 day(s), at most the newest 50 MiB');
  });
});
