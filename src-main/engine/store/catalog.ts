import type Database from 'better-sqlite3';
import type { Db } from './database.ts';

/**
 * Counters in `settings` a writer bumps in the transaction of its change, so every process on the
 * data folder can tell (store/changes.ts): `catalog_version` moves when what MCP servers list
 * changes (functions, profiles), `credentials_version` when credentials or their grants do.
 */
export type Counter = 'catalog_version' | 'credentials_version';

/** Reads one counter (its key the one parameter); no row reads as 0. */
export const COUNTER_SQL = 'SELECT value FROM settings WHERE key = ?';

export function bumpCounter(db: Db, key: Counter): void {
  db.prepare("INSERT INTO settings (key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1").run(key);
}

/** Prepared once per connection: a counter is read on every run and every response (preparing cost more than the read). */
const counterReads = new WeakMap<Db, Database.Statement>();

export function readCounter(db: Db, key: Counter): number {
  let read = counterReads.get(db);
  if (!read) counterReads.set(db, (read = db.prepare(COUNTER_SQL).pluck()));
  const value = read.get(key) as string | undefined;
  return value === undefined ? 0 : Number(value);
}

export function bumpCatalog(db: Db): void {
  bumpCounter(db, 'catalog_version');
}

export function catalogVersion(db: Db): number {
  return readCounter(db, 'catalog_version');
}
