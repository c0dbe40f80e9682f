// @ts-check
// Byte helpers shared by Blob and fetch's bodies, in a module of their own: reading a response's
// text or JSON needs these, not the Blob and File classes.
import { Uint8ArrayCtor, TypedArraySet, TypedArrayBuffer, TypedArrayByteOffset, call } from '../intrinsics.js';
import { utf8Decode } from '../encoding.js';

// Views and copies made with the captured constructor and set(): subarray() and slice() would ask
// the function's species constructor, which could keep a reference to a blob's own bytes.
/** A view of bytes [from, to) of `bytes` (shares them). @param {Uint8Array} bytes @param {number} from @param {number} to */
export const viewBytes = (bytes, from, to) => new Uint8ArrayCtor(call(TypedArrayBuffer, bytes), call(TypedArrayByteOffset, bytes) + from, to - from);
/** The bytes of a list of chunks joined, in a fresh array. @param {Uint8Array[]} chunks */
export const concatBytes = (chunks) => {
  let total = 0;
  for (let i = 0; i < chunks.length; i++) total += /** @type {Uint8Array} */ (chunks[i]).length;
  const out = new Uint8ArrayCtor(total);
  let at = 0;
  for (let i = 0; i < chunks.length; i++) {
    const c = /** @type {Uint8Array} */ (chunks[i]);
    call(TypedArraySet, out, c, at);
    at += c.length;
  }
  return out;
};
/** A fresh copy of bytes [from, to) of `bytes`. @param {Uint8Array} bytes @param {number} from @param {number} to */
export const copyRange = (bytes, from, to) => {
  const out = new Uint8ArrayCtor(to - from);
  call(TypedArraySet, out, viewBytes(bytes, from, to));
  return out;
};
/** UTF-8 decode as the Encoding standard's "UTF-8 decode" does: a leading BOM is dropped, bad sequences become U+FFFD. @param {Uint8Array} b */
export const decodeText = (b) => utf8Decode(b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? viewBytes(b, 3, b.length) : b);
