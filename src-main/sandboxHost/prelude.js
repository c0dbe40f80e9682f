// @ts-check
// The guest runtime: runs inside each fresh isolated-vm Context before the function's module.
//
// This is the attack surface between the function and the host (see vm2's history), so:
// - it is self-contained: `preludeSource` is this function's source text, evaluated in the isolate;
// - it captures every intrinsic it relies on before any function code runs, and never uses
//   `instanceof` or a global the function can replace;
// - only copies cross: strings, numbers, plain data and byte arrays. `hostSync` and `hostStart` are
//   isolated-vm Callbacks (plain functions here) that copy their arguments and results; the host
//   validates everything it receives and enforces every limit itself.
// The function returns [settle, invoke]: the host calls settle(id, ok, value) to finish an async
// host operation, and invoke(moduleExports, argsJson, functionName, runId, deadline) to run the handler.

/**
 * What the host answers an operation: its value, or the failure the guest sees as an Error.
 * @typedef {{ ok: true, value: any } | { ok: false, error?: unknown }} HostAnswer
 * @typedef {{ href: string, origin: string, protocol: string, username: string, password: string, host: string, hostname: string, port: string, pathname: string, search: string, hash: string }} UrlParts
 * @typedef {{ status: number, statusText: string, url: string, redirected: boolean, headers: [string, string][], body: Uint8Array }} RawResponse
 */
/**
 * @param {(op: string, ...args: unknown[]) => HostAnswer | undefined} hostSync
 * @param {(op: string, payload: unknown) => HostAnswer | undefined} hostStart
 * @returns {[settle: (id: number, ok: boolean, value: unknown) => void, invoke: (moduleExports: any, argsJson: string, functionName: unknown, runId: unknown, deadline: number) => Promise<string>]}
 */
