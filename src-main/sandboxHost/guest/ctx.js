// @ts-check
// The ctx a handler receives: fetch, elicit, sample, log, progress, content and the run's identity.
import { ObjectFreeze, str } from './intrinsics.js';
import { sync } from './host.js';
import { log } from './console.js';
import { content } from './content.js';

// fetch, elicit and sample (and what they need) load on their first use: a plain call never does.
/** @returns {typeof import('./ctxMethods.js')} */
const methods = () => require('./ctxMethods.js');
/** @param {unknown} input @param {any} [init] */
const fetchFn = (input, init) => methods().fetchFn(input, init);
/** @param {unknown} message @param {unknown} [requestedSchema] */
const elicitFn = (message, requestedSchema) => methods().elicitFn(message, requestedSchema);
/** @param {unknown} messages @param {unknown} [options] */
const sampleFn = (messages, options) => methods().sampleFn(messages, options);

/** The frozen ctx of one call. @param {unknown} functionName @param {unknown} runId @param {number} deadline */
export const createCtx = (functionName, runId, deadline) => {
  const ctxLog = /** @param {...unknown} args */ (...args) => log('info', args);
  ctxLog.debug = /** @param {...unknown} args */ (...args) => log('debug', args);
  ctxLog.info = /** @param {...unknown} args */ (...args) => log('info', args);
  ctxLog.warn = /** @param {...unknown} args */ (...args) => log('warn', args);
  ctxLog.error = /** @param {...unknown} args */ (...args) => log('error', args);
  return ObjectFreeze({
    fetch: fetchFn,
    elicit: elicitFn,
    sample: sampleFn,
    log: ObjectFreeze(ctxLog),
    progress: /** @param {any} progress @param {any} [total] @param {unknown} [message] */ (progress, total, message) => {
      sync('progress', +progress, total === undefined ? undefined : +total, message === undefined ? undefined : str(message));
    },
    content,
    // A placeholder the engine swaps for the credential's secret in requests to its own hosts; throws when the function may not use it.
    secret: /** @param {unknown} name */ (name) => /** @type {string} */ (sync('secret', str(name))),
    functionName: str(functionName),
    runId: str(runId),
    deadline: +deadline,
  });
};
