// @ts-check
// The web platform (WinterTC Minimum Common API), one module per API, installed after the base
// modules. A module whose top level builds classes is loaded with require() inside the factory of
// a lazy global (esbuild wraps it in a lazy initializer), so a call that never touches Blob, File,
// FormData, FileReader, fetch, Request, Response or WebCrypto never runs it.

import { defineLazyAccessor, lazyGlobal } from '../globals.js';
import { install as installEvents } from './eventGlobals.js';
import { install as installMisc } from './miscGlobals.js';
import { install as installStreams } from './streamGlobals.js';

/** @returns {typeof import('./blob.js')} */
const blob = () => require('./blob.js');
/** @returns {typeof import('./subtle.js')} */
const subtle = () => require('./subtle.js');
/** @returns {typeof import('./fetch.js')} */
const fetchModule = () => require('./fetch.js');

export function installWeb() {
  defineLazyAccessor('DOMException', (...v) => lazyGlobal('DOMException', v, () => /** @type {typeof import('./domException.js')} */ (require('./domException.js')).DOMExceptionClass()));
  installEvents();
  installMisc();
  installStreams();
  defineLazyAccessor('SubtleCrypto', (...v) => lazyGlobal('SubtleCrypto', v, () => subtle().interfaces().SubtleCrypto));
  defineLazyAccessor('CryptoKey', (...v) => lazyGlobal('CryptoKey', v, () => subtle().interfaces().CryptoKey));
  defineLazyAccessor('Blob', (...v) => lazyGlobal('Blob', v, () => blob().Blob));
  defineLazyAccessor('File', (...v) => lazyGlobal('File', v, () => blob().File));
  defineLazyAccessor('FormData', (...v) => lazyGlobal('FormData', v, () => /** @type {typeof import('./formData.js')} */ (require('./formData.js')).FormData));
  defineLazyAccessor('FileReader', (...v) => lazyGlobal('FileReader', v, () => /** @type {typeof import('./fileReader.js')} */ (require('./fileReader.js')).classes().FileReader));
  defineLazyAccessor('ProgressEvent', (...v) => lazyGlobal('ProgressEvent', v, () => /** @type {typeof import('./fileReader.js')} */ (require('./fileReader.js')).classes().ProgressEvent));
  defineLazyAccessor('Request', (...v) => lazyGlobal('Request', v, () => fetchModule().Request));
  defineLazyAccessor('Response', (...v) => lazyGlobal('Response', v, () => fetchModule().Response));
  defineLazyAccessor('fetch', (...v) => lazyGlobal('fetch', v, () => fetchModule().fetchFn));
}
