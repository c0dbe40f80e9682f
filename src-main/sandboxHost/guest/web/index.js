// @ts-check
// The web platform (WinterTC Minimum Common API), one module per API, installed after the base
// modules: each module's install() is called here, in order.

import { install as installDOMException } from './domException.js';
import { install as installEvents } from './events.js';
import { install as installMisc } from './misc.js';
import { install as installStreams } from './streams.js';
import { install as installSubtle } from './subtle.js';

export function installWeb() {
  installDOMException();
  installEvents();
  installMisc();
  installStreams();
  installSubtle();
}
