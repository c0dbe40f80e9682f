// @ts-check
// crypto.subtle (W3C WebCrypto), performed by the host (sandboxHost/subtle.ts). A CryptoKey here
// holds only a handle to a key in the host's table for this run, plus copies of its public
// attributes; the key material never enters the isolate unless exported. Arguments are converted as
// WebIDL does (algorithm dictionaries to plain data with only the members WebCrypto reads, every
// BufferSource to bytes) and the host checks them again; its errors come back as DOMExceptions.
import {
  ObjectCreate,
  ObjectHasOwn,
  ObjectGetOwnPropertyNames,
  ObjectDefineProperty,
  ArrayBufferIsView,
  PromiseCtor,
  PromiseThen,
  TypeErrorCtor,
  Uint8ArrayCtor,
  TypedArrayBuffer,
  ArrayBufferByteLength,
  WeakMapCtor,
  WeakMapGet,
  WeakMapSet,
  SymbolIterator,
  SymbolToStringTag,
  NumberIsFinite,
  MathFloor,
  call,
  str,
  isBytes,
  isArrayBuffer,
  bareList,
  append,
  viewOf,
} from '../intrinsics.js';
import { start } from '../host.js';
import { domException, needArgs } from './domException.js';

/**
 * What the guest knows of a key: its handle in the host's table and its public attributes.
 * @typedef {{ handle: number, type: string, extractable: boolean, algorithm: object, usages: string[] }} KeySlots
 */

/** @type {WeakMap<object, KeySlots>} */
const keySlots = new WeakMapCtor();
/** Lets the internal code (and only it) construct the interface objects. */
const INTERNAL = ObjectCreate(null);
/** The error names the host answers with: each becomes a DOMException of that name. */
const DOM_ERRORS = ['NotSupportedError', 'InvalidAccessError', 'DataError', 'OperationError', 'SyntaxError', 'InvalidStateError', 'QuotaExceededError'];
const BYTE_MEMBERS = ['iv', 'additionalData', 'salt', 'info', 'label', 'counter', 'publicExponent', 'context'];
const INTEGER_MEMBERS = ['tagLength', 'length', 'iterations', 'saltLength', 'modulusLength'];
const JWK_STRINGS = ['kty', 'use', 'alg', 'crv', 'x', 'y', 'd', 'n', 'e', 'p', 'q', 'dp', 'dq', 'qi', 'k'];
const OTHER_PRIME = ['r', 'd', 't'];
const FORMATS = ['raw', 'spki', 'pkcs8', 'jwk'];

/** @param {string[]} list @param {string} value */
const includes = (list, value) => {
  for (let i = 0; i < list.length; i++) if (list[i] === value) return true;
  return false;
};

/** @param {unknown} value @param {string} what @returns {KeySlots} */
const slotsOf = (value, what) => {
  const slots = value !== null && typeof value === 'object' ? call(WeakMapGet, keySlots, value) : undefined;
  if (slots === undefined) throw new TypeErrorCtor(`crypto.subtle: ${what} is not a CryptoKey`);
  return slots;
};

/** A BufferSource as bytes (a view of the same memory: the host's copy is taken when the call starts). @param {unknown} value @param {string} what */
const bufferSource = (value, what) => {
  if (isArrayBuffer(value)) return new Uint8ArrayCtor(value, 0, call(ArrayBufferByteLength, value));
  if (ArrayBufferIsView(value)) {
    return isBytes(value) ? value : viewOf(/** @type {ArrayBufferView} */ (value));
  }
  throw new TypeErrorCtor(`crypto.subtle: ${what} must be an ArrayBuffer or a view of one`);
};

