// @ts-check
// setTimeout/clearTimeout/queueMicrotask, bounded by the run's deadline: the host never fires one after it.
import { ReflectApply, NumberIsFinite, PromiseResolve, PromiseThen, TypeErrorCtor, MapCtor, MapSet, MapDelete, MapHas, call } from './intrinsics.js';
import { start } from './host.js';
import { defineGlobal } from './globals.js';

let nextTimer = 1;
/** Made with the first timer (a plain call sets none). @type {Map<number, true> | undefined} */
let timers;
/** @param {unknown} fn @param {any} ms @param {...unknown} args */
const setTimeoutFn = (fn, ms, ...args) => {
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
};
/** @param {unknown} handle */
const clearTimeoutFn = (handle) => {
  if (timers !== undefined) call(MapDelete, timers, handle);
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
export const clearTimer = clearTimeoutFn;

export function install() {
  defineGlobal('setTimeout', setTimeoutFn);
  defineGlobal('clearTimeout', clearTimeoutFn);
  defineGlobal('queueMicrotask', /** @param {() => unknown} fn */ (fn) => {
    call(PromiseThen, PromiseResolve(), () => fn());
  });
}
