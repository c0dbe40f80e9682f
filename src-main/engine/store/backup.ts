import Database from 'better-sqlite3';
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { StudioError } from '../model/errors.ts';
import { isDiskFull } from './faults.ts';

/** A connection (database.ts names the same type; it calls the open-time checks below, so this file does not import it). */
type Db = Database.Database;

/**
 * Backups of the studio database, and what opening and restoring one checks. Every backup is one
 * self-contained SQLite file (rollback journal, no -wal beside it) in `<data folder>/backups/`,
 * named `callable-<UTC time>-<kind>.db` so that names sort by age:
 * - `manual`: `callable backup`; never deleted automatically;
 * - `daily`: the automatic schedule; only the newest few are kept (retention.ts);
 * - `pre-migration`: taken before the schema is upgraded; never deleted automatically;
 * - `replaced`: the database a restore replaced, moved aside untouched; never deleted automatically.
 */
export const BACKUPS_FOLDER = 'backups';

export const BACKUP_KINDS = ['manual', 'daily', 'pre-migration', 'replaced'] as const;
export type BackupKind = (typeof BACKUP_KINDS)[number];

export interface BackupInfo {
  file: string;
  kind: BackupKind;
  /** When it was taken (UTC, ISO 8601), from its name. */
  takenAt: string;
  bytes: number;
}

const NAME = /^callable-(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})-(\d{3})Z-(manual|daily|pre-migration|replaced)\.db$/;

/** The tables every Callable Studio database has had since schema 1. */
const REQUIRED_TABLES = ['functions', 'revisions', 'credentials', 'runs', 'settings', 'profiles'];

/** Pages copied per step of an online backup: about 4 MiB, a few milliseconds between turns of the event loop. */
const BACKUP_STEP_PAGES = 1000;

export function backupsFolder(dbFile: string): string {
  return join(dirname(dbFile), BACKUPS_FOLDER);
}

/** A new, unused path in the backups folder for a backup of `kind` taken now. */
function newBackupPath(dbFile: string, kind: BackupKind, at = Date.now()): string {
  for (let t = at; ; t++) {
    const stamp = new Date(t).toISOString().replace(/:/g, '-').replace('.', '-');
    const path = join(backupsFolder(dbFile), `callable-${stamp}-${kind}.db`);
    if (!existsSync(path)) return path;
  }
}

/** The backups in the folder of `dbFile`, newest first. Files with other names are not backups and are left alone. */
export function listBackups(dbFile: string): BackupInfo[] {
  const folder = backupsFolder(dbFile);
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return [];
  }
  const backups: BackupInfo[] = [];
  for (const name of names) {
    const m = NAME.exec(name);
    if (!m) continue;
    let bytes: number;
    try {
      bytes = statSync(join(folder, name)).size;
    } catch {
      continue;
    }
    backups.push({ file: join(folder, name), kind: m[6] as BackupKind, takenAt: `${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`, bytes });
  }
  return backups.sort((a, b) => (a.file < b.file ? 1 : a.file > b.file ? -1 : 0));
}

/** The newest backup of the current database's contents (a `replaced` file is an older database, not a copy of this one). */
export function newestBackup(dbFile: string): BackupInfo | undefined {
  return listBackups(dbFile).find((b) => b.kind !== 'replaced');
}

/** Quotes a path for a shell command line only when it needs it. */
export function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The command that restores `backup` into the data folder of `dbFile`. */
export function restoreCommand(dbFile: string, backup: string): string {
  return `callable restore ${shellQuote(backup)} --data-dir ${shellQuote(dirname(dbFile))}`;
}

/**
 * The one line for a database SQLite cannot use: what is wrong, that it was not modified, and how to
 * recover: the newest backup and the exact command that restores it, or moving the file aside.
 */
export function corruptDatabaseError(dbFile: string, reason: string): StudioError {
  const newest = newestBackup(dbFile);
  const how = newest
    ? `The newest backup, taken ${newest.takenAt}, is restored by: ${restoreCommand(dbFile, newest.file)}`
    : `There is no backup in ${backupsFolder(dbFile)}; one you kept elsewhere is restored by: ${restoreCommand(dbFile, 'FILE')}`;
  return new StudioError('bad_input', `${dbFile} is not a usable database (${reason}); it was left untouched: restore it from a backup, or move it aside to start an empty one. ${how}`);
}