export function callablePrelude(hostSync, hostStart) {
  'use strict';
  const G = globalThis;
  const ReflectApply = Reflect.apply;
  const ObjectCreate = Object.create;
  const ObjectFreeze = Object.freeze;
  const ObjectKeys = Object.keys;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  const ObjectSetPrototypeOf = Object.setPrototypeOf;
  const ObjectPrototypeToString = Object.prototype.toString;
  const ArrayIsArray = Array.isArray;
  const ArrayPush = Array.prototype.push;
  const ArrayJoin = Array.prototype.join;
  const ArrayMap = Array.prototype.map;
  const ArraySlice = Array.prototype.slice;
  const ArraySort = Array.prototype.sort;
  const JSONStringify = JSON.stringify;
  const JSONParse = JSON.parse;
  const MathFloor = Math.floor;
  const NumberIsFinite = Number.isFinite;
  const StringCtor = String;
  const StringFromCharCode = String.fromCharCode;
  const StringCharCodeAt = String.prototype.charCodeAt;
  const StringCodePointAt = String.prototype.codePointAt;
  const StringSlice = String.prototype.slice;
  const StringIndexOf = String.prototype.indexOf;
  const StringSplit = String.prototype.split;
  const StringReplace = String.prototype.replace;
  const StringToLowerCase = String.prototype.toLowerCase;
  const StringTrim = String.prototype.trim;
  const StringToWellFormed = String.prototype.toWellFormed;
  const RegExpTest = RegExp.prototype.test;
  const PromiseCtor = Promise;
  const PromiseResolve = Promise.resolve.bind(Promise);
  const PromiseThen = Promise.prototype.then;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const Uint8ArrayCtor = Uint8Array;
  const ArrayBufferIsView = ArrayBuffer.isView;
  const TypedArrayProto = ObjectGetPrototypeOf(Uint8Array.prototype);
  // Accessors the intrinsic prototypes always have.
  const TypedArrayByteLength = /** @type {() => number} */ (/** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(TypedArrayProto, 'byteLength')).get);
  const TypedArrayBuffer = /** @type {() => ArrayBuffer} */ (/** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(TypedArrayProto, 'buffer')).get);
  const TypedArrayByteOffset = /** @type {() => number} */ (/** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(TypedArrayProto, 'byteOffset')).get);
  const ArrayBufferByteLength = /** @type {() => number} */ (/** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength')).get);
  const ArrayBufferSlice = ArrayBuffer.prototype.slice;
  const MapCtor = Map;
  const MapGet = Map.prototype.get;
  const MapSet = Map.prototype.set;
  const MapDelete = Map.prototype.delete;
  const MapHas = Map.prototype.has;
  const MapForEach = Map.prototype.forEach;
  const WeakMapCtor = WeakMap;
  const WeakMapGet = WeakMap.prototype.get;
  const WeakMapSet = WeakMap.prototype.set;
  const WeakMapHas = WeakMap.prototype.has;
  const SymbolIterator = Symbol.iterator;
  const SymbolToStringTag = Symbol.toStringTag;
  const encodeURIComponentFn = encodeURIComponent;
  const decodeURIComponentFn = decodeURIComponent;

  /** @type {(fn: Function, self: unknown, ...args: unknown[]) => any} */
  const call = (fn, self, ...args) => ReflectApply(fn, self, args);
  /** @param {unknown} v */
  const str = (v) => StringCtor(v);
  /** @type {(v: unknown) => v is Uint8Array} */
  const isBytes = (v) => ArrayBufferIsView(v) && call(ObjectPrototypeToString, v) === '[object Uint8Array]';
  // The byteLength getter throws for anything but a real ArrayBuffer (a toStringTag can be faked).
  /** @type {(v: unknown) => v is ArrayBuffer} */
  const isArrayBuffer = (v) => {
    try {
      call(ArrayBufferByteLength, v);
      return true;
    } catch {
      return false;
    }
  };
  // An array with no prototype: what the function did to Array.prototype (index setters, its
  // iterator) cannot change what is pushed into it or read out of it.
  const bareList = () => /** @type {number[]} */ (ObjectSetPrototypeOf([], null));
  /** @param {ArrayBufferView} view */
  const copyBytes = (view) => {
    // A fresh Uint8Array with exactly the view's bytes (works for any ArrayBufferView).
    const buffer = call(TypedArrayBuffer, view);
    const offset = call(TypedArrayByteOffset, view);
    return new Uint8ArrayCtor(call(ArrayBufferSlice, buffer, offset, offset + call(TypedArrayByteLength, view)));
  };

  /** @param {string} name @param {unknown} value */
  const defineGlobal = (name, value) => ObjectDefineProperty(G, name, { value, writable: true, configurable: true, enumerable: false });
  /** @param {any} failure */
  const hostError = (failure) => {
    const err = /** @type {Error & { code?: string }} */ (new ErrorCtor(failure && typeof failure.message === 'string' ? failure.message : 'host operation failed'));
    if (failure && typeof failure.code === 'string') err.code = failure.code;
    return err;
  };
  // A sync host call: the host answers { ok, value } or { ok: false, error }.
  /** @param {string} op @param {...unknown} args */
  const sync = (op, ...args) => {
    const answer = ReflectApply(hostSync, undefined, [op, ...args]);
    if (answer && answer.ok === true) return answer.value;
    throw hostError(answer && answer.error);
  };

  // ---- async host operations (fetch, timers): the host settles them by id ----
  /** @type {Map<number, { resolve: (value: unknown) => void, reject: (reason: unknown) => void }>} */
  const pending = new MapCtor();
  /** @type {(op: string, payload: unknown) => Promise<any>} */
  const start = (op, payload) =>
    new PromiseCtor((resolve, reject) => {
      const answer = ReflectApply(hostStart, undefined, [op, payload]);
      if (!answer || answer.ok !== true) {
        reject(hostError(answer && answer.error));
        return;
      }
      call(MapSet, pending, answer.value, { resolve, reject });
    });
  /** @param {number} id @param {boolean} ok @param {unknown} value */
  const settle = (id, ok, value) => {
    const entry = call(MapGet, pending, id);
    if (entry === undefined) return;
    call(MapDelete, pending, id);
    if (ok) entry.resolve(value);
    else entry.reject(hostError(value));
  };

  // ---- formatting for console and ctx.log ----
  /** @param {any} value @param {number} [depth] @returns {string} */

  const format = (value, depth) => {
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
  const log = (level, args) => {
    sync('log', level, formatArgs(args));
  };

  const consoleObject = ObjectCreate(null);
  consoleObject.log = /** @param {...unknown} args */ (...args) => log('info', args);
  consoleObject.info = /** @param {...unknown} args */ (...args) => log('info', args);
  consoleObject.debug = /** @param {...unknown} args */ (...args) => log('debug', args);
  consoleObject.warn = /** @param {...unknown} args */ (...args) => log('warn', args);
  consoleObject.error = /** @param {...unknown} args */ (...args) => log('error', args);
  consoleObject.trace = /** @param {...unknown} args */ (...args) => log('debug', args);
  defineGlobal('console', consoleObject);

  // ---- timers (bounded by the run's deadline: the host never fires one after it) ----
  let nextTimer = 1;
  const timers = new MapCtor();
  /** @param {unknown} fn @param {any} ms @param {...unknown} args */
  const setTimeoutFn = (fn, ms, ...args) => {
    if (typeof fn !== 'function') throw new TypeErrorCtor('setTimeout needs a function');
    const delay = NumberIsFinite(+ms) && +ms > 0 ? +ms : 0;
    const handle = nextTimer++;
    call(MapSet, timers, handle, true);
    call(
      PromiseThen,
      start('sleep', delay),
      () => {
        if (!call(MapHas, timers, handle)) return;
        call(MapDelete, timers, handle);
        ReflectApply(fn, undefined, args);
      },
      () => {},
    );
    return handle;
  };
  /** @param {unknown} handle */
  const clearTimeoutFn = (handle) => {
    call(MapDelete, timers, handle);
  };
  defineGlobal('setTimeout', setTimeoutFn);
  defineGlobal('clearTimeout', clearTimeoutFn);
  defineGlobal('queueMicrotask', /** @param {() => unknown} fn */ (fn) => {
    call(PromiseThen, PromiseResolve(), () => fn());
  });

  // ---- base64 ----
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  /** @param {Uint8Array} bytes */
  const bytesToBase64 = (bytes) => {
    let out = '';
    const n = bytes.length;
    for (let i = 0; i < n; i += 3) {
      const a = /** @type {number} */ (bytes[i]);
      const b = /** @type {number} */ (i + 1 < n ? bytes[i + 1] : 0);
      const c = /** @type {number} */ (i + 2 < n ? bytes[i + 2] : 0);
      const triple = (a << 16) | (b << 8) | c;
      out += /** @type {string} */ (B64[(triple >> 18) & 63]) + /** @type {string} */ (B64[(triple >> 12) & 63]) + (i + 1 < n ? B64[(triple >> 6) & 63] : '=') + (i + 2 < n ? B64[triple & 63] : '=');
    }
    return out;
  };
  /** @param {unknown} text */
  const base64ToBytes = (text) => {
    const clean = call(StringReplace, str(text), /[\t\n\f\r ]/g, '');
    if (clean.length % 4 === 1 || call(RegExpTest, /[^A-Za-z0-9+/=]|=[^=]|={3,}/, clean)) {
      throw new ErrorCtor('The string to be decoded is not correctly encoded.');
    }
    const body = call(StringReplace, clean, /=+$/, '');
    const out = new Uint8ArrayCtor(MathFloor((body.length * 3) / 4));
    let bits = 0;
    let value = 0;
    let j = 0;
    for (let i = 0; i < body.length; i++) {
      value = (value << 6) | call(StringIndexOf, B64, body[i]);
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out[j++] = (value >> bits) & 255;
      }
    }
    return out;
  };
  defineGlobal('btoa', /** @param {unknown} input */ (input) => {
    const s = str(input);
    const bytes = new Uint8ArrayCtor(s.length);
    for (let i = 0; i < s.length; i++) {
      const code = call(StringCharCodeAt, s, i);
      if (code > 255) throw new ErrorCtor('btoa: the string contains characters outside of the Latin1 range.');
      bytes[i] = code;
    }
    return bytesToBase64(bytes);
  });
  defineGlobal('atob', /** @param {unknown} input */ (input) => {
    const bytes = base64ToBytes(input);
    let out = '';
    for (let i = 0; i < bytes.length; i++) out += StringFromCharCode(/** @type {number} */ (bytes[i]));
    return out;
  });

  // ---- UTF-8 ----
  /** @param {unknown} input */
  const utf8Encode = (input) => {
    const s = str(input);
    const out = bareList();
    for (let i = 0; i < s.length; i++) {
      let cp = call(StringCodePointAt, s, i);
      if (cp > 0xffff) i++;
      else if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
      if (cp < 0x80) call(ArrayPush, out, cp);
      else if (cp < 0x800) call(ArrayPush, out, 0xc0 | (cp >> 6), 0x80 | (cp & 63));
      else if (cp < 0x10000) call(ArrayPush, out, 0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
      else call(ArrayPush, out, 0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 63), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
    }
    return new Uint8ArrayCtor(out);
  };
  /** @param {Uint8Array} bytes */
  const utf8Decode = (bytes) => {
    let out = '';
    let chunk = bareList();
    const flush = () => {
      if (chunk.length > 0) {
        out += ReflectApply(StringFromCharCode, undefined, chunk);
        chunk = bareList();

      }
    };
    /** @param {number} cp */
    const push = (cp) => {
      if (cp > 0xffff) {
        cp -= 0x10000;
        call(ArrayPush, chunk, 0xd800 + (cp >> 10), 0xdc00 + (cp & 1023));
      } else call(ArrayPush, chunk, cp);
      if (chunk.length > 8192) flush();
    };
    for (let i = 0; i < bytes.length; ) {
      const b = /** @type {number} */ (bytes[i]);
      let need = 0;
      let cp = 0;
      let min = 0;
      if (b < 0x80) {
        push(b);
        i++;
        continue;
      } else if (b >= 0xc2 && b <= 0xdf) {
        need = 1;
        cp = b & 31;
        min = 0x80;
      } else if (b >= 0xe0 && b <= 0xef) {
        need = 2;
        cp = b & 15;
        min = 0x800;
      } else if (b >= 0xf0 && b <= 0xf4) {
        need = 3;
        cp = b & 7;
        min = 0x10000;
      } else {
        push(0xfffd);
        i++;
        continue;
      }
      let j = 1;
      for (; j <= need; j++) {
        const c = bytes[i + j];
        if (c === undefined || (c & 0xc0) !== 0x80) break;
        cp = (cp << 6) | (c & 63);
      }
      if (j <= need || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        push(0xfffd);
        i += j > 1 ? j : 1;
        continue;
      }
      push(cp);
      i += need + 1;
    }
    flush();
    return out;
  };
  /** @param {unknown} input @param {string} what @returns {Uint8Array} */
  const toBytes = (input, what) => {
    if (isBytes(input)) return input;
    if (isArrayBuffer(input)) return new Uint8ArrayCtor(input);
    if (ArrayBufferIsView(input)) return copyBytes(input);
    throw new TypeErrorCtor(`${what}: expected a Uint8Array, ArrayBuffer or typed array`);
  };
  class TextEncoder {
    get encoding() {
      return 'utf-8';
    }
    encode(input = '') {
      return utf8Encode(input);
    }
  }
  class TextDecoder {
    constructor(label = 'utf-8') {
      const l = call(StringToLowerCase, call(StringTrim, str(label)));
      if (l !== 'utf-8' && l !== 'utf8' && l !== 'unicode-1-1-utf-8') throw new RangeErrorCtor(`TextDecoder: only utf-8 is supported, not "${label}"`);
    }
    get encoding() {
      return 'utf-8';
    }
    /** @param {unknown} input */
    decode(input) {
      if (input === undefined) return '';
      const bytes = toBytes(input, 'TextDecoder.decode');
      const start = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
      return utf8Decode(start ? copyBytes(bytes).subarray(3) : bytes);
    }
  }
  defineGlobal('TextEncoder', TextEncoder);
  defineGlobal('TextDecoder', TextDecoder);

  // ---- crypto ----
  /** @param {unknown} array */
  const getRandomValues = (array) => {
    if (!ArrayBufferIsView(array) || call(ObjectPrototypeToString, array) === '[object DataView]' || call(ObjectPrototypeToString, array) === '[object Float32Array]' || call(ObjectPrototypeToString, array) === '[object Float64Array]') {
      throw new TypeErrorCtor('crypto.getRandomValues: expected an integer typed array');
    }
    const length = call(TypedArrayByteLength, array);
    if (length > 65536) throw new ErrorCtor(`crypto.getRandomValues: ${length} bytes requested, at most 65536 allowed`);
    const random = sync('random', length);
    const target = new Uint8ArrayCtor(call(TypedArrayBuffer, array), call(TypedArrayByteOffset, array), length);
    for (let i = 0; i < length; i++) target[i] = random[i];
    return array;
  };
  /** @param {number} b */
  const hex = (b) => (b < 16 ? '0' : '') + b.toString(16);
  const randomUUID = () => {
    const b = sync('random', 16);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let s = '';
    for (let i = 0; i < 16; i++) s += (i === 4 || i === 6 || i === 8 || i === 10 ? '-' : '') + hex(b[i]);
    return s;
  };
  const cryptoObject = ObjectCreate(null);
  cryptoObject.getRandomValues = getRandomValues;
  cryptoObject.randomUUID = randomUUID;
  defineGlobal('crypto', ObjectFreeze(cryptoObject));

  // ---- URLSearchParams (application/x-www-form-urlencoded) ----
  // The WHATWG urlencoded serializer: a lone surrogate becomes U+FFFD, space '+', and only
  // alphanumerics and *-._ stay as they are.
  /** @param {unknown} s @returns {string} */
  const formEncode = (s) =>
    call(StringReplace, call(StringReplace, encodeURIComponentFn(call(StringToWellFormed, str(s))), /%20/g, '+'), /[!'()~]/g, /** @param {string} c */ (c) => `%${call(StringCharCodeAt, c, 0).toString(16).toUpperCase()}`);
  /** @param {[string, string][]} pairs @returns {string} */
  const formText = (pairs) => call(ArrayJoin, call(ArrayMap, pairs, /** @param {[string, string]} p */ (p) => `${formEncode(p[0])}=${formEncode(p[1])}`), '&');
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
  let paramsText;
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
  defineGlobal('URLSearchParams', URLSearchParams);

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
  defineGlobal('URL', URL);

  // ---- Headers ----
  const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
  /** @type {(headers: Headers) => [string, string][]} */
  let headerList;
  class Headers {
    /** @type {Map<string, string>} */
    #map = new MapCtor();
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
    /** @param {unknown} name @param {unknown} value */
    append(name, value) {
      const n = this.#name(name);
      const v = call(StringTrim, str(value));
      const prev = call(MapGet, this.#map, n);
      call(MapSet, this.#map, n, prev === undefined ? v : `${prev}, ${v}`);
    }
    /** @param {unknown} name @param {unknown} value */
    set(name, value) {
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
      call(MapDelete, this.#map, this.#name(name));
    }
    /** @param {(value: string, name: string, headers: Headers) => void} fn @param {unknown} [thisArg] */
    forEach(fn, thisArg) {
      for (const [k, v] of this.entries()) ReflectApply(fn, thisArg, [v, k, this]);
    }
    static {
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
  defineGlobal('Headers', Headers);

  // ---- content helpers: a function returns these for MCP content other than JSON ----
  const contentBrand = new WeakMapCtor();
  /** @param {unknown} data @param {string} what */
  const dataOf = (data, what) => (typeof data === 'string' ? data : bytesToBase64(toBytes(data, what)));
  /** @template {object} T @param {T} item @returns {Readonly<T>} */
  const brand = (item) => {
    const frozen = ObjectFreeze(item);
    call(WeakMapSet, contentBrand, frozen, true);
    return frozen;
  };
  const content = ObjectCreate(null);
  content.text = /** @param {unknown} text */ (text) => brand({ type: 'text', text: str(text) });
  content.image = /** @param {unknown} data @param {unknown} mimeType */ (data, mimeType) => brand({ type: 'image', data: dataOf(data, 'ctx.content.image'), mimeType: str(mimeType) });
  content.audio = /** @param {unknown} data @param {unknown} mimeType */ (data, mimeType) => brand({ type: 'audio', data: dataOf(data, 'ctx.content.audio'), mimeType: str(mimeType) });
  content.resource = /** @param {any} resource */ (resource) => {
    if (!resource || typeof resource !== 'object') throw new TypeErrorCtor('ctx.content.resource: expected { uri, mimeType?, text? | blob? }');
    /** @type {{ uri: string, mimeType?: string, text?: string, blob?: string }} */
    const r = { uri: str(resource.uri) };
    if (resource.mimeType !== undefined) r.mimeType = str(resource.mimeType);
    if (resource.text !== undefined) r.text = str(resource.text);
    else if (resource.blob !== undefined) r.blob = dataOf(resource.blob, 'ctx.content.resource');
    else throw new TypeErrorCtor('ctx.content.resource: give text or blob');
    return brand({ type: 'resource', resource: ObjectFreeze(r) });
  };
  ObjectFreeze(content);

  // ---- ctx.fetch ----
  /** @param {unknown} headers */
  const headerPairs = (headers) => (headers === undefined || headers === null ? [] : headerList(new Headers(headers)));

  /** @param {RawResponse} raw */
  const makeResponse = (raw) => {
    const body = raw.body;
    const headers = new Headers(raw.headers);
    const text = () => PromiseResolve(utf8Decode(body));
    return ObjectFreeze({
      status: raw.status,
      statusText: raw.statusText,
      ok: raw.status >= 200 && raw.status < 300,
      url: raw.url,
      redirected: raw.redirected,
      headers,
      text,
      json: () => call(PromiseThen, text(), /** @param {string} t */ (t) => JSONParse(t)),
      arrayBuffer: () => PromiseResolve(call(TypedArrayBuffer, copyBytes(body))),
      bytes: () => PromiseResolve(copyBytes(body)),
    });
  };
  // Request bodies: at most one of these options. `form` and a URLSearchParams body are encoded
  // here; `multipart` crosses as plain parts and the host encodes it.
  const BODY_OPTIONS = ['json', 'body', 'form', 'multipart'];
  const FORM_TYPE = 'application/x-www-form-urlencoded';
  /** @param {unknown} v */
  const kindOf = (v) => (v === null ? 'null' : ArrayIsArray(v) ? 'an array' : typeof v);
  /** @type {(v: unknown) => v is string | number | boolean} */
  const isField = (v) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
  // An own element, whatever setters the function put on Array.prototype's indexes (push would call them).
  /** @param {unknown[]} array @param {unknown} value */
  const append = (array, value) => ObjectDefineProperty(array, array.length, /** @type {PropertyDescriptor} */ ({ __proto__: null, value, writable: true, enumerable: true, configurable: true }));
  /**
   * Calls visit(name, value, label) for each field of `fields` (an array value is the field repeated, in order).
   * @param {any} fields @param {string} what @param {(name: string, value: any, label: string) => void} visit
   */
  const eachField = (fields, what, visit) => {
    if (fields === null || typeof fields !== 'object' || ArrayIsArray(fields)) {
      throw new TypeErrorCtor(`ctx.fetch: ${what} must be an object of name: value (or [values]), not ${kindOf(fields)}`);
    }
    const names = ObjectKeys(fields);
    for (let i = 0; i < names.length; i++) {
      const name = /** @type {string} */ (names[i]);
      const value = fields[name];
      if (!ArrayIsArray(value)) visit(name, value, name);
      else for (let j = 0, n = value.length; j < n; j++) visit(name, value[j], `${name}[${j}]`);
    }
  };
  /** @param {unknown} form */
  const formBody = (form) => {
    const pairs = /** @type {[string, string][]} */ ([]);
    eachField(form, 'form', (name, value, label) => {
      if (!isField(value)) throw new TypeErrorCtor(`ctx.fetch: form field "${label}" must be a string, number or boolean (or an array of them), not ${kindOf(value)}`);
      append(pairs, [name, str(value)]);
    });
    return formText(pairs);
  };
  /** @param {unknown} multipart */
  const multipartParts = (multipart) => {
    const parts = /** @type {unknown[]} */ ([]);
    eachField(multipart, 'multipart', (name, value, label) => {
      const part = ObjectCreate(null);
      part.name = name;
      if (isField(value)) part.text = str(value);
      else if (value !== null && typeof value === 'object' && !ArrayIsArray(value)) {
        const { data, filename, contentType } = value;
        if (typeof data === 'string') part.data = utf8Encode(data);
        else if (ArrayBufferIsView(data) || isArrayBuffer(data)) part.data = copyBytes(toBytes(data, 'ctx.fetch'));
        else throw new TypeErrorCtor(`ctx.fetch: multipart part "${label}" needs data: a string, Uint8Array or ArrayBuffer, not ${kindOf(data)}`);
        if (filename !== undefined) {
          if (typeof filename !== 'string') throw new TypeErrorCtor(`ctx.fetch: multipart part "${label}": filename must be a string, not ${kindOf(filename)}`);
          part.filename = filename;
        }
        if (contentType !== undefined) {
          if (typeof contentType !== 'string' || call(RegExpTest, /[\r\n]/, contentType)) {
            throw new TypeErrorCtor(`ctx.fetch: multipart part "${label}": contentType must be a one-line string such as "image/png"`);
          }
          part.contentType = contentType;
        }
      } else {
        throw new TypeErrorCtor(`ctx.fetch: multipart part "${label}" must be a string, number, boolean or { data, filename?, contentType? }, not ${kindOf(value)}`);
      }
      append(parts, part);
    });
    return parts;
  };
  /** @param {unknown} input @param {any} [init] */
  const fetchFn = (input, init) => {
    try {
      const options = init === undefined || init === null ? {} : init;
      const request = ObjectCreate(null);
      request.url = str(input);
      const given = /** @type {string[]} */ ([]);
      const chosen = ObjectCreate(null);
      for (let i = 0; i < BODY_OPTIONS.length; i++) {
        const key = /** @type {string} */ (BODY_OPTIONS[i]);
        const value = options[key];
        if (value !== undefined && (key === 'json' || value !== null)) {
          append(given, key);
          chosen[key] = value;
        }
      }
      if (given.length > 1) throw new TypeErrorCtor(`ctx.fetch: give one of json, body, form or multipart, not ${call(ArrayJoin, given, ' and ')}`);
      request.method = options.method === undefined ? (given.length > 0 ? 'POST' : 'GET') : str(options.method);
      const headers = headerPairs(options.headers);
      const hasType = () => {
        for (let i = 0; i < headers.length; i++) if (/** @type {[string, string]} */ (headers[i])[0] === 'content-type') return true;
        return false;
      };
      let body;
      if (given[0] === 'json') {
        body = utf8Encode(JSONStringify(chosen.json));
        if (!hasType()) append(headers, ['content-type', 'application/json']);
      } else if (given[0] === 'form') {
        body = utf8Encode(formBody(chosen.form));
        if (!hasType()) append(headers, ['content-type', FORM_TYPE]);
      } else if (given[0] === 'multipart') {
        if (hasType()) throw new TypeErrorCtor('ctx.fetch: multipart sets its own content-type (with the boundary); remove the content-type header');
        request.multipart = multipartParts(chosen.multipart);
      } else if (given[0] === 'body') {
        const b = chosen.body;
        const params = paramsText(b);
        if (typeof b === 'string') body = utf8Encode(b);
        else if (params !== undefined) {
          body = utf8Encode(params);
          if (!hasType()) append(headers, ['content-type', FORM_TYPE]);
        } else body = copyBytes(toBytes(b, 'ctx.fetch body'));
      }
      request.headers = headers;
      if (body !== undefined) request.body = body;
      if (options.credential !== undefined) request.credential = str(options.credential);
      request.redirect = options.redirect === undefined ? 'follow' : str(options.redirect);
      return call(PromiseThen, start('fetch', request), makeResponse);
    } catch (error) {
      return new PromiseCtor((_, reject) => reject(error));
    }
  };

  // ---- ctx.elicit / ctx.sample: questions the engine puts to a person or the client's model ----
  // Only JSON text crosses out (the host parses it; nothing the guest built is passed by reference),
  // and the answer comes back as a fresh copy.
  /** @param {unknown} error @returns {Promise<never>} */
  const rejected = (error) => new PromiseCtor((_, reject) => reject(error));
  /** @param {unknown} message @param {unknown} [requestedSchema] */
  const elicitFn = (message, requestedSchema) => {
    try {
      const payload = ObjectCreate(null);
      payload.message = message === undefined || message === null ? '' : str(message);
      payload.schema = JSONStringify(requestedSchema === undefined ? { type: 'object', properties: {} } : requestedSchema);
      return start('elicit', payload);
    } catch (error) {
      return rejected(error);
    }
  };
  /** @param {unknown} messages @param {unknown} [options] */
  const sampleFn = (messages, options) => {
    try {
      const payload = ObjectCreate(null);
      payload.messages = JSONStringify(messages);
      if (options !== undefined && options !== null) payload.options = JSONStringify(options);
      return start('sample', payload);
    } catch (error) {
      return rejected(error);
    }
  };

  // ---- the handler call ----
  /** @param {unknown} value */
  const serialize = (value) => {
    if (value !== null && typeof value === 'object' && call(WeakMapHas, contentBrand, value)) {
      return JSONStringify({ ok: true, content: [value] });
    }
    if (ArrayIsArray(value) && value.length > 0) {
      let all = true;
      for (let i = 0; i < value.length; i++) if (!(value[i] !== null && typeof value[i] === 'object' && call(WeakMapHas, contentBrand, value[i]))) all = false;
      if (all) return JSONStringify({ ok: true, content: call(ArraySlice, value) });
    }
    let json;
    try {
      json = JSONStringify(value === undefined ? null : value);
    } catch (error) {
      return JSONStringify({ ok: false, error: { name: 'TypeError', message: `the result is not JSON-serializable: ${format(error && /** @type {{ message?: unknown }} */ (error).message)}` } });
    }
    if (json === undefined) json = 'null';
    return `{"ok":true,"value":${json}}`;
  };
  /** @param {any} error */
  const describeError = (error) => {
    if (error !== null && typeof error === 'object') {
      let name = 'Error';
      let message = '';
      let stack;
      let code;
      try {
        name = str(error.name);
        message = str(error.message);
        stack = typeof error.stack === 'string' ? error.stack : undefined;
        code = typeof error.code === 'string' ? error.code : undefined;
      } catch {
        message = '[unreadable error]';
      }
      return { name, message, stack, code };
    }
    return { name: 'Error', message: `a non-Error value was thrown: ${format(error, 0)}` };
  };

  /** @param {any} moduleExports @param {string} argsJson @param {unknown} functionName @param {unknown} runId @param {number} deadline */
  const invoke = (moduleExports, argsJson, functionName, runId, deadline) => {
    const handler = moduleExports && moduleExports.default;
    if (typeof handler !== 'function') {
      return PromiseResolve(JSONStringify({ ok: false, error: { name: 'TypeError', message: 'the module has no default export function' } }));
    }
    const ctxLog = /** @param {...unknown} args */ (...args) => log('info', args);
    ctxLog.debug = /** @param {...unknown} args */ (...args) => log('debug', args);
    ctxLog.info = /** @param {...unknown} args */ (...args) => log('info', args);
    ctxLog.warn = /** @param {...unknown} args */ (...args) => log('warn', args);
    ctxLog.error = /** @param {...unknown} args */ (...args) => log('error', args);
    const ctx = ObjectFreeze({
      fetch: fetchFn,
      elicit: elicitFn,
      sample: sampleFn,
      log: ObjectFreeze(ctxLog),
      progress: /** @param {any} progress @param {any} [total] @param {unknown} [message] */ (progress, total, message) => {
        sync('progress', +progress, total === undefined ? undefined : +total, message === undefined ? undefined : str(message));
      },
      content,
      functionName: str(functionName),
      runId: str(runId),
      deadline: +deadline,
    });
    let promise;
    try {
      promise = PromiseResolve(ReflectApply(handler, undefined, [JSONParse(argsJson), ctx]));
    } catch (error) {
      return PromiseResolve(JSONStringify({ ok: false, error: describeError(error) }));
    }
    return call(PromiseThen, promise, serialize, /** @param {unknown} error */ (error) =>
 JSONStringify({ ok: false, error: describeError(error) }));
  };

  return [settle, invoke];
}
