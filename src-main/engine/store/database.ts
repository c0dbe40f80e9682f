import Database from 'better-sqlite3';
import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { StudioError } from '../model/errors.ts';
import { backupBeforeMigration, corruptDatabaseError, runIntegrityCheck } from './backup.ts';
import { diskFullError, isDiskFull, isReadOnly, readOnlyError, schemaChangedError } from './faults.ts';

export type Db = Database.Database;

/** SQL that adds the draft-07 "$schema" to `table`'s specs whose `field` has none and holds an array "items" (a draft-07 tuple). */
function stampDraft07(table: string, field: string): string {
  return `UPDATE ${table} SET spec = json_set(spec, '$.${field}."$schema"', 'http://json-schema.org/draft-07/schema#')
   WHERE json_type(spec, '$.${field}') = 'object' AND json_type(spec, '$.${field}."$schema"') IS NULL
     AND EXISTS (SELECT 1 FROM json_tree(${table}.spec, '$.${field}') WHERE key = 'items' AND type = 'array');`;
}

/**
 * Ordered schema migrations. Never edit a shipped entry: append a new one.
 * `PRAGMA user_version` records how many have run.
 */
const MIGRATIONS: string[] = [
  `
  CREATE TABLE functions (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    spec TEXT NOT NULL,
    source TEXT NOT NULL,
    compiled TEXT NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 1,
    revision INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE TABLE revisions (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    revision INTEGER NOT NULL,
    spec TEXT NOT NULL,
    source TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (function_id, revision)
  );
  CREATE TABLE credentials (
    name TEXT PRIMARY KEY,
    hosts TEXT NOT NULL,
    placement TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    function_name TEXT NOT NULL,
    caller TEXT NOT NULL,
    client_name TEXT,
    client_version TEXT,
    transport TEXT,
    profile TEXT,
    args TEXT NOT NULL,
    started_at TEXT NOT NULL,
    duration_ms REAL NOT NULL,
    ok INTEGER NOT NULL,
    error_code TEXT,
    error_message TEXT,
    bytes_out INTEGER NOT NULL
  );
  CREATE INDEX runs_by_function ON runs(function_name, started_at DESC);
  CREATE INDEX runs_by_time ON runs(started_at DESC);
  CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  CREATE TABLE profiles (
    name TEXT PRIMARY KEY,
    functions TEXT NOT NULL,
    meta_tools INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  `,
  // The install id scopes this folder's keychain entries. A folder that already held data may have
  // secrets under the old unscoped accounts: the flag asks the secret store to adopt them once.
  `
  INSERT INTO settings (key, value) VALUES ('install_id', lower(hex(randomblob(16))));
  INSERT INTO settings (key, value)
    SELECT 'adopt_unscoped_secrets', '1'
    WHERE EXISTS (SELECT 1 FROM credentials) OR EXISTS (SELECT 1 FROM functions) OR EXISTS (SELECT 1 FROM runs) OR EXISTS (SELECT 1 FROM profiles);
  `,
  // Credential grants: a function uses a credential only once the user granted it. A folder from
  // before grants existed keeps working: each function is granted the existing credentials it lists.
  `
  CREATE TABLE IF NOT EXISTS credential_grants (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    credential TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    PRIMARY KEY (function_id, credential)
  );
  CREATE INDEX IF NOT EXISTS credential_grants_by_credential ON credential_grants(credential);
  INSERT OR IGNORE INTO credential_grants (function_id, credential, granted_at)
    SELECT f.id, c.value, strftime('%Y-%m-%dT%H:%M:%fZ', 'now') FROM functions f, json_each(f.spec, '$.credentials') c
    WHERE c.value IN (SELECT name FROM credentials);
  `,
  // Saved test cases (also tests/<name>.json in a function's folder), and the ctx.fetch exchanges
  // of recent runs, so a past run can become a test case (bounded: see engine/savedTests/recordings.ts).
  `
  CREATE TABLE IF NOT EXISTS test_cases (
    function_id INTEGER NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (function_id, name)
  );
  CREATE TABLE IF NOT EXISTS run_recordings (
    run_id TEXT PRIMARY KEY,
    function_name TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    body TEXT NOT NULL
  );
  `,
  // Approval before destructive calls (engine/prompts): the prompts a process puts to the person at
  // the studio, the studio's presence (a heartbeat), and the decision each MCP run was allowed by.
  `
  CREATE TABLE IF NOT EXISTS prompts (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    function_name TEXT NOT NULL,
    client TEXT,
    args TEXT NOT NULL,
    message TEXT NOT NULL,
    schema TEXT,
    session_scoped INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    answer TEXT,
    answered_at TEXT
  );
  CREATE INDEX IF NOT EXISTS prompts_by_state ON prompts(state, expires_at);
  CREATE TABLE IF NOT EXISTS studio_presence (
    id TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    heartbeat_at INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS run_approvals (
    run_id TEXT PRIMARY KEY,
    approval TEXT NOT NULL
  );
  `,
  // Schemas without "$schema" were read by draft-07 rules before JSON Schema 2020-12 became the
  // default. One with an array "items" (a draft-07 tuple, invalid in 2020-12) can only come from
  // then: it is stamped draft-07 so it keeps validating as it did. Revisions too, for a restore.
  `
  ${['functions', 'revisions'].flatMap((table) => ['inputSchema', 'outputSchema'].map((field) => stampDraft07(table, field))).join('\n')}
  `,  // OAuth 2 credentials: what is not secret (the server, the client id, expiry, scopes, account).
  // The tokens are in the keychain. generation moves on each new access token; lease_* is the
  // refresh lock that processes sharing the folder take, so only one asks the server.
  `
  CREATE TABLE IF NOT EXISTS oauth_credentials (
    name TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'connected',
    expires_at INTEGER,
    refresh_at INTEGER,
    scopes TEXT NOT NULL DEFAULT '',
    account TEXT,
    generation INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until INTEGER
  );
  `,
];

