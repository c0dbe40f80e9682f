import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

export type Db = Database.Database;

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
];

export const DATABASE_FILE = 'callable.db';

/**
 * Opens (creating if needed) the studio database in `dataDir`. Safe to call from several
 * processes at once: WAL lets readers and one writer share the file, and the busy timeout makes
 * a second writer wait instead of failing.
 */
export function openDatabase(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true });
  const db = new Database(join(dataDir, DATABASE_FILE), { timeout: 5000 });
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  db.pragma('synchronous = NORMAL');
  migrate(db);
  return db;
}

function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`the database was written by a newer Callable Studio (schema ${current}, this build knows ${MIGRATIONS.length}); update the app`);
  }
  if (current === MIGRATIONS.length) return;
  // BEGIN IMMEDIATE takes the write lock first, so two processes starting together migrate once.
  const run = db.transaction(() => {
    const now = db.pragma('user_version', { simple: true }) as number;
    for (let i = now; i < MIGRATIONS.length; i++) db.exec(MIGRATIONS[i]!);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  });
  run.immediate();
}

export function nowIso(): string {
  return new Date().toISOString();
}
