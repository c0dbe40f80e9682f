// @ts-check
// The guest runtime: runs inside each fresh isolated-vm Context before the function's module.
//
// This is the attack surface between the function and the host (see vm2's history), so:
// - it is bundled (src-main/sandboxHost/guestBundle.ts) into one script evaluated in the isolate;
// - every intrinsic it relies on is captured (intrinsics.js) before any function code runs, and it
//   never uses `instanceof` or a global the function can replace;
// - only copies cross: strings, numbers, plain data and byte arrays (host.js).
// callablePrelude returns the context's one entry point for the host: entry(id, ok, value) finishes
// an async host operation (settle: `ok` is a boolean), entry(moduleExports, argsJson, functionName,
// runId, deadline) runs the handler (invoke: `argsJson` is a string). One function, so the host takes
// a single reference out of each fresh context.
import { connect, settle } from './host.js';
import { install as installConsole } from './console.js';
import { install as installTimers } from './timers.js';
import { install as installBase64 } from './base64.js';
import { install as installRandom } from './random.js';
import { defineLazyAccessor, lazyGlobal } from './globals.js';
import { invoke } from './invoke.js';
import { installWeb } from './web/index.js';

// Classes are made on first use: their module is required by the global's factory, so esbuild
// runs its top level then (a plain call that never uses them does not pay for them).
/** @returns {typeof import('./textCoders.js')} */
const textCoders = () => require('./textCoders.js');
/** @returns {typeof import('./url.js')} */
const url = () => require('./url.js');

/** Made once per context, never reachable from function code: the host alone holds it. @param {any} a @param {boolean | string} b @param {unknown} c @param {unknown} [d] @param {number} [e] */
const entry = (a, b, c, d, e) => (typeof b === 'boolean' ? settle(a, b, c) : invoke(a, /** @type {string} */ (b), c, d, /** @type {number} */ (e)));

/**
 * @param {import('./host.js').HostSync} hostSync
 * @param {import('./host.js').HostStart} hostStart
 * @returns {(a: any, b: boolean | string, c: unknown, d?: unknown, e?: number) => void | Promise<string>}
 */
export function callablePrelude(hostSync, hostStart) {
  connect(hostSync, hostStart);
  installConsole();
  installTimers();
  installBase64();
  defineLazyAccessor('TextEncoder', (...v) => lazyGlobal('TextEncoder', v, () => textCoders().TextEncoder));
  defineLazyAccessor('TextDecoder', (...v) => lazyGlobal('TextDecoder', v, () => textCoders().TextDecoder));
  installRandom();
  defineLazyAccessor('URLSearchParams', (...v) => lazyGlobal('URLSearchParams', v, () => url().URLSearchParams));
  defineLazyAccessor('URL', (...v) => lazyGlobal('URL', v, () => url().URL));
  defineLazyAccessor('Headers', (...v) => lazyGlobal('Headers', v, () => /** @type {typeof import('./headers.js')} */ (require('./headers.js')).Headers));
  installWeb();
  return entry;
}
