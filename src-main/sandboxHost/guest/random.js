// @ts-check
// crypto.getRandomValues and crypto.randomUUID: the bytes come from the host. crypto.subtle is web/subtle.js.
import {
  ObjectCreate,
  ObjectFreeze,
  ObjectDefineProperty,
  TypeErrorCtor,
  Uint8ArrayCtor,
  ArrayBufferIsView,
  TypedArrayName,
  TypedArrayByteLength,
  TypedArrayBuffer,
  TypedArrayByteOffset,
  call,
} from './intrinsics.js';
import { sync } from './host.js';
import { defineGlobal } from './globals.js';

// DOMException's module loads with the first error that needs one.
/** @param {string} message @param {string} name */
const domException = (message, name) => /** @type {typeof import('./web/domException.js')} */ (require('./web/domException.js')).domException(message, name);

/** The integer arrays WebCrypto accepts; any other view (floats, DataView) is a TypeMismatchError. */
const INTEGER_ARRAYS = /** @type {Record<string, true | undefined>} */ (
  /** @type {unknown} */ ({ __proto__: null, Int8Array: true, Uint8Array: true, Uint8ClampedArray: true, Int16Array: true, Uint16Array: true, Int32Array: true, Uint32Array: true, BigInt64Array: true, BigUint64Array: true })
);

/** @param {unknown} array */
const getRandomValues = (array) => {
  // WebIDL's ArrayBufferView conversion, then the spec's two checks in its order: kind, then size.
  if (!ArrayBufferIsView(array)) throw new TypeErrorCtor('crypto.getRandomValues: expected an integer typed array');
  const kind = call(TypedArrayName, array);
  if (kind === undefined || INTEGER_ARRAYS[kind] !== true) {
    throw domException(`crypto.getRandomValues: ${kind ?? 'DataView'} is not an integer typed array`, 'TypeMismatchError');
  }
  const length = call(TypedArrayByteLength, array);
  if (length > 65536) throw domException(`crypto.getRandomValues: ${length} bytes requested, at most 65536 allowed`, 'QuotaExceededError');
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
// An accessor, as on the platform's Crypto.prototype; WebCrypto's module is loaded on first use.
ObjectDefineProperty(cryptoObject, 'subtle', {
  get: () => /** @type {typeof import('./web/subtle.js')} */ (require('./web/subtle.js')).interfaces().subtle,
  enumerable: true,
  configurable: true,
});

export function install() {
  defineGlobal('crypto', ObjectFreeze(cryptoObject));
}
