// @ts-check
// Headers: names validated and lower-cased; ctx.fetch sends the pairs sorted by name.
import {
  ReflectApply,
  ObjectKeys,
  ArraySort,
  StringToLowerCase,
  StringTrim,
  RegExpTest,
  TypeErrorCtor,
  MapCtor,
  MapGet,
  MapSet,
  MapDelete,
  MapHas,
  MapForEach,
  SymbolIterator,
  SymbolToStringTag,
  call,
  str,
  append,
} from './intrinsics.js';
import { defineGlobal } from './globals.js';

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** @type {(headers: Headers) => [string, string][]} */
export let headerList;
/** @type {(headers: Headers) => void} Makes `headers` immutable (the Fetch standard's "immutable" guard). */
export let freezeHeaders;
/** @type {(headers: Headers) => boolean} */
export let headersFrozen;
export class Headers {
  /** @type {Map<string, string>} */
  #map = new MapCtor();
  // A response's from fetch, Response.error() or Response.redirect(): its headers cannot change.
  #immutable = false;
  /** @param {any} [init] */
  constructor(init) {
    if (init === undefined || init === null) return;
    if (typeof init === 'object' && typeof init[SymbolIterator] === 'function') {
      for (const pair of init) {
        const p = [...pair];
        if (p.length !== 2) throw new TypeErrorCtor('Headers: each header must be a [name, value] pair');
        this.append(p[0], p[1]);
      }
    } else if (typeof init === 'object') {
      for (const key of ObjectKeys(init)) this.append(key, init[key]);
    } else throw new TypeErrorCtor('Headers: expected an object or a list of pairs');
  }
  /** @param {unknown} name */
  #name(name) {
    const n = str(name);
    if (!call(RegExpTest, HEADER_NAME, n)) throw new TypeErrorCtor(`Headers: "${n}" is not a valid header name`);
    return call(StringToLowerCase, n);
  }
  #mutable() {
    if (this.#immutable) throw new TypeErrorCtor("Headers: these are a response's headers and cannot change; copy them with new Headers(response.headers)");
  }
  /** @param {unknown} name @param {unknown} value */
  append(name, value) {
    this.#mutable();
    const n = this.#name(name);
    const v = call(StringTrim, str(value));
    const prev = call(MapGet, this.#map, n);
    call(MapSet, this.#map, n, prev === undefined ? v : `${prev}, ${v}`);
  }
  /** @param {unknown} name @param {unknown} value */
  set(name, value) {
    this.#mutable();
    call(MapSet, this.#map, this.#name(name), call(StringTrim, str(value)));
  }
  /** @param {unknown} name */
  get(name) {
    const v = call(MapGet, this.#map, this.#name(name));
    return v === undefined ? null : v;
  }
  /** @param {unknown} name */
  has(name) {
    return call(MapHas, this.#map, this.#name(name));
  }
  /** @param {unknown} name */
  delete(name) {
    this.#mutable();
    call(MapDelete, this.#map, this.#name(name));
  }
  /** @param {(value: string, name: string, headers: Headers) => void} fn @param {unknown} [thisArg] */
  forEach(fn, thisArg) {
    for (const [k, v] of this.entries()) ReflectApply(fn, thisArg, [v, k, this]);
  }
  static {
    freezeHeaders = (headers) => {
      headers.#immutable = true;
    };
    headersFrozen = (headers) => headers.#immutable;
    // The pairs sorted by name, whatever the function did to Map's and Array's prototypes (ctx.fetch sends these).
    headerList = (headers) => {
      const all = /** @type {[string, string][]} */ ([]);
      call(MapForEach, headers.#map, /** @param {string} v @param {string} k */ (v, k) => append(all, [k, v]));
      call(ArraySort, all, /** @param {[string, string]} a @param {[string, string]} b */ (a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      return all;
    };
  }
  *entries() {
    const all = headerList(this);
    for (let i = 0; i < all.length; i++) yield /** @type {[string, string]} */ (all[i]);
  }
  *keys() {
    for (const p of this.entries()) yield p[0];
  }
  *values() {
    for (const p of this.entries()) yield p[1];
  }
  [SymbolIterator]() {
    return this.entries();
  }
  get [SymbolToStringTag]() {
    return 'Headers';
  }
}

export function install() {
  defineGlobal('Headers', Headers);
}
