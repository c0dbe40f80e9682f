// @ts-check
// FileReader and ProgressEvent (W3C File API §6, XHR's ProgressEvent). Not in the WinterTC minimum
// common API, but Deno and browsers have it and older code reads blobs with it. A read takes the
// blob's bytes through blob.js (never its replaceable methods) and reports in tasks, as the spec's
// read operation does: loadstart, progress (when there were bytes), then load or error, and loadend.
import {
  ReflectApply,
  ObjectDefineProperty,
  PromiseThen,
  StringFromCharCode,
  StringIndexOf,
  StringReplace,
  StringSlice,
  StringSplit,
  StringToLowerCase,
  StringTrim,
  SymbolToStringTag,
  TypeErrorCtor,
  TypedArrayBuffer,
  call,
  str,
} from '../intrinsics.js';
import { start } from '../host.js';
import { encodingOf, streamDecoder } from '../encoding.js';
import { bytesToBase64 } from '../base64.js';
import { events, fireEvent, getEventHandler, setEventHandler } from './events.js';
import { domException, needArgs } from './domException.js';
import { isBlob, blobBytes, blobType, copyRange } from './blob.js';

const EMPTY = 0;
const LOADING = 1;
const DONE = 2;
const HANDLERS = /** @type {const} */ (['loadstart', 'progress', 'load', 'abort', 'error', 'loadend']);

/** Runs `fn` in a task of its own, after the current one and its microtasks (what setTimeout(fn, 0) does). @param {() => void} fn */
const queueTask = (fn) => {
  call(PromiseThen, start('sleep', 0), fn, () => {});
};

/** The charset parameter of a MIME type such as 'text/plain;charset=latin1', or undefined. @param {string} type */
const charsetOf = (type) => {
  const params = call(StringSplit, type, ';');
  for (let i = 1; i < params.length; i++) {
    const param = /** @type {string} */ (params[i]);
    const eq = call(StringIndexOf, param, '=');
    if (eq < 0 || call(StringToLowerCase, call(StringTrim, call(StringSlice, param, 0, eq))) !== 'charset') continue;
    return call(StringReplace, call(StringTrim, call(StringSlice, param, eq + 1)), /^"|"$/g, '');
  }
  return undefined;
};

/** The Encoding standard's "get an encoding": the encoding a label names, or undefined. @param {string | undefined} label */
const encodingOrNone = (label) => {
  if (label === undefined) return undefined;
  try {
    return encodingOf(label, 'FileReader');
  } catch {
    return undefined;
  }
};

/**
 * The Encoding standard's "decode": a byte order mark picks the encoding (and is dropped), else `fallback`.
 * @param {Uint8Array} b @param {string} fallback
 */
const decode = (b, fallback) => {
  let encoding = fallback;
  if (b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) encoding = 'utf-8';
  else if (b.length >= 2 && b[0] === 0xfe && b[1] === 0xff) encoding = 'utf-16be';
  else if (b.length >= 2 && b[0] === 0xff && b[1] === 0xfe) encoding = 'utf-16le';
  return streamDecoder(encoding, false, false)(b, true);
};

/** Each byte as one code unit (readAsBinaryString). @param {Uint8Array} b */
const binaryString = (b) => {
  let out = '';
  for (let i = 0; i < b.length; i += 8192) out += ReflectApply(StringFromCharCode, null, copyRange(b, i, i + 8192 < b.length ? i + 8192 : b.length));
  return out;
};

/**
 * The spec's "package data": the read's result in the form its method asked for.
 * @param {Uint8Array} bytes @param {'ArrayBuffer' | 'BinaryString' | 'Text' | 'DataURL'} kind @param {string} type @param {string | undefined} label
 */
const packageData = (bytes, kind, type, label) => {
  if (kind === 'ArrayBuffer') return call(TypedArrayBuffer, copyRange(bytes, 0, bytes.length));
  if (kind === 'BinaryString') return binaryString(bytes);
  if (kind === 'DataURL') return `data:${type === '' ? 'application/octet-stream' : type};base64,${bytesToBase64(bytes)}`;
  return decode(bytes, encodingOrNone(label) ?? encodingOrNone(charsetOf(type)) ?? 'utf-8');
};

/** @type {(value: unknown) => boolean} */
let isReader;

