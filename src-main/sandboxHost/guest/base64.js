// @ts-check
// btoa/atob and the base64 ctx.content uses for bytes.
import {
  MathFloor,
  StringFromCharCode,
  StringCharCodeAt,
  StringIndexOf,
  StringReplace,
  RegExpTest,
  ErrorCtor,
  Uint8ArrayCtor,
  call,
  str,
} from './intrinsics.js';
import { defineGlobal } from './globals.js';

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
/** @param {Uint8Array} bytes */
export const bytesToBase64 = (bytes) => {
  let out = '';
  const n = bytes.length;
  for (let i = 0; i < n; i += 3) {
    const a = /** @type {number} */ (bytes[i]);
    const b = /** @type {number} */ (i + 1 < n ? bytes[i + 1] : 0);
    const c = /** @type {number} */ (i + 2 < n ? bytes[i + 2] : 0);
    const triple = (a << 16) | (b << 8) | c;
    out += /** @type {string} */ (B64[(triple >> 18) & 63]) + /** @type {string} */ (B64[(triple >> 12) & 63]) + (i + 1 < n ? B64[(triple >> 6) & 63] : '=') + (i + 2 < n ? B64[triple & 63] : '=');
  }
  return out;
};
/** @param {unknown} text */
export const base64ToBytes = (text) => {
  const clean = call(StringReplace, str(text), /[\t\n\f\r ]/g, '');
  if (clean.length % 4 === 1 || call(RegExpTest, /[^A-Za-z0-9+/=]|=[^=]|={3,}/, clean)) {
    throw new ErrorCtor('The string to be decoded is not correctly encoded.');
  }
  const body = call(StringReplace, clean, /=+$/, '');
  const out = new Uint8ArrayCtor(MathFloor((body.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let j = 0;
  for (let i = 0; i < body.length; i++) {
    value = (value << 6) | call(StringIndexOf, B64, body[i]);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[j++] = (value >> bits) & 255;
    }
  }
  return out;
};

// Methods, so each is named as the platform's is (a method's name is its key).
const fns = {
  /** @param {unknown} input */
  btoa(input) {
    const s = str(input);
    const bytes = new Uint8ArrayCtor(s.length);
    for (let i = 0; i < s.length; i++) {
      const code = call(StringCharCodeAt, s, i);
      if (code > 255) throw new ErrorCtor('btoa: the string contains characters outside of the Latin1 range.');
      bytes[i] = code;
    }
    return bytesToBase64(bytes);
  },
  /** @param {unknown} input */
  atob(input) {
    const bytes = base64ToBytes(input);
    let out = '';
    for (let i = 0; i < bytes.length; i++) out += StringFromCharCode(/** @type {number} */ (bytes[i]));
    return out;
  },
};

export function install() {
  defineGlobal('btoa', fns.btoa);
  defineGlobal('atob', fns.atob);
}
