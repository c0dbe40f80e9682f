// @ts-check
// crypto.getRandomValues and crypto.randomUUID: the bytes come from the host. crypto.subtle is web/subtle.js.
import {
  ObjectCreate,
  ObjectFreeze,
  ObjectPrototypeToString,
  ErrorCtor,
  TypeErrorCtor,
  Uint8ArrayCtor,
  ArrayBufferIsView,
  TypedArrayByteLength,
  TypedArrayBuffer,
  TypedArrayByteOffset,
  call,
} from './intrinsics.js';
import { sync } from './host.js';
import { defineGlobal } from './globals.js';
import { defineSubtle } from './web/subtle.js';

/** @param {unknown} array */
const getRandomValues = (array) => {
  if (!ArrayBufferIsView(array) || call(ObjectPrototypeToString, array) === '[object DataView]' || call(ObjectPrototypeToString, array) === '[object Float32Array]' || call(ObjectPrototypeToString, array) === '[object Float64Array]') {
    throw new TypeErrorCtor('crypto.getRandomValues: expected an integer typed array');
  }
  const length = call(TypedArrayByteLength, array);
  if (length > 65536) throw new ErrorCtor(`crypto.getRandomValues: ${length} bytes requested, at most 65536 allowed`);
  const random = sync('random', length);
  const target = new Uint8ArrayCtor(call(TypedArrayBuffer, array), call(TypedArrayByteOffset, array), length);
  for (let i = 0; i < length; i++) target[i] = random[i];
  return array;
};
/** @param {number} b */
const hex = (b) => (b < 16 ? '0' : '') + b.toString(16);
const randomUUID = () => {
  const b = sync('random', 16);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  let s = '';
  for (let i = 0; i < 16; i++) s += (i === 4 || i === 6 || i === 8 || i === 10 ? '-' : '') + hex(b[i]);
  return s;
};
const cryptoObject = ObjectCreate(null);
cryptoObject.getRandomValues = getRandomValues;
cryptoObject.randomUUID = randomUUID;
defineSubtle(cryptoObject);

export function install() {
  defineGlobal('crypto', ObjectFreeze(cryptoObject));
}
