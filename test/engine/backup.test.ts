import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore, StudioError, type Engine } from '../../src-main/engine/index.ts';
import { backupDatabase, databaseInUse, listBackups, restoreDatabase } from '../../src-main/engine/store/backup.ts';
import { DATABASE_FILE, openDatabase, SCHEMA_VERSION } from '../../src-main/engine/store/database.ts';
import { writeKeepSettings } from '../../src-main/engine/store/retention.ts';
import { scratch } from '../support/scratch.ts';
import { cannotMakeImmutable, immutable, undoFaults } from '../support/fsFaults.ts';

// Real SQLite files throughout: backups taken with the online backup API while runs are recorded,
// an integrity check that refuses a damaged page at open, the copy taken before a schema upgrade,
// and restores that verify before they replace anything.

const made = scratch();
// Registered after scratch's cleanup, so it runs first: chattr -i before the folders are removed.
afterEach(undoFaults);

function openEngine(dataDir: string): Engine {
  return made.engine(createEngine({ dataDir, secrets: new MemorySecretStore() }));
}

async function folderWithAFunction(): Promise<{ dataDir: string; dbFile: string }> {
  const dataDir = made.dir('callable-backup-');
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  await engine.saveFunction({ spec: { name: 'echo', inputSchema: { type: 'object' } }, source: 'export default (a) => a' });
  await engine.run('echo', { text: 'first' }, { caller: 'test' });
  // Automatic backups off, so each test sees only the backups it takes (the last describe turns them on).
  writeKeepSettings(engine.database, { backupEveryDays: 0 });
  engine.close();
  return { dataDir, dbFile: join(dataDir, DATABASE_FILE) };
}

const sha = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex');
const waitFor = async (what: () => boolean, ms = 10_000): Promise<void> => {
  for (const end = Date.now() + ms; !what(); ) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};

/** Writes garbage over the b-tree page of `table`: the kind of damage a torn write or a bad disk leaves. */
function damageTable(dbFile: string, table: string): void {
  const db = new Database(dbFile, { readonly: true });
  const root = db.prepare('SELECT rootpage FROM sqlite_schema WHERE name = ?').pluck().get(table) as number;
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  db.close();
  const bytes = readFileSync(dbFile);
  bytes.fill(0xa5, (root - 1) * pageSize, (root - 1) * pageSize + 64);
  writeFileSync(dbFile, bytes);
}

