// @ts-check
// The guest runtime: runs inside each fresh isolated-vm Context before the function's module.
//
// This is the attack surface between the function and the host (see vm2's history), so:
// - it is bundled (src-main/sandboxHost/guestBundle.ts) into one script evaluated in the isolate;
// - every intrinsic it relies on is captured (intrinsics.js) before any function code runs, and it
//   never uses `instanceof` or a global the function can replace;
// - only copies cross: strings, numbers, plain data and byte arrays (host.js).
// callablePrelude returns [settle, invoke]: the host calls settle(id, ok, value) to finish an async
// host operation, and invoke(moduleExports, argsJson, functionName, runId, deadline) to run the handler.
import { connect, settle } from './host.js';
import { install as installConsole } from './console.js';
import { install as installTimers } from './timers.js';
import { install as installBase64 } from './base64.js';
import { install as installRandom } from './random.js';
import { defineLazyGlobal } from './globals.js';
import { invoke } from './invoke.js';
import { installWeb } from './web/index.js';

// Classes are made on first use: their module is required by the global's factory, so esbuild
// runs its top level then (a plain call that never uses them does not pay for them).
/** @returns {typeof import('./textCoders.js')} */
const textCoders = () => require('./textCoders.js');
/** @returns {typeof import('./url.js')} */
const url = () => require('./url.js');

/**
 * @param {import('./host.js').HostSync} hostSync
 * @param {import('./host.js').HostStart} hostStart
 * @returns {[settle: (id: number, ok: boolean, value: unknown) => void, invoke: (moduleExports: any, argsJson: string, functionName: unknown, runId: unknown, deadline: number) => Promise<string>]}
 */
export function callablePrelude(hostSync, hostStart) {
  connect(hostSync, hostStart);
  installConsole();
  installTimers();
  installBase64();
  defineLazyGlobal('TextEncoder', () => textCoders().TextEncoder);
  defineLazyGlobal('TextDecoder', () => textCoders().TextDecoder);
  installRandom();
  defineLazyGlobal('URLSearchParams', () => url().URLSearchParams);
  defineLazyGlobal('URL', () => url().URL);
  defineLazyGlobal('Headers', () => /** @type {typeof import('./headers.js')} */ (require('./headers.js')).Headers);
  installWeb();
  return [settle, invoke];
}
