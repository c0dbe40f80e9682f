import { createHash } from 'node:crypto';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { StudioError } from '../model/errors.ts';
import { backupDatabase, backupsFolder, checkRunHistory, listBackups, restoreDatabase, type BackupInfo, type RestoreResult } from './backup.ts';
import { DATABASE_FILE, prepared, SCHEMA_VERSION, writeTransaction, type Db } from './database.ts';

/**
 * What the data folder keeps, and for how long: the bodies of recorded runs (their arguments) and
 * the automatic backups. Every run keeps its row (function, time, outcome, duration, caller) for
 * good; only a body that is old, or beyond the newest `runsMib` of bodies, is replaced by a summary.
 * The settings live in the database (`settings` table), so every process on the folder shares them.
 */
export interface KeepSettings {
  /** Run bodies are kept whole for this many days… */
  runsDays: number;
  /** …and only while the newest whole bodies total at most this many MiB. */
  runsMib: number;
  /** An automatic backup is taken when the newest backup is this many days old; 0 turns them off. */
  backupEveryDays: number;
  /** How many automatic (daily) backups are kept. */
  backupKeep: number;
}

export const KEEP_DEFAULTS: Readonly<KeepSettings> = { runsDays: 30, runsMib: 200, backupEveryDays: 1, backupKeep: 7 };
export const KEEP_LIMITS: Readonly<Record<keyof KeepSettings, { min: number; max: number }>> = {
  runsDays: { min: 1, max: 36500 },
  runsMib: { min: 1, max: 1_000_000 },
  backupEveryDays: { min: 0, max: 365 },
  backupKeep: { min: 1, max: 1000 },
};
const KEYS: Readonly<Record<keyof KeepSettings, string>> = {
  runsDays: 'keep_runs_days',
  runsMib: 'keep_runs_mib',
  backupEveryDays: 'backup_every_days',
  backupKeep: 'backup_keep',
};
const STATE_KEY = 'keep_runs_state';

/** A body longer than this (in bytes) is summarised once it leaves the window; a summary is about 400 bytes. */
export const SUMMARY_OVER_BYTES = 1024;
const SUMMARY_HEAD_CHARS = 256;
const SUMMARY_MAX_BYTES = 800;
const DAY_MS = 24 * 60 * 60 * 1000;
const MIB = 1024 * 1024;
/** Rows read per step of the walk through the window, and rows summarised per write transaction. */
const WALK_PAGE = 500;
const SUMMARY_BATCH = 50;
/** How long after the folder is opened its run history gets the integrity check opening leaves out. */
export const HISTORY_CHECK_MS = 1000;
/** Background writes wait this long at most for another process's write lock, then try again later. */
const BACKGROUND_BUSY_MS = 25;

export function readKeepSettings(db: Db): KeepSettings {
  const rows = prepared(db, `SELECT key, value FROM settings WHERE key IN (${Object.values(KEYS).map(() => '?').join(', ')})`).all(...Object.values(KEYS)) as Array<{
    key: string;
    value: string;
  }>;
  const settings: KeepSettings = { ...KEEP_DEFAULTS };
  for (const field of Object.keys(KEYS) as Array<keyof KeepSettings>) {
    const value = Number(rows.find((r) => r.key === KEYS[field])?.value);
    if (Number.isInteger(value) && value >= KEEP_LIMITS[field].min && value <= KEEP_LIMITS[field].max) settings[field] = value;
  }
  return settings;
}

export function writeKeepSettings(db: Db, changes: Partial<KeepSettings>): KeepSettings {
  for (const [field, value] of Object.entries(changes) as Array<[keyof KeepSettings, number | undefined]>) {
    if (value === undefined) continue;
    const { min, max } = KEEP_LIMITS[field];
    if (!Number.isInteger(value) || value < min || value > max) throw new StudioError('bad_input', `${field} must be a whole number from ${min} to ${max}`);
  }
  writeTransaction(db, () => {
    const put = db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
    for (const [field, value] of Object.entries(changes) as Array<[keyof KeepSettings, number | undefined]>) {
      if (value !== undefined) put.run(KEYS[field], String(value));
    }
  });
  return readKeepSettings(db);
}

/** What a summarised body becomes: its size, its SHA-256 and its beginning, as JSON (so run records still parse). */
export function summariseBody(text: string): string {
  const summary = { summarised: true, bytes: Buffer.byteLength(text), sha256: createHash('sha256').update(text).digest('hex'), head: text.slice(0, SUMMARY_HEAD_CHARS) };
  let json = JSON.stringify(summary);
  // Characters JSON escapes take up to 6 bytes each: the head shrinks until the summary is small.
  while (Buffer.byteLength(json) > SUMMARY_MAX_BYTES) {
    summary.head = summary.head.slice(0, Math.floor(summary.head.length / 2));
    json = JSON.stringify(summary);
  }
  return json;
}

