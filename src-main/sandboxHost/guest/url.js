// @ts-check
// URLSearchParams (application/x-www-form-urlencoded) and URL (parsed by the host's WHATWG parser; only strings cross).
import {
  ObjectDefineProperty,
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
  RegExpTest,
  TypeErrorCtor,
  Uint8ArrayCtor,
  WeakMapCtor,
  WeakMapGet,
  WeakMapSet,
  SymbolIterator,
  encodeURIComponentFn,
  NumberParseInt,
  call,
  str,
  bareList,
  append,
  setPair,
} from './intrinsics.js';
import { sync } from './host.js';
import { loaded } from './globals.js';
import { utf8Encode, utf8Decode } from './encoding.js';
import { pairIterators, pairForEach, pairsOrRecord, webIdlInterface } from './headers.js';
import { needArgs } from './web/domException.js';


/** @typedef {{ href: string, origin: string, protocol: string, username: string, password: string, host: string, hostname: string, port: string, pathname: string, search: string, hash: string }} UrlParts */

// The WHATWG urlencoded serializer: a lone surrogate becomes U+FFFD, space '+', and only
// alphanumerics and *-._ stay as they are.
/** @param {unknown} s @returns {string} */
const formEncode = (s) =>
  call(StringReplace, call(StringReplace, encodeURIComponentFn(call(StringToWellFormed, str(s))), /%20/g, '+'), /[!'()~]/g, /** @param {string} c */ (c) => `%${call(StringCharCodeAt, c, 0).toString(16).toUpperCase()}`);
/** @param {[string, string][]} pairs @returns {string} */
export const formText = (pairs) => call(ArrayJoin, call(ArrayMap, pairs, /** @param {[string, string]} p */ (p) => `${formEncode(p[0])}=${formEncode(p[1])}`), '&');
const HEX = /^[0-9A-Fa-f]{2}$/;
/**
 * One name or value of application/x-www-form-urlencoded text: '+' is a space, %XX a byte, and the
 * bytes are UTF-8 (bad sequences U+FFFD, a BOM kept).
 * @param {string} s @returns {string}
 */
const formDecode = (s) => {
  const plus = call(StringReplace, s, /\+/g, ' ');
  if (call(StringIndexOf, plus, '%') < 0) return plus;
  const bytes = bareList();
  for (let i = 0; i < plus.length; ) {
    const pct = call(StringIndexOf, plus, '%', i);
    const end = pct < 0 ? plus.length : pct;
    if (end > i) {
      const run = utf8Encode(call(StringSlice, plus, i, end));
      for (let j = 0; j < run.length; j++) call(ArrayPush, bytes, run[j]);
    }
    if (pct < 0) break;
    const hex = call(StringSlice, plus, pct + 1, pct + 3);
    if (call(RegExpTest, HEX, hex)) {
      call(ArrayPush, bytes, NumberParseInt(hex, 16));
      i = pct + 3;
    } else {
      call(ArrayPush, bytes, 0x25);
      i = pct + 1;
    }
  }
  return utf8Decode(new Uint8ArrayCtor(bytes));
};
/** WebIDL USVString: lone surrogates become U+FFFD; a symbol is a TypeError. @param {unknown} v */
const usv = (v) => {
  if (typeof v === 'symbol') throw new TypeErrorCtor('a symbol cannot be converted to a string');
  return call(StringToWellFormed, str(v));
};
const searchParamsOwner = new WeakMapCtor();
/** @type {(params: URLSearchParams, text: string) => void} */
let resetParams;
/** @type {(value: unknown) => string | undefined} */
export let paramsText;
/** @type {(params: URLSearchParams) => [string, string][]} */
let paramsList;
/** @type {(value: unknown) => boolean} */
export let isURL;
/** @type {(params: URLSearchParams, kind: 'key' | 'value' | 'key+value') => Iterator<unknown>} */
let iterateParams;
export class URLSearchParams {
  /** @type {[string, string][]} */
  #list = [];
  /** @param {unknown} [init] */
  constructor(init = '') {
    if (init !== null && (typeof init === 'object' || typeof init === 'function')) {
      const pairs = pairsOrRecord(init, usv, 'URLSearchParams');
      for (let i = 0; i < pairs.length; i++) {
        const p = /** @type {string[]} */ (pairs[i]);
        if (p.length !== 2) throw new TypeErrorCtor('URLSearchParams: each pair must have exactly two items');
        append(this.#list, [p[0], p[1]]);
      }
    } else this.#parse(usv(init));
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
      append(this.#list, [formDecode(k), formDecode(v)]);
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
    paramsList = (params) => params.#list;
    iterateParams = pairIterators('URLSearchParams Iterator', paramsList);
  }
  get size() {
    return this.#list.length;
  }
  /** @param {unknown} name @param {unknown} value */
  append(name, value) {
    needArgs(arguments.length, 2, 'URLSearchParams.append');
    append(this.#list, [usv(name), usv(value)]);
    this.#changed();
  }
  /** @param {unknown} name @param {unknown} [value] */
  delete(name, value = undefined) {
    needArgs(arguments.length, 1, 'URLSearchParams.delete');
    const n = usv(name);
    const v = value === undefined ? undefined : usv(value);
    const out = /** @type {[string, string][]} */ ([]);
    for (const p of this.#list) if (!(p[0] === n && (v === undefined || p[1] === v))) append(out, p);
    this.#list = out;
    this.#changed();
  }
  /** @param {unknown} name */
  get(name) {
    needArgs(arguments.length, 1, 'URLSearchParams.get');
    const n = usv(name);
    for (const p of this.#list) if (p[0] === n) return p[1];
    return null;
  }
  /** @param {unknown} name */
  getAll(name) {
    needArgs(arguments.length, 1, 'URLSearchParams.getAll');
    const n = usv(name);
    const out = /** @type {string[]} */ ([]);
    for (const p of this.#list) if (p[0] === n) append(out, p[1]);
    return out;
  }
  /** @param {unknown} name @param {unknown} [value] */
  has(name, value = undefined) {
    needArgs(arguments.length, 1, 'URLSearchParams.has');
    const n = usv(name);
    const v = value === undefined ? undefined : usv(value);
    for (const p of this.#list) if (p[0] === n && (v === undefined || p[1] === v)) return true;
    return false;
  }
  /** @param {unknown} name @param {unknown} value */
  set(name, value) {
    needArgs(arguments.length, 2, 'URLSearchParams.set');
    const n = usv(name);
    const v = usv(value);
    this.#list = setPair(this.#list, n, v);
    this.#changed();
  }
  sort() {
    // Stable, by the names' UTF-16 code units.
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
  forEach(fn, thisArg = undefined) {
    needArgs(arguments.length, 1, 'URLSearchParams.forEach');
    pairForEach(this, paramsList, fn, thisArg, 'URLSearchParams');
  }
  entries() {
    return iterateParams(this, 'key+value');
  }
  keys() {
    return iterateParams(this, 'key');
  }
  values() {
    return iterateParams(this, 'value');
  }
  toString() {
    return formText(this.#list);
  }
}

// ---- URL: parsed by the host's WHATWG parser; only strings cross ----
/**
 * The host's parse of `href` (against `base`, or with `part` set to `value`); null when it is not a URL.
 * @param {string} href @param {string | undefined} base @param {string} [part] @param {string} [value]
 * @returns {UrlParts | null}
 */
const parse = (href, base, part, value) => {
  try {
    return sync('url', href, base, part, value);
  } catch {
    return null;
  }
};
export class URL {
  /** @type {UrlParts} */
  #parts;
  /** @type {URLSearchParams} */
  #params;
  /** @param {unknown} url @param {unknown} [base] */
  constructor(url, base = undefined) {
    needArgs(arguments.length, 1, 'URL');
    const parts = parse(usv(url), base === undefined ? undefined : usv(base));
    if (parts === null) throw new TypeErrorCtor(`Invalid URL: ${call(StringSlice, usv(url), 0, 200)}`);
    this.#parts = parts;
    this.#params = new URLSearchParams(this.#parts.search);
    call(WeakMapSet, searchParamsOwner, this.#params, /** @param {string} text */ (text) => {
      this.#parts = parse(this.#parts.href, undefined, 'search', text) ?? this.#parts;
    });
  }
  /** @param {unknown} url @param {unknown} [base] */
  static canParse(url, base = undefined) {
    needArgs(arguments.length, 1, 'URL.canParse');
    return parse(usv(url), base === undefined ? undefined : usv(base)) !== null;
  }
  /** @param {unknown} url @param {unknown} [base] */
  static parse(url, base = undefined) {
    needArgs(arguments.length, 1, 'URL.parse');
    try {
      return new URL(url, base);
    } catch {
      return null;
    }
  }
  /** @param {string} part @param {unknown} value */
  #set(part, value) {
    const parts = parse(this.#parts.href, undefined, part, usv(value));
    // Only href rejects what is not a URL; the other setters leave the URL as it was.
    if (parts === null) {
      if (part === 'href') throw new TypeErrorCtor(`Invalid URL: ${call(StringSlice, usv(value), 0, 200)}`);
      return;
    }
    this.#parts = parts;
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
  static {
    // True for a URL made here, whatever the function did to its prototype.
    isURL = (value) => value !== null && typeof value === 'object' && #parts in value;
  }
}

webIdlInterface(URLSearchParams, 'URLSearchParams');
ObjectDefineProperty(URLSearchParams.prototype, SymbolIterator, { value: URLSearchParams.prototype.entries, writable: true, configurable: true });
webIdlInterface(URL, 'URL');
loaded.url = true;
