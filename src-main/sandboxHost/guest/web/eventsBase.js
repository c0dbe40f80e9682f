// @ts-check
// What the events (events.js) and misc.js (performance, reportError) share, made in every context:
// the clock and exception reporting.
import { sync } from '../host.js';
import { log } from '../console.js';

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