/**
 * The integrity check made each time the database is opened, before anything is written to it.
 * `PRAGMA quick_check` over the whole file took 70-80 ms on a 53 MiB database (900 runs with 60 KB
 * arguments), 57 ms of it in the run history (`runs`), so opening checks every other table and index
 * (0.3-1 ms there) and leaves the run history to `checkRunHistory`, run in the background after
 * start-up, and to the full check each backup makes. quick_check(1) does not help (57-62 ms): the
 * number limits the errors reported, not the pages read.
 */
export function runIntegrityCheck(db: Db, dbFile: string): void {
  const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name <> 'runs' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[];
  for (const table of tables) {
    const problem = tableProblem(db, dbFile, table);
    if (problem) throw problem;
  }
}

/** The run history's share of the integrity check (the `runs` table and its indexes), left out at open; the error when it is damaged. */
export function checkRunHistory(db: Db, dbFile: string): StudioError | undefined {
  return tableProblem(db, dbFile, 'runs');
}

/** quick_check of one table and its indexes: the one-line error when it is damaged. */
function tableProblem(db: Db, dbFile: string, table: string): StudioError | undefined {
  let first: string | undefined;
  try {
    first = (db.pragma(`quick_check("${table.replace(/"/g, '""')}")`) as Array<{ quick_check: string }>)[0]?.quick_check;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    // A page too damaged to walk stops the check itself; it is the same finding.
    if (typeof code !== 'string' || !(code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB')) throw error;
    first = `${code}: ${(error as Error).message}`;
  }
  if (first === undefined || first === 'ok') return undefined;
  return corruptDatabaseError(dbFile, `the integrity check of its table ${table} failed: ${checkFinding(first)}`);
}

/**
 * Copies the database before a schema upgrade (`from` > 0: a new, empty database has nothing to keep).
 * Synchronous, like the migration it precedes (VACUUM INTO: one consistent, compact copy). Without the
 * copy the upgrade does not happen: the error says why.
 */
export function backupBeforeMigration(db: Db, dbFile: string, from: number, to: number): BackupInfo | undefined {
  if (from === 0) return undefined;
  const target = newBackupPath(dbFile, 'pre-migration');
  try {
    ensureBackupsFolder(dbFile);
    writeAtomically(target, (tmp) => db.prepare('VACUUM INTO ?').run(tmp));
  } catch (error) {
    throw new StudioError(
      'internal',
      `the database ${dbFile} needs an upgrade (schema ${from} to ${to}), but the backup taken first could not be written to ${target}: ${describeFailure(error)}; free some space or make ${backupsFolder(dbFile)} writable, then try again (the database was not changed)`,
    );
  }
  return { file: target, kind: 'pre-migration', takenAt: takenAtOf(target), bytes: statSync(target).size };
}

/**
 * Backs up the open database with SQLite's online backup (better-sqlite3 `db.backup()`): a few MiB
 * per turn of the event loop, so calls go on meanwhile, and a consistent copy even while other
 * processes write. The copy is checked in full (`quick_check`) and turned into a self-contained
 * file before it gets its name, so a file with a backup's name is always a whole, checked backup.
 * `to` is a path of the user's choosing (refused when it exists); by default a new file in the
 * backups folder.
 */
export async function backupDatabase(db: Db, dbFile: string, options: { kind: BackupKind; to?: string | undefined; signal?: AbortSignal }): Promise<BackupInfo> {
  let target: string;
  if (options.to === undefined) {
    try {
      ensureBackupsFolder(dbFile);
    } catch (error) {
      throw new StudioError('bad_input', `cannot create the backups folder ${backupsFolder(dbFile)} (${describeFailure(error)}); make ${dirname(dbFile)} writable, or give a FILE elsewhere`);
    }
    target = newBackupPath(dbFile, options.kind);
  } else {
    target = resolve(options.to);
    if (existsSync(target)) throw new StudioError('bad_input', `${target} already exists; choose another FILE (a backup never overwrites a file)`);
    if (!existsSync(dirname(target))) throw new StudioError('bad_input', `cannot write the backup ${target}: the folder ${dirname(target)} does not exist`);
  }
  const tmp = `${target}.partial`;
  try {
    // Created here first, so a folder that cannot take the file is its own error, with its errno.
    closeSync(openSync(tmp, 'wx'));
  } catch (error) {
    throw new StudioError('bad_input', `cannot write the backup ${target} (${describeFailure(error)}); choose a writable place`);
  }
  try {
    await db.backup(tmp, {
      progress: () => {
        if (options.signal?.aborted) throw new StudioError('cancelled', 'the backup was stopped');
        return BACKUP_STEP_PAGES;
      },
    });
    const problem = finishCopy(tmp);
    if (problem !== undefined) {
      throw new StudioError(
        'internal',
        `the database ${dbFile} is damaged (quick_check: ${problem}); the backup was not kept. Keep the current file, and restore the newest good backup (callable backup --list)`,
      );
    }
    renameSync(tmp, target);
  } catch (error) {
    removeDatabaseFiles(tmp);
    if (error instanceof StudioError) throw error;
    if (isDiskFull(error, dirname(target))) throw new StudioError('disk_full', `could not write the backup ${target}: the disk holding ${dirname(target)} is full (free some space and retry)`);
    throw new StudioError('internal', `could not write the backup ${target}: ${describeFailure(error)}`);
  }
  return { file: target, kind: options.kind, takenAt: options.to === undefined ? takenAtOf(target) : new Date().toISOString(), bytes: statSync(target).size };
}

/** Checks a fresh copy in full and makes it self-contained (rollback journal); the first problem, if any. */
function finishCopy(file: string): string | undefined {
  const copy = new Database(file, { fileMustExist: true });
  try {
    const result = copy.pragma('quick_check', { simple: true }) as string;
    if (result !== 'ok') return checkFinding(result);
    copy.pragma('journal_mode = DELETE');
    return undefined;
  } finally {
    copy.close();
  }
}

export interface RestoreResult {
  /** The schema version of the restored file (upgraded when the folder is next opened, with a backup first). */
  schema: number;
  functions: number;
  runs: number;
  /** Where the database that was replaced now is, untouched; undefined when the folder had none. */
  replaced: string | undefined;
}

/**
 * Replaces the database of `dbFile`'s folder with the backup `source`. Nothing is replaced unless the
 * source is a whole Callable Studio database this build can open (full integrity check, a schema it
 * knows, its tables), and no other process has the folder's database open. The database it replaces
 * is moved as it was (with its -wal) into the backups folder as a `replaced` backup: a damaged one byte
 * for byte; a healthy one may first have its -wal folded in by the in-use probe's connection closing.
 * `source` itself is only read.
 */
export function restoreDatabase(dbFile: string, source: string, schemaVersion: number): RestoreResult {
  const from = resolve(source);
  let stat;
  try {
    stat = statSync(from);
  } catch (error) {
    throw new StudioError('not_found', `cannot read the backup ${from} (${describeFailure(error)}); "callable backup --list" shows the backups of this folder`);
  }
  if (!stat.isFile()) throw new StudioError('bad_input', `${from} is not a file; give a backup file ("callable backup --list" shows them)`);
  if (from === resolve(dbFile)) throw new StudioError('bad_input', `${from} is the database itself; give a backup file ("callable backup --list" shows them)`);
  try {
    ensureBackupsFolder(dbFile);
  } catch (error) {
    throw new StudioError('bad_input', `cannot create the backups folder ${backupsFolder(dbFile)} (${describeFailure(error)}); make ${dirname(dbFile)} writable`);
  }
  const tmp = join(backupsFolder(dbFile), `.restoring-${process.pid}.db`);
  removeDatabaseFiles(tmp);
  try {
    try {
      copyFileSync(from, tmp);
    } catch (error) {
      throw new StudioError('internal', `could not copy ${from} into ${backupsFolder(dbFile)}: ${describeFailure(error)}; nothing was replaced`);
    }
    const found = verifyCallableDatabase(tmp, from, schemaVersion);
    if (existsSync(dbFile) && databaseInUse(dbFile)) {
      throw new StudioError(
        'database_busy',
        `the data folder ${dirname(dbFile)} is in use: another process (callable mcp or serve, the studio, or a command still running) has its database open; stop it, then restore again (nothing was replaced)`,
      );
    }
    let replaced: string | undefined;
    if (existsSync(dbFile)) {
      replaced = newBackupPath(dbFile, 'replaced');
      renameSync(dbFile, replaced);
      for (const suffix of ['-wal', '-journal']) if (existsSync(`${dbFile}${suffix}`)) renameSync(`${dbFile}${suffix}`, `${replaced}${suffix}`);
      rmSync(`${dbFile}-shm`, { force: true });
    }
    try {
      renameSync(tmp, dbFile);
    } catch (error) {
      if (replaced !== undefined) renameSync(replaced, dbFile);
      throw new StudioError('internal', `could not move the restored database into place (${describeFailure(error)}); the database was not replaced`);
    }
    return { ...found, replaced };
  } finally {
    removeDatabaseFiles(tmp);
  }
}

/** Checks that `file` (a private copy of `shownAs`) is a whole Callable Studio database of a known schema; made self-contained. */
function verifyCallableDatabase(file: string, shownAs: string, schemaVersion: number): Omit<RestoreResult, 'replaced'> {
  const refuse = (why: string): StudioError => new StudioError('bad_input', `${shownAs} cannot be restored: ${why}; nothing was replaced`);
  let db: Db;
  try {
    db = new Database(file, { fileMustExist: true });
  } catch (error) {
    throw refuse(`it is not a usable database (${describeFailure(error)})`);
  }
  try {
    let check: string[];
    let version: number;
    try {
      check = (db.pragma('integrity_check') as Array<{ integrity_check: string }>).map((r) => r.integrity_check);
      version = db.pragma('user_version', { simple: true }) as number;
    } catch (error) {
      throw refuse(`it is not a usable database (${describeFailure(error)})`);
    }
    if (check[0] !== 'ok') throw refuse(`it is damaged (integrity check: ${checkFinding(check[0] ?? 'no answer')})`);
    const tables = new Set(db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as string[]);
    const missing = REQUIRED_TABLES.filter((t) => !tables.has(t));
    if (version === 0 || missing.length > 0) throw refuse(`it is not a Callable Studio database (${version === 0 ? 'no schema version' : `no table ${missing.join(', ')}`})`);
    if (version > schemaVersion) throw refuse(`it was written by a newer Callable Studio (schema ${version}, this build knows ${schemaVersion}); update the app first`);
    const count = (table: string): number => db.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get() as number;
    const found = { schema: version, functions: count('functions'), runs: count('runs') };
    db.pragma('journal_mode = DELETE');
    return found;
  } finally {
    db.close();
  }
}

/**
 * Whether another connection (this process or another) has `dbFile` open. Every connection to a WAL
 * database holds a shared lock for as long as it is open, so an exclusive lock that cannot be had at
 * once means someone is there, even idle. A file SQLite cannot read is reported as not in use: no
 * server can be serving from it.
 */
export function databaseInUse(dbFile: string): boolean {
  let probe: Db | undefined;
  try {
    probe = new Database(dbFile, { fileMustExist: true, timeout: 0 });
    probe.pragma('locking_mode = EXCLUSIVE');
    probe.exec('BEGIN EXCLUSIVE');
    probe.exec('COMMIT');
    return false;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
  } finally {
    probe?.close();
  }
}

function ensureBackupsFolder(dbFile: string): void {
  try {
    mkdirSync(backupsFolder(dbFile));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Writes `target` through a temporary file renamed at the end, so a failure leaves no file by that name. */
function writeAtomically(target: string, write: (tmp: string) => void): void {
  const tmp = `${target}.partial`;
  removeDatabaseFiles(tmp);
  // Created empty first (VACUUM INTO accepts an empty file), so a place that cannot take it fails with its errno.
  closeSync(openSync(tmp, 'wx'));
  try {
    write(tmp);
    renameSync(tmp, target);
  } catch (error) {
    removeDatabaseFiles(tmp);
    throw error;
  }
}

/** A database file and the journal files SQLite may have left beside it. */
function removeDatabaseFiles(file: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${file}${suffix}`, { force: true });
}

function takenAtOf(file: string): string {
  const m = NAME.exec(basename(file));
  return m ? `${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z` : new Date().toISOString();
}

/** An errno or SQLite code with its message, in words a user can act on. */
export function describeFailure(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (code === 'ENOSPC' || code === 'SQLITE_FULL') return `the disk is full (${code})`;
  // Node's fs messages end with the call and the path ("…, open '/x'"), which the caller names already.
  const message = (error instanceof Error ? error.message : String(error)).replace(/, \w+ '[^']*'( -> '[^']*')?$/, '');
  return typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message;
}

/** A finding of quick_check / integrity_check on one line ("*** in database main ***" and line breaks dropped). */
function checkFinding(text: string): string {
  return text.replace(/^\*\*\* in database \w+ \*\*\*\s*/, '').replace(/\s+/g, ' ').trim();
}