export const DATABASE_FILE = 'callable.db';
/** The schema version this build writes (the number of migrations). */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** How long a write waits for another process's write lock before giving up with `busyError`. */
export const BUSY_TIMEOUT_MS = 5000;

/**
 * Opens (creating if needed) the studio database in `dataDir`. Safe to call from several
 * processes at once: WAL lets readers and one writer share the file, and the busy timeout makes
 * a second writer wait instead of failing.
 * Every way the folder or the file can be unusable (a file where the folder should be, no write
 * permission, a corrupt or read-only database) ends in one StudioError that names it and the fix.
 * With `create: false`, a missing folder is an error instead of being created.
 */
export function openDatabase(dataDir: string, options: { create?: boolean } = {}): Db {
  ensureDataDir(dataDir, options.create ?? true);
  const file = join(dataDir, DATABASE_FILE);
  const readOnly = readOnlyFile(file);
  if (readOnly) throw readOnly;
  let db: Db | undefined;
  try {
    db = new Database(file, { timeout: BUSY_TIMEOUT_MS });
    db.pragma('journal_mode = WAL');
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma('foreign_keys = ON');
    db.pragma('synchronous = NORMAL');
    // After a checkpoint resets the WAL, the file is cut back to this size instead of staying at its peak.
    db.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT_BYTES}`);
    checkWritable(db);
    runIntegrityCheck(db, file);
    migrate(db);
    watchSchema(db);
    return db;
  } catch (error) {
    db?.close();
    throw openFailure(error, dataDir, file);
  }
}

const CHOOSE_ANOTHER = 'choose another data folder (--data-dir or CALLABLE_DATA_DIR)';

function errnoOf(error: unknown): string {
  return (error as NodeJS.ErrnoException | undefined)?.code ?? 'unknown error';
}

/**
 * Creates the data folder one level at a time (fs.mkdir's recursive mode retries forever under
 * /proc), so any error ends it at once and names the folder at fault.
 */
function ensureDataDir(dataDir: string, create: boolean): void {
  const missing: string[] = [];
  for (let dir = dataDir; ; dir = dirname(dir)) {
    let isDirectory: boolean;
    try {
      isDirectory = statSync(dir).isDirectory();
    } catch (error) {
      const code = errnoOf(error);
      if (code === 'ENOENT' && dirname(dir) !== dir) {
        missing.unshift(dir);
        continue;
      }
      if (code === 'ENOTDIR') continue;
      throw new StudioError('bad_input', `cannot use the data folder ${dataDir}: ${dir} cannot be read (${code}); ${CHOOSE_ANOTHER}`);
    }
    if (!isDirectory) {
      const what = dir === dataDir ? `${dataDir} is a file, not a folder` : `${dir} is a file, so ${dataDir} cannot be a folder inside it`;
      throw new StudioError('bad_input', `cannot use the data folder: ${what}; ${CHOOSE_ANOTHER}`);
    }
    break;
  }
  if (missing.length === 0) return;
  if (!create) throw new StudioError('not_found', `the data folder ${dataDir} does not exist; check the path, or ${CHOOSE_ANOTHER}`);
  for (const dir of missing) {
    try {
      mkdirSync(dir);
    } catch (error) {
      const code = errnoOf(error);
      if (code === 'EEXIST') continue;
      if (isDiskFull(error, dirname(dir))) throw diskFullError(dirname(dir));
      const why = code === 'EACCES' || code === 'EPERM' || code === 'EROFS' ? `${dirname(dir)} is not writable` : `creating ${dir} failed`;
      throw new StudioError('bad_input', `cannot create the data folder ${dataDir}: ${why} (${code}); ${CHOOSE_ANOTHER}`);
    }
  }
}

/** The database's files, and what each is to a user. */
function databaseFiles(file: string): Array<{ path: string; what: string; role: string }> {
  return [
    { path: file, what: 'the database', role: 'every run is recorded in it' },
    { path: `${file}-wal`, what: "the database's write-ahead log", role: 'every write goes through it' },
    { path: `${file}-shm`, what: "the database's shared-memory index", role: 'every write goes through it' },
  ];
}

/**
 * The first of what the engine writes (the database, its -wal, its -shm, the folder they are made in)
 * that cannot be written, as the one line that names it and the fix. access(2) opens no descriptor:
 * a plain open and close of any of the files would release every lock SQLite holds on it in this process.
 */
function readOnlyFile(file: string): StudioError | undefined {
  for (const { path, what, role } of databaseFiles(file)) {
    try {
      accessSync(path, constants.R_OK | constants.W_OK);
    } catch (error) {
      const code = errnoOf(error);
      if (code === 'ENOENT') continue;
      if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
        return new StudioError('bad_input', `${what} ${path} is read-only (${code}), and ${role}; make it writable (chmod u+w, chattr -i) or ${CHOOSE_ANOTHER}`, { path });
      }
      return new StudioError('bad_input', `cannot open ${what} ${path} (${code}); ${CHOOSE_ANOTHER}`, { path });
    }
  }
  const folder = dirname(file);
  try {
    accessSync(folder, constants.W_OK);
  } catch (error) {
    const code = errnoOf(error);
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      return new StudioError(
        'bad_input',
        `cannot open ${file} for writing: the data folder ${folder} is read-only (${code}), and the database creates its -wal and -shm files there; make the folder writable (chattr -i, remount rw) or ${CHOOSE_ANOTHER}`,
        { path: folder },
      );
    }
  }
  return undefined;
}

/**
 * Asks SQLite whether this connection can write, before anything runs: a file it could only open
 * read-only (the database, its -wal or -shm) fails every write, after a run already happened. Another
 * process writing just now is no answer either way: that is left to the first write.
 */
function checkWritable(db: Db): void {
  setBusyTimeout(db, 0);
  try {
    db.exec('BEGIN IMMEDIATE');
    db.exec('ROLLBACK');
  } catch (error) {
    if (!isBusy(error)) throw error;
  } finally {
    setBusyTimeout(db, BUSY_TIMEOUT_MS);
  }
}

function openFailure(error: unknown, dataDir: string, file: string): unknown {
  if (error instanceof StudioError) return error;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return error;
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return busyError(file);
  if (isDiskFull(error, dataDir)) return diskFullError(dataDir);
  const reason = `${code}: ${(error as Error).message}`;
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
    return corruptDatabaseError(file, reason);
  }
  if (code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_READONLY') || code === 'SQLITE_PERM') {
    const readOnly = readOnlyFile(file);
    if (readOnly) return readOnly;
    return new StudioError('bad_input', `cannot open ${file} for writing (${reason}); make ${dataDir} and its files writable, or ${CHOOSE_ANOTHER}`);
  }
  return new StudioError('bad_input', `cannot open the database ${file} (${reason})`);
}

/** The schema each open connection was migrated to; every write checks it still holds (see writeTransaction). */
const schemas = new WeakMap<Db, { expected: number; read: Database.Statement }>();

function watchSchema(db: Db): void {
  schemas.set(db, { expected: MIGRATIONS.length, read: db.prepare('PRAGMA user_version').pluck() });
}

/**
 * Throws `schema_changed` when another process (another version of Callable Studio) moved the
 * database's schema since this connection migrated it: rows of the old shape must not be written.
 * A cheap read (the database header); writeTransaction calls it under the write lock.
 */
export function checkSchema(db: Db): void {
  const schema = schemas.get(db);
  if (!schema) return;
  const found = schema.read.get() as number;
  if (found !== schema.expected) throw schemaChangedError(db.name, schema.expected, found);
}

function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new StudioError('bad_input', `the database was written by a newer Callable Studio (schema ${current}, this build knows ${MIGRATIONS.length}); update the app`);
  }
  if (current === MIGRATIONS.length) return;
  backupBeforeMigration(db, db.name, current, MIGRATIONS.length);
  // BEGIN IMMEDIATE takes the write lock first, so two processes starting together migrate once.
  writeTransaction(db, () => {
    const now = db.pragma('user_version', { simple: true }) as number;
    for (let i = now; i < MIGRATIONS.length; i++) db.exec(MIGRATIONS[i]!);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  });
}

/**
 * Runs `fn` as one write transaction that begins IMMEDIATE: it takes the write lock before its first
 * statement, so while another process writes it waits (up to BUSY_TIMEOUT_MS) instead of failing.
 * A deferred transaction whose first statement is a read cannot wait: SQLite refuses its upgrade to a
 * writer at once (SQLITE_BUSY). Every write goes through here, single statements included, so a lock
 * held past the timeout is always the one line of `busyError`. Inside another transaction it is a
 * savepoint of it.
 */
export function writeTransaction<T>(db: Db, fn: () => T, options: WriteOptions = {}): T {
  const outer = !db.inTransaction;
  // Under the write lock, before the first write: a schema moved by another version refuses the write.
  const body = outer && schemas.has(db)
    ? (): T => {
        checkSchema(db);
        return fn();
      }
    : fn;
  const busyMs = outer ? options.busyTimeoutMs : undefined;
  if (busyMs !== undefined) setBusyTimeout(db, busyMs);
  try {
    return runImmediate(db, body);
  } catch (error) {
    throw writeFailure(db, error, busyMs ?? BUSY_TIMEOUT_MS, options.writing);
  } finally {
    if (busyMs !== undefined) setBusyTimeout(db, BUSY_TIMEOUT_MS);
  }
}

/**
 * One better-sqlite3 transaction function per connection, made once (making one per write cost as
 * much as the BEGIN and COMMIT it runs): the body is its argument. Called inside a transaction (a
 * write within a write), it is a savepoint of it.
 */
const transactions = new WeakMap<Db, Database.Transaction<(body: () => unknown) => unknown>>();

function runImmediate<T>(db: Db, body: () => T): T {
  let tx = transactions.get(db);
  if (!tx) transactions.set(db, (tx = db.transaction((fn: () => unknown) => fn())));
  return tx.immediate(body) as T;
}

/** Statements prepared once per connection (preparing one cost more than running it): see `prepared`. */
const statements = new WeakMap<Db, Map<string, Database.Statement>>();

/**
 * `db.prepare(sql)`, kept for the connection's life: for the reads and writes that run again and
 * again (after every run, on every call). `mode` is fixed when it is prepared.
 */
export function prepared(db: Db, sql: string, mode?: 'pluck' | 'raw'): Database.Statement {
  let bySql = statements.get(db);
  if (!bySql) statements.set(db, (bySql = new Map()));
  const key = mode === undefined ? sql : `${mode}\u0000${sql}`;
  let statement = bySql.get(key);
  if (!statement) {
    statement = db.prepare(sql);
    if (mode === 'pluck') statement.pluck();
    else if (mode === 'raw') statement.raw();
    bySql.set(key, statement);
  }
  return statement;
}

/** The audit sets and resets it around every write: prepared once per connection and timeout, its row plucked (making it an object cost more than the pragma). */
function setBusyTimeout(db: Db, ms: number): void {
  prepared(db, `PRAGMA busy_timeout = ${Math.max(0, Math.trunc(ms))}`, 'pluck').get();
}

export interface WriteOptions {
  /**
   * How long to wait for another process's write lock (default BUSY_TIMEOUT_MS). Writes off the
   * request path (the audit) wait a few milliseconds and try again later, so the event loop is never
   * held for long; the busy timeout blocks the thread while it waits.
   */
  busyTimeoutMs?: number;
  /** What is written, to name it when SQLite finds the pages it touches damaged. */
  writing?: string;
}

/** The one StudioError a failed write becomes: busy, disk full, read-only; anything else (a bug) stays as it is. */
function writeFailure(db: Db, error: unknown, waitedMs: number, writing?: string): unknown {
  if (error instanceof StudioError) return error;
  if (isBusy(error)) return busyError(db.name, waitedMs);
  if (isDiskFull(error, dirname(db.name))) return diskFullError(dirname(db.name));
  if (isReadOnly(error)) return readOnlyError(db.name, error);
  const damaged = corruptionOf(error, db.name, writing);
  if (damaged) return damaged;
  // A file made read-only under an open connection (chattr +i) is an I/O error to SQLite: find which,
  // with access(2), which opens no descriptor (closing one would drop this connection's locks).
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && code.startsWith('SQLITE_IOERR')) {
    for (const { path } of databaseFiles(db.name)) {
      try {
        accessSync(path, constants.R_OK | constants.W_OK);
      } catch (probe) {
        if (isReadOnly(probe)) return readOnlyError(path, probe);
      }
    }
  }
  return error;
}

/**
 * SQLite reporting damage (SQLITE_CORRUPT, SQLITE_NOTADB) after the database was opened, as the same
 * line as at open: what is damaged, that the file was left as it is, and the command that restores the
 * newest backup. `what` names the part that was being read or written; undefined for any other error.
 */
export function corruptionOf(error: unknown, file: string, what = 'a page SQLite read'): StudioError | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !(code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB')) return undefined;
  const damaged = corruptDatabaseError(file, `${what} is damaged: ${code}: ${(error as Error).message}`);
  // Marked, so that what holds data for the database (the run ledger) knows waiting will not help.
  return new StudioError(damaged.code, damaged.message, { ...damaged.details, damaged: code });
}

/** SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT, SQLITE_BUSY_TIMEOUT…), and SQLITE_LOCKED. */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/** The one line a user sees when another process held the write lock longer than the busy timeout. */
export function busyError(file: string, waitedMs = BUSY_TIMEOUT_MS): StudioError {
  const waited = waitedMs >= 1000 ? `${waitedMs / 1000} s` : `${waitedMs} ms`;
  return new StudioError('database_busy', `the database ${file} is busy: another Callable Studio process is writing (waited ${waited} for it); try again`);
}

/** The size the `-wal` file is cut back to whenever SQLite resets it (journal_size_limit). */
export const JOURNAL_SIZE_LIMIT_BYTES = 4 * 1024 * 1024;
/** How long nothing must have been written before an idle checkpoint runs. */
export const CHECKPOINT_IDLE_MS = 1000;
/** How long to wait before trying again when a checkpoint could not finish (a reader held a snapshot). */
export const CHECKPOINT_RETRY_MS = 3000;

export interface IdleCheckpointer {
  /** Call after every write: the checkpoint runs once writes have been quiet for CHECKPOINT_IDLE_MS. */
  wrote(): void;
  stop(): void;
}

/**
 * Empties the `-wal` file (wal_checkpoint(TRUNCATE)) once writes have been quiet, so a WAL that grew
 * while another process held a read snapshot does not stay at its peak. Runs on an unref'd timer, never
 * on a request, without waiting for locks (busy_timeout 0 for the checkpoint): when a reader or another
 * writer is in the way it gives up at once and tries again CHECKPOINT_RETRY_MS later, until it finishes.
 */
export function idleCheckpointer(db: Db, timing: { idleMs?: number; retryMs?: number } = {}): IdleCheckpointer {
  const idleMs = timing.idleMs ?? CHECKPOINT_IDLE_MS;
  const retryMs = timing.retryMs ?? CHECKPOINT_RETRY_MS;
  let lastWrite = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const schedule = (ms: number): void => {
    if (stopped || timer) return;
    timer = setTimeout(tick, ms);
    timer.unref();
  };
  const tick = (): void => {
    timer = undefined;
    if (stopped || !db.open) return;
    const quiet = Date.now() - lastWrite;
    if (quiet < idleMs) return schedule(idleMs - quiet);
    if (db.inTransaction) return schedule(retryMs);
    if (!checkpointTruncate(db)) schedule(retryMs);
  };
  return {
    wrote() {
      lastWrite = Date.now();
      schedule(idleMs);
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}

/** One wal_checkpoint(TRUNCATE) that never waits for a lock; true when the WAL was emptied. */
export function checkpointTruncate(db: Db): boolean {
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  try {
    db.pragma('busy_timeout = 0');
    const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number; log: number; checkpointed: number }>;
    return result !== undefined && result.busy === 0;
  } catch {
    return false;
  } finally {
    try {
      db.pragma(`busy_timeout = ${timeout}`);
    } catch {
      // The connection is closing; nothing to restore.
    }
  }
}

export function nowIso(): string {
  return new Date().toISOString();
}
