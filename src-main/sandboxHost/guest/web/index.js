// @ts-check
// The web platform (WinterTC Minimum Common API), one module per API, installed after the base
// modules: each module's install() is called here, in order.

import { install as installSubtle } from './subtle.js';

export function installWeb() {
  installSubtle();
}
