// @ts-check
// Headers as the Fetch standard defines them: a list of (name, value) pairs in insertion order,
// names lower-cased, values normalized and validated; get() combines, getSetCookie() does not, and
// iteration is the sorted-and-combined list. ctx.fetch sends that list. A plain `new Headers()`
// has no forbidden names (the "none" guard), as in workerd and undici.
import {
  ReflectApply,
  ReflectOwnKeys,
  ReflectGetOwnPropertyDescriptor,
  IteratorPrototype,
  ObjectCreate,
  ObjectDefineProperty,
  ArraySort,
  StringToLowerCase,
  StringReplace,
  RegExpTest,
  TypeErrorCtor,
  WeakMapCtor,
  WeakMapGet,
  WeakMapSet,
  SymbolIterator,
  SymbolToStringTag,
  call,
  str,
  append,
  setPair,
} from './intrinsics.js';


/**
 * The iterators of a WebIDL pair iterable (`iterable<K, V>`): objects whose prototype has
 * %IteratorPrototype% as its own, a `next` that reads the live list at the iterator's index, and
 * the "<Interface> Iterator" tag.
 * @template T
 * @param {string} tag @param {(target: T) => [string, string][]} listOf
 * @returns {(target: T, kind: 'key' | 'value' | 'key+value') => Iterator<unknown>}
 */
export const pairIterators = (tag, listOf) => {
  const state = new WeakMapCtor();
  const proto = ObjectCreate(IteratorPrototype);
  ObjectDefineProperty(proto, 'next', {
    value: /** @this {unknown} */ function next() {
      const s = call(WeakMapGet, state, this);
      if (s === undefined) throw new TypeErrorCtor(`next() called on an object that is not a ${tag}`);
      const list = listOf(s.target);
      if (s.index >= list.length) return { value: undefined, done: true };
      const pair = /** @type {[string, string]} */ (list[s.index++]);
      return { value: s.kind === 'key' ? pair[0] : s.kind === 'value' ? pair[1] : [pair[0], pair[1]], done: false };
    },
    writable: true,
    enumerable: true,
    configurable: true,
  });
  ObjectDefineProperty(proto, SymbolToStringTag, { value: tag, configurable: true });
  return (target, kind) => {
    const it = ObjectCreate(proto);
    call(WeakMapSet, state, it, { target, kind, index: 0 });
    return it;
  };
};

/**
 * WebIDL `forEach` of a pair iterable: the list is read again after each callback, as the spec does.
 * @template T
 * @param {T} target @param {(target: T) => [string, string][]} listOf @param {unknown} fn @param {unknown} thisArg @param {string} what
 */
export const pairForEach = (target, listOf, fn, thisArg, what) => {
  if (typeof fn !== 'function') throw new TypeErrorCtor(`${what}.forEach: the callback must be a function`);
  for (let i = 0; ; i++) {
    const list = listOf(target);
    if (i >= list.length) return;
    const pair = /** @type {[string, string]} */ (list[i]);
    ReflectApply(fn, thisArg, [pair[1], pair[0], target]);
  }
};

/**
 * The items of an iterable, read with the iterator `method` already looked up (WebIDL's
 * "create a sequence from an iterable").
 * @param {any} iterable @param {Function} method @returns {unknown[]}
 */
export const sequenceOf = (iterable, method) => {
  const iterator = call(method, iterable);
  if (iterator === null || (typeof iterator !== 'object' && typeof iterator !== 'function')) throw new TypeErrorCtor('the iterator is not an object');
  const next = iterator.next;
  const out = /** @type {unknown[]} */ ([]);
  for (;;) {
    const step = call(next, iterator);
    if (step === null || (typeof step !== 'object' && typeof step !== 'function')) throw new TypeErrorCtor('the iterator result is not an object');
    if (step.done) return out;
    append(out, step.value);
  }
};

/**
 * A WebIDL `sequence<sequence<T>> or record<K, T>` argument, as [key, value] items (each inner
 * sequence as read; the caller checks it has two). `convert` is the IDL conversion of keys and values.
 * @param {unknown} init @param {(v: unknown) => string} convert @param {string} what
 * @returns {unknown[][]}
 */