describe('online backup', () => {
  it('copies the open database while runs are being recorded: a whole, checked, self-contained file', async () => {
    const { dataDir, dbFile } = await folderWithAFunction();
    const engine = openEngine(dataDir);
    const runs = Array.from({ length: 30 }, (_, i) => engine.run('echo', { i }, { caller: 'test' }));
    const backup = await backupDatabase(engine.database, dbFile, { kind: 'manual' });
    await Promise.all(runs);
    expect(backup.file).toMatch(/backups\/callable-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z-manual\.db$/);
    expect(existsSync(`${backup.file}-wal`)).toBe(false);
    const copy = new Database(backup.file, { readonly: true });
    expect(copy.pragma('journal_mode', { simple: true })).toBe('delete');
    expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(copy.prepare('SELECT name FROM functions').pluck().all()).toEqual(['echo']);
    expect(copy.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    copy.close();
    expect(listBackups(dbFile).map((b) => b.file)).toEqual([backup.file]);
  });

  it('refuses to overwrite a file, and leaves nothing behind when it cannot write', async () => {
    const { dataDir, dbFile } = await folderWithAFunction();
    const engine = openEngine(dataDir);
    const taken = join(made.dir('callable-elsewhere-'), 'mine.db');
    writeFileSync(taken, 'keep me');
    await expect(backupDatabase(engine.database, dbFile, { kind: 'manual', to: taken })).rejects.toThrow(`${taken} already exists; choose another FILE`);
    expect(readFileSync(taken, 'utf8')).toBe('keep me');
    const missing = join(taken, '..', 'missing', 'x.db');
    await expect(backupDatabase(engine.database, dbFile, { kind: 'manual', to: missing })).rejects.toThrow(`cannot write the backup ${missing}: the folder ${join(taken, '..', 'missing')} does not exist`);
    expect(readdirSync(join(taken, '..'))).toEqual(['mine.db']);
  });
});

describe('the integrity check at open', () => {
  it('refuses a database with a damaged page, names the newest backup and the command, and leaves the file untouched', async () => {
    const { dataDir, dbFile } = await folderWithAFunction();
    const engine = openEngine(dataDir);
    const backup = await backupDatabase(engine.database, dbFile, { kind: 'manual' });
    engine.close();
    damageTable(dbFile, 'functions');
    const before = sha(dbFile);
    let error: unknown;
    try {
      openDatabase(dataDir);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(StudioError);
    const message = (error as StudioError).message;
    expect(message).toContain(`${dbFile} is not a usable database (the integrity check of its table functions failed:`);
    expect(message).toContain('it was left untouched');
    expect(message).toContain(`callable restore ${backup.file} --data-dir ${dataDir}`);
    expect(message).not.toContain('\n');
    expect(sha(dbFile)).toBe(before);
  });
});

describe('the run history, left out of the check at open, is checked by every backup', () => {
  it('a damaged runs page opens, but the backup refuses it and keeps no file', async () => {
    const { dataDir, dbFile } = await folderWithAFunction();
    damageTable(dbFile, 'runs');
    const engine = openEngine(dataDir);
    expect(engine.functions.list().map((f) => f.name)).toEqual(['echo']);
    await expect(backupDatabase(engine.database, dbFile, { kind: 'manual' })).rejects.toThrow(
      new RegExp(`^the database ${dbFile} is damaged \\(quick_check: .+\\); the backup was not kept`),
    );
    expect(readdirSync(join(dataDir, 'backups'))).toEqual([]);
  });
});

describe('the backup before a schema upgrade', () => {
  /** Turns a current folder back into what schema 1 left (the later migrations' rows and tables removed). */
  function asSchema1(dbFile: string): void {
    const db = new Database(dbFile);
    db.exec("DELETE FROM settings WHERE key IN ('install_id', 'adopt_unscoped_secrets'); DROP TABLE IF EXISTS credential_grants; PRAGMA user_version = 1");
    db.close();
  }

  it('copies the database as it was before migrating it', async () => {
    const { dataDir, dbFile } = await folderWithAFunction();
    asSchema1(dbFile);
    openEngine(dataDir);
    const [backup, ...others] = listBackups(dbFile);
    expect(others).toEqual([]);
    expect(backup!.kind).toBe('pre-migration');
    const copy = new Database(backup!.file, { readonly: true });
    expect(copy.pragma('user_version', { simple: true })).toBe(1);
    expect(copy.prepare('SELECT name FROM functions').pluck().all()).toEqual(['echo']);
    copy.close();
    const upgraded = new Database(dbFile, { readonly: true });
    expect(upgraded.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    upgraded.close();
  });

  it('a restored backup of an older schema is upgraded at the next open, after its own pre-migration backup', async () => {
    const { dataDir, dbFile } = await folderWithAFunction();
    const old = join(made.dir('callable-old-'), 'old.db');
    copyFileSync(dbFile, old);
    asSchema1(old);
    expect(restoreDatabase(dbFile, old, SCHEMA_VERSION).schema).toBe(1);
    expect(openEngine(dataDir).functions.list().map((f) => f.name)).toEqual(['echo']);
    expect(listBackups(dbFile).map((b) => b.kind)).toEqual(['pre-migration', 'replaced']);
  });

  it.skipIf(cannotMakeImmutable)('does not upgrade when the copy cannot be written (an immutable backups folder)', async () => {
    const { dataDir, dbFile } = await folderWithAFunction();
    asSchema1(dbFile);
    const folder = join(dataDir, 'backups');
    mkdirSync(folder);
    immutable(folder);
    expect(() => openDatabase(dataDir)).toThrow(
      new RegExp(`needs an upgrade \\(schema 1 to ${SCHEMA_VERSION}\\), but the backup taken first could not be written to .*EPERM.*the database was not changed`),
    );
    const db = new Database(dbFile, { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(1);
    db.close();
    expect(readdirSync(folder)).toEqual([]);
  });
});

describe('restore', () => {
  it('replaces the database after checking the backup, and keeps the replaced one untouched', async () => {
    const { dataDir, dbFile } = await folderWithAFunction();
    const engine = openEngine(dataDir);
    const backup = await backupDatabase(engine.database, dbFile, { kind: 'manual' });
    await engine.saveFunction({ spec: { name: 'later' }, source: 'export default () => 1' });
    engine.close();
    const current = sha(dbFile);
    const result = restoreDatabase(dbFile, backup.file, SCHEMA_VERSION);
    expect(result).toMatchObject({ schema: SCHEMA_VERSION, functions: 1, runs: 1 });
    expect(sha(result.replaced!)).toBe(current);
    expect(listBackups(dbFile).find((b) => b.file === result.replaced)?.kind).toBe('replaced');
    expect(openEngine(dataDir).functions.list().map((f) => f.name)).toEqual(['echo']);
  });

  it('refuses what is not a whole Callable Studio database of a known schema, replacing nothing', async () => {
    const { dataDir, dbFile } = await folderWithAFunction();
    const current = sha(dbFile);
    const other = made.dir('callable-other-');
    const cases: Array<[string, (file: string) => void, RegExp]> = [
      ['text.db', (f) => writeFileSync(f, 'not a database\n'.repeat(200)), /it is not a usable database \(SQLITE_NOTADB/],
      [
        'foreign.db',
        (f) => {
          const db = new Database(f);
          db.exec('CREATE TABLE notes (body TEXT); PRAGMA user_version = 1');
          db.close();
        },
        /it is not a Callable Studio database \(no table functions, revisions, credentials, runs, settings, profiles\)/,
      ],
      [
        'newer.db',
        (f) => {
          copyFileSync(dbFile, f);
          const db = new Database(f);
          db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
          db.close();
        },
        new RegExp(`written by a newer Callable Studio \\(schema ${SCHEMA_VERSION + 1}, this build knows ${SCHEMA_VERSION}\\)`),
      ],
      [
        'damaged.db',
        (f) => {
          copyFileSync(dbFile, f);
          damageTable(f, 'runs');
        },
        /it is (damaged \(integrity check|not a usable database \(SQLITE_CORRUPT)/,
      ],
    ];
    for (const [name, make, why] of cases) {
      const file = join(other, name);
      make(file);
      const source = sha(file);
      expect(() => restoreDatabase(dbFile, file, SCHEMA_VERSION), name).toThrow(why);
      expect(() => restoreDatabase(dbFile, file, SCHEMA_VERSION), name).toThrow(/nothing was replaced$/);
      expect(sha(file), `${name} itself is only read`).toBe(source);
    }
    expect(sha(dbFile)).toBe(current);
    expect(listBackups(dbFile)).toEqual([]);
    expect(readdirSync(join(dataDir, 'backups'))).toEqual([]);
  });

  it('refuses while the database is open elsewhere (an idle engine counts)', async () => {
    const { dataDir, dbFile } = await folderWithAFunction();
    const engine = openEngine(dataDir);
    const backup = await backupDatabase(engine.database, dbFile, { kind: 'manual' });
    expect(databaseInUse(dbFile)).toBe(true);
    expect(() => restoreDatabase(dbFile, backup.file, SCHEMA_VERSION)).toThrow(/is in use: another process .* has its database open; stop it, then restore again \(nothing was replaced\)/);
    engine.close();
    expect(databaseInUse(dbFile)).toBe(false);
    expect(restoreDatabase(dbFile, backup.file, SCHEMA_VERSION).functions).toBe(1);
  });
});

describe('automatic backups', () => {
  /** A backup file of `kind` dated `daysAgo`, as an earlier process would have left it. */
  function oldBackup(dbFile: string, kind: string, daysAgo: number): string {
    const stamp = new Date(Date.now() - daysAgo * 86_400_000).toISOString().replace(/:/g, '-').replace('.', '-');
    const file = join(dbFile, '..', 'backups', `callable-${stamp}-${kind}.db`);
    copyFileSync(dbFile, file);
    return file;
  }

  function turnOn(dataDir: string): void {
    const db = openDatabase(dataDir);
    writeKeepSettings(db, { backupEveryDays: 1 });
    db.close();
  }

  it('are taken when the newest backup is a day old, and only the newest 7 daily ones are kept', async () => {
    const { dataDir, dbFile } = await folderWithAFunction();
    turnOn(dataDir);
    mkdirSync(join(dataDir, 'backups'));
    const manual = oldBackup(dbFile, 'manual', 2);
    const beforeUpgrade = oldBackup(dbFile, 'pre-migration', 20);
    const daily = Array.from({ length: 9 }, (_, i) => oldBackup(dbFile, 'daily', 3 + i));
    openEngine(dataDir);
    await waitFor(() => listBackups(dbFile).filter((b) => b.kind === 'daily').length === 7 && Date.now() - Date.parse(listBackups(dbFile)[0]!.takenAt) < 60_000);
    const backups = listBackups(dbFile);
    expect(backups[0]!.kind).toBe('daily');
    expect(backups.map((b) => b.file)).toEqual([backups[0]!.file, manual, ...daily.slice(0, 6), beforeUpgrade]);
    const copy = new Database(backups[0]!.file, { readonly: true });
    expect(copy.prepare('SELECT COUNT(*) FROM functions').pluck().get()).toBe(1);
    copy.close();
  });

  it('are not taken while the newest backup is younger than the schedule, when turned off, nor for an empty folder', async () => {
    const { dataDir, dbFile } = await folderWithAFunction();
    turnOn(dataDir);
    mkdirSync(join(dataDir, 'backups'));
    const recent = oldBackup(dbFile, 'manual', 0.5);
    openEngine(dataDir).close();
    const off = await folderWithAFunction();
    openEngine(off.dataDir);
    const empty = made.dir('callable-empty-');
    openEngine(empty);
    await new Promise((r) => setTimeout(r, 300));
    expect(listBackups(dbFile).map((b) => b.file)).toEqual([recent]);
    expect(existsSync(join(off.dataDir, 'backups'))).toBe(false);
    expect(existsSync(join(empty, 'backups'))).toBe(false);
  });
});
