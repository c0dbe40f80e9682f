// @ts-check
// TextEncoder and TextDecoder (the Encoding standard's API) over encoding.js's encoder and
// streaming decoders. Loaded on first use of either global (index.js).
import { StringCodePointAt, TypeErrorCtor, Uint8ArrayCtor, TypedArrayByteLength, call, str, isBytes } from './intrinsics.js';
import { utf8Encode, encodingOf, streamDecoder, bufferSourceView } from './encoding.js';

/** @typedef {import('./encoding.js').Encoding} Encoding */

/**
 * A WebIDL dictionary argument: undefined and null are empty, anything else must be an object.
 * @param {unknown} value @param {string} what @returns {Record<string, unknown> | undefined}
 */
const dictionary = (value, what) => {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' && typeof value !== 'function') throw new TypeErrorCtor(`${what}: the options must be an object`);
  return /** @type {Record<string, unknown>} */ (value);
};

export class TextEncoder {
  get encoding() {
    return 'utf-8';
  }
  encode(input = '') {
    return utf8Encode(input);
  }
  /**
   * Writes as much of `source` as fits whole into `destination`.
   * @param {unknown} source @param {unknown} destination
   */
  encodeInto(source, destination) {
    const s = str(source);
    if (!isBytes(destination)) throw new TypeErrorCtor('TextEncoder.encodeInto: the destination must be a Uint8Array');
    const room = call(TypedArrayByteLength, destination);
    let read = 0;
    let written = 0;
    for (let i = 0; i < s.length; i++) {
      let cp = call(StringCodePointAt, s, i);
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
      const size = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
      if (written + size > room) break;
      if (size === 1) destination[written] = cp;
      else if (size === 2) {
        destination[written] = 0xc0 | (cp >> 6);
        destination[written + 1] = 0x80 | (cp & 63);
      } else if (size === 3) {
        destination[written] = 0xe0 | (cp >> 12);
        destination[written + 1] = 0x80 | ((cp >> 6) & 63);
        destination[written + 2] = 0x80 | (cp & 63);
      } else {
        destination[written] = 0xf0 | (cp >> 18);
        destination[written + 1] = 0x80 | ((cp >> 12) & 63);
        destination[written + 2] = 0x80 | ((cp >> 6) & 63);
        destination[written + 3] = 0x80 | (cp & 63);
        i++;
        read++;
      }
      written += size;
      read++;
    }
    return { read, written };
  }
}

export class TextDecoder {
  /** @type {Encoding} */
  #encoding;
  #fatal;
  #ignoreBOM;
  #streaming = false;
  /** @type {((bytes: Uint8Array, end: boolean) => string) | undefined} */
  #decoder;
  /** @param {unknown} [label] @param {unknown} [options] */
  constructor(label = 'utf-8', options = undefined) {
    this.#encoding = encodingOf(label, 'TextDecoder');
    const o = dictionary(options, 'TextDecoder');
    this.#fatal = !!(o && o.fatal);
    this.#ignoreBOM = !!(o && o.ignoreBOM);
  }
  get encoding() {
    return this.#encoding;
  }
  get fatal() {
    return this.#fatal;
  }
  get ignoreBOM() {
    return this.#ignoreBOM;
  }
  /** @param {unknown} [input] @param {unknown} [options] */
  decode(input = undefined, options = undefined) {
    const bytes = input === undefined ? new Uint8ArrayCtor(0) : bufferSourceView(input);
    if (bytes === undefined) throw new TypeErrorCtor('TextDecoder.decode: expected an ArrayBuffer, a SharedArrayBuffer or an ArrayBufferView');
    const o = dictionary(options, 'TextDecoder.decode');
    // Without a pending stream, decoding starts from a fresh state (even after a fatal error).
    if (!this.#streaming || this.#decoder === undefined) this.#decoder = streamDecoder(this.#encoding, this.#fatal, this.#ignoreBOM);
    this.#streaming = !!(o && o.stream);
    return this.#decoder(bytes, !this.#streaming);
  }
}