/** WebIDL [EnforceRange] unsigned long. @param {unknown} value @param {string} what */
const enforceRange = (value, what) => {
  const n = +(/** @type {any} */ (value));
  if (!NumberIsFinite(n)) throw new TypeErrorCtor(`crypto.subtle: ${what} must be a finite number`);
  const whole = n < 0 ? -MathFloor(-n) : MathFloor(n);
  if (whole < 0 || whole > 0xffffffff) throw new TypeErrorCtor(`crypto.subtle: ${what} is out of range`);
  return whole;
};

/**
 * An AlgorithmIdentifier as plain data: its name and the members WebCrypto's dictionaries define,
 * converted to their types. @param {unknown} value @param {string} what @returns {Record<string, unknown>}
 */
const algorithmOf = (value, what) => {
  const out = /** @type {Record<string, unknown>} */ (ObjectCreate(null));
  if (typeof value === 'string') {
    out.name = value;
    return out;
  }
  if (value === null || typeof value !== 'object') throw new TypeErrorCtor(`crypto.subtle: ${what} must be a name or an object with a name`);
  const a = /** @type {Record<string, unknown>} */ (value);
  const name = a.name;
  if (name === undefined) throw new TypeErrorCtor(`crypto.subtle: ${what} has no name`);
  out.name = str(name);
  for (let i = 0; i < BYTE_MEMBERS.length; i++) {
    const member = /** @type {string} */ (BYTE_MEMBERS[i]);
    const v = a[member];
    if (v !== undefined) out[member] = bufferSource(v, `${what}.${member}`);
  }
  for (let i = 0; i < INTEGER_MEMBERS.length; i++) {
    const member = /** @type {string} */ (INTEGER_MEMBERS[i]);
    const v = a[member];
    if (v !== undefined) out[member] = enforceRange(v, `${what}.${member}`);
  }
  if (a.hash !== undefined) out.hash = algorithmOf(a.hash, `${what}.hash`);
  if (a.namedCurve !== undefined) out.namedCurve = str(a.namedCurve);
  if (a.public !== undefined) out.public = slotsOf(a.public, `${what}.public`).handle;
  return out;
};

/** A sequence<DOMString> (the function's own iterable, iterated as WebIDL does). @param {unknown} value @param {string} what */
const strings = (value, what) => {
  if (value === null || typeof value !== 'object' || typeof (/** @type {any} */ (value)[SymbolIterator]) !== 'function') {
    throw new TypeErrorCtor(`crypto.subtle: ${what} must be a list of strings`);
  }
  const list = /** @type {string[]} */ (/** @type {unknown} */ (bareList()));
  for (const item of /** @type {Iterable<unknown>} */ (value)) {
    if (list.length >= 64) throw new TypeErrorCtor(`crypto.subtle: ${what} is too long`);
    append(list, str(item));
  }
  return list;
};

/** @param {unknown} value */
const formatOf = (value) => {
  const format = str(value);
  if (!includes(FORMATS, format)) throw new TypeErrorCtor(`crypto.subtle: format must be "raw", "spki", "pkcs8" or "jwk", not "${format}"`);
  return format;
};

/** @param {Record<string, unknown>} from @param {Record<string, unknown>} to @param {string} member */
const copyString = (from, to, member) => {
  if (from[member] !== undefined) to[member] = str(from[member]);
};

/** A JsonWebKey dictionary as plain data. @param {unknown} value */
const jwkOf = (value) => {
  if (value === null || typeof value !== 'object' || isArrayBuffer(value) || ArrayBufferIsView(value)) throw new TypeErrorCtor('crypto.subtle: a "jwk" key must be a JsonWebKey object');
  const k = /** @type {Record<string, unknown>} */ (value);
  const out = /** @type {Record<string, unknown>} */ (ObjectCreate(null));
  for (let i = 0; i < JWK_STRINGS.length; i++) copyString(k, out, /** @type {string} */ (JWK_STRINGS[i]));
  if (k.ext !== undefined) out.ext = !!k.ext;
  if (k.key_ops !== undefined) out.key_ops = strings(k.key_ops, 'jwk.key_ops');
  if (k.oth !== undefined) {
    const primes = bareList();
    for (const prime of /** @type {Iterable<any>} */ (k.oth)) {
      const p = /** @type {Record<string, unknown>} */ (ObjectCreate(null));
      if (prime !== null && typeof prime === 'object') for (let m = 0; m < OTHER_PRIME.length; m++) copyString(prime, p, /** @type {string} */ (OTHER_PRIME[m]));
      append(primes, p);
    }
    out.oth = primes;
  }
  return out;
};

