// @ts-check
// setTimeout/clearTimeout/queueMicrotask, bounded by the run's deadline: the host never fires one after it.
import { ReflectApply, NumberIsFinite, PromiseResolve, PromiseThen, TypeErrorCtor, MapCtor, MapSet, MapDelete, MapHas, call } from './intrinsics.js';
import { start } from './host.js';
import { defineGlobal } from './globals.js';

let nextTimer = 1;
/** Made with the first timer (a plain call sets none). @type {Map<number, true> | undefined} */
let timers;
// Methods, so each is named as the platform's is: esbuild renames a top-level function that a
// global of the same name is read beside (setTimeout2), and a method's name is its key.
const fns = {
  /** @param {unknown} fn @param {any} ms @param {...unknown} args */
  setTimeout(fn, ms, ...args) {
    if (typeof fn !== 'function') throw new TypeErrorCtor('setTimeout needs a function');
    const delay = NumberIsFinite(+ms) && +ms > 0 ? +ms : 0;
    const handle = nextTimer++;
    call(MapSet, (timers ??= new MapCtor()), handle, true);
    call(
      PromiseThen,
      start('sleep', delay),
      () => {
        if (timers === undefined || !call(MapHas, timers, handle)) return;
        call(MapDelete, timers, handle);
        ReflectApply(fn, undefined, args);
      },
      () => {},
    );
    return handle;
  },
  /** @param {unknown} handle */
  clearTimeout(handle) {
    if (timers !== undefined) call(MapDelete, timers, handle);
  },
  /** @param {() => unknown} fn */
  queueMicrotask(fn) {
    call(PromiseThen, PromiseResolve(), () => fn());
  },
};

// HTML's one map of active timers: setInterval (web/misc.js) takes its handles here too, so
// clearTimeout and clearInterval clear either kind.
/** A new active timer's handle. */
export const newTimer = () => {
  const handle = nextTimer++;
  call(MapSet, (timers ??= new MapCtor()), handle, true);
  return handle;
};
/** @param {number} handle */
export const timerActive = (handle) => timers !== undefined && call(MapHas, timers, handle);
export const clearTimer = fns.clearTimeout;

export function install() {
  defineGlobal('setTimeout', fns.setTimeout);
  defineGlobal('clearTimeout', fns.clearTimeout);
  defineGlobal('queueMicrotask', fns.queueMicrotask);
}
