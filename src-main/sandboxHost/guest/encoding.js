// @ts-check
// The Encoding standard's API: TextEncoder, TextDecoder (streaming, fatal, ignoreBOM), the
// streaming decoder TextDecoderStream shares, and the byte helpers ctx.fetch uses. Decoded: UTF-8,
// UTF-16LE/BE, the legacy single-byte encodings (windows-1252, iso-8859-x, koi8-r…) and
// x-user-defined. The legacy multi-byte encodings (shift_jis, euc-jp, iso-2022-jp, gbk, gb18030,
// big5, euc-kr) are not: their labels get a RangeError that says so.
// Loaded on first use (require), so its top level may run after function code: it takes every
// intrinsic from intrinsics.js.
import {
  ReflectApply,
  ArrayPush,
  StringFromCharCode,
  StringCodePointAt,
  StringCharCodeAt,
  StringToLowerCase,
  StringReplace,
  RegExpTest,
  TypeErrorCtor,
  RangeErrorCtor,
  Uint8ArrayCtor,
  ArrayBufferIsView,
  TypedArrayBuffer,
  TypedArrayByteOffset,
  TypedArrayByteLength,
  call,
  str,
  isBytes,
  isArrayBuffer,
  bareList,
  copyBytes,
  DataViewBuffer,
  DataViewByteOffset,
  DataViewByteLength,
  SharedByteLength,
} from './intrinsics.js';
import { sync } from './host.js';
import { singleByteEncodings } from './legacyEncodings.js';


/** @param {unknown} v */
const isSharedBuffer = (v) => {
  if (SharedByteLength === undefined) return false;
  try {
    call(SharedByteLength, v);
    return true;
  } catch {
    return false;
  }
};

/**
 * A Uint8Array over the bytes of a WebIDL `[AllowShared] BufferSource` (no copy), or undefined
 * for anything else. Brand checks go through the intrinsic getters, never the value's own members.
 * @param {unknown} input @returns {Uint8Array | undefined}
 */
export const bufferSourceView = (input) => {
  if (isBytes(input)) return input;
  if (isArrayBuffer(input) || isSharedBuffer(input)) return new Uint8ArrayCtor(/** @type {ArrayBuffer} */ (input));
  if (!ArrayBufferIsView(input)) return undefined;
  try {
    return new Uint8ArrayCtor(call(TypedArrayBuffer, input), call(TypedArrayByteOffset, input), call(TypedArrayByteLength, input));
  } catch {
    // Not a typed array: the other ArrayBufferView is a DataView.
    return new Uint8ArrayCtor(call(DataViewBuffer, input), call(DataViewByteOffset, input), call(DataViewByteLength, input));
  }
};

/** A copy of the bytes of an `[AllowShared] BufferSource`, or undefined for anything else. @param {unknown} input */
export const bufferSourceCopy = (input) => {
  const view = bufferSourceView(input);
  return view === undefined ? undefined : new Uint8ArrayCtor(view);
};

