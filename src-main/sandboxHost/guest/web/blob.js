// @ts-check
// Blob and File (W3C File API). A blob's bytes are copied once when it is made and never handed
// out uncopied, so a blob is immutable whatever the function later does to the buffers it gave.
// Other guest modules read a blob through the exports below, never through its (replaceable) methods.
import {
  ObjectDefineProperty,
  ArrayBufferIsView,
  PromiseResolve,
  StringCharCodeAt,
  StringToLowerCase,
  StringReplace,
  StringToWellFormed,
  TypeErrorCtor,
  Uint8ArrayCtor,
  TypedArrayBuffer,
  TypedArrayByteLength,
  ObjectGetPrototypeOf,
  SymbolIterator,
  SymbolToStringTag,
  NumberIsFinite,
  MathFloor,
  MathMin,
  MathMax,
  DateNow,
  call,
  str,
  isArrayBuffer,
  bareList,
  append,
  viewOf,
} from '../intrinsics.js';
import { utf8Encode } from '../encoding.js';
import { loaded } from '../globals.js';
import { streams } from './streams.js';
import { viewBytes, concatBytes, copyRange, decodeText } from './bytes.js';

export { viewBytes, concatBytes, copyRange, decodeText };

/** The size of the chunks a blob's stream() gives. */
const STREAM_CHUNK = 65536;

/** @param {unknown} type A type as the File API keeps it: lower-cased, or '' if any character is outside U+0020–U+007E. */
const normalizeType = (type) => {
  const t = str(type);
  for (let i = 0; i < t.length; i++) {
    const c = call(StringCharCodeAt, t, i);
    if (c < 0x20 || c > 0x7e) return '';
  }
  return call(StringToLowerCase, t);
};

/** WebIDL [Clamp] long long, as slice() takes its positions: rounded to the nearest, a half to the even one. @param {unknown} v @param {number} fallback */
const position = (v, fallback) => {
  if (v === undefined) return fallback;
  const n = +(/** @type {any} */ (v));
  if (n !== n) return 0;
  if (!NumberIsFinite(n)) return n > 0 ? Number.MAX_SAFE_INTEGER : -Number.MAX_SAFE_INTEGER;
  const floor = MathFloor(n);
  const rest = n - floor;
  const rounded = rest > 0.5 || (rest === 0.5 && floor % 2 !== 0) ? floor + 1 : floor;
  return rounded === 0 ? 0 : rounded;
};
/** WebIDL long long (File's lastModified): not finite is 0, else truncated and wrapped to 64 bits. @param {unknown} v */
const longLong = (v) => {
  const n = +(/** @type {any} */ (v));
  if (!NumberIsFinite(n)) return 0;
  const t = n < 0 ? -MathFloor(-n) : MathFloor(n);
  if (t >= -TWO_63 && t < TWO_63) return t === 0 ? 0 : t;
  const wrapped = t - TWO_64 * MathFloor(t / TWO_64);
  return wrapped >= TWO_63 ? wrapped - TWO_64 : wrapped;
};
const TWO_63 = 2 ** 63;
const TWO_64 = 2 ** 64;

/** @type {{ bytes: Uint8Array, type: string } | undefined} A blob made by this runtime from bytes it owns (no copy, no iteration). */
let adopting;
/** @type {(value: unknown) => value is Blob} */
export let isBlob;
/** @type {(blob: Blob) => Uint8Array} The blob's own bytes: read them, never change or hand them out. */
export let blobBytes;
/** @type {(blob: Blob) => string} */
export let blobType;

/**
 * A Blob holding `bytes` (owned by the caller from now on: not copied).
 * @param {Uint8Array} bytes @param {string} type
 */
export const makeBlob = (bytes, type) => {
  adopting = { bytes, type: normalizeType(type) };
  return new Blob();
};

/**
 * @typedef {Uint8Array | string | { view: Uint8Array }} Item A converted part: a Blob's (immutable) bytes,
 * a string, or a view of the function's buffer, copied only when the parts are joined, as the spec does
 * (after the name and options are converted).
 */
/**
 * A sequence of blob parts converted as WebIDL does, in order: Blobs' bytes, views of buffers, and
 * strings (made well-formed). Encoding waits for the options (their line endings).
 * @param {any} parts @returns {Item[]}
 */
