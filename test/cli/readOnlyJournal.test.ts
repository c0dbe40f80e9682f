import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { REPO } from '../support/callable.ts';
import { defineFunction } from '../support/engine.ts';
import { cannotMakeImmutable, crashedWriter, faultDir, immutable } from '../support/fsFaults.ts';
import { callableProcess } from '../support/process.ts';
import { vendorServer } from '../support/vendor.ts';

// The database's -wal or -shm left read-only (a crash left them, then chattr +i: root ignores chmod).
// SQLite opens the database anyway and only refuses the first write: the run, its vendor request
// included, would happen and then not be recorded. The engine asks SQLite at start-up whether it can
// write, and refuses in one line naming the file at fault, before anything runs.

const ENV = { ...process.env, CALLABLE_SECRETS: 'env' };
const esc = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe.skipIf(cannotMakeImmutable !== undefined)(`a read-only -shm or -wal (skipped without chattr +i${cannotMakeImmutable ? `: ${cannotMakeImmutable}` : ''})`, () => {
  /** A data folder with `call_vendor` (POST /charge to a loopback vendor), left with its -wal and -shm by a crashed writer. */
  async function crashedFolder(port: number): Promise<string> {
    const dataDir = faultDir('callable-journal-');
    const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
    try {
      await defineFunction(
        engine,
        { name: 'call_vendor', allowedHosts: [`127.0.0.1:${port}`] },
        `export default async (_args, ctx) => (await ctx.fetch('http://127.0.0.1:${port}/charge', { method: 'POST' })).json()`,
      );
    } finally {
      engine.close();
    }
    crashedWriter(join(dataDir, DATABASE_FILE), REPO);
    return dataDir;
  }

  for (const [suffix, what] of [
    ['-shm', "the database's shared-memory index"],
    ['-wal', "the database's write-ahead log"],
  ] as const) {
    it(`callable run refuses at start naming callable.db${suffix}, and the vendor receives nothing`, async () => {
      const vendor = await vendorServer((_req, res) => res.end('{"ok":true}'));
      const dataDir = await crashedFolder(vendor.port);
      const file = join(dataDir, `${DATABASE_FILE}${suffix}`);
      immutable(file);

      const run = await callableProcess(['run', 'call_vendor', '--data-dir', dataDir], { env: ENV });
      expect(run.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(new RegExp(`^callable run: ${esc(what)} ${esc(file)} is read-only \\(EPERM\\), and every write goes through it; make it writable \\(chmod u\\+w, chattr -i\\) or choose another data folder \\(--data-dir or CALLABLE_DATA_DIR\\)$`)),
      ]);
      expect(run.stdout).toBe('');
      expect(run.code).toBe(2);
      expect(vendor.seen).toEqual([]);
    }, 60_000);
  }

  it('the folder made immutable with its -wal and -shm left there (SQLite could still open it): refused at start, naming the folder', async () => {
    const vendor = await vendorServer((_req, res) => res.end('{"ok":true}'));
    const dataDir = await crashedFolder(vendor.port);
    immutable(dataDir);
    const run = await callableProcess(['run', 'call_vendor', '--data-dir', dataDir], { env: ENV });
    expect(run.stderr.trim().split('\n')).toEqual([
      `callable run: cannot open ${join(dataDir, DATABASE_FILE)} for writing: the data folder ${dataDir} is read-only (EPERM), and the database creates its -wal and -shm files there; make the folder writable (chattr -i, remount rw) or choose another data folder (--data-dir or CALLABLE_DATA_DIR)`,
    ]);
    expect(run.code).toBe(2);
    expect(vendor.seen).toEqual([]);
  }, 60_000);
});