interface PassState {
  /** The newest rowid when the last pass began: bytes written since are counted from it. */
  rowid: number;
  /** When the last pass finished (ms). */
  at: number;
  /** started_at of the last window's boundary: bodies older than it were summarised already. */
  floor: string;
}

function readState(db: Db): PassState {
  const text = prepared(db, 'SELECT value FROM settings WHERE key = ?', 'pluck').get(STATE_KEY) as string | undefined;
  try {
    const state = JSON.parse(text ?? '') as Partial<PassState>;
    return { rowid: Number(state.rowid) || 0, at: Number(state.at) || 0, floor: typeof state.floor === 'string' ? state.floor : '' };
  } catch {
    return { rowid: 0, at: 0, floor: '' };
  }
}

/** How many body bytes may be written past the bound before a pass runs: an eighth of it, from 256 KiB to 16 MiB. */
function slackBytes(settings: KeepSettings): number {
  return Math.min(16 * MIB, Math.max(256 * 1024, (settings.runsMib * MIB) / 8));
}

/**
 * The body bytes of the runs after the last pass's rowid (`from`), summed up to `upTo`: each check
 * adds only the runs recorded since the one before (runs are never deleted, so rowids only grow),
 * instead of summing the whole history since the last pass after every write.
 */
const tallies = new WeakMap<Db, { from: number; upTo: number; bytes: number }>();

/** Whether a pass is due: bodies written since the last one add up to the slack, or an hour has passed (the age cutoff moved). */
export function prunePassDue(db: Db, now = Date.now()): boolean {
  const state = readState(db);
  if (now - state.at >= 60 * 60 * 1000) return true;
  let tally = tallies.get(db);
  // A pass (in any process) moved the starting point: the tally starts again from there.
  if (tally?.from !== state.rowid) tallies.set(db, (tally = { from: state.rowid, upTo: state.rowid, bytes: 0 }));
  const since = prepared(db, 'SELECT COALESCE(SUM(octet_length(args)), 0), COALESCE(MAX(rowid), ?) FROM runs WHERE rowid > ?', 'raw').get(tally.upTo, tally.upTo) as [number, number];
  tally.bytes += since[0];
  tally.upTo = since[1];
  return tally.bytes >= slackBytes(readKeepSettings(db));
}

export interface PruneResult {
  /** Bodies summarised by this pass. */
  summarised: number;
  /** Runs whose bodies are whole: the window (newest first, within the age and the size). */
  window: number;
  /** Bytes of the bodies in the window. */
  windowBytes: number;
}

/**
 * One pass over the run history: walks it newest first (by the time index) until the bodies pass the
 * size bound or the age cutoff, then summarises every body longer than SUMMARY_OVER_BYTES beyond that
 * point that an earlier pass did not reach. Reads in pages and writes in small transactions that wait
 * at most BACKGROUND_BUSY_MS for another process's lock, with `pause` (a turn of the event loop) in
 * between, so runs go on meanwhile. Throws the StudioError of a write that could not be made (busy, full,
 * read-only); the next pass takes over from there.
 */
