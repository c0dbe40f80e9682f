// The guest script a sandbox host runs in every fresh context, compiled once per isolate.
import ivm from 'isolated-vm';

/**
 * The guest script (guestBundle.ts) and, once made, V8's code cache for it, shared by every isolate
 * of this process: with it an isolate compiles the script in well under a millisecond instead of
 * parsing it again (about 15 ms with the web platform bundled).
 */
export class GuestCode {
  readonly source: string;
  #cachedData: ivm.ExternalCopy<ArrayBuffer> | undefined;

  constructor(source: string) {
    this.source = source;
  }

  /** Makes the code cache in a throwaway isolate, on its own thread: the host's loop is not held. */
  async prepare(): Promise<void> {
    const isolate = new ivm.Isolate({ memoryLimit: 32 });
    try {
      const script = (await isolate.compileScript(this.source, { filename: GUEST_FILENAME, produceCachedData: true })) as CompiledGuest;
      this.#cachedData ??= script.cachedData;
    } catch {
      /* no code cache: each isolate parses the script */
    } finally {
      isolate.dispose();
    }
  }

  /** Whether isolates compile the script from the code cache now. */
  get cached(): boolean {
    return this.#cachedData !== undefined;
  }

  compileIn(isolate: ivm.Isolate): ivm.Script {
    const cachedData = this.#cachedData;
    const script = isolate.compileScriptSync(this.source, { filename: GUEST_FILENAME, ...(cachedData ? { cachedData } : {}) }) as CompiledGuest;
    if (cachedData && script.cachedDataRejected) this.#cachedData = undefined;
    return script;
  }
}

/** The guest script's name in stack traces. */
const GUEST_FILENAME = 'callable:prelude';
/** What isolated-vm sets on a script compiled with cachedData or produceCachedData (its types omit it). */
type CompiledGuest = ivm.Script & ivm.CachedDataResult & { cachedDataRejected?: boolean };
