// @ts-check
// The web platform (WinterTC Minimum Common API), one module per API, installed after the base
// modules: each module's install() is called here, in order.

import { install as installDOMException } from './domException.js';
import { install as installEvents } from './events.js';
import { install as installMisc } from './misc.js';
import { install as installStreams } from './streams.js';
import { install as installSubtle } from './subtle.js';
import { install as installBlob } from './blob.js';
import { install as installFormData } from './formData.js';
import { install as installFileReader } from './fileReader.js';
import { install as installFetch } from './fetch.js';

export function installWeb() {
  installDOMException();
  installEvents();
  installMisc();
  installStreams();
  installSubtle();
  installBlob();
  installFormData();
  installFileReader();
  installFetch();
}