export async function pruneRunBodies(db: Db, options: { now?: number; pause?: () => Promise<void>; stopped?: () => boolean } = {}): Promise<PruneResult> {
  const now = options.now ?? Date.now();
  const pause = options.pause ?? (() => new Promise<void>((resolve) => setImmediate(resolve)));
  const stopped = options.stopped ?? (() => false);
  const settings = readKeepSettings(db);
  const state = readState(db);
  const startRowid = db.prepare('SELECT COALESCE(MAX(rowid), 0) FROM runs').pluck().get() as number;
  const cutoff = new Date(now - settings.runsDays * DAY_MS).toISOString();
  const maxBytes = settings.runsMib * MIB;

  const walk = db.prepare(
    `SELECT rowid AS id, started_at AS at, octet_length(args) AS n FROM runs
     WHERE started_at < @at OR (started_at = @at AND rowid > @id) ORDER BY started_at DESC, rowid ASC LIMIT ${WALK_PAGE}`,
  );
  let cursor = { at: '\uffff', id: 0 };
  let boundary: { at: string; id: number } | undefined;
  let window = 0;
  let windowBytes = 0;
  while (boundary === undefined) {
    const rows = walk.all(cursor) as Array<{ id: number; at: string; n: number }>;
    for (const row of rows) {
      if (row.at < cutoff || windowBytes + row.n > maxBytes) {
        boundary = { at: row.at, id: row.id };
        break;
      }
      window++;
      windowBytes += row.n;
    }
    if (rows.length < WALK_PAGE || boundary !== undefined) break;
    cursor = { at: rows[rows.length - 1]!.at, id: rows[rows.length - 1]!.id };
    await pause();
    if (stopped()) return { summarised: 0, window, windowBytes };
  }

  let summarised = 0;
  if (boundary !== undefined) {
    const candidates = db.prepare(
      `SELECT rowid AS id, args FROM runs
       WHERE started_at >= @floor AND (started_at < @at OR (started_at = @at AND rowid >= @id))
         AND octet_length(args) > ${SUMMARY_OVER_BYTES} AND args NOT LIKE '{"summarised":true,%'
       LIMIT ${SUMMARY_BATCH}`,
    );
    const update = db.prepare('UPDATE runs SET args = ? WHERE rowid = ?');
    for (;;) {
      if (stopped()) return { summarised, window, windowBytes };
      const rows = candidates.all({ floor: state.floor, ...boundary }) as Array<{ id: number; args: string }>;
      if (rows.length === 0) break;
      const summaries = rows.map((r) => [summariseBody(r.args), r.id] as const);
      writeTransaction(db, () => {
        for (const [summary, id] of summaries) update.run(summary, id);
      }, { busyTimeoutMs: BACKGROUND_BUSY_MS });
      summarised += rows.length;
      await pause();
    }
  }
  if (stopped()) return { summarised, window, windowBytes };
  const floor = boundary !== undefined && boundary.at > state.floor ? boundary.at : state.floor;
  writeTransaction(
    db,
    () => db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(STATE_KEY, JSON.stringify({ rowid: startRowid, at: now, floor })),
    { busyTimeoutMs: BACKGROUND_BUSY_MS },
  );
  return { summarised, window, windowBytes };
}

/** Whether the folder holds anything worth a backup (a new, empty one does not). */
function hasData(db: Db): boolean {
  return db.prepare('SELECT EXISTS (SELECT 1 FROM functions) OR EXISTS (SELECT 1 FROM credentials) OR EXISTS (SELECT 1 FROM profiles) OR EXISTS (SELECT 1 FROM runs)').pluck().get() === 1;
}

/** Whether an automatic backup is due: they are on, there is something to keep, and the newest backup is `backupEveryDays` old. */
export function backupDue(db: Db, dbFile: string, now = Date.now()): boolean {
  const settings = readKeepSettings(db);
  if (settings.backupEveryDays === 0 || !hasData(db)) return false;
  const newest = listBackups(dbFile).find((b) => b.kind !== 'replaced');
  return newest === undefined || now - Date.parse(newest.takenAt) >= settings.backupEveryDays * DAY_MS;
}

/** Deletes daily backups beyond the newest `keep`, and copies abandoned more than an hour ago (`.partial`). Others are never deleted. */
export function pruneBackups(dbFile: string, keep: number, now = Date.now()): string[] {
  const removed: string[] = [];
  for (const backup of listBackups(dbFile).filter((b) => b.kind === 'daily').slice(keep)) {
    rmSync(backup.file, { force: true });
    removed.push(backup.file);
  }
  let names: string[] = [];
  try {
    names = readdirSync(backupsFolder(dbFile));
  } catch {
    // No backups folder: nothing abandoned.
  }
  for (const name of names.filter((n) => n.endsWith('.partial'))) {
    const file = join(backupsFolder(dbFile), name);
    try {
      if (now - statSync(file).mtimeMs > 60 * 60 * 1000) rmSync(file, { force: true });
    } catch {
      // Gone already.
    }
  }
  return removed;
}

/**
 * The background upkeep of an open data folder: the automatic backup when one is due (checked at open
 * and every hour) and the pruning of run bodies (after runs, once enough was written, and every hour).
 * Everything runs on unref'd timers, in steps between turns of the event loop; a process that exits
 * first (a short command) abandons a backup in progress, and the next process takes it.
 */
export class Upkeep {
  readonly #db: Db;
  readonly #dbFile: string;
  readonly #diagnostic: (message: string) => void;
  readonly #afterWriteMs: number;
  readonly #backupAbort = new AbortController();
  #hourly: NodeJS.Timeout | undefined;
  #soon: NodeJS.Timeout | undefined;
  #historyCheck: NodeJS.Timeout | undefined;
  #pruning = false;
  #backingUp = false;
  #stopped = false;
  #lastReport = '';

