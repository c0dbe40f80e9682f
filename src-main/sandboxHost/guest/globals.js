// @ts-check
// Globals the guest runtime installs: non-enumerable, writable and configurable, like the
// platform's own, so a function may replace them.
import { ObjectCreate, ObjectDefineProperty } from './intrinsics.js';

const G = globalThis;

/**
 * Which modules loaded on first use have loaded (each sets its own name here): before then no
 * object of theirs exists, so a brand check need not load them.
 * @type {Record<string, true | undefined>}
 */
export const loaded = ObjectCreate(null);

// The descriptors every global is defined with, made once and refilled: in a fresh context, whose
// functions have no feedback yet, each object literal is made by a runtime call, and a context
// defines some fifty globals. No prototype, so nothing a function put on Object.prototype is read.
const DATA = /** @type {PropertyDescriptor} */ ({ __proto__: null, value: undefined, writable: true, configurable: true, enumerable: false });
const ACCESSOR = /** @type {PropertyDescriptor} */ ({ __proto__: null, get: undefined, set: undefined, configurable: true, enumerable: false });

/** @param {string} name @param {unknown} value */
export const defineGlobal = (name, value) => {
  DATA.value = value;
  ObjectDefineProperty(G, name, DATA);
  DATA.value = undefined;
};

/** Values of the globals made on first use so far, by name (a getter read again after it was replaced). */
const made = /** @type {Record<string, unknown>} */ (ObjectCreate(null));

/**
 * A global built on first access: heavy code (web-streams-polyfill, fflate…) must not cost a call
 * that never uses it. `factory` runs once; its value then replaces the getter as a plain data
 * property, and assigning the global first just replaces it without running the factory.
 *
 * Its getter and setter are one function, written where the global is defined as
 * `(...replacement) => lazyGlobal(name, replacement, () => …)`: a fresh context makes that one
 * closure per global (no scope of its own, no factory until it is read). An assignment passes the
 * new value; a read makes the value once.
 *
 * A factory loads a library or a guest module with `require('pkg')` inside its body, never with a
 * top-level import: esbuild bundles what is required inside a lazy initializer (`__commonJS` /
 * `__esm`), so its top level runs only on that first require (test/engine/guestBundle.test.ts proves
 * it). That code then runs after function code, so it must not rely on globals a function can
 * replace for anything safety depends on: a guest module takes every intrinsic from intrinsics.js.
 * @param {string} name @param {unknown[]} replacement @param {() => unknown} factory
 */
export const lazyGlobal = (name, replacement, factory) => {
  if (replacement.length > 0) {
    defineGlobal(name, replacement[0]);
    return undefined;
  }
  if (!(name in made)) {
    const value = factory();
    // Named as the platform names it: the bundle renamed some classes and functions (Blob2, _Request).
    if (typeof value === 'function' && value.name !== name) {
      DATA.value = name;
      DATA.writable = false;
      ObjectDefineProperty(value, 'name', DATA);
      DATA.writable = true;
    }
    made[name] = value;
    defineGlobal(name, value);
  }
  return made[name];
};

/** Defines the global `name` with `accessor` as its getter and setter (see lazyGlobal). @param {string} name @param {(...replacement: unknown[]) => unknown} accessor */
export const defineLazyAccessor = (name, accessor) => {
  ACCESSOR.get = accessor;
  ACCESSOR.set = accessor;
  ObjectDefineProperty(G, name, ACCESSOR);
  ACCESSOR.get = undefined;
  ACCESSOR.set = undefined;
};

/** The same for a name known only when it runs (one more closure and scope per global). @param {string} name @param {() => unknown} factory */
export const defineLazyGlobal = (name, factory) => defineLazyAccessor(name, (...replacement) => lazyGlobal(name, replacement, factory));
