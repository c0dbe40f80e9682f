import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GROUP_COMMIT_MS, RunLedger } from '../../src-main/engine/audit/ledger.ts';
import type { RunRecord } from '../../src-main/engine/model/index.ts';
import { DATABASE_FILE, openDatabase } from '../../src-main/engine/store/database.ts';
import { scratch } from '../support/scratch.ts';

// Group commit on a real SQLite file, read by a second connection as another process would: an idle
// ledger writes a run right after the turn; a run recorded right after a write waits for the window
// (one commit for a burst), then lands on its own; closing inside the window loses nothing.

const made = scratch();

const run = (id: string): RunRecord => ({ id, functionName: 'echo', caller: 'mcp', args: { n: 1 }, startedAt: new Date().toISOString(), durationMs: 1, ok: true, bytesOut: 10 });
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function setup(): { ledger: RunLedger; close: () => void; seen: () => string[] } {
  const dataDir = made.dir('callable-group-commit-');
  const db = openDatabase(dataDir, { create: true });
  const ledger = new RunLedger(db);
  const reader = new Database(join(dataDir, DATABASE_FILE), { readonly: true });
  return {
    ledger,
    seen: () => (reader.prepare('SELECT id FROM runs ORDER BY id').all() as Array<{ id: string }>).map((r) => r.id),
    close: () => {
      reader.close();
      ledger.stop();
      db.close();
    },
  };
}

/**
 * Runs `attempt` on a fresh ledger until it looked inside the group-commit window: on a loaded machine
 * the window (opened by a write after `opened`) can end before the test looks, and then the window's
 * own timer has written, which proves nothing either way. The last attempt is asserted whatever it saw.
 */
async function insideTheWindow(attempt: (ledger: RunLedger, seen: () => string[]) => Promise<() => Promise<void>>): Promise<void> {
  for (let tries = 1; ; tries++) {
    const { ledger, seen, close } = setup();
    try {
      const opened = performance.now();
      const check = await attempt(ledger, seen);
      if (performance.now() - opened >= GROUP_COMMIT_MS && tries < 20) continue;
      await check();
      return;
    } finally {
      close();
    }
  }
}

describe('the run ledger commits a burst together', () => {
  it('writes an idle run after the turn, holds the next ones for the window, then writes them in one go', async () => {
    await insideTheWindow(async (ledger, seen) => {
      ledger.record(run('a'));
      await turn();
      const idle = seen();

      // Right after a write: these wait for the window instead of a commit each.
      ledger.record(run('b'));
      ledger.record(run('c'));
      await turn();
      const held = { seen: seen(), unwritten: ledger.unwritten };
      return async () => {
        expect(idle).toEqual(['a']);
        expect(held).toEqual({ seen: ['a'], unwritten: 2 });
        await expect.poll(seen, { interval: 5, timeout: 5000 }).toEqual(['a', 'b', 'c']);
        expect(ledger.unwritten).toBe(0);
      };
    });
  });

  it('a flush (what close and every read do) writes the runs waiting in the window at once', async () => {
    await insideTheWindow(async (ledger, seen) => {
      ledger.record(run('a'));
      await turn();
      ledger.record(run('b'));
      await turn();
      const held = seen();
      ledger.flush();
      const flushed = seen();
      return async () => {
        expect(held).toEqual(['a']);
        expect(flushed).toEqual(['a', 'b']);
      };
    });
  });
});