/** @param {unknown} input */
export const utf8Encode = (input) => {
  const s = str(input);
  const out = bareList();
  for (let i = 0; i < s.length; i++) {
    let cp = call(StringCodePointAt, s, i);
    if (cp > 0xffff) i++;
    else if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
    if (cp < 0x80) call(ArrayPush, out, cp);
    else if (cp < 0x800) call(ArrayPush, out, 0xc0 | (cp >> 6), 0x80 | (cp & 63));
    else if (cp < 0x10000) call(ArrayPush, out, 0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
    else call(ArrayPush, out, 0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 63), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
  }
  return new Uint8ArrayCtor(out);
};

// ------------------------------------------------------------ labels ----

/** @typedef {string} Encoding The encoding's name, as TextDecoder.encoding gives it. */

/** The Encoding standard's labels of UTF-8, UTF-16 and x-user-defined, and of "replacement" (never constructible). */
const labels = () => /** @type {Record<string, Encoding>} */ (/** @type {unknown} */ ({
  __proto__: null,
  'unicode-1-1-utf-8': 'utf-8',
  unicode11utf8: 'utf-8',
  unicode20utf8: 'utf-8',
  'utf-8': 'utf-8',
  utf8: 'utf-8',
  'x-unicode20utf8': 'utf-8',
  unicodefffe: 'utf-16be',
  'utf-16be': 'utf-16be',
  csunicode: 'utf-16le',
  'iso-10646-ucs-2': 'utf-16le',
  'ucs-2': 'utf-16le',
  unicode: 'utf-16le',
  unicodefeff: 'utf-16le',
  'utf-16': 'utf-16le',
  'utf-16le': 'utf-16le',
  csiso2022kr: 'replacement',
  'hz-gb-2312': 'replacement',
  'iso-2022-cn': 'replacement',
  'iso-2022-cn-ext': 'replacement',
  'iso-2022-kr': 'replacement',
  replacement: 'replacement',
  'x-user-defined': 'x-user-defined',
}));
/** @type {Record<string, Encoding> | undefined} made on first use, as the single-byte tables are */
let LABELS;
/** @type {ReturnType<typeof singleByteEncodings> | undefined} */
let legacy;
/** The single-byte encodings' labels and indexes, built on first use. */
const singleByte = () => (legacy ??= singleByteEncodings());
/** Only ASCII whitespace is trimmed from a label, and only ASCII letters are lower-cased. */
const LABEL_EDGES = /^[\t\n\f\r ]+|[\t\n\f\r ]+$/g;
const ASCII = /^[\x00-\x7f]*$/;

/**
 * The encoding a label names (the standard's "get an encoding"), or a RangeError.
 * @param {unknown} label @param {string} what @returns {Encoding}
 */
export const encodingOf = (label, what) => {
  const text = str(label);
  const trimmed = call(StringReplace, text, LABEL_EDGES, '');
  const key = call(RegExpTest, ASCII, trimmed) ? call(StringToLowerCase, trimmed) : undefined;
  const found = key === undefined ? undefined : ((LABELS ??= labels())[key] ?? singleByte().labels[key]);
  if (found === undefined || found === 'replacement') {
    throw new RangeErrorCtor(
      `${what}: "${text}" is not an encoding this sandbox decodes; use utf-8, utf-16le, utf-16be or a single-byte encoding such as windows-1252 (the legacy multi-byte encodings shift_jis, euc-jp, iso-2022-jp, gbk, gb18030, big5 and euc-kr are not supported)`,
    );
  }
  return found;
};

// ---------------------------------------------------------- decoding ----

/**
 * A streaming decoder per the Encoding standard: a sequence split across chunks decodes as one;
 * bad bytes are U+FFFD, or a TypeError when `fatal`; a BOM at the very start is dropped unless
 * `ignoreBOM`. After a call with `end` it starts over as new.
 * @param {Encoding} encoding @param {boolean} fatal @param {boolean} ignoreBOM
 * @returns {(bytes: Uint8Array, end: boolean) => string}
 */
export const streamDecoder = (encoding, fatal, ignoreBOM) => {
  // UTF-8 state
  let needed = 0;
  let seen = 0;
  let codePoint = 0;
  let lower = 0x80;
  let upper = 0xbf;
  // UTF-16 state
  const bigEndian = encoding === 'utf-16be';
  let leadByte = -1;
  let leadSurrogate = -1;
  // A single-byte encoding: what bytes 0x80-0xFF decode to (U+FFFD: an error); they have no BOM.
  const utf = encoding === 'utf-8' || encoding === 'utf-16le' || encoding === 'utf-16be';
  const userDefined = encoding === 'x-user-defined';
  const high = utf || userDefined ? '' : (singleByte().tables[encoding] ?? '');
  let bomSeen = ignoreBOM || !utf;
  return (bytes, end) => {
    let out = '';
    let units = bareList();
    /** @param {number} cp */
    const emit = (cp) => {
      if (!bomSeen) {
        bomSeen = true;
        if (cp === 0xfeff) return;
      }
      if (cp > 0xffff) {
        cp -= 0x10000;
        call(ArrayPush, units, 0xd800 + (cp >> 10), 0xdc00 + (cp & 1023));
      } else call(ArrayPush, units, cp);
      if (units.length > 8192) {
        out += ReflectApply(StringFromCharCode, undefined, units);
        units = bareList();
      }
    };
    const bad = () => {
      needed = seen = codePoint = 0;
      lower = 0x80;
      upper = 0xbf;
      leadByte = leadSurrogate = -1;
      if (fatal) throw new TypeErrorCtor(`The encoded data was not valid ${encoding === 'utf-8' ? 'UTF-8' : encoding === 'utf-16le' || encoding === 'utf-16be' ? 'UTF-16' : encoding}.`);
      emit(0xfffd);
    };
    if (encoding === 'utf-8') {
      for (let i = 0; i < bytes.length; i++) {
        const b = /** @type {number} */ (bytes[i]);
        if (needed === 0) {
          if (b <= 0x7f) emit(b);
          else if (b >= 0xc2 && b <= 0xdf) {
            needed = 1;
            codePoint = b & 0x1f;
          } else if (b >= 0xe0 && b <= 0xef) {
            if (b === 0xe0) lower = 0xa0;
            if (b === 0xed) upper = 0x9f;
            needed = 2;
            codePoint = b & 0xf;
          } else if (b >= 0xf0 && b <= 0xf4) {
            if (b === 0xf0) lower = 0x90;
            if (b === 0xf4) upper = 0x8f;
            needed = 3;
            codePoint = b & 0x7;
          } else bad();
          continue;
        }
        if (b < lower || b > upper) {
          bad();
          i--; // the byte starts over, as the first of a sequence
          continue;
        }
        lower = 0x80;
        upper = 0xbf;
        codePoint = (codePoint << 6) | (b & 0x3f);
        if (++seen === needed) {
          const cp = codePoint;
          needed = seen = codePoint = 0;
          emit(cp);
        }
      }
      if (end && needed !== 0) bad();
    } else if (!utf) {
      for (let i = 0; i < bytes.length; i++) {
        const b = /** @type {number} */ (bytes[i]);
        if (b < 0x80) emit(b);
        else if (userDefined) emit(0xf780 + b - 0x80);
        else {
          const cp = call(StringCharCodeAt, high, b - 0x80);
          if (cp === 0xfffd) bad();
          else emit(cp);
        }
      }
    } else {
      for (let i = 0; i < bytes.length; i++) {
        const b = /** @type {number} */ (bytes[i]);
        if (leadByte < 0) {
          leadByte = b;
          continue;
        }
        let unit = bigEndian ? (leadByte << 8) | b : (b << 8) | leadByte;
        leadByte = -1;
        if (leadSurrogate >= 0) {
          const lead = leadSurrogate;
          leadSurrogate = -1;
          if (unit >= 0xdc00 && unit <= 0xdfff) {
            emit(0x10000 + ((lead - 0xd800) << 10) + (unit - 0xdc00));
            continue;
          }
          // The unit that broke the pair starts over after the error.
          bad();
        }
        if (unit >= 0xd800 && unit <= 0xdbff) leadSurrogate = unit;
        else if (unit >= 0xdc00 && unit <= 0xdfff) bad();
        else emit(unit);
      }
      if (end && (leadByte >= 0 || leadSurrogate >= 0)) bad();
    }
    if (end) bomSeen = ignoreBOM || !utf;
    if (units.length > 0) out += ReflectApply(StringFromCharCode, undefined, units);
    return out;
  };
};

/** Below this many bytes the decoder here is quicker than a trip to the host. */
const HOST_DECODE_MIN_BYTES = 2048;
/** The host decodes at most this many bytes a call: what one decode holds in the host's memory. */
const HOST_DECODE_SLICE_BYTES = 1024 * 1024;

/**
 * `bytes` decoded by the host a slice at a time, each a fresh copy (isolated-vm copies a view's
 * whole buffer). A slice is cut before a byte that is not a sequence's continuation (backing up at
 * most 3), so no sequence is split and each slice decodes as it would in the whole. Undefined when the host refuses (no run).
 * @param {Uint8Array} bytes @returns {string | undefined}
 */
const hostDecode = (bytes) => {
  const n = call(TypedArrayByteLength, bytes);
  const buffer = call(TypedArrayBuffer, bytes);
  const offset = call(TypedArrayByteOffset, bytes);
  let out = '';
  for (let at = 0; at < n; ) {
    let end = at + HOST_DECODE_SLICE_BYTES;
    if (end >= n) end = n;
    else for (let back = 0; back < 3 && ((/** @type {number} */ (bytes[end])) & 0xc0) === 0x80; back++) end--;
    const text = sync('utf8', new Uint8ArrayCtor(new Uint8ArrayCtor(buffer, offset + at, end - at)));
    if (typeof text !== 'string') return undefined;
    out += text;
    at = end;
  }
  return out;
};

/** UTF-8 bytes as text, bad bytes as U+FFFD, a BOM kept (what response bodies and ctx.fetch use). @param {Uint8Array} bytes */
export const utf8Decode = (bytes) => {
  // A large body goes to the host's native decoder (the same Encoding-standard decoding, in one
  // pass): byte by byte here, 8 MiB takes half a second. Where the host refuses (no run), it is decoded here.
  if (call(TypedArrayByteLength, bytes) >= HOST_DECODE_MIN_BYTES) {
    try {
      const text = hostDecode(bytes);
      if (text !== undefined) return text;
    } catch {
      // decoded below
    }
  }
  return streamDecoder('utf-8', false, true)(bytes, true);
};

/** @param {unknown} input @param {string} what @returns {Uint8Array} */
export const toBytes = (input, what) => {
  if (isBytes(input)) return input;
  if (isArrayBuffer(input)) return new Uint8ArrayCtor(input);
  if (ArrayBufferIsView(input)) return copyBytes(input);
  throw new TypeErrorCtor(`${what}: expected a Uint8Array, ArrayBuffer or typed array`);
};