/** A key description from the host as a CryptoKey. @param {any} d */
const keyFrom = (d) => {
  const key = ObjectCreate(interfaces().CryptoKey.prototype);
  call(WeakMapSet, keySlots, key, { handle: d.handle, type: str(d.type), extractable: d.extractable === true, algorithm: d.algorithm, usages: d.usages });
  return key;
};

/** @param {unknown} bytes */
const arrayBufferFrom = (bytes) => {
  if (!isBytes(bytes)) throw domException('crypto.subtle: the host answered with no bytes', 'OperationError');
  return call(TypedArrayBuffer, bytes);
};

/** The host's failure as the error WebCrypto specifies. @param {any} error */
const guestError = (error) => {
  const code = error && typeof error.code === 'string' ? error.code : '';
  const message = error && typeof error.message === 'string' ? error.message : 'crypto.subtle: the operation failed';
  if (code === 'TypeError') return new TypeErrorCtor(message);
  return domException(message, includes(DOM_ERRORS, code) ? code : 'OperationError');
};

/** @param {unknown} reason */
const rejected = (reason) => new PromiseCtor((_resolve, reject) => reject(reason));

/**
 * Runs one call: `build` converts the arguments (its exceptions reject the promise, as WebIDL does
 * for a promise-returning operation) and `answer` turns the host's value into the result.
 * @param {unknown} self @param {number} given @param {number} needed @param {string} method
 * @param {() => Record<string, unknown>} build @param {(value: any) => unknown} answer
 */
const run = (self, given, needed, method, build, answer) => {
  try {
    if (self !== interfaces().subtle) throw new TypeErrorCtor('Illegal invocation');
    needArgs(given, needed, `crypto.subtle.${method}`);
    // Spread and literals define their properties: a setter the function put on Object.prototype is never called.
    const payload = { method, ...build() };
    return call(PromiseThen, start('subtle', payload), answer, (/** @type {unknown} */ error) => {
      throw guestError(error);
    });
  } catch (error) {
    return rejected(error);
  }
};

/** @param {any} value */
const keyOrPair = (value) => (ObjectHasOwn(value, 'privateKey') ? { publicKey: keyFrom(value.publicKey), privateKey: keyFrom(value.privateKey) } : keyFrom(value));

/**
 * The interfaces, made on first use of crypto.subtle, SubtleCrypto or CryptoKey: a call that uses
 * none of them does not pay for their classes.
 */
