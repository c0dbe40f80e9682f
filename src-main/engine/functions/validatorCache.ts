// Saved functions' argument and result validators as ajv standalone code, kept in the user's
// private cache folder, so a served function's first call evaluates its validator and needs
// neither ajv nor compiling its schema (about 35 ms of that call otherwise).
//
// The code runs in the engine process, so where it is kept is chosen for that: not in the database
// or the data folder, which may come from elsewhere (`callable restore` takes any database file, a
// data folder may be copied or shared), but in a folder private to this user (0700, owned by them;
// one that is not is not used), written only by this code from ajv's output for the saved schema.
// An entry is named by the hash of what it was generated from (schema, ajv's version, options) and
// its first line holds the hash of that and its code: an entry that is damaged, cut short, edited
// or put under another schema's name is deleted and generated again, never evaluated. That hash
// catches accidents, not an attacker (anyone who can write the folder can compute it): the boundary
// is the folder's and each entry's ownership and mode, checked on every read (a link, a file with a
// second name, or one others may write is never read).
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FunctionRecord } from '../model/index.ts';
import { privateDir, userCacheFolder } from '../userCache.ts';
import { SchemaValidator, savedValidatorStores, type ValidatorStore } from './schemas.ts';

const HEADER = '// callable validator ';
/** Entries not used for this long are removed when a new one is written. */
const UNUSED_DAYS = 30;
const DAY_MS = 24 * 60 * 60 * 1000;

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The folder's entry for `key`, and the first line that proves it was written for `key` with `code`. */
const entryName = (key: string): string => `${sha256(key)}.js`;
const headerOf = (key: string, code: string): string => `${HEADER}${sha256(`${key}\0${code}`)}`;

/** Validators kept in a folder (see above). `folder` is asked on each use: it follows the environment. */
export class ValidatorCache implements ValidatorStore {
  readonly #folder: () => string | undefined;
  /** Folders checked to be private to this user (a folder that is not is never read). */
  readonly #checked = new Map<string, boolean>();
  readonly #pruned = new Set<string>();

  constructor(folder: string | (() => string | undefined)) {
    this.#folder = typeof folder === 'string' ? () => folder : folder;
  }

  /** The folder, when it exists or could be made and is private to this user. */
  folder(): string | undefined {
    const dir = this.#folder();
    if (dir === undefined) return undefined;
    let ok = this.#checked.get(dir);
    if (ok === undefined) {
      ok = privateDir(dir);
      this.#checked.set(dir, ok);
    }
    return ok ? dir : undefined;
  }

  read(key: string): string | undefined {
    const dir = this.folder();
    if (dir === undefined) return undefined;
    const file = path.join(dir, entryName(key));
    let content: string;
    let used: number;
    let fd: number | undefined;
    try {
      // The entry itself, not what a link points to, and only a file this user wrote and no one else may change.
      fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0));
      const stat = fs.fstatSync(fd);
      if (!ownEntry(stat)) {
        fs.rmSync(file, { force: true });
        return undefined;
      }
      used = stat.mtimeMs;
      content = fs.readFileSync(fd, 'utf8');
    } catch (error) {
      // ELOOP: a link where an entry should be; removed like any entry not written here.
      if ((error as NodeJS.ErrnoException).code === 'ELOOP') fs.rmSync(file, { force: true });
      return undefined;
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
    const newline = content.indexOf('\n');
    const code = content.slice(newline + 1);
    if (newline < 0 || content.slice(0, newline) !== headerOf(key, code)) {
      // Not what this code wrote for this key: never evaluated, and replaced by a fresh one.
      fs.rmSync(file, { force: true });
      return undefined;
    }
    // Its modification time says when it was last used (see prune).
    if (Date.now() - used > DAY_MS) {
      try {
        fs.utimesSync(file, new Date(), new Date());
      } catch {
        /* kept as it is */
      }
    }
    return code;
  }

  write(key: string, code: string): void {
    const dir = this.folder();
    if (dir === undefined) return;
    const name = entryName(key);
    const temporary = path.join(dir, `.${name}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      fs.writeFileSync(temporary, `${headerOf(key, code)}\n${code}`, { mode: 0o600, flag: 'wx' });
      fs.renameSync(temporary, path.join(dir, name));
    } catch {
      fs.rmSync(temporary, { force: true });
      return;
    }
    if (!this.#pruned.has(dir)) {
      this.#pruned.add(dir);
      prune(dir);
    }
  }
}

/** Removes entries (and temporary files left by a process that stopped) not used for UNUSED_DAYS. */
function prune(dir: string): void {
  const before = Date.now() - UNUSED_DAYS * DAY_MS;
  try {
    for (const name of fs.readdirSync(dir)) {
      if (!/^\.?[0-9a-f]{64}\.js(?:\.\d+\.[0-9a-f]{12}\.tmp)?$/.test(name)) continue;
      const file = path.join(dir, name);
      if ((fs.statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? before) < before) fs.rmSync(file, { force: true });
    }
  } catch {
    /* pruned next time */
  }
}

/** A regular file with one name, owned by this user and writable by no one else (Windows: the folder's ACL decides). */
function ownEntry(stat: fs.Stats): boolean {
  if (!stat.isFile() || stat.nlink !== 1) return false;
  if (process.platform === 'win32') return true;
  return stat.uid === process.getuid?.() && (stat.mode & 0o022) === 0;
}

let userCache: ValidatorCache | undefined;

/** The validators of this user (the folder follows XDG_CACHE_HOME as it is when used). */
export function userValidators(): ValidatorCache {
  userCache ??= new ValidatorCache(() => userCacheFolder('validators'));
  return userCache;
}

/** Marks a saved function's schemas as saved ones, kept in `cache`: their first check evaluates the stored code. */
export function useStoredValidators(record: FunctionRecord, cache: ValidatorStore = userValidators()): void {
  savedValidatorStores.set(record.inputSchema, cache);
  if (record.outputSchema) savedValidatorStores.set(record.outputSchema, cache);
}

let generator: SchemaValidator | undefined;

/** Generates and keeps a saved function's validators (when saved), unless `cache` has them already. */
export function keepValidators(record: FunctionRecord, cache: ValidatorCache = userValidators()): void {
  if (cache.folder() === undefined) return;
  generator ??= new SchemaValidator();
  generator.storeStored(record.inputSchema, `${record.name}'s inputSchema`, cache);
  if (record.outputSchema) generator.storeStored(record.outputSchema, `${record.name}'s outputSchema`, cache);
}
