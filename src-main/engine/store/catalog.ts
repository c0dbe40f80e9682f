import type { Db } from './database.ts';

/**
 * `catalog_version` changes whenever any process changes what MCP servers list (functions,
 * profiles). Servers in every process poll it to send list-changed notifications.
 */
export function bumpCatalog(db: Db): void {
  db.prepare("INSERT INTO settings (key, value) VALUES ('catalog_version', '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1").run();
}

export function catalogVersion(db: Db): number {
  const row = db.prepare("SELECT value FROM settings WHERE key = 'catalog_version'").get() as { value: string } | undefined;
  return row ? Number(row.value) : 0;
}
