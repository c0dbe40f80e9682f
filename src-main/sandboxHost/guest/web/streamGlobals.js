// @ts-check
// The globals of the stream classes (streams.js), each loading them on first read: a plain call
// never runs streams.js.
import { defineLazyAccessor, lazyGlobal } from '../globals.js';

/** @typedef {import('./streams.js').StreamClasses} StreamClasses */

/** The factory of one stream class (made when its global is first read). @param {keyof StreamClasses} name */
const streamClass = (name) => () => /** @type {typeof import('./streams.js')} */ (require('./streams.js')).streams()[name];

// Written out, one closure per global: this runs in every fresh context (streams.js's STREAM_CLASSES, TRANSFORM_CLASSES).
export function install() {
  defineLazyAccessor('ReadableStream', (...v) => lazyGlobal('ReadableStream', v, streamClass('ReadableStream')));
  defineLazyAccessor('ReadableStreamDefaultReader', (...v) => lazyGlobal('ReadableStreamDefaultReader', v, streamClass('ReadableStreamDefaultReader')));
  defineLazyAccessor('ReadableStreamBYOBReader', (...v) => lazyGlobal('ReadableStreamBYOBReader', v, streamClass('ReadableStreamBYOBReader')));
  defineLazyAccessor('ReadableStreamBYOBRequest', (...v) => lazyGlobal('ReadableStreamBYOBRequest', v, streamClass('ReadableStreamBYOBRequest')));
  defineLazyAccessor('ReadableByteStreamController', (...v) => lazyGlobal('ReadableByteStreamController', v, streamClass('ReadableByteStreamController')));
  defineLazyAccessor('ReadableStreamDefaultController', (...v) => lazyGlobal('ReadableStreamDefaultController', v, streamClass('ReadableStreamDefaultController')));
  defineLazyAccessor('WritableStream', (...v) => lazyGlobal('WritableStream', v, streamClass('WritableStream')));
  defineLazyAccessor('WritableStreamDefaultWriter', (...v) => lazyGlobal('WritableStreamDefaultWriter', v, streamClass('WritableStreamDefaultWriter')));
  defineLazyAccessor('WritableStreamDefaultController', (...v) => lazyGlobal('WritableStreamDefaultController', v, streamClass('WritableStreamDefaultController')));
  defineLazyAccessor('TransformStream', (...v) => lazyGlobal('TransformStream', v, streamClass('TransformStream')));
  defineLazyAccessor('TransformStreamDefaultController', (...v) => lazyGlobal('TransformStreamDefaultController', v, streamClass('TransformStreamDefaultController')));
  defineLazyAccessor('ByteLengthQueuingStrategy', (...v) => lazyGlobal('ByteLengthQueuingStrategy', v, streamClass('ByteLengthQueuingStrategy')));
  defineLazyAccessor('CountQueuingStrategy', (...v) => lazyGlobal('CountQueuingStrategy', v, streamClass('CountQueuingStrategy')));
  defineLazyAccessor('TextEncoderStream', (...v) => lazyGlobal('TextEncoderStream', v, streamClass('TextEncoderStream')));
  defineLazyAccessor('TextDecoderStream', (...v) => lazyGlobal('TextDecoderStream', v, streamClass('TextDecoderStream')));
  defineLazyAccessor('CompressionStream', (...v) => lazyGlobal('CompressionStream', v, streamClass('CompressionStream')));
  defineLazyAccessor('DecompressionStream', (...v) => lazyGlobal('DecompressionStream', v, streamClass('DecompressionStream')));
}