  constructor(db: Db, dbFile: string, options: { diagnostic?: (message: string) => void; checkMs?: number; afterWriteMs?: number; historyCheckMs?: number } = {}) {
    this.#db = db;
    this.#dbFile = dbFile;
    this.#diagnostic = options.diagnostic ?? (() => {});
    this.#afterWriteMs = options.afterWriteMs ?? 100;
    // Decided now, on the folder as it was opened: a folder created empty is not backed up by this process until the hourly check.
    const due = this.#safely(() => backupDue(db, dbFile), false);
    if (due) setImmediate(() => void this.backupIfDue());
    this.#hourly = setInterval(() => {
      void this.backupIfDue();
      void this.prune(true);
    }, options.checkMs ?? 60 * 60 * 1000);
    this.#hourly.unref();
    // Opening leaves the run history out of its integrity check (the bulk of the file): it is checked
    // once soon after, so damage there is said within seconds, not first by a failed read or write.
    this.#historyCheck = setTimeout(() => {
      this.#historyCheck = undefined;
      if (this.#stopped || !this.#db.open) return;
      const damaged = this.#safely(() => checkRunHistory(this.#db, this.#dbFile), undefined);
      if (damaged) this.#report(damaged.message);
    }, options.historyCheckMs ?? HISTORY_CHECK_MS);
    this.#historyCheck.unref();
  }

  /** After a run was recorded: a pruning check shortly after (cheap when nothing is due). */
  wrote(): void {
    if (this.#stopped || this.#soon) return;
    this.#soon = setTimeout(() => {
      this.#soon = undefined;
      void this.prune();
    }, this.#afterWriteMs);
    this.#soon.unref();
  }

  /** Takes the automatic backup if it is due, then deletes the daily backups beyond the number kept. */
  async backupIfDue(): Promise<BackupInfo | undefined> {
    if (this.#stopped || this.#backingUp || !this.#safely(() => backupDue(this.#db, this.#dbFile), false)) return undefined;
    this.#backingUp = true;
    try {
      const backup = await backupDatabase(this.#db, this.#dbFile, { kind: 'daily', signal: this.#backupAbort.signal });
      pruneBackups(this.#dbFile, readKeepSettings(this.#db).backupKeep);
      return backup;
    } catch (error) {
      if (!this.#stopped) this.#report(`the automatic backup of ${this.#dbFile} failed: ${(error as Error).message}`);
      return undefined;
    } finally {
      this.#backingUp = false;
    }
  }

  /** A pruning pass when one is due (or `force`); one at a time. */
  async prune(force = false): Promise<PruneResult | undefined> {
    if (this.#stopped || this.#pruning) return undefined;
    if (!force && !this.#safely(() => prunePassDue(this.#db), false)) return undefined;
    this.#pruning = true;
    try {
      return await pruneRunBodies(this.#db, { stopped: () => this.#stopped || !this.#db.open });
    } catch (error) {
      // A lock held elsewhere, a full disk, a read-only file or a moved schema stop the audit's own writes
      // too, and it reports them; the next pass carries on where this one stopped.
      const known = error instanceof StudioError && ['database_busy', 'disk_full', 'read_only', 'schema_changed'].includes(error.code);
      if (!this.#stopped && this.#db.open && !known) this.#report(`summarising old run records in ${this.#dbFile} failed: ${(error as Error).message}`);
      return undefined;
    } finally {
      this.#pruning = false;
    }
  }

  stop(): void {
    this.#stopped = true;
    this.#backupAbort.abort();
    if (this.#hourly) clearInterval(this.#hourly);
    if (this.#soon) clearTimeout(this.#soon);
    if (this.#historyCheck) clearTimeout(this.#historyCheck);
    this.#hourly = this.#soon = this.#historyCheck = undefined;
  }

  #safely<T>(fn: () => T, fallback: T): T {
    try {
      return fn();
    } catch {
      return fallback;
    }
  }

  /** Says a failure once, not again each hour or after each run while it lasts. */
  #report(message: string): void {
    if (message === this.#lastReport) return;
    this.#lastReport = message;
    this.#diagnostic(message);
  }
}

/** The database file of a data folder. */
export function databaseFileOf(dataDir: string): string {
  return join(dataDir, DATABASE_FILE);
}

/** `callable backup`: a manual backup of the open database, into the backups folder or to `to`. */
export function backupDataFolder(db: Db, dataDir: string, to?: string): Promise<BackupInfo> {
  return backupDatabase(db, databaseFileOf(dataDir), { kind: 'manual', to });
}

/** The backups of a data folder, newest first. */
export function listDataFolderBackups(dataDir: string): BackupInfo[] {
  return listBackups(databaseFileOf(dataDir));
}

/** `callable restore FILE`: see restoreDatabase. The folder's database must not be open (by this process either). */
export function restoreDataFolder(dataDir: string, source: string): RestoreResult {
  return restoreDatabase(databaseFileOf(dataDir), source, SCHEMA_VERSION);
}
