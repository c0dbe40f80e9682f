import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { CHECKPOINT_IDLE_MS, CHECKPOINT_RETRY_MS, DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { REPO } from '../support/callable.ts';
import { scratch } from '../support/scratch.ts';

// Real processes on a real SQLite file: while another process holds a read snapshot the WAL cannot
// be checkpointed and grows; once it lets go, the engine empties the WAL on its own (idle checkpoint,
// TRUNCATE) and the -wal file does not stay at its peak.

const made = scratch();

/** Another process, with better-sqlite3 only, holds a read transaction until told on stdin; it stays open after. */
const READER = `
const Database = require('better-sqlite3');
const db = new Database(process.env.WAL_DB);
db.exec('BEGIN');
db.prepare('SELECT COUNT(*) FROM runs').get();
process.stdout.write('reading\\n');
process.stdin.on('data', () => { if (db.inTransaction) db.exec('COMMIT'); process.stdout.write('let go\\n'); });
setInterval(() => {}, 1000);
`;

function startReader(file: string): { ready: Promise<void>; letGo: () => Promise<void> } {
  const child = spawn(process.execPath, ['-e', READER], { cwd: REPO, env: { ...process.env, WAL_DB: file }, stdio: ['pipe', 'pipe', 'pipe'] });
  made.child(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const waitFor = (text: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (out.includes(text)) resolve();
      };
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        check();
      });
      check();
      child.on('exit', (code) => reject(new Error(`the reader exited (${code}) before "${text}":\n${out}${err}`)));
    });
  return {
    ready: waitFor('reading'),
    letGo: () => {
      const done = waitFor('let go');
      child.stdin!.write('go\n');
      return done;
    },
  };
}

const walSize = (file: string): number => (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('WAL growth', () => {
  it('the -wal file grown behind a reader is emptied once the reader lets go', async () => {
    const dataDir = made.dir('callable-wal-');
    const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
    made.engine(engine);
    const file = join(dataDir, DATABASE_FILE);

    const reader = startReader(file);
    await reader.ready;
    // About 6 MB of run records (60 KB of arguments each), in batches, while the reader holds its snapshot.
    const blob = 'x'.repeat(60 * 1024);
    for (let batch = 0; batch < 10; batch++) {
      for (let i = 0; i < 10; i++) {
        engine.runs.record({ id: `run-${batch}-${i}`, functionName: 'f', caller: 'cli', args: { blob }, startedAt: new Date().toISOString(), durationMs: 1, ok: true, bytesOut: 0 });
      }
      engine.runs.flush();
    }
    const peak = walSize(file);
    expect(peak).toBeGreaterThan(5 * 1024 * 1024);

    // While the reader holds its snapshot the idle checkpoint cannot finish; it must not fail or block.
    await sleep(CHECKPOINT_IDLE_MS + 200);
    expect(walSize(file)).toBeGreaterThan(5 * 1024 * 1024);

    await reader.letGo();
    const deadline = Date.now() + CHECKPOINT_IDLE_MS + 2 * CHECKPOINT_RETRY_MS + 3000;
    while (walSize(file) >= 64 * 1024 && Date.now() < deadline) await sleep(100);
    expect(walSize(file)).toBeLessThan(64 * 1024);
    // Nothing was lost: every run is in the ledger.
    expect(engine.runs.list({ limit: 1000 })).toHaveLength(100);
  }, 30_000);
});