// The classes are made on first use of either global: a plain call never pays for them.
const make = () => {
  const { Event, EventTarget } = events();

  class ProgressEvent extends Event {
    #lengthComputable;
    #loaded;
    #total;
    /** @param {unknown} type @param {any} [eventInitDict] */
    constructor(type, eventInitDict) {
      needArgs(arguments.length, 1, 'ProgressEvent');
      super(type, eventInitDict);
      const init = eventInitDict === undefined || eventInitDict === null ? {} : eventInitDict;
      this.#lengthComputable = !!init.lengthComputable;
      this.#loaded = init.loaded === undefined ? 0 : +init.loaded || 0;
      this.#total = init.total === undefined ? 0 : +init.total || 0;
    }
    get lengthComputable() {
      return this.#lengthComputable;
    }
    get loaded() {
      return this.#loaded;
    }
    get total() {
      return this.#total;
    }
  }

  class FileReader extends EventTarget {
    #state = EMPTY;
    /** @type {string | ArrayBuffer | null} */
    #result = null;
    /** @type {unknown} */
    #error = null;
    /** The read in progress: its tasks run only while it is still this one (abort() and a new read end it). @type {object | null} */
    #read = null;

    /** @param {unknown} blob @param {'ArrayBuffer' | 'BinaryString' | 'Text' | 'DataURL'} kind @param {string | undefined} label */
    #start(blob, kind, label) {
      if (!isBlob(blob)) throw new TypeErrorCtor(`FileReader.readAs${kind}: the argument must be a Blob or File`);
      if (this.#state === LOADING) throw domException('FileReader: a read is already in progress; wait for loadend or call abort() first.', 'InvalidStateError');
      this.#state = LOADING;
      this.#result = null;
      this.#error = null;
      const read = {};
      this.#read = read;
      // The blob is immutable: its bytes now are the bytes the read gives.
      const bytes = blobBytes(blob);
      const type = blobType(blob);
      const total = bytes.length;
      /** @param {string} name @param {number} loaded */
      const fire = (name, loaded) => fireEvent(this, new ProgressEvent(name, { __proto__: null, lengthComputable: true, loaded, total }));
      const current = () => this.#read === read;
      queueTask(() => {
        if (!current()) return;
        fire('loadstart', 0);
        if (total === 0) return queueTask(finish);
        queueTask(() => {
          if (!current()) return;
          fire('progress', total);
          queueTask(finish);
        });
      });
      const finish = () => {
        if (!current()) return;
        this.#read = null;
        this.#state = DONE;
        let failed = false;
        try {
          this.#result = packageData(bytes, kind, type, label);
        } catch (error) {
          failed = true;
          this.#error = error;
        }
        fire(failed ? 'error' : 'load', total);
        // A load or error listener may have started another read: this one's loadend is then not
        // fired. It comes in a task of its own, as a browser runs the microtasks a listener queued
        // (a promise it resolved) before the next listener; this sandbox dispatches without that.
        if (this.#state !== LOADING) queueTask(() => fire('loadend', total));
      };
    }

    /** @param {unknown} blob */
    readAsArrayBuffer(blob) {
      needArgs(arguments.length, 1, 'FileReader.readAsArrayBuffer');
      this.#start(blob, 'ArrayBuffer', undefined);
    }
    /** @param {unknown} blob */
    readAsBinaryString(blob) {
      needArgs(arguments.length, 1, 'FileReader.readAsBinaryString');
      this.#start(blob, 'BinaryString', undefined);
    }
    /** @param {unknown} blob @param {unknown} [encoding] */
    readAsText(blob, encoding = undefined) {
      needArgs(arguments.length, 1, 'FileReader.readAsText');
      this.#start(blob, 'Text', encoding === undefined ? undefined : str(encoding));
    }
    /** @param {unknown} blob */
    readAsDataURL(blob) {
      needArgs(arguments.length, 1, 'FileReader.readAsDataURL');
      this.#start(blob, 'DataURL', undefined);
    }
    abort() {
      if (this.#state === EMPTY || this.#state === DONE) {
        this.#result = null;
        return;
      }
      this.#state = DONE;
      this.#result = null;
      this.#read = null;
      const ev = (/** @type {string} */ name) => fireEvent(this, new ProgressEvent(name));
      ev('abort');
      if (this.#state !== LOADING) ev('loadend');
    }
    get readyState() {
      return this.#state;
    }
    get result() {
      return this.#result;
    }
    get error() {
      return this.#error;
    }
    static {
      isReader = (value) => value !== null && typeof value === 'object' && #state in value;
    }
  }

  for (const name of HANDLERS) {
    ObjectDefineProperty(FileReader.prototype, `on${name}`, {
      configurable: true,
      enumerable: true,
      get() {
        brand(this);
        return getEventHandler(this, name);
      },
      /** @param {unknown} value */
      set(value) {
        brand(this);
        setEventHandler(this, name, value);
      },
    });
  }
  for (const [name, value] of /** @type {const} */ ([['EMPTY', EMPTY], ['LOADING', LOADING], ['DONE', DONE]])) {
    const descriptor = { value, writable: false, enumerable: true, configurable: false };
    ObjectDefineProperty(FileReader, name, descriptor);
    ObjectDefineProperty(FileReader.prototype, name, descriptor);
  }
  /** The handler attributes' brand check. @param {unknown} self */
  const brand = (self) => {
    if (!isReader(self)) throw new TypeErrorCtor('FileReader: an event handler attribute was read or set on something that is not a FileReader');
  };
  ObjectDefineProperty(FileReader.prototype, SymbolToStringTag, { value: 'FileReader', configurable: true });
  ObjectDefineProperty(ProgressEvent.prototype, SymbolToStringTag, { value: 'ProgressEvent', configurable: true });
  return { FileReader, ProgressEvent };
};
/** @type {ReturnType<typeof make> | undefined} */
let made;
/** FileReader and ProgressEvent, made on first use. */
export const classes = () => (made ??= make());
