// What a failed database or file write means to a user: a full disk, a read-only folder, a schema
// another version changed. Each becomes one StudioError that names the path and what to do.
import { statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import { StudioError } from '../model/errors.ts';

/** Below this much free space, an I/O error from SQLite is taken for a full disk (SQLite reports some as SQLITE_IOERR_*). */
const NEARLY_FULL_BYTES = 64 * 1024;

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Free bytes for an unprivileged writer on the filesystem holding `dir`, or undefined when it cannot be told. */
export function freeBytes(dir: string): number | undefined {
  try {
    const stats = statfsSync(dir);
    return stats.bavail * stats.bsize;
  } catch {
    return undefined;
  }
}

/**
 * SQLITE_FULL and ENOSPC, and the I/O errors SQLite gives when it cannot grow a file (the `-shm`
 * index: SQLITE_IOERR_SHMSIZE; opening: SQLITE_CANTOPEN) while the disk holding `dir` is full.
 */
export function isDiskFull(error: unknown, dir: string): boolean {
  const code = codeOf(error);
  if (code === undefined) return false;
  if (code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT') return true;
  if (!code.startsWith('SQLITE_IOERR') && !code.startsWith('SQLITE_CANTOPEN')) return false;
  const free = freeBytes(dir);
  return free !== undefined && free < NEARLY_FULL_BYTES;
}

export function diskFullError(dir: string): StudioError {
  return new StudioError('disk_full', `the disk holding ${dir} is full (free some space and retry)`, { path: dir });
}

/** SQLITE_READONLY and its extended codes, and EROFS/EPERM/EACCES from the file system. */
export function isReadOnly(error: unknown): boolean {
  const code = codeOf(error);
  return code !== undefined && (code.startsWith('SQLITE_READONLY') || code === 'SQLITE_PERM' || code === 'EROFS' || code === 'EPERM' || code === 'EACCES');
}

/** A write refused after the database was opened writable: the folder or the file became read-only. */
export function readOnlyError(file: string, cause: unknown): StudioError {
  const code = codeOf(cause) ?? 'read-only';
  const fix = 'make the data folder and its files writable again (remount rw, chattr -i)';
  // SQLite's own words first when it refused (SQLITE_READONLY…), else the file that a probe found read-only.
  const message = code.startsWith('SQLITE_') ? `${(cause as Error).message} (${code}): ${file} is read-only; ${fix}` : `${file} has become read-only (${code}); ${fix}`;
  return new StudioError('read_only', message, { path: file });
}

/** The database's schema moved (another, newer Callable Studio migrated it) while this process had it open. */
export function schemaChangedError(file: string, expected: number, found: number): StudioError {
  return new StudioError(
    'schema_changed',
    `the database ${file} was changed by another version of Callable Studio (schema ${found}, this process writes schema ${expected}); this process stopped writing to it: restart it with the current version`,
    { path: file, expected, found },
  );
}

/**
 * A file write that failed with ENOSPC (or EDQUOT) as the one disk-full StudioError, naming the folder
 * of the file (from the error, else `folder`); undefined for anything else.
 */
export function diskFullOf(error: unknown, folder?: string): StudioError | undefined {
  const { code, path } = (error ?? {}) as { code?: unknown; path?: unknown };
  if (code !== 'ENOSPC' && code !== 'EDQUOT') return undefined;
  const where = typeof path === 'string' ? dirname(path) : folder;
  return where === undefined ? new StudioError('disk_full', 'the disk is full (free some space and retry)') : diskFullError(where);
}
