// @ts-check
// WHATWG streams (web-streams-polyfill's ponyfill), TextEncoderStream/TextDecoderStream and
// CompressionStream/DecompressionStream (fflate). All of it is loaded on first use (its globals are
// defined by streamGlobals.js): a call that never touches a stream pays nothing. Its top level may
// run after function code, so it takes every intrinsic from intrinsics.js.
import {
  ObjectCreate,
  ObjectDefineProperty,
  ObjectGetOwnPropertyDescriptor,
  ArrayIncludes,
  StringCharCodeAt,
  StringSlice,
  TypeErrorCtor,
  RangeErrorCtor,
  SymbolToStringTag,
  Uint8ArrayCtor,
  WeakMapCtor,
  WeakMapGet,
  WeakMapSet,
  call,
  str,
} from '../intrinsics.js';
import { needArgs } from './domException.js';


/** The stream classes of the WHATWG Streams standard, as the WinterTC Minimum Common API lists them. */
const STREAM_CLASSES = /** @type {const} */ ([
  'ReadableStream',
  'ReadableStreamDefaultReader',
  'ReadableStreamBYOBReader',
  'ReadableStreamBYOBRequest',
  'ReadableByteStreamController',
  'ReadableStreamDefaultController',
  'WritableStream',
  'WritableStreamDefaultWriter',
  'WritableStreamDefaultController',
  'TransformStream',
  'TransformStreamDefaultController',
  'ByteLengthQueuingStrategy',
  'CountQueuingStrategy',
]);
const TRANSFORM_CLASSES = /** @type {const} */ (['TextEncoderStream', 'TextDecoderStream', 'CompressionStream', 'DecompressionStream']);

/** @typedef {Record<(typeof STREAM_CLASSES)[number] | (typeof TRANSFORM_CLASSES)[number], any>} StreamClasses */

/** @type {StreamClasses | undefined} */
let classes;

/**
 * This context's stream classes, loaded on first call (the same objects as the globals of those
 * names, unless the function replaced the globals). Blob, Response and fetch build on these.
 * @returns {StreamClasses}
 */
export function streams() {
  if (classes === undefined) {
    const polyfill = require('web-streams-polyfill');
    const all = /** @type {StreamClasses} */ (ObjectCreate(null));
    for (let i = 0; i < STREAM_CLASSES.length; i++) {
      const name = /** @type {(typeof STREAM_CLASSES)[number]} */ (STREAM_CLASSES[i]);
      all[name] = polyfill[name];
    }
    classes = all;
    const transforms = makeTransforms(all.TransformStream);
    for (let i = 0; i < TRANSFORM_CLASSES.length; i++) {
      const name = /** @type {(typeof TRANSFORM_CLASSES)[number]} */ (TRANSFORM_CLASSES[i]);
      all[name] = transforms[name];
    }
  }
  return classes;
}


// The Encoding helpers load with the first stream class (a plain call never needs them).
/** @returns {typeof import('../encoding.js')} */
const encodingModule = () => require('../encoding.js');

/** A copy of a BufferSource chunk (an ArrayBuffer, a SharedArrayBuffer or a view of one). @param {unknown} chunk @param {string} what */
const bufferSourceCopy = (chunk, what) => {
  const bytes = encodingModule().bufferSourceCopy(chunk);
  if (bytes === undefined) throw new TypeErrorCtor(`${what}: each chunk must be an ArrayBuffer or an ArrayBufferView`);
  return bytes;
};

// ------------------------------------------------------- the transforms ----

const FORMATS = ['gzip', 'deflate', 'deflate-raw'];
/** Input fed to the inflater at a time: one slice inflates to at most ~16 MB, never one huge buffer. */
const INFLATE_SLICE = 16 * 1024;


