// @ts-check
// The web platform (WinterTC Minimum Common API), one module per API, installed after the base
// modules. A module whose top level builds classes is loaded with require() inside the factory of
// a lazy global (esbuild wraps it in a lazy initializer), so a call that never touches Blob, File,
// FormData, FileReader, fetch, Request, Response or WebCrypto never runs it.

import { defineLazyGlobal } from '../globals.js';
import { install as installDOMException } from './domException.js';
import { install as installEvents } from './events.js';
import { install as installMisc } from './misc.js';
import { install as installStreams } from './streams.js';

/** @returns {typeof import('./blob.js')} */
const blob = () => require('./blob.js');
/** @returns {typeof import('./subtle.js')} */
const subtle = () => require('./subtle.js');
/** @returns {typeof import('./fetch.js')} */
const fetchModule = () => require('./fetch.js');

export function installWeb() {
  installDOMException();
  installEvents();
  installMisc();
  installStreams();
  defineLazyGlobal('SubtleCrypto', () => subtle().interfaces().SubtleCrypto);
  defineLazyGlobal('CryptoKey', () => subtle().interfaces().CryptoKey);
  defineLazyGlobal('Blob', () => blob().Blob);
  defineLazyGlobal('File', () => blob().File);
  defineLazyGlobal('FormData', () => /** @type {typeof import('./formData.js')} */ (require('./formData.js')).FormData);
  defineLazyGlobal('FileReader', () => /** @type {typeof import('./fileReader.js')} */ (require('./fileReader.js')).classes().FileReader);
  defineLazyGlobal('ProgressEvent', () => /** @type {typeof import('./fileReader.js')} */ (require('./fileReader.js')).classes().ProgressEvent);
  defineLazyGlobal('Request', () => fetchModule().Request);
  defineLazyGlobal('Response', () => fetchModule().Response);
  defineLazyGlobal('fetch', () => fetchModule().fetchFn);
}
