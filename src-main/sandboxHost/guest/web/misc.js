// @ts-check
// structuredClone, performance and navigator, loaded on first use (miscGlobals.js defines their
// globals), so its top level may run after function code: it takes every intrinsic from intrinsics.js.
import {
  ObjectDefineProperty,
  ObjectKeys,
  ObjectPrototypeToString,
  WeakMapCtor,
  WeakMapHas,
  WeakMapSet,
  MapForEach,
  TypeErrorCtor,
  ErrorCtor,
  StringIndexOf,
  StringSlice,
  SymbolToStringTag,
  SymbolCtor,
  ArrayIncludes,
  SetForEach,
  call,
} from '../intrinsics.js';
import { loaded } from '../globals.js';
import { now, timeOrigin } from './eventsBase.js';

// DOMException's and the events' modules load when first needed (structuredClone needs neither).
/** @param {string} message @param {string} name */
const domException = (message, name) => /** @type {typeof import('./domException.js')} */ (require('./domException.js')).domException(message, name);
/** @returns {ReturnType<typeof import('./events.js').events>} */
const events = () => /** @type {typeof import('./events.js')} */ (require('./events.js')).events();

const MAKE = SymbolCtor('make');
/** @type {{ Performance: Function, performance: object } | undefined} */
let performanceParts;
/** @type {(performance: object) => number} */
let originOf;
export const makePerformance = () => {
  if (performanceParts === undefined) {
    // HR-TIME's Performance (an EventTarget): now(), timeOrigin, toJSON().
    class Performance extends events().EventTarget {
      #origin = timeOrigin;
      /** @param {unknown} [token] */
      constructor(token) {
        if (token !== MAKE) throw new TypeErrorCtor('Performance: Illegal constructor');
        super();
      }
      get timeOrigin() {
        return this.#origin;
      }
      now() {
        originOf(this);
        return now();
      }
      toJSON() {
        return { timeOrigin: this.#origin };
      }
      static {
        originOf = (p) => /** @type {Performance} */ (p).#origin;
      }
    }
    ObjectDefineProperty(Performance, 'name', { value: 'Performance', configurable: true });
    ObjectDefineProperty(Performance.prototype, SymbolToStringTag, { value: 'Performance', configurable: true });
    performanceParts = { Performance, performance: new Performance(MAKE) };
  }
  return performanceParts;
};

// ---- navigator ----
// One product token, as WinterTC recommends for the default User-Agent (workerd says 'Cloudflare-Workers').
export const USER_AGENT = 'Callable-Studio';
export const makeNavigator = () => {
  class Navigator {
    /** @param {unknown} [token] */
    constructor(token) {
      if (token !== MAKE) throw new TypeErrorCtor('Navigator: Illegal constructor');
    }
    get userAgent() {
      return USER_AGENT;
    }
  }
  ObjectDefineProperty(Navigator.prototype, SymbolToStringTag, { value: 'Navigator', configurable: true });
  return new Navigator(MAKE);
};

// ---- structuredClone ----
/** @type {{ serialize: (value: unknown) => Array<[unknown, any]>, deserialize: (records: unknown) => unknown } | undefined} */
let cloneLibrary;
const ERROR_NAMES = ['Error', 'EvalError', 'RangeError', 'ReferenceError', 'SyntaxError', 'TypeError', 'URIError'];
// What @ungap/structured-clone names by its class (its other records are numbered): rebuilt with `new globalThis[name]`.
const CLASSES = ['-0', 'ArrayBuffer', 'DataView', 'Boolean', 'Number', 'String', 'BigInt', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float16Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'];
const ERROR_RECORD = 7;
/** @param {string} message */
const dataCloneError = (message) => domException(message, 'DataCloneError');

/**
 * The HTML standard does not make URL or URLSearchParams serializable, but the library would copy
 * either as an empty object: find them (by brand) where the library will look, and refuse them.
 * @param {unknown} value @param {WeakMap<object, true>} seen
 */
const refuseUnserializable = (value, seen) => {
  if (value === null || typeof value !== 'object' || call(WeakMapHas, seen, value)) return;
  call(WeakMapSet, seen, value, true);
  if (loaded.url) {
    const { isURL, paramsText } = /** @type {typeof import('../url.js')} */ (require('../url.js'));
    if (isURL(value) || paramsText(value) !== undefined) {
      throw dataCloneError(`structuredClone: a ${isURL(value) ? 'URL' : 'URLSearchParams'} could not be cloned.`);
    }
  }
  const tag = call(StringSlice, call(ObjectPrototypeToString, value), 8, -1);
  /** @param {unknown} entry */
  const visit = (entry) => refuseUnserializable(entry, seen);
  const o = /** @type {any} */ (value);
  if (tag === 'Map') call(MapForEach, o, (/** @type {unknown} */ entry, /** @type {unknown} */ key) => (visit(key), visit(entry)));
  else if (tag === 'Set') call(SetForEach, o, visit);
  else if (tag === 'Array') for (let i = 0; i < o.length; i++) visit(o[i]);
  else if (call(StringIndexOf, tag, 'Array') < 0 && tag !== 'DataView' && tag !== 'Date' && tag !== 'RegExp' && !(o instanceof ErrorCtor)) {
    const keys = ObjectKeys(o);
    for (let i = 0; i < keys.length; i++) visit(o[/** @type {string} */ (keys[i])]);
  }
};

/** @param {unknown} value @param {unknown} [options] */
export const structuredCloneFn = function structuredClone(value, options) {
  if (arguments.length === 0) throw new TypeErrorCtor('structuredClone: 1 argument required, but only 0 present');
  if (options !== undefined && options !== null && typeof options !== 'object') throw new TypeErrorCtor('structuredClone: the options must be an object');
  // @ts-expect-error -- @ungap/structured-clone ships no types
  const library = (cloneLibrary ??= require('@ungap/structured-clone'));
  let records;
  refuseUnserializable(value, new WeakMapCtor());
  try {
    records = library.serialize(value);
  } catch (error) {
    const message = error !== null && typeof error === 'object' ? /** @type {{ message?: unknown }} */ (error).message : undefined;
    // The library's words for a function or a symbol: the DataCloneError the platform throws.
    if (typeof message === 'string' && call(StringIndexOf, message, 'unable to serialize ') === 0) {
      throw dataCloneError(`structuredClone: a ${call(StringSlice, message, 20)} could not be cloned.`);
    }
    throw error;
  }
  for (let i = 0; i < records.length; i++) {
    const record = /** @type {[unknown, any]} */ (records[i]);
    const kind = record[0];
    if (typeof kind === 'string' && !call(ArrayIncludes, CLASSES, kind)) throw dataCloneError(`structuredClone: a ${kind} could not be cloned.`);
    // Only the standard error classes are rebuilt as themselves (the HTML serialization of errors).
    if (kind === ERROR_RECORD && !(record[1] && call(ArrayIncludes, ERROR_NAMES, record[1].name))) record[1] = { name: 'Error', message: record[1] && record[1].message };
  }
  return library.deserialize(records);
};
