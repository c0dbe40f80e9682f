import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { backupDataFolder, createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { CALLABLE_COMMAND } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { folderWithEcho } from '../support/engine.ts';
import { damageRunHistory, faultDir, misdirectIndex } from '../support/fsFaults.ts';
import { untilValue } from '../support/wait.ts';

// A damaged page in the run history, the one table opening does not check (it is the bulk of the
// file). Wherever SQLite reports the damage later, the user gets the line opening gives for damage
// (what is damaged, the newest backup, the exact restore command); a run whose record cannot be
// written is held in memory, not lost; and a check after start-up finds the damage within seconds.

const ENV = { ...process.env, CALLABLE_SECRETS: 'env' };
const esc = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A data folder with `echo`, two recorded runs and a backup, which `damage` then damages (the run history by default); the backup's path. */
async function damagedFolder(damage: (dbFile: string) => void = damageRunHistory): Promise<{ dataDir: string; backup: string }> {
  const dataDir = await folderWithEcho(faultDir('callable-damaged-'));
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  let backup: string;
  try {
    for (const text of ['a', 'b']) expect((await engine.run('echo', { text }, { caller: 'cli' })).ok).toBe(true);
    engine.runs.flush();
    backup = (await backupDataFolder(engine.database, dataDir)).file;
  } finally {
    engine.close();
  }
  damage(join(dataDir, DATABASE_FILE));
  return { dataDir, backup };
}

/** The restore advice every report of the damage ends with. */
function restoreAdvice(dataDir: string, backup: string): string {
  return `it was left untouched: restore it from a backup, or move it aside to start an empty one. The newest backup, taken \\S+, is restored by: callable restore ${esc(backup)} --data-dir ${esc(dataDir)}`;
}

describe('a damaged page in the run history', () => {
  it('callable runs says what is damaged and how to restore, in one line, exit 2', async () => {
    const { dataDir, backup } = await damagedFolder();
    // Opening stays fast: the functions are listed as before.
    const listed = await cli(['list', '--data-dir', dataDir], { env: ENV });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/echo/);

    const runs = await cli(['runs', '--data-dir', dataDir], { env: ENV });
    expect(runs.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^callable runs: ${esc(join(dataDir, DATABASE_FILE))} is not a usable database \\(the run history is damaged: SQLITE_CORRUPT\\w*: [^)]+\\); ${restoreAdvice(dataDir, backup)}$`)),
    ]);
    expect(runs.stdout).toBe('');
    expect(runs.code).toBe(2);
  }, 60_000);

  it('callable mcp: a call gets its result, its record is held (said, and said again at exit), and the check after start-up reports the damage within seconds', async () => {
    const { dataDir, backup } = await damagedFolder();
    const started = performance.now();
    const transport = new StdioClientTransport({ command: CALLABLE_COMMAND.command, args: [...CALLABLE_COMMAND.args, 'mcp', '--data-dir', dataDir], stderr: 'pipe', env: ENV as Record<string, string> });
    let stderr = '';
    transport.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const client = new Client({ name: 'damage-client', version: '1.0.0' });
    await client.connect(transport);
    const file = esc(join(dataDir, DATABASE_FILE));
    try {
      const found = new RegExp(`${file} is not a usable database \\(the integrity check of its table runs failed: [^)]+\\); ${restoreAdvice(dataDir, backup)}`);
      await untilValue('the check after start-up to report the damage', () => stderr, (s) => found.test(s), 10_000);
      const foundAfterMs = performance.now() - started;
      expect(foundAfterMs).toBeLessThan(5000);

      const result = (await client.callTool({ name: 'echo', arguments: { text: 'c' } })) as { isError?: boolean; content: Array<{ text?: string }> };
      expect(result.isError ?? false).toBe(false);
      expect(JSON.parse(result.content[0]!.text!)).toEqual({ echo: 'c' });
      const held = new RegExp(`1 run\\(s\\) \\(echo\\) could not be recorded yet: ${file} is not a usable database \\(the run history is damaged: SQLITE_CORRUPT\\w*: [^)]+\\); ${restoreAdvice(dataDir, backup)}; they are held in memory only and will be lost when this process exits: stop it and restore the database to record runs again$`, 'm');
      await untilValue('the held run to be reported', () => stderr, (s) => held.test(s), 10_000);
    } finally {
      await client.close();
    }
    // Still held when the server stops: said once more, not dropped in silence.
    await untilValue('the server to say the run was not recorded', () => stderr, (s) => new RegExp(`^callable mcp: 1 run\\(s\\) \\(echo\\) were not recorded in ${file}: ${file} is not a usable database`, 'm').test(s), 10_000);
    expect(stderr).not.toMatch(/internal error|SqliteError|\n\s+at /);
  }, 60_000);
});

describe('damage SQLite finds in another table, past what opening checks', () => {
  // An index entry pointing at a row that is not there: every page is well-formed, so the check at open
  // (quick_check, which does not compare an index with its table) passes, and the read that looks the
  // row up through the index gets SQLITE_CORRUPT.
  const damagedLine = (command: string, dataDir: string, backup: string): RegExp =>
    new RegExp(`^callable ${command}: ${esc(join(dataDir, DATABASE_FILE))} is not a usable database \\([^)]+ is damaged: SQLITE_CORRUPT\\w*: [^)]+\\); ${restoreAdvice(dataDir, backup)}$`);

  it('callable history and show, reading the revisions, say what is damaged and how to restore, in one line, exit 2', async () => {
    const { dataDir, backup } = await damagedFolder((file) => misdirectIndex(file, 'sqlite_autoindex_revisions_1'));
    for (const command of ['history', 'show']) {
      const read = await cli([command, 'echo', '--data-dir', dataDir], { env: ENV });
      expect(read.stderr.trim().split('\n'), command).toEqual([expect.stringMatching(damagedLine(command, dataDir, backup))]);
      expect(read.stdout).toBe('');
      expect(read.code).toBe(2);
    }
  }, 60_000);

  it('callable run and callable list, reading the functions, say the same, exit 2', async () => {
    const { dataDir, backup } = await damagedFolder((file) => misdirectIndex(file, 'sqlite_autoindex_functions_1'));
    for (const argv of [['run', 'echo', '--args', '{"text":"c"}'], ['list']]) {
      const read = await cli([...argv, '--data-dir', dataDir], { env: ENV });
      expect(read.stderr.trim().split('\n'), argv[0]).toEqual([expect.stringMatching(damagedLine(argv[0]!, dataDir, backup))]);
      expect(read.stdout).toBe('');
      expect(read.code).toBe(2);
    }
  }, 60_000);

  it('callable mcp, listing the tools, answers with the same words (what is damaged, the backup, the restore command)', async () => {
    const { dataDir, backup } = await damagedFolder((file) => misdirectIndex(file, 'sqlite_autoindex_functions_1'));
    const transport = new StdioClientTransport({ command: CALLABLE_COMMAND.command, args: [...CALLABLE_COMMAND.args, 'mcp', '--data-dir', dataDir], stderr: 'pipe', env: ENV as Record<string, string> });
    const client = new Client({ name: 'damage-client', version: '1.0.0' });
    await client.connect(transport);
    try {
      const file = esc(join(dataDir, DATABASE_FILE));
      await expect(client.listTools()).rejects.toThrow(new RegExp(`${file} is not a usable database \\(the function catalog is damaged: SQLITE_CORRUPT\\w*: [^)]+\\); ${restoreAdvice(dataDir, backup)}`));
    } finally {
      await client.close();
    }
  }, 60_000);
});