export const pairsOrRecord = (init, convert, what) => {
  if (init === null || (typeof init !== 'object' && typeof init !== 'function')) throw new TypeErrorCtor(`${what}: expected an object or a list of pairs`);
  const o = /** @type {any} */ (init);
  const method = o[SymbolIterator];
  const out = /** @type {unknown[][]} */ ([]);
  if (method !== undefined && method !== null) {
    if (typeof method !== 'function') throw new TypeErrorCtor(`${what}: its Symbol.iterator is not a function`);
    const items = sequenceOf(o, method);
    for (let i = 0; i < items.length; i++) {
      const item = /** @type {any} */ (items[i]);
      if (item === null || (typeof item !== 'object' && typeof item !== 'function')) throw new TypeErrorCtor(`${what}: each item must be a [name, value] pair`);
      const inner = item[SymbolIterator];
      if (typeof inner !== 'function') throw new TypeErrorCtor(`${what}: each item must be a [name, value] pair`);
      const parts = sequenceOf(item, inner);
      const converted = /** @type {string[]} */ ([]);
      for (let j = 0; j < parts.length; j++) append(converted, convert(parts[j]));
      append(out, converted);
    }
    return out;
  }
  const keys = ReflectOwnKeys(o);
  for (let i = 0; i < keys.length; i++) {
    const key = /** @type {string | symbol} */ (keys[i]);
    const desc = ReflectGetOwnPropertyDescriptor(o, key);
    if (desc === undefined || !desc.enumerable) continue;
    const name = convert(key);
    const value = convert(o[key]);
    // Two keys that convert to the same string are one record entry: the later value wins.
    let i2 = 0;
    while (i2 < out.length && /** @type {unknown[]} */ (out[i2])[0] !== name) i2++;
    if (i2 < out.length) /** @type {unknown[]} */ (out[i2])[1] = value;
    else append(out, [name, value]);
  }
  return out;
};

/**
 * What WebIDL gives an interface that a class does not: its name, enumerable operations and
 * attributes, and the interface's toStringTag.
 * @param {Function} cls @param {string} name
 */
export const webIdlInterface = (cls, name) => {
  ObjectDefineProperty(cls, 'name', { value: name, configurable: true });
  for (let t = 0; t < 2; t++) {
    const target = t === 0 ? cls : cls.prototype;
    const keys = ReflectOwnKeys(target);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (typeof key !== 'string' || key === 'constructor' || key === 'prototype' || key === 'length' || key === 'name') continue;
      ObjectDefineProperty(target, key, { enumerable: true });
    }
  }
  ObjectDefineProperty(cls.prototype, SymbolToStringTag, { value: name, configurable: true });
};

/** WebIDL ByteString: a symbol or a code unit above U+00FF is a TypeError. @param {unknown} v */
const byteString = (v) => {
  if (typeof v === 'symbol') throw new TypeErrorCtor('Headers: a symbol is not a header name or value');
  const s = str(v);
  if (call(RegExpTest, NOT_BYTES, s)) throw new TypeErrorCtor(`Headers: "${s}" has a character above U+00FF; header names and values are byte strings`);
  return s;
};
const NOT_BYTES = /[^\x00-\xff]/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const EDGE_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;
const BAD_VALUE = /[\0\n\r]/;

/** @param {unknown} name */
const headerName = (name) => {
  const n = byteString(name);
  if (!call(RegExpTest, HEADER_NAME, n)) throw new TypeErrorCtor(`Headers: "${n}" is not a valid header name`);
  return call(StringToLowerCase, n);
};
/** @param {unknown} value */
const headerValue = (value) => {
  const v = call(StringReplace, byteString(value), EDGE_WHITESPACE, '');
  if (call(RegExpTest, BAD_VALUE, v)) throw new TypeErrorCtor('Headers: a header value cannot contain NUL, CR or LF');
  return v;
};

/** @type {(headers: Headers) => [string, string][]} The sorted-and-combined list (what iteration shows and ctx.fetch sends). */
export let headerList;
/** @type {(headers: Headers) => void} Makes `headers` immutable (the Fetch standard's "immutable" guard). */
export let freezeHeaders;
/** @type {(headers: Headers) => boolean} */
export let headersFrozen;
/** @type {(headers: Headers, kind: 'key' | 'value' | 'key+value') => Iterator<unknown>} */
let iterate;

