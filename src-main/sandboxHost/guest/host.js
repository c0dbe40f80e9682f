// @ts-check
// The only way to the host: two isolated-vm Callbacks per context, which copy their arguments and
// results. Only plain data and bytes cross; the host validates everything it receives and enforces
// every limit itself.
import { ReflectApply, ErrorCtor, PromiseCtor, MapCtor, MapGet, MapSet, MapDelete, call } from './intrinsics.js';

/**
 * What the host answers an operation: its value, or the failure the guest sees as an Error.
 * @typedef {{ ok: true, value: any } | { ok: false, error?: unknown }} HostAnswer
 * @typedef {(op: string, ...args: unknown[]) => HostAnswer | undefined} HostSync
 * @typedef {(op: string, payload: unknown) => HostAnswer | undefined} HostStart
 */

/** @type {HostSync} */
let hostSync = () => undefined;
/** @type {HostStart} */
let hostStart = () => undefined;

/** Binds this context to the host's callbacks (once, before any install()). @param {HostSync} syncCallback @param {HostStart} startCallback */
export const connect = (syncCallback, startCallback) => {
  hostSync = syncCallback;
  hostStart = startCallback;
};

/** @param {any} failure */
export const hostError = (failure) => {
  const err = /** @type {Error & { code?: string }} */ (new ErrorCtor(failure && typeof failure.message === 'string' ? failure.message : 'host operation failed'));
  if (failure && typeof failure.code === 'string') err.code = failure.code;
  return err;
};
// A sync host call: the host answers { ok, value } or { ok: false, error }.
/** @param {string} op @param {...unknown} args */
export const sync = (op, ...args) => {
  const answer = ReflectApply(hostSync, undefined, [op, ...args]);
  if (answer && answer.ok === true) return answer.value;
  throw hostError(answer && answer.error);
};

// Async host operations (fetch, timers): the host settles them by id.
/** Made with the first async operation (a plain call starts none). @type {Map<number, { resolve: (value: unknown) => void, reject: (reason: unknown) => void }> | undefined} */
let pending;
/** `onId` is given the operation's id (fetch passes it to fetchAbort). @type {(op: string, payload: unknown, onId?: (id: number) => void) => Promise<any>} */
export const start = (op, payload, onId) =>
  new PromiseCtor((resolve, reject) => {
    const answer = ReflectApply(hostStart, undefined, [op, payload]);
    if (!answer || answer.ok !== true) {
      reject(hostError(answer && answer.error));
      return;
    }
    call(MapSet, (pending ??= new MapCtor()), answer.value, { resolve, reject });
    if (onId !== undefined) onId(answer.value);
  });
/** @param {number} id @param {boolean} ok @param {unknown} value */
export const settle = (id, ok, value) => {
  const entry = pending === undefined ? undefined : call(MapGet, pending, id);
  if (entry === undefined) return;
  call(MapDelete, /** @type {Map<number, unknown>} */ (pending), id);
  if (ok) entry.resolve(value);
  else entry.reject(hostError(value));
};
