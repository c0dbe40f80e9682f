// @ts-check
// The globals of misc.js (structuredClone, performance, navigator), which loads on first use, and
// reportError and setInterval/clearInterval, which every context has.
import { ReflectApply, NumberIsFinite, PromiseThen, TypeErrorCtor, call } from '../intrinsics.js';
import { start } from '../host.js';
import { newTimer, timerActive, clearTimer } from '../timers.js';
import { defineGlobal, defineLazyAccessor, lazyGlobal } from '../globals.js';
import { reportException } from './eventsBase.js';

/** @returns {typeof import('./misc.js')} */
const misc = () => require('./misc.js');

// ---- setInterval / clearInterval, structuredClone, reportError ----
// Methods, so each is named as the platform's is (a method's name is its key; esbuild renames a
// top-level function that a global of the same name is read beside).
const fns = {
  /** @param {unknown} fn @param {any} ms @param {...unknown} args */
  setInterval(fn, ms, ...args) {
    if (typeof fn !== 'function') throw new TypeErrorCtor('setInterval needs a function');
    const delay = NumberIsFinite(+ms) && +ms > 0 ? +ms : 0;
    const handle = newTimer();
    // Each tick is one host timer: the host never fires one after the run's deadline, so the interval stops there.
    const tick = () => {
      call(
        PromiseThen,
        start('sleep', delay),
        () => {
          if (!timerActive(handle)) return;
          try {
            ReflectApply(fn, undefined, args);
          } catch (error) {
            reportException(error);
          }
          if (timerActive(handle)) tick();
        },
        () => {},
      );
    };
    tick();
    return handle;
  },
  /** Clears either kind of timer, as clearTimeout does (one map of active timers). @param {unknown} handle */
  clearInterval(handle) {
    clearTimer(handle);
  },
  /** @param {unknown} value @param {unknown} [options] */
  structuredClone(value, options) {
    // Passed on as given: how many arguments there were is part of the check.
    return ReflectApply(misc().structuredCloneFn, undefined, arguments);
  },
  /** @param {unknown} error */
  reportError(error) {
    if (arguments.length === 0) throw new TypeErrorCtor('reportError: 1 argument required, but only 0 present');
    reportException(error);
  },
};

export function install() {
  defineLazyAccessor('Performance', (...v) => lazyGlobal('Performance', v, () => misc().makePerformance().Performance));
  defineLazyAccessor('performance', (...v) => lazyGlobal('performance', v, () => misc().makePerformance().performance));
  defineLazyAccessor('navigator', (...v) => lazyGlobal('navigator', v, () => misc().makeNavigator()));
  defineGlobal('reportError', fns.reportError);
  defineGlobal('setInterval', fns.setInterval);
  defineGlobal('clearInterval', fns.clearInterval);
  defineGlobal('structuredClone', fns.structuredClone);
}
