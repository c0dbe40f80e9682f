// The guest script a sandbox host runs in every fresh context, compiled once per isolate.
import ivm from 'isolated-vm';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { privateDir } from '../engine/userCache.ts';
import { splitGuest } from './guestBundle.ts';

/**
 * The guest script (guestBundle.ts) and, once made, V8's code cache for it, shared by every isolate
 * of this process: with it an isolate compiles the script in well under a millisecond instead of
 * parsing it again (about 15 ms with the web platform bundled). The code cache is kept in the
 * guest's private cache folder when there is one, so the next host reads it instead of parsing.
 */
export class GuestCode {
  /** The guest text (guestBundle.ts): the script, then the parts it evaluates on first use. */
  readonly source: string;
  /** What each isolate compiles: the text without its parts. */
  readonly #script: string;
  /** Each part's source, one copy for all isolates: V8 reads it where it is (an external string). */
  readonly #parts: Array<ivm.ExternalCopy<string>>;
  /** Where the code cache is kept (undefined: only in memory). */
  readonly #file: string | undefined;
  #cachedData: ivm.ExternalCopy<ArrayBuffer> | undefined;
  #making: Promise<void> | undefined;

  constructor(source: string, cacheDir?: string) {
    this.source = source;
    const { script, parts } = splitGuest(source);
    this.#script = script;
    this.#parts = parts.map((part) => new ivm.ExternalCopy(`${part.source}\n//# sourceURL=${part.name}\n`));
    this.#file = cacheDir === undefined ? undefined : cacheFile(cacheDir, source);
  }

  /**
   * The host's answer to the guest's GUEST_PART_OP: part `index`'s source, copied into the isolate
   * as a string over this process's one copy (undefined for anything else).
   */
  part(index: unknown): ivm.Copy<string> | undefined {
    return typeof index === 'number' && Number.isInteger(index) && index >= 0 && index < this.#parts.length ? this.#parts[index]!.copyInto() : undefined;
  }

  /**
   * Reads the code cache from the cache folder (at once: a host is ready with it), else makes it in
   * a throwaway isolate on its own thread (the host's loop is not held) and stores it there.
   */
  async prepare(): Promise<void> {
    const stored = this.#file === undefined ? undefined : readStored(this.#file);
    // V8 checks it when an isolate compiles with it; one it refuses is made again (compileIn).
    if (stored !== undefined) this.#cachedData ??= stored;
    else await this.#make();
  }

  #make(): Promise<void> {
    this.#making ??= this.#produce().finally(() => (this.#making = undefined));
    return this.#making;
  }

  async #produce(): Promise<void> {
    let isolate: ivm.Isolate | undefined;
    try {
      isolate = new ivm.Isolate({ memoryLimit: 32 });
      const script = (await isolate.compileScript(this.#script, { filename: GUEST_FILENAME, produceCachedData: true })) as CompiledGuest;
      this.#cachedData ??= script.cachedData;
      if (this.#file !== undefined && script.cachedData) store(this.#file, script.cachedData.copy());
    } catch {
      /* no code cache: each isolate parses the script */
    } finally {
      isolate?.dispose();
    }
  }

  /** Whether isolates compile the script from the code cache now. */
  get cached(): boolean {
    return this.#cachedData !== undefined;
  }

  compileIn(isolate: ivm.Isolate): ivm.Script {
    const cachedData = this.#cachedData;
    const script = isolate.compileScriptSync(this.#script, { filename: GUEST_FILENAME, ...(cachedData ? { cachedData } : {}) }) as CompiledGuest;
    if (cachedData && script.cachedDataRejected) {
      if (this.#cachedData === cachedData) this.#cachedData = undefined;
      void this.#make();
    }
    return script;
  }
}

/** The guest script's name in stack traces. */
const GUEST_FILENAME = 'callable:prelude';
const CACHE_SUFFIX = '.v8cache';
const DIGEST_BYTES = 32;
/** Code caches of other guest versions kept beside the current one (another installed copy may use them). */
const OTHER_CACHES_KEPT = 3;
/** What isolated-vm sets on a script compiled with cachedData or produceCachedData (its types omit it). */
type CompiledGuest = ivm.Script & ivm.CachedDataResult & { cachedDataRejected?: boolean };

/** <sha256 of the script and V8's version>.v8cache in `dir`, when that folder is private to this user. */
function cacheFile(dir: string, source: string): string | undefined {
  if (!privateDir(dir)) return undefined;
  const key = createHash('sha256').update(source).update(`\0${process.versions.v8}`).digest('hex').slice(0, 40);
  return path.join(dir, `${key}${CACHE_SUFFIX}`);
}

/** The code cache in `file` when its first 32 bytes are the SHA-256 of the rest (a damaged file is never given to V8). */
function readStored(file: string): ivm.ExternalCopy<ArrayBuffer> | undefined {
  try {
    const bytes = fs.readFileSync(file);
    const data = bytes.subarray(DIGEST_BYTES);
    if (bytes.length <= DIGEST_BYTES || !createHash('sha256').update(data).digest().equals(bytes.subarray(0, DIGEST_BYTES))) return undefined;
    // Its modification time says when it was last used (see store).
    fs.utimesSync(file, new Date(), new Date());
    return new ivm.ExternalCopy(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer);
  } catch {
    return undefined;
  }
}

/** Writes the cache after its SHA-256, under a temporary name, then renames (a reader sees a whole file or none); drops the least recently used others. */
function store(file: string, bytes: ArrayBuffer): void {
  const dir = path.dirname(file);
  const temporary = path.join(dir, `.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const data = new Uint8Array(bytes);
    fs.writeFileSync(temporary, Buffer.concat([createHash('sha256').update(data).digest(), data]), { mode: 0o600, flag: 'wx' });
    fs.renameSync(temporary, file);
    const others = fs
      .readdirSync(dir)
      .filter((name) => name.endsWith(CACHE_SUFFIX) && path.join(dir, name) !== file)
      .map((name) => ({ name, used: fs.statSync(path.join(dir, name), { throwIfNoEntry: false })?.mtimeMs ?? 0 }))
      .sort((a, b) => b.used - a.used);
    for (const { name } of others.slice(OTHER_CACHES_KEPT)) fs.rmSync(path.join(dir, name), { force: true });
  } catch {
    fs.rmSync(temporary, { force: true });
  }
}
