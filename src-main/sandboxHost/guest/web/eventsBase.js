// @ts-check
// What every context needs of the events: the clock and exception reporting misc.js shares
// (performance, reportError), and the globals Event, CustomEvent, EventTarget, AbortController and
// AbortSignal, whose classes (events.js) are made on first use.
import { sync } from '../host.js';
import { defineLazyAccessor, lazyGlobal } from '../globals.js';
import { log } from '../console.js';

/** @returns {ReturnType<typeof import('./events.js').events>} */
const events = () => /** @type {typeof import('./events.js')} */ (require('./events.js')).events();

const DateNow = Date.now;
const MathRound = Math.round;

// ---- the clock ----
// The time origin is when the context was made (Date.now(): free, and whole milliseconds). The
// host's monotonic clock is asked only when the time is read, and is anchored to the origin on its
// first use, so a plain call costs no host operation. The host gives it in 100 µs steps.
export const timeOrigin = DateNow();
let anchorHost = -1;
let anchorOffset = 0;
let last = 0;

/** Milliseconds since the context's time origin, in 100 µs steps; never goes back. */
export const now = () => {
  let host;
  try {
    host = sync('now');
  } catch {
    host = undefined;
  }
  let t;
  if (typeof host !== 'number') t = DateNow() - timeOrigin;
  else {
    if (anchorHost < 0) {
      anchorHost = host;
      anchorOffset = DateNow() - timeOrigin;
    }
    t = MathRound((anchorOffset + host - anchorHost) * 10) / 10;
  }
  if (t > last) last = t;
  return last;
};

// ---- reportError: HTML's "report an exception" ----
/** Logs an exception nobody caught (a listener's, a timer's) as console.error does; never throws. @param {unknown} error */
export const reportException = (error) => {
  try {
    log('error', ['Uncaught', error]);
  } catch {
    // The log limit: the host has already ended the run.
  }
};

export function install() {
  defineLazyAccessor('Event', (...v) => lazyGlobal('Event', v, () => events().Event));
  defineLazyAccessor('CustomEvent', (...v) => lazyGlobal('CustomEvent', v, () => events().CustomEvent));
  defineLazyAccessor('EventTarget', (...v) => lazyGlobal('EventTarget', v, () => events().EventTarget));
  defineLazyAccessor('AbortController', (...v) => lazyGlobal('AbortController', v, () => events().AbortController));
  defineLazyAccessor('AbortSignal', (...v) => lazyGlobal('AbortSignal', v, () => events().AbortSignal));
}