export class Headers {
  /** The header list: lower-cased names, in the order appended. @type {[string, string][]} */
  #list = [];
  // A response's from fetch, Response.error() or Response.redirect(): its headers cannot change.
  #immutable = false;
  /** @param {unknown} [init] */
  constructor(init = undefined) {
    if (init === undefined) return;
    const pairs = pairsOrRecord(init, byteString, 'Headers');
    for (let i = 0; i < pairs.length; i++) {
      const p = /** @type {unknown[]} */ (pairs[i]);
      if (p.length !== 2) throw new TypeErrorCtor('Headers: each header must be a [name, value] pair');
      this.append(p[0], p[1]);
    }
  }
  #mutable() {
    if (this.#immutable) throw new TypeErrorCtor("Headers: these are a response's headers and cannot change; copy them with new Headers(response.headers)");
  }
  /** @param {string} n */
  #without(n) {
    const out = /** @type {[string, string][]} */ ([]);
    for (let i = 0; i < this.#list.length; i++) {
      const p = /** @type {[string, string]} */ (this.#list[i]);
      if (p[0] !== n) append(out, p);
    }
    return out;
  }
  /** @param {unknown} name @param {unknown} value */
  append(name, value) {
    const n = headerName(name);
    const v = headerValue(value);
    this.#mutable();
    append(this.#list, [n, v]);
  }
  /** @param {unknown} name @param {unknown} value */
  set(name, value) {
    const n = headerName(name);
    const v = headerValue(value);
    this.#mutable();
    this.#list = setPair(this.#list, n, v);
  }
  /** @param {unknown} name */
  get(name) {
    const n = headerName(name);
    let found = /** @type {string | null} */ (null);
    for (let i = 0; i < this.#list.length; i++) {
      const p = /** @type {[string, string]} */ (this.#list[i]);
      if (p[0] === n) found = found === null ? p[1] : `${found}, ${p[1]}`;
    }
    return found;
  }
  getSetCookie() {
    const out = /** @type {string[]} */ ([]);
    for (let i = 0; i < this.#list.length; i++) {
      const p = /** @type {[string, string]} */ (this.#list[i]);
      if (p[0] === 'set-cookie') append(out, p[1]);
    }
    return out;
  }
  /** @param {unknown} name */
  has(name) {
    const n = headerName(name);
    for (let i = 0; i < this.#list.length; i++) if (/** @type {[string, string]} */ (this.#list[i])[0] === n) return true;
    return false;
  }
  /** @param {unknown} name */
  delete(name) {
    const n = headerName(name);
    this.#mutable();
    this.#list = this.#without(n);
  }
  /** @param {(value: string, name: string, headers: Headers) => void} fn @param {unknown} [thisArg] */
  forEach(fn, thisArg = undefined) {
    pairForEach(this, headerList, fn, thisArg, 'Headers');
  }
  static {
    freezeHeaders = (headers) => {
      headers.#immutable = true;
    };
    headersFrozen = (headers) => headers.#immutable;
    // Sort and combine: names in order, each name's values joined by ", " except set-cookie's, each
    // its own pair. Built with the captured intrinsics, whatever the function did to the prototypes.
    headerList = (headers) => {
      const all = /** @type {[string, string][]} */ ([]);
      const list = headers.#list;
      for (let i = 0; i < list.length; i++) {
        const p = /** @type {[string, string]} */ (list[i]);
        append(all, [p[0], p[1], i]);
      }
      // Stable by name, then by position, so each name's values keep their order.
      call(ArraySort, all, /** @param {any[]} a @param {any[]} b */ (a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[2] - b[2]));
      const out = /** @type {[string, string][]} */ ([]);
      for (let i = 0; i < all.length; i++) {
        const p = /** @type {[string, string]} */ (all[i]);
        const last = /** @type {[string, string] | undefined} */ (out[out.length - 1]);
        if (last !== undefined && last[0] === p[0] && p[0] !== 'set-cookie') last[1] = `${last[1]}, ${p[1]}`;
        else append(out, [p[0], p[1]]);
      }
      return out;
    };
    iterate = pairIterators('Headers Iterator', headerList);
  }
  entries() {
    return iterate(this, 'key+value');
  }
  keys() {
    return iterate(this, 'key');
  }
  values() {
    return iterate(this, 'value');
  }
}
webIdlInterface(Headers, 'Headers');
ObjectDefineProperty(Headers.prototype, SymbolIterator, { value: Headers.prototype.entries, writable: true, configurable: true });