const convertParts = (parts) => {
  const items = /** @type {Item[]} */ (/** @type {unknown} */ (bareList()));
  if (parts === undefined) return items;
  const iterator = parts === null || (typeof parts !== 'object' && typeof parts !== 'function') ? undefined : parts[SymbolIterator];
  if (typeof iterator !== 'function') throw new TypeErrorCtor('Blob: the parts must be a sequence (an array) of strings, ArrayBuffers, typed arrays or Blobs');
  const it = call(iterator, parts);
  const next = it.next;
  for (;;) {
    const step = call(next, it);
    if (step.done) break;
    const part = step.value;
    if (isBlob(part)) append(items, blobBytes(part));
    else if (isArrayBuffer(part)) append(items, { __proto__: null, view: new Uint8ArrayCtor(part) });
    else if (ArrayBufferIsView(part)) append(items, { __proto__: null, view: viewOf(part) });
    else append(items, call(StringToWellFormed, str(part)));
  }
  return items;
};
/**
 * Blob's (and File's) options, read once each in lexicographic order as WebIDL reads a dictionary.
 * @param {any} options @param {boolean} file @returns {{ native: boolean, lastModified: number | undefined, type: string }}
 */
const readOptions = (options, file) => {
  const o = { native: false, lastModified: /** @type {number | undefined} */ (undefined), type: '' };
  if (options === undefined || options === null) return o;
  if (typeof options !== 'object' && typeof options !== 'function') throw new TypeErrorCtor(`${file ? 'File' : 'Blob'}: the options must be an object`);
  const rawEndings = options.endings;
  if (rawEndings !== undefined) {
    const endings = str(rawEndings);
    if (endings !== 'transparent' && endings !== 'native') throw new TypeErrorCtor(`${file ? 'File' : 'Blob'}: endings must be "transparent" or "native", not "${endings}"`);
    o.native = endings === 'native';
  }
  const type = options.type;
  if (type !== undefined) o.type = normalizeType(type);
  // FilePropertyBag's own member comes after the ones it inherits from BlobPropertyBag.
  if (file) {
    const when = options.lastModified;
    if (when !== undefined) o.lastModified = longLong(when);
  }
  return o;
};
/** The bytes of converted parts: strings as UTF-8 ("native" line endings are LF on the servers this runs for). @param {Item[]} items @param {boolean} native */
const joinItems = (items, native) => {
  const chunks = /** @type {Uint8Array[]} */ (/** @type {unknown} */ (bareList()));
  for (let i = 0; i < items.length; i++) {
    const item = /** @type {Item} */ (items[i]);
    if (typeof item === 'string') append(chunks, utf8Encode(native ? call(StringReplace, item, /\r\n?/g, '\n') : item));
    // Only the pending views are null-prototype objects: a Blob's bytes are a Uint8Array.
    else if (ObjectGetPrototypeOf(item) === null) {
      const view = /** @type {{ view: Uint8Array }} */ (item).view;
      append(chunks, copyRange(view, 0, call(TypedArrayByteLength, view)));
    } else append(chunks, /** @type {Uint8Array} */ (item));
  }
  return chunks.length === 1 ? /** @type {Uint8Array} */ (chunks[0]) : concatBytes(chunks);
};

