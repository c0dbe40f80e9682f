// @ts-check
// console and the formatting ctx.log shares: each line crosses to the host as one string.
import { ObjectCreate, ArrayJoin, ArrayMap, JSONStringify, call, str } from './intrinsics.js';
import { sync } from './host.js';
import { defineGlobal } from './globals.js';

/** @param {any} value @param {number} [depth] @returns {string} */
export const format = (value, depth) => {
  if (typeof value === 'string') return value;
  if (value === undefined) return 'undefined';
  if (typeof value === 'bigint') return `${str(value)}n`;
  if (typeof value === 'symbol' || typeof value === 'function') {
    try {
      return str(value);
    } catch {
      return typeof value;
    }
  }
  if (value !== null && typeof value === 'object' && typeof value.message === 'string' && typeof value.stack === 'string') {
    return value.stack;
  }
  try {
    const json = JSONStringify(value);
    return json === undefined ? str(value) : json;
  } catch {
    try {
      return str(value);
    } catch {
      return '[unprintable]';
    }
  }
};
/** @param {unknown[]} args @returns {string} */
const formatArgs = (args) => call(ArrayJoin, call(ArrayMap, args, /** @param {unknown} a */ (a) => format(a, 0)), ' ');
/** @param {string} level @param {unknown[]} args */
export const log = (level, args) => {
  sync('log', level, formatArgs(args));
};

const consoleObject = ObjectCreate(null);
consoleObject.log = /** @param {...unknown} args */ (...args) => log('info', args);
consoleObject.info = /** @param {...unknown} args */ (...args) => log('info', args);
consoleObject.debug = /** @param {...unknown} args */ (...args) => log('debug', args);
consoleObject.warn = /** @param {...unknown} args */ (...args) => log('warn', args);
consoleObject.error = /** @param {...unknown} args */ (...args) => log('error', args);
consoleObject.trace = /** @param {...unknown} args */ (...args) => log('debug', args);

export function install() {
  defineGlobal('console', consoleObject);
}