const make = () => {
  class CryptoKey {
    /** @param {unknown} [token] */
    constructor(token) {
      if (token !== INTERNAL) throw new TypeErrorCtor('Illegal constructor');
    }
    get type() {
      return slotsOf(this, 'this').type;
    }
    get extractable() {
      return slotsOf(this, 'this').extractable;
    }
    get algorithm() {
      return slotsOf(this, 'this').algorithm;
    }
    get usages() {
      return slotsOf(this, 'this').usages;
    }
  }

  // `arguments.length`: WebIDL counts the arguments given, not the parameters named.
  class SubtleCrypto {
    /** @param {unknown} [token] */
    constructor(token) {
      if (token !== INTERNAL) throw new TypeErrorCtor('Illegal constructor');
    }
    /** @param {unknown} algorithm @param {unknown} key @param {unknown} data */
    encrypt(algorithm, key, data) {
      return run(this, arguments.length, 3, 'encrypt', () => ({ algorithm: algorithmOf(algorithm, 'algorithm'), key: slotsOf(key, 'key').handle, data: bufferSource(data, 'data') }), arrayBufferFrom);
    }
    /** @param {unknown} algorithm @param {unknown} key @param {unknown} data */
    decrypt(algorithm, key, data) {
      return run(this, arguments.length, 3, 'decrypt', () => ({ algorithm: algorithmOf(algorithm, 'algorithm'), key: slotsOf(key, 'key').handle, data: bufferSource(data, 'data') }), arrayBufferFrom);
    }
    /** @param {unknown} algorithm @param {unknown} key @param {unknown} data */
    sign(algorithm, key, data) {
      return run(this, arguments.length, 3, 'sign', () => ({ algorithm: algorithmOf(algorithm, 'algorithm'), key: slotsOf(key, 'key').handle, data: bufferSource(data, 'data') }), arrayBufferFrom);
    }
    /** @param {unknown} algorithm @param {unknown} key @param {unknown} signature @param {unknown} data */
    verify(algorithm, key, signature, data) {
      return run(
        this,
        arguments.length,
        4,
        'verify',
        () => ({ algorithm: algorithmOf(algorithm, 'algorithm'), key: slotsOf(key, 'key').handle, signature: bufferSource(signature, 'signature'), data: bufferSource(data, 'data') }),
        (ok) => ok === true,
      );
    }
    /** @param {unknown} algorithm @param {unknown} data */
    digest(algorithm, data) {
      return run(this, arguments.length, 2, 'digest', () => ({ algorithm: algorithmOf(algorithm, 'algorithm'), data: bufferSource(data, 'data') }), arrayBufferFrom);
    }
    /** @param {unknown} algorithm @param {unknown} extractable @param {unknown} keyUsages */
    generateKey(algorithm, extractable, keyUsages) {
      return run(this, arguments.length, 3, 'generateKey', () => ({ algorithm: algorithmOf(algorithm, 'algorithm'), extractable: !!extractable, usages: strings(keyUsages, 'keyUsages') }), keyOrPair);
    }
    /** @param {unknown} algorithm @param {unknown} baseKey @param {unknown} derivedKeyType @param {unknown} extractable @param {unknown} keyUsages */
    deriveKey(algorithm, baseKey, derivedKeyType, extractable, keyUsages) {
      return run(
        this,
        arguments.length,
        5,
        'deriveKey',
        () => ({
          algorithm: algorithmOf(algorithm, 'algorithm'),
          baseKey: slotsOf(baseKey, 'baseKey').handle,
          derivedKeyType: algorithmOf(derivedKeyType, 'derivedKeyType'),
          extractable: !!extractable,
          usages: strings(keyUsages, 'keyUsages'),
        }),
        keyFrom,
      );
    }
    /** @param {unknown} algorithm @param {unknown} baseKey @param {unknown} [length] */
    deriveBits(algorithm, baseKey, length = null) {
      return run(
        this,
        arguments.length,
        2,
        'deriveBits',
        // WebIDL unsigned long? (no EnforceRange): modulo 2^32.
        () => ({ algorithm: algorithmOf(algorithm, 'algorithm'), baseKey: slotsOf(baseKey, 'baseKey').handle, length: length === null ? null : unsignedLong(length) }),
        arrayBufferFrom,
      );
    }
    /** @param {unknown} format @param {unknown} keyData @param {unknown} algorithm @param {unknown} extractable @param {unknown} keyUsages */
    importKey(format, keyData, algorithm, extractable, keyUsages) {
      return run(
        this,
        arguments.length,
        5,
        'importKey',
        () => {
          const f = formatOf(format);
          return { format: f, keyData: f === 'jwk' ? jwkOf(keyData) : bufferSource(keyData, 'keyData'), algorithm: algorithmOf(algorithm, 'algorithm'), extractable: !!extractable, usages: strings(keyUsages, 'keyUsages') };
        },
        keyFrom,
      );
    }
    /** @param {unknown} format @param {unknown} key */
    exportKey(format, key) {
      return run(this, arguments.length, 2, 'exportKey', () => ({ format: formatOf(format), key: slotsOf(key, 'key').handle }), (value) => (isBytes(value) ? arrayBufferFrom(value) : value));
    }
    /** @param {unknown} format @param {unknown} key @param {unknown} wrappingKey @param {unknown} wrapAlgorithm */
    wrapKey(format, key, wrappingKey, wrapAlgorithm) {
      return run(
        this,
        arguments.length,
        4,
        'wrapKey',
        () => ({ format: formatOf(format), key: slotsOf(key, 'key').handle, wrappingKey: slotsOf(wrappingKey, 'wrappingKey').handle, wrapAlgorithm: algorithmOf(wrapAlgorithm, 'wrapAlgorithm') }),
        arrayBufferFrom,
      );
    }
    /**
     * @param {unknown} format @param {unknown} wrappedKey @param {unknown} unwrappingKey @param {unknown} unwrapAlgorithm
     * @param {unknown} unwrappedKeyAlgorithm @param {unknown} extractable @param {unknown} keyUsages
     */
    unwrapKey(format, wrappedKey, unwrappingKey, unwrapAlgorithm, unwrappedKeyAlgorithm, extractable, keyUsages) {
      return run(
        this,
        arguments.length,
        7,
        'unwrapKey',
        () => ({
          format: formatOf(format),
          wrappedKey: bufferSource(wrappedKey, 'wrappedKey'),
          unwrappingKey: slotsOf(unwrappingKey, 'unwrappingKey').handle,
          unwrapAlgorithm: algorithmOf(unwrapAlgorithm, 'unwrapAlgorithm'),
          unwrappedKeyAlgorithm: algorithmOf(unwrappedKeyAlgorithm, 'unwrappedKeyAlgorithm'),
          extractable: !!extractable,
          usages: strings(keyUsages, 'keyUsages'),
        }),
        keyFrom,
      );
    }
  }
  // As WebIDL interfaces: their platform names (the bundler may rename a class), toStringTags, and
  // enumerable operations and attributes (class members are not).
  for (const [name, cls] of /** @type {const} */ ([['CryptoKey', CryptoKey], ['SubtleCrypto', SubtleCrypto]])) {
    ObjectDefineProperty(cls, 'name', { value: name, configurable: true });
    ObjectDefineProperty(cls.prototype, SymbolToStringTag, { value: name, configurable: true });
    const members = ObjectGetOwnPropertyNames(cls.prototype);
    for (let i = 0; i < members.length; i++) if (members[i] !== 'constructor') ObjectDefineProperty(cls.prototype, /** @type {string} */ (members[i]), { enumerable: true });
  }
  // Taken before any function code can reach the class: what the runtime's own modules call.
  return { CryptoKey, SubtleCrypto, subtle: new SubtleCrypto(INTERNAL), digest: SubtleCrypto.prototype.digest };
};
/** @type {ReturnType<typeof make> | undefined} */
let made;
/** SubtleCrypto, CryptoKey and this context's crypto.subtle, made on first use. */
export const interfaces = () => (made ??= make());

/** @param {unknown} value */
const unsignedLong = (value) => {
  const n = +(/** @type {any} */ (value));
  if (!NumberIsFinite(n)) return 0;
  const whole = n < 0 ? -MathFloor(-n) : MathFloor(n);
  return ((whole % 0x100000000) + 0x100000000) % 0x100000000;
};

/**
 * For the runtime's own modules (fetch's integrity check): crypto.subtle's digest as made here,
 * whatever the function did to SubtleCrypto.prototype. @type {{ digest: (algorithm: unknown, data: unknown) => Promise<ArrayBuffer> }}
 */
export const subtle = { digest: (algorithm, data) => call(interfaces().digest, interfaces().subtle, algorithm, data) };
