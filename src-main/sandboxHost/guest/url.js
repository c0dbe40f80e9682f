// @ts-check
// URLSearchParams (application/x-www-form-urlencoded) and URL (parsed by the host's WHATWG parser; only strings cross).
import {
  ReflectApply,
  ObjectKeys,
  ArrayPush,
  ArrayJoin,
  ArrayMap,
  ArraySlice,
  StringCharCodeAt,
  StringSlice,
  StringIndexOf,
  StringSplit,
  StringReplace,
  StringToWellFormed,
  TypeErrorCtor,
  WeakMapCtor,
  WeakMapGet,
  WeakMapSet,
  SymbolIterator,
  SymbolToStringTag,
  encodeURIComponentFn,
  decodeURIComponentFn,
  call,
  str,
} from './intrinsics.js';
import { sync } from './host.js';
import { defineGlobal } from './globals.js';

/** @typedef {{ href: string, origin: string, protocol: string, username: string, password: string, host: string, hostname: string, port: string, pathname: string, search: string, hash: string }} UrlParts */

// The WHATWG urlencoded serializer: a lone surrogate becomes U+FFFD, space '+', and only
// alphanumerics and *-._ stay as they are.
/** @param {unknown} s @returns {string} */
const formEncode = (s) =>
  call(StringReplace, call(StringReplace, encodeURIComponentFn(call(StringToWellFormed, str(s))), /%20/g, '+'), /[!'()~]/g, /** @param {string} c */ (c) => `%${call(StringCharCodeAt, c, 0).toString(16).toUpperCase()}`);
/** @param {[string, string][]} pairs @returns {string} */
export const formText = (pairs) => call(ArrayJoin, call(ArrayMap, pairs, /** @param {[string, string]} p */ (p) => `${formEncode(p[0])}=${formEncode(p[1])}`), '&');
/** @param {string} s @returns {string} */
const formDecode = (s) => {
  const plus = call(StringReplace, s, /\+/g, ' ');
  try {
    return decodeURIComponentFn(plus);
  } catch {
    return call(StringReplace, plus, /%([0-9A-Fa-f]{2})/g, /** @param {string} m @param {string} h */ (m, h) => {
      try {
        return decodeURIComponentFn(m);
      } catch {
        return m;
      }
    });
  }
};
const searchParamsOwner = new WeakMapCtor();
/** @type {(params: URLSearchParams, text: string) => void} */
let resetParams;
/** @type {(value: unknown) => string | undefined} */
export let paramsText;
class URLSearchParams {
  /** @type {[string, string][]} */
  #list = [];
  /** @param {any} [init] */
  constructor(init) {
    if (init === undefined || init === null) return;
    if (typeof init === 'object' && typeof init[SymbolIterator] === 'function') {
      for (const pair of init) {
        const p = [...pair];
        if (p.length !== 2) throw new TypeErrorCtor('URLSearchParams: each pair must have exactly two items');
        call(ArrayPush, this.#list, [str(p[0]), str(p[1])]);
      }
    } else if (typeof init === 'object') {
      for (const key of ObjectKeys(init)) call(ArrayPush, this.#list, [key, str(init[key])]);
    } else {
      this.#parse(str(init));
    }
  }
  /** @param {string} text */
  #parse(text) {

    this.#list = [];
    const s = text[0] === '?' ? call(StringSlice, text, 1) : text;
    if (s === '') return;
    for (const part of call(StringSplit, s, '&')) {
      if (part === '') continue;
      const eq = call(StringIndexOf, part, '=');
      const k = eq < 0 ? part : call(StringSlice, part, 0, eq);
      const v = eq < 0 ? '' : call(StringSlice, part, eq + 1);
      call(ArrayPush, this.#list, [formDecode(k), formDecode(v)]);
    }
  }
  #changed() {
    const owner = call(WeakMapGet, searchParamsOwner, this);
    if (owner) owner(this.toString());
  }
  static {
    resetParams = (params, text) => params.#parse(text);
    // The text of one of these (and undefined for anything else), whatever the function did to the prototype.
    paramsText = (value) => (value !== null && typeof value === 'object' && #list in value ? formText(value.#list) : undefined);
  }
  get size() {
    return this.#list.length;
  }
  /** @param {unknown} name @param {unknown} value */
  append(name, value) {
    call(ArrayPush, this.#list, [str(name), str(value)]);
    this.#changed();
  }
  /** @param {unknown} name @param {unknown} [value] */
  delete(name, value) {
    const n = str(name);
    const out = /** @type {[string, string][]} */ ([]);
    for (const p of this.#list) if (!(p[0] === n && (value === undefined || p[1] === str(value)))) call(ArrayPush, out, p);
    this.#list = out;
    this.#changed();
  }
  /** @param {unknown} name */
  get(name) {
    const n = str(name);
    for (const p of this.#list) if (p[0] === n) return p[1];
    return null;
  }
  /** @param {unknown} name */
  getAll(name) {
    const n = str(name);
    const out = /** @type {string[]} */ ([]);
    for (const p of this.#list) if (p[0] === n) call(ArrayPush, out, p[1]);
    return out;
  }
  /** @param {unknown} name @param {unknown} [value] */
  has(name, value) {
    const n = str(name);
    for (const p of this.#list) if (p[0] === n && (value === undefined || p[1] === str(value))) return true;
    return false;
  }
  /** @param {unknown} name @param {unknown} value */
  set(name, value) {
    const n = str(name);
    const out = /** @type {[string, string][]} */ ([]);
    let done = false;
    for (const p of this.#list) {
      if (p[0] !== n) call(ArrayPush, out, p);
      else if (!done) {
        call(ArrayPush, out, [n, str(value)]);
        done = true;
      }
    }
    if (!done) call(ArrayPush, out, [n, str(value)]);
    this.#list = out;
    this.#changed();
  }
  sort() {
    const list = call(ArraySlice, this.#list);
    for (let i = 1; i < list.length; i++) {
      const item = list[i];
      let j = i - 1;
      while (j >= 0 && list[j][0] > item[0]) {
        list[j + 1] = list[j];
        j--;
      }
      list[j + 1] = item;
    }
    this.#list = list;
    this.#changed();
  }
  /** @param {(value: string, name: string, params: URLSearchParams) => void} fn @param {unknown} [thisArg] */
  forEach(fn, thisArg) {
    for (const p of call(ArraySlice, this.#list)) ReflectApply(fn, thisArg, [p[1], p[0], this]);
  }
  *entries() {
    for (const p of call(ArraySlice, this.#list)) yield [p[0], p[1]];
  }
  *keys() {
    for (const p of call(ArraySlice, this.#list)) yield p[0];
  }
  *values() {
    for (const p of call(ArraySlice, this.#list)) yield p[1];
  }
  [SymbolIterator]() {
    return this.entries();
  }
  toString() {
    return formText(this.#list);
  }
  get [SymbolToStringTag]() {
    return 'URLSearchParams';
  }
}

// ---- URL: parsed by the host's WHATWG parser; only strings cross ----
class URL {
  /** @type {UrlParts} */
  #parts;
  /** @type {URLSearchParams} */
  #params;
  /** @param {unknown} url @param {unknown} [base] */
  constructor(url, base) {
    this.#parts = sync('url', str(url), base === undefined ? undefined : str(base));
    this.#params = new URLSearchParams(this.#parts.search);
    call(WeakMapSet, searchParamsOwner, this.#params, /** @param {string} text */ (text) => {
      this.#parts = sync('url', this.#parts.href, undefined, 'search', text);
    });
  }
  /** @param {unknown} url @param {unknown} [base] */
  static canParse(url, base) {
    try {
      new URL(url, base);
      return true;
    } catch {
      return false;
    }
  }
  /** @param {unknown} url @param {unknown} [base] */
  static parse(url, base) {
    try {
      return new URL(url, base);
    } catch {
      return null;
    }
  }
  /** @param {string} part @param {unknown} value */
  #set(part, value) {
    this.#parts = sync('url', this.#parts.href, undefined, part, str(value));
    if (part === 'href' || part === 'search') resetParams(this.#params, this.#parts.search);
  }
  get href() { return this.#parts.href; }
  set href(v) { this.#set('href', v); }
  get origin() { return this.#parts.origin; }
  get protocol() { return this.#parts.protocol; }
  set protocol(v) { this.#set('protocol', v); }
  get username() { return this.#parts.username; }
  set username(v) { this.#set('username', v); }
  get password() { return this.#parts.password; }
  set password(v) { this.#set('password', v); }
  get host() { return this.#parts.host; }
  set host(v) { this.#set('host', v); }
  get hostname() { return this.#parts.hostname; }
  set hostname(v) { this.#set('hostname', v); }
  get port() { return this.#parts.port; }
  set port(v) { this.#set('port', v); }
  get pathname() { return this.#parts.pathname; }
  set pathname(v) { this.#set('pathname', v); }
  get search() { return this.#parts.search; }
  set search(v) { this.#set('search', v); }
  get hash() { return this.#parts.hash; }
  set hash(v) { this.#set('hash', v); }
  get searchParams() { return this.#params; }
  toString() { return this.#parts.href; }
  toJSON() { return this.#parts.href; }
  get [SymbolToStringTag]() { return 'URL'; }
}

export function install() {
  defineGlobal('URLSearchParams', URLSearchParams);
  defineGlobal('URL', URL);
}
