// @ts-check
// UTF-8: TextEncoder, TextDecoder, and the byte helpers ctx.fetch uses.
import {
  ReflectApply,
  ArrayPush,
  StringFromCharCode,
  StringCodePointAt,
  StringToLowerCase,
  StringTrim,
  TypeErrorCtor,
  RangeErrorCtor,
  Uint8ArrayCtor,
  ArrayBufferIsView,
  call,
  str,
  isBytes,
  isArrayBuffer,
  bareList,
  copyBytes,
} from './intrinsics.js';
import { defineGlobal } from './globals.js';

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
/** @param {Uint8Array} bytes */
export const utf8Decode = (bytes) => {
  let out = '';
  let chunk = bareList();
  const flush = () => {
    if (chunk.length > 0) {
      out += ReflectApply(StringFromCharCode, undefined, chunk);
      chunk = bareList();

    }
  };
  /** @param {number} cp */
  const push = (cp) => {
    if (cp > 0xffff) {
      cp -= 0x10000;
      call(ArrayPush, chunk, 0xd800 + (cp >> 10), 0xdc00 + (cp & 1023));
    } else call(ArrayPush, chunk, cp);
    if (chunk.length > 8192) flush();
  };
  for (let i = 0; i < bytes.length; ) {
    const b = /** @type {number} */ (bytes[i]);
    let need = 0;
    let cp = 0;
    let min = 0;
    if (b < 0x80) {
      push(b);
      i++;
      continue;
    } else if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      cp = b & 31;
      min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      cp = b & 15;
      min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      cp = b & 7;
      min = 0x10000;
    } else {
      push(0xfffd);
      i++;
      continue;
    }
    let j = 1;
    for (; j <= need; j++) {
      const c = bytes[i + j];
      if (c === undefined || (c & 0xc0) !== 0x80) break;
      cp = (cp << 6) | (c & 63);
    }
    if (j <= need || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      push(0xfffd);
      i += j > 1 ? j : 1;
      continue;
    }
    push(cp);
    i += need + 1;
  }
  flush();
  return out;
};
/** @param {unknown} input @param {string} what @returns {Uint8Array} */
export const toBytes = (input, what) => {
  if (isBytes(input)) return input;
  if (isArrayBuffer(input)) return new Uint8ArrayCtor(input);
  if (ArrayBufferIsView(input)) return copyBytes(input);
  throw new TypeErrorCtor(`${what}: expected a Uint8Array, ArrayBuffer or typed array`);
};
class TextEncoder {
  get encoding() {
    return 'utf-8';
  }
  encode(input = '') {
    return utf8Encode(input);
  }
}
class TextDecoder {
  constructor(label = 'utf-8') {
    const l = call(StringToLowerCase, call(StringTrim, str(label)));
    if (l !== 'utf-8' && l !== 'utf8' && l !== 'unicode-1-1-utf-8') throw new RangeErrorCtor(`TextDecoder: only utf-8 is supported, not "${label}"`);
  }
  get encoding() {
    return 'utf-8';
  }
  /** @param {unknown} input */
  decode(input) {
    if (input === undefined) return '';
    const bytes = toBytes(input, 'TextDecoder.decode');
    const start = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    return utf8Decode(start ? copyBytes(bytes).subarray(3) : bytes);
  }
}

export function install() {
  defineGlobal('TextEncoder', TextEncoder);
  defineGlobal('TextDecoder', TextDecoder);
}