export class Blob {
  /** @type {Uint8Array} */
  #bytes;
  /** @type {string} */
  #type;
  /** @param {any} [parts] @param {any} [options] */
  constructor(parts = undefined, options = undefined) {
    const adopted = adopting;
    adopting = undefined;
    if (adopted !== undefined) {
      this.#bytes = adopted.bytes;
      this.#type = adopted.type;
      return;
    }
    const items = convertParts(parts);
    const o = readOptions(options, false);
    const bytes = joinItems(items, o.native);
    this.#bytes = bytes;
    this.#type = o.type;
  }
  get size() {
    return this.#bytes.length;
  }
  get type() {
    return this.#type;
  }
  /** @param {unknown} [start] @param {unknown} [end] @param {unknown} [contentType] */
  slice(start = undefined, end = undefined, contentType = undefined) {
    const size = this.#bytes.length;
    const s = position(start, 0);
    const e = position(end, size);
    const from = s < 0 ? MathMax(size + s, 0) : MathMin(s, size);
    const to = e < 0 ? MathMax(size + e, 0) : MathMin(e, size);
    const span = MathMax(to - from, 0);
    return makeBlob(copyRange(this.#bytes, from, from + span), contentType === undefined ? '' : str(contentType));
  }
  text() {
    return PromiseResolve(decodeText(this.#bytes));
  }
  arrayBuffer() {
    return PromiseResolve(call(TypedArrayBuffer, copyRange(this.#bytes, 0, this.#bytes.length)));
  }
  bytes() {
    return PromiseResolve(copyRange(this.#bytes, 0, this.#bytes.length));
  }
  stream() {
    return bytesStream(this.#bytes);
  }
  static {
    isBlob = (value) => value !== null && typeof value === 'object' && #bytes in value;
    blobBytes = (blob) => blob.#bytes;
    blobType = (blob) => blob.#type;
  }
}

/** @type {(value: unknown) => value is File} */
export let isFile;
/** @type {(file: File) => string} */
export let fileName;
/** @type {(file: File) => number} */
export let fileLastModified;

/**
 * A File holding `bytes` (not copied).
 * @param {Uint8Array} bytes @param {string} name @param {string} type @param {number} [lastModified]
 */
export const makeFile = (bytes, name, type, lastModified) => {
  adopting = { bytes, type: normalizeType(type) };
  return new File(undefined, name, lastModified === undefined ? undefined : { lastModified });
};

export class File extends Blob {
  /** @type {string} */
  #name;
  /** @type {number} */
  #lastModified;
  /** @param {any} bits @param {unknown} name @param {any} [options] */
  constructor(bits, name, options = undefined) {
    if (adopting !== undefined) {
      // Made by this runtime (makeFile): bytes and type are adopted, the name and date given as they are.
      super();
      this.#name = str(name);
      this.#lastModified = options === undefined ? DateNow() : options.lastModified;
      return;
    }
    if (arguments.length < 2) throw new TypeErrorCtor('File: give the parts and a file name: new File(parts, name, options?)');
    // WebIDL order: the parts, the name, then the options.
    const items = convertParts(bits);
    const fileNameText = call(StringToWellFormed, str(name));
    const o = readOptions(options, true);
    adopting = { bytes: joinItems(items, o.native), type: o.type };
    super();
    this.#name = fileNameText;
    this.#lastModified = o.lastModified === undefined ? DateNow() : o.lastModified;
  }
  get name() {
    return this.#name;
  }
  get lastModified() {
    return this.#lastModified;
  }
  get webkitRelativePath() {
    return '';
  }
  static {
    isFile = (value) => value !== null && typeof value === 'object' && #name in value;
    fileName = (file) => file.#name;
    fileLastModified = (file) => file.#lastModified;
  }
}

/**
 * A byte stream of `bytes` (not copied: they are never changed), read in chunks as the reader pulls.
 * @param {Uint8Array} bytes @param {() => void} [onPull] called on the first pull (the stream is being read)
 * @param {(controller: any) => void} [onStart] given the stream's controller (to error it)
 */
export const bytesStream = (bytes, onPull, onStart) => {
  let at = 0;
  const { ReadableStream } = streams();
  return new ReadableStream(
    {
      type: 'bytes',
      /** @param {any} controller */
      start(controller) {
        if (onStart !== undefined) onStart(controller);
      },
      /** @param {any} controller */
      pull(controller) {
        if (onPull !== undefined) {
          onPull();
          onPull = undefined;
        }
        if (at >= bytes.length) {
          controller.close();
          // A BYOB reader waiting for bytes is answered with none.
          const request = controller.byobRequest;
          if (request) request.respond(0);
          return;
        }
        const end = MathMin(at + STREAM_CHUNK, bytes.length);
        controller.enqueue(copyRange(bytes, at, end));
        at = end;
        if (at >= bytes.length) controller.close();
      },
      cancel() {
        at = bytes.length;
      },
    },
    { highWaterMark: 0 },
  );
};

ObjectDefineProperty(Blob.prototype, SymbolToStringTag, { value: 'Blob', configurable: true });
ObjectDefineProperty(File.prototype, SymbolToStringTag, { value: 'File', configurable: true });

// Set last: a Blob or File exists only once this module has loaded (fetch checks this before a brand check would load it).
loaded.blob = true;
