// Real file-system faults for tests: a small tmpfs to fill (a full disk), a read-only bind mount,
// an immutable file or folder (chattr +i: root ignores chmod). Everything a test mounts or marks is
// undone after it, whatever happened, and at the latest when the test process exits.
import { spawn, spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

function sh(command: string, args: string[]): { ok: boolean; output: string } {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`.trim() };
}

/** Why this process cannot mount a tmpfs (not root, no CAP_SYS_ADMIN, no mount(8)), or undefined when it can. */
function probeMounts(): string | undefined {
  if (process.getuid?.() !== 0) return 'not running as root';
  const dir = mkdtempSync(join(tmpdir(), 'callable-mount-probe-'));
  try {
    const mounted = sh('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir]);
    if (!mounted.ok) return `mount -t tmpfs failed: ${mounted.output}`;
    sh('umount', [dir]);
    const attr = sh('chattr', ['-V', '-i', dir]);
    if (!attr.ok) return `chattr failed: ${attr.output}`;
    return undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The reason mount-based tests skip, or undefined when they can run (root with mount and chattr). */
export const cannotMount: string | undefined = probeMounts();

/** Why `immutable()` cannot work here (no chattr, or a filesystem without the flag), or undefined when it can. */
function probeImmutable(): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'callable-chattr-probe-'));
  try {
    const set = sh('chattr', ['+i', dir]);
    if (!set.ok) return `chattr +i failed: ${set.output}`;
    sh('chattr', ['-i', dir]);
    return undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The reason tests of immutable files skip, or undefined when they can run. */
export const cannotMakeImmutable: string | undefined = probeImmutable();

const undo: Array<() => void> = [];

/**
 * Undoes what this module did (mounts, chattr +i). It runs after each test by itself; a test file whose
 * own cleanup removes folders this module marked registers it again after that cleanup, so it runs first.
 */
export function undoFaults(): void {
  for (const step of undo.splice(0).reverse()) {
    try {
      step();
    } catch {
      // Best effort: the next steps (unmounts) must still run.
    }
  }
}

afterEach(undoFaults);
process.on('exit', undoFaults);

function must(command: string, args: string[]): void {
  const r = sh(command, args);
  if (!r.ok) throw new Error(`${command} ${args.join(' ')} failed: ${r.output}`);
}

export interface SmallDisk {
  /** The mount point: an empty tmpfs of the requested size. */
  dir: string;
  /** Fills every free byte with one file (until ENOSPC); returns its path. */
  fill(): string;
  /** Deletes the filler, so there is space again. */
  unfill(): void;
}

/** A tmpfs of `size` (mount -o size=…), unmounted after the test. */
export function smallDisk(size = '4m'): SmallDisk {
  const dir = mkdtempSync(join(tmpdir(), 'callable-disk-'));
  must('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  undo.push(() => rmSync(dir, { recursive: true, force: true }));
  undo.push(() => must('umount', ['-l', dir]));
  const filler = join(dir, 'filler');
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      try {
        const chunk = Buffer.alloc(64 * 1024, 1);
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      } finally {
        closeSync(fd);
      }
      return filler;
    },
    unfill() {
      unlinkSync(filler);
    },
  };
}

/** A read-only bind mount of `source` (mount --bind, then remount,bind,ro), unmounted after the test. */
export function readOnlyView(source: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'callable-ro-'));
  undo.push(() => rmSync(dir, { recursive: true, force: true }));
  must('mount', ['--bind', source, dir]);
  undo.push(() => must('umount', ['-l', dir]));
  must('mount', ['-o', 'remount,bind,ro', dir]);
  return dir;
}

/** chattr +i on `path` (a file or a folder: nothing, root included, may change it), undone after the test. */
export function immutable(path: string): void {
  must('chattr', ['+i', path]);
  undo.push(() => must('chattr', ['-i', path]));
}

/** A temporary folder removed after the test, once what fsFaults did to it (chattr +i, mounts) is undone. */
export function faultDir(prefix = 'callable-fault-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // First in, last out: removed after every unmount and chattr -i.
  undo.unshift(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Another process (a plain `node` with better-sqlite3, nothing of ours) that takes the database's
 * write lock (BEGIN IMMEDIATE and a write) and holds it for `holdMs`, or until `release()`. Resolves
 * once it holds it; `released` resolves with the time (Date.now()) it let go. Killed after the test if still running.
 */
export async function holdWriteLock(dbFile: string, holdMs: number, cwd: string): Promise<{ released: Promise<number>; release: () => void }> {
  const child = spawn(process.execPath, ['-e', LOCK_HOLDER], { cwd, env: { ...process.env, LOCK_DB: dbFile, LOCK_HOLD_MS: String(holdMs) }, stdio: ['pipe', 'pipe', 'pipe'] });
  undo.push(() => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')));
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const seen = (pattern: RegExp): Promise<RegExpExecArray> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const m = pattern.exec(out);
        if (m) resolve(m);
      };
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        check();
      });
      child.on('exit', (code) => {
        check();
        reject(new Error(`the lock holder exited (${code}) before ${pattern}:\n${out}${err}`));
      });
    });
  const released = seen(/released (\d+)/).then((m) => Number(m[1]));
  released.catch(() => {});
  await seen(/locked/);
  return { released, release: () => child.stdin.end('release\n') };
}

const LOCK_HOLDER = `
const Database = require('better-sqlite3');
const db = new Database(process.env.LOCK_DB);
db.exec('BEGIN IMMEDIATE');
db.prepare("INSERT OR REPLACE INTO settings (key, value) VALUES ('lock_test', ?)").run(String(Date.now()));
process.stdout.write('locked\\n');
const release = () => { if (!db.inTransaction) return; db.exec('COMMIT'); db.close(); process.stdout.write('released ' + Date.now() + '\\n'); process.exit(0); };
setTimeout(release, Number(process.env.LOCK_HOLD_MS));
process.stdin.on('data', release);
`;

/**
 * Leaves `dbFile`'s -wal and -shm behind as a crash does: another process (a plain `node` with
 * better-sqlite3) writes to the database and is killed (SIGKILL) before it can close.
 */
export function crashedWriter(dbFile: string, cwd: string): void {
  const killed = spawnSync(process.execPath, ['-e', CRASHED_WRITER], { cwd, env: { ...process.env, CRASH_DB: dbFile }, encoding: 'utf8' });
  if (killed.signal !== 'SIGKILL') throw new Error(`the crashing writer ended otherwise (${killed.status ?? killed.signal}): ${killed.stderr}`);
}

const CRASHED_WRITER = `
const Database = require('better-sqlite3');
const db = new Database(process.env.CRASH_DB);
db.prepare("INSERT OR REPLACE INTO settings (key, value) VALUES ('crash_test', ?)").run(String(Date.now()));
process.kill(process.pid, 'SIGKILL');
`;

/** Where the root page of the table or index `name` of the database `dbFile` is in the file, once its WAL is checkpointed into it. */
function rootPage(dbFile: string, type: 'table' | 'index', name: string): { offset: number; pageSize: number } {
  const db = new Database(dbFile);
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
    const root = db.prepare('SELECT rootpage FROM sqlite_schema WHERE type = ? AND name = ?').pluck().get(type, name) as number | undefined;
    if (root === undefined) throw new Error(`no ${type} ${name} in ${dbFile}`);
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    return { offset: (root - 1) * pageSize, pageSize };
  } finally {
    db.close();
  }
}

/**
 * Writes garbage over the root page of the run history (the `runs` table's b-tree) of the closed
 * database `dbFile`, as a bad sector or a stray write would: the page is found from sqlite_schema
 * and the page size, and SQLite reports SQLITE_CORRUPT whenever it reads it.
 */
export function damageRunHistory(dbFile: string): void {
  const { offset, pageSize } = rootPage(dbFile, 'table', 'runs');
  const fd = openSync(dbFile, 'r+');
  try {
    writeSync(fd, randomBytes(pageSize).fill(0xff, 0, 8), 0, pageSize, offset);
  } finally {
    closeSync(fd);
  }
}

/**
 * Points every entry of the index `index` (a single leaf page: a small table's) of the closed database
 * `dbFile` at a row that does not exist, by rewriting the row id each entry ends with. Every page stays
 * well-formed, so the quick_check made at open finds nothing (it does not compare an index with its
 * table); SQLite reports SQLITE_CORRUPT when a read looks a row up through the index.
 */
export function misdirectIndex(dbFile: string, index: string): void {
  const { offset, pageSize } = rootPage(dbFile, 'index', index);
  const fd = openSync(dbFile, 'r+');
  try {
    const page = Buffer.alloc(pageSize);
    readSync(fd, page, 0, pageSize, offset);
    if (page[0] !== 0x0a) throw new Error(`index ${index} is more than one leaf page (page type ${page[0]})`);
    const varint = (at: number): [value: number, next: number] => {
      let value = 0;
      for (let i = 0; i < 8; i++) {
        const byte = page[at + i]!;
        value = value * 128 + (byte & 0x7f);
        if (byte < 0x80) return [value, at + i + 1];
      }
      throw new Error('varint too long for a test index');
    };
    for (let cell = 0; cell < page.readUInt16BE(3); cell++) {
      // A cell: payload size, then the record: header size, one serial type per column (the row id last), the values.
      const [, payloadAt] = varint(page.readUInt16BE(8 + 2 * cell));
      const [headerSize] = varint(payloadAt);
      const types: Array<{ type: number; at: number }> = [];
      for (let at = varint(payloadAt)[1]; at < payloadAt + headerSize; ) {
        const [type, next] = varint(at);
        types.push({ type, at });
        at = next;
      }
      const bodySize = (type: number): number => (type >= 12 ? Math.floor((type - 12) / 2) : [0, 1, 2, 3, 4, 6, 8, 8, 0, 0][type]!);
      const rowid = types.at(-1)!;
      const valueAt = payloadAt + headerSize + types.slice(0, -1).reduce((sum, t) => sum + bodySize(t.type), 0);
      if (rowid.type === 9 || rowid.type === 8) page[rowid.at] = 8 + 9 - rowid.type;
      else if (rowid.type >= 1 && rowid.type <= 6) page.fill(0, valueAt, valueAt + bodySize(rowid.type)).writeUInt8(0x80, valueAt);
      else throw new Error(`unexpected row id serial type ${rowid.type}`);
    }
    writeSync(fd, page, 0, pageSize, offset);
  } finally {
    closeSync(fd);
  }
}