/** @param {any} TransformStream */
const makeTransforms = (TransformStream) => {
  const { utf8Encode, encodingOf, streamDecoder } = encodingModule();
  // Read through the getters as loaded, not through what a function may later put on the prototype.
  const proto = TransformStream.prototype;
  const readableOf = /** @type {() => unknown} */ (/** @type {PropertyDescriptor} */ (ObjectGetOwnPropertyDescriptor(proto, 'readable')).get);
  const writableOf = /** @type {() => unknown} */ (/** @type {PropertyDescriptor} */ (ObjectGetOwnPropertyDescriptor(proto, 'writable')).get);
  // The four are GenericTransformStreams: readable and writable of the TransformStream each one wraps.
  const transforms = new WeakMapCtor();
  /** @param {object} owner @param {unknown} transform */
  const transformOf = (owner, transform) => call(WeakMapSet, transforms, owner, transform);
  /** @param {(this: unknown) => unknown} side @param {string} name */
  const sideGetter = (side, name) => ({
    /** @this {unknown} */
    get() {
      const transform = call(WeakMapGet, transforms, this);
      if (transform === undefined) throw new TypeErrorCtor(`${name} can only be read on the object it belongs to`);
      return call(side, transform);
    },
    enumerable: true,
    configurable: true,
  });

  class TextEncoderStream {
    #encoding = 'utf-8';
    constructor() {
      let pending = ''; // a high surrogate that ended the last chunk: its pair may start the next
      transformOf(this, new TransformStream({
        /** @param {unknown} chunk @param {any} controller */
        transform(chunk, controller) {
          let s = pending + str(chunk);
          pending = '';
          const lastUnit = call(StringCharCodeAt, s, s.length - 1);
          if (lastUnit >= 0xd800 && lastUnit <= 0xdbff) {
            pending = call(StringSlice, s, s.length - 1);
            s = call(StringSlice, s, 0, s.length - 1);
          }
          if (s.length > 0) controller.enqueue(utf8Encode(s));
        },
        /** @param {any} controller */
        flush(controller) {
          if (pending !== '') controller.enqueue(new Uint8ArrayCtor([0xef, 0xbf, 0xbd]));
        },
      }));
    }
    get encoding() {
      return this.#encoding;
    }
  }

  class TextDecoderStream {
    /** @type {string} */
    #encoding;
    #fatal;
    #ignoreBOM;
    /** @param {unknown} [label] @param {any} [options] */
    constructor(label = 'utf-8', options = undefined) {
      const encoding = encodingOf(label, 'TextDecoderStream');
      this.#encoding = encoding;
      if (options !== undefined && options !== null && typeof options !== 'object') throw new TypeErrorCtor('TextDecoderStream: the options must be an object');
      this.#fatal = !!(options && options.fatal);
      this.#ignoreBOM = !!(options && options.ignoreBOM);
      const decode = streamDecoder(encoding, this.#fatal, this.#ignoreBOM);
      transformOf(this, new TransformStream({
        /** @param {unknown} chunk @param {any} controller */
        transform(chunk, controller) {
          const text = decode(bufferSourceCopy(chunk, 'TextDecoderStream'), false);
          if (text !== '') controller.enqueue(text);
        },
        /** @param {any} controller */
        flush(controller) {
          const text = decode(new Uint8ArrayCtor(0), true);
          if (text !== '') controller.enqueue(text);
        },
      }));
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
  }

  /** @param {unknown} format @param {string} what */
  const formatOf = (format, what) => {
    const f = str(format);
    if (!call(ArrayIncludes, FORMATS, f)) throw new TypeErrorCtor(`${what}: the format must be "gzip", "deflate" or "deflate-raw", not "${f}"`);
    return f;
  };

  /**
   * The TransformStream behind CompressionStream and DecompressionStream: each chunk (copied) goes
   * to `feed` with the fflate stream `make` built, whose output is enqueued as it comes.
   * @param {string} what @param {(ondata: (data: Uint8Array) => void) => any} make
   * @param {(engine: any, bytes: Uint8Array, final: boolean, received: number) => void} feed
   */
  const flateTransform = (what, make, feed) => {
    /** @type {any} */
    let controller;
    const engine = make((data) => {
      if (data.length > 0) controller.enqueue(data);
    });
    let received = 0;
    return new TransformStream({
      /** @param {unknown} chunk @param {any} c */
      transform(chunk, c) {
        controller = c;
        const bytes = bufferSourceCopy(chunk, what);
        received += bytes.length;
        feed(engine, bytes, false, received);
      },
      /** @param {any} c */
      flush(c) {
        controller = c;
        feed(engine, new Uint8ArrayCtor(0), true, received);
      },
    });
  };

  class CompressionStream {
    /** @param {unknown} format */
    constructor(format) {
      needArgs(arguments.length, 1, 'CompressionStream');
      const f = formatOf(format, 'CompressionStream');
      const fflate = require('fflate');
      transformOf(this, flateTransform(
        'CompressionStream',
        (ondata) => (f === 'gzip' ? new fflate.Gzip(ondata) : f === 'deflate' ? new fflate.Zlib(ondata) : new fflate.Deflate(ondata)),
        (engine, bytes, final) => engine.push(bytes, final),
      ));
    }
  }

  class DecompressionStream {
    /** @param {unknown} format */
    constructor(format) {
      needArgs(arguments.length, 1, 'DecompressionStream');
      const f = formatOf(format, 'DecompressionStream');
      const fflate = require('fflate');
      /** @param {any} engine @param {Uint8Array} bytes @param {boolean} final */
      const push = (engine, bytes, final) => {
        try {
          engine.push(bytes, final);
        } catch (error) {
          // An allocation the isolate's memory limit refused: the run is out of memory, not the data bad.
          if (error !== null && typeof error === 'object' && /** @type {Error} */ (error).name === 'RangeError') {
            throw new RangeErrorCtor("DecompressionStream: out of memory: the decompressed data does not fit in the function's memory limit (memoryMb)");
          }
          const message = error !== null && typeof error === 'object' ? str(/** @type {Error} */ (error).message) : str(error);
          throw new TypeErrorCtor(`DecompressionStream: the ${f} data is not valid: ${message}`);
        }
      };
      transformOf(this, flateTransform(
        'DecompressionStream',
        (ondata) => (f === 'gzip' ? new fflate.Gunzip(ondata) : f === 'deflate' ? new fflate.Unzlib(ondata) : new fflate.Inflate(ondata)),
        (engine, bytes, final, received) => {
          // No data at all is a truncated stream too (fflate takes it as an empty one).
          if (final && received === 0) throw new TypeErrorCtor(`DecompressionStream: the ${f} data ended before its end`);
          for (let at = 0; at < bytes.length; at += INFLATE_SLICE) push(engine, bytes.subarray(at, at + INFLATE_SLICE), false);
          if (final) push(engine, bytes, true);
        },
      ));
    }
  }

  const made = { TextEncoderStream, TextDecoderStream, CompressionStream, DecompressionStream };
  for (const name of TRANSFORM_CLASSES) {
    ObjectDefineProperty(made[name].prototype, 'readable', sideGetter(readableOf, `${name}.readable`));
    ObjectDefineProperty(made[name].prototype, 'writable', sideGetter(writableOf, `${name}.writable`));
    ObjectDefineProperty(made[name], 'name', { value: name, configurable: true });
    ObjectDefineProperty(made[name].prototype, SymbolToStringTag, { value: name, configurable: true });
  }
  return made;
};
