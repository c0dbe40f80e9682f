import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore, StudioError, type Engine } from '../../src-main/engine/index.ts';
import { BUSY_TIMEOUT_MS, DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { CALLABLE_COMMAND, REPO } from '../support/callable.ts';
import { holdWriteLock as holdLock } from '../support/fsFaults.ts';
import { scratch } from '../support/scratch.ts';

// Real processes on a real SQLite file: another process holding the write lock makes a write wait
// (every write transaction begins IMMEDIATE, under the busy timeout), and a lock held past the busy
// timeout is one clear line, never a raw SQLITE_BUSY / "database is locked".

const EXAMPLE = join(REPO, 'resources/examples/word_stats');
const HOLD_MS = 1500;
const RAW_BUSY = /SQLITE_BUSY|database is locked|SqliteError|\n\s+at /;

const made = scratch();

function openEngine(dataDir: string): Engine {
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  made.engine(engine);
  return engine;
}

/** Another process holding the write lock of `dataDir`'s database (fsFaults holdWriteLock). */
function holdWriteLock(dataDir: string, holdMs: number): ReturnType<typeof holdLock> {
  return holdLock(join(dataDir, DATABASE_FILE), holdMs, REPO);
}

function callable(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string; exitedAt: number }> {
  const child = spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CALLABLE_SECRETS: 'env' } });
  made.child(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr, exitedAt: Date.now() })));
}

/** A data folder with its database created and migrated. */
function dataFolder(): string {
  const dir = made.dir('callable-locks-');
  openEngine(dir);
  return dir;
}

describe('another process holding the write lock', () => {
  it(`callable import waits for a lock held ${HOLD_MS} ms and succeeds`, async () => {
    const dataDir = dataFolder();
    const holder = await holdWriteLock(dataDir, HOLD_MS);
    const result = await callable(['import', EXAMPLE, '--data-dir', dataDir]);
    expect(result.stderr).not.toMatch(RAW_BUSY);
    expect(result).toMatchObject({ code: 0, stdout: expect.stringMatching(/imported word_stats \(revision 1\)/) });
    // It could not have written while the lock was held.
    expect(result.exitedAt).toBeGreaterThanOrEqual(await holder.released);
  });

  it('an in-process save, profile set and credential metadata set each wait for the lock and succeed', async () => {
    const dataDir = dataFolder();
    const engine = openEngine(dataDir);
    const credential = { name: 'vendor', hosts: ['api.example.com'], placement: { kind: 'header', header: 'X-Key', template: '{secret}' } };
    await engine.credentials.set(credential, 'secret-1');
    await engine.saveFunction({ spec: { name: 'locked_save' }, source: 'export default () => 1;' });

    const writes: Array<[string, () => Promise<unknown>]> = [
      ['save', () => engine.saveFunction({ spec: { name: 'locked_save' }, source: 'export default () => 2;' })],
      ['profile set', async () => engine.profiles.set({ name: 'locked_profile', functions: ['locked_save'], metaTools: false })],
      ['credential metadata set', () => engine.credentials.set({ ...credential, hosts: ['api2.example.com'] }, undefined)],
    ];
    for (const [, write] of writes) {
      const holder = await holdWriteLock(dataDir, HOLD_MS);
      const started = Date.now();
      await write();
      const finished = Date.now();
      expect(finished).toBeGreaterThanOrEqual(await holder.released);
      expect(finished - started).toBeGreaterThan(HOLD_MS / 2);
    }
    expect(engine.functions.get('locked_save').revision).toBe(2);
    expect(engine.profiles.get('locked_profile').functions).toEqual(['locked_save']);
    expect(engine.credentials.find('vendor')?.hosts).toEqual(['api2.example.com']);
  });

  it('a lock held past the busy timeout is one clear line, from the CLI and from the engine', async () => {
    const dataDir = dataFolder();
    const engine = openEngine(dataDir);
    const holder = await holdWriteLock(dataDir, 60_000);
    try {
      const importing = callable(['import', EXAMPLE, '--data-dir', dataDir]);

      const started = Date.now();
      let error: unknown;
      try {
        engine.profiles.set({ name: 'never', functions: [], metaTools: false });
      } catch (e) {
        error = e;
      }
      expect(Date.now() - started).toBeGreaterThanOrEqual(BUSY_TIMEOUT_MS - 100);
      expect(error).toBeInstanceOf(StudioError);
      expect((error as StudioError).code).toBe('database_busy');
      expect((error as StudioError).message).toMatch(/^the database \S+callable\.db is busy: another Callable Studio process is writing .*; try again$/);

      const result = await importing;
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).not.toMatch(RAW_BUSY);
      expect(result.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(/^callable import: the database \S+callable\.db is busy: another Callable Studio process is writing .*; try again$/),
      ]);
    } finally {
      holder.release();
      await holder.released;
    }
    expect(engine.profiles.find('never')).toBeUndefined();
  }, 60_000);
});

/** A writer process: `count` saves through the engine (each a read, then writes, in one transaction). */
const WRITER = `
const { createEngine, MemorySecretStore } = await import(process.env.ENGINE_URL);
const engine = createEngine({ dataDir: process.env.DATA_DIR, secrets: new MemorySecretStore() });
const count = Number(process.env.COUNT);
const tag = process.env.TAG;
for (let i = 0; i < count; i++) {
  // Both writers update the same function and each their own, so they contend on the same rows.
  await engine.saveFunction({ spec: { name: 'shared' }, source: 'export default () => "' + tag + i + '";' });
  engine.profiles.set({ name: 'p_' + tag, functions: ['shared'], metaTools: i % 2 === 0 });
}
engine.close();
process.stdout.write('done ' + count + '\\n');
`;

describe('two writer processes', () => {
  it('2 × 300 saves and profile sets, with no BUSY', async () => {
    const dataDir = dataFolder();
    const COUNT = 300;
    const writer = (tag: string): Promise<{ code: number | null; stdout: string; stderr: string }> => {
      const child = spawn(process.execPath, ['--no-node-snapshot', '--input-type=module', '-e', WRITER], {
        cwd: REPO,
        env: { ...process.env, ENGINE_URL: pathToFileURL(join(REPO, 'src-main/engine/index.ts')).href, DATA_DIR: dataDir, COUNT: String(COUNT), TAG: tag },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      made.child(child);
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
    };
    const results = await Promise.all([writer('a'), writer('b')]);
    for (const r of results) {
      expect(r.stderr).not.toMatch(RAW_BUSY);
      expect(r).toMatchObject({ code: 0, stdout: `done ${COUNT}\n` });
    }
    const engine = openEngine(dataDir);
    // Every save changed the source, so each is one revision.
    expect(engine.functions.get('shared').revision).toBe(2 * COUNT);
    expect(engine.functions.revisions('shared')).toHaveLength(2 * COUNT);
  }, 120_000);
});
