// Node's `crypto` inside the sandbox, the part SDKs use to sign requests and check webhooks:
// createHash and createHmac computed synchronously by @noble/hashes (audited, plain JavaScript),
// randomBytes, randomUUID and getRandomValues from the sandbox's WebCrypto, and timingSafeEqual.
// The rest of Node's crypto throws one clear error naming what there is; crypto.subtle is WebCrypto.
'use strict';
const { Buffer } = require('./buffer.cjs');
const { hmac } = require('@noble/hashes/hmac');
const { sha224, sha256, sha384, sha512 } = require('@noble/hashes/sha2');
const { md5, sha1 } = require('@noble/hashes/legacy');

const HASHES = { md5, sha1, sha224, sha256, sha384, sha512 };
const PROVIDED = 'createHash, createHmac, randomBytes, randomUUID, getRandomValues and timingSafeEqual';

function codeError(Kind, code, message) {
  const error = new Kind(message);
  error.code = code;
  return error;
}

/** `sha256`, `SHA256`, `sha-256` and `RSA-SHA256` name the same hash, as in Node. */
function hashOf(algorithm) {
  const name = String(algorithm).toLowerCase().replace(/^rsa-/, '').replace(/-/g, '');
  const hash = Object.hasOwn(HASHES, name) ? HASHES[name] : undefined;
  if (hash === undefined) {
    throw codeError(Error, 'ERR_OSSL_EVP_UNSUPPORTED', `Digest method not supported: "${algorithm}" (the sandbox's crypto has ${Object.keys(HASHES).join(', ')})`);
  }
  return hash;
}

// Node's Buffer knows base64url; the buffer package does not, so digests and inputs convert it here.
const toBase64url = (base64) => base64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const fromBase64url = (text) => text.replace(/-/g, '+').replace(/_/g, '/');

function bytesOf(data, encoding, what) {
  if (typeof data === 'string' && encoding === 'base64url') return Buffer.from(fromBase64url(data), 'base64');
  if (typeof data === 'string') return Buffer.from(data, encoding === undefined || encoding === 'buffer' ? 'utf8' : encoding);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', `The "${what}" argument must be of type string or an instance of Buffer, TypedArray, or DataView.`);
}

/** Node's Hash and Hmac: update() any number of times, then digest() once. */
class Digest {
  #state;
  #done = false;
  constructor(state) {
    this.#state = state;
  }
  update(data, inputEncoding) {
    if (this.#done) throw codeError(Error, 'ERR_CRYPTO_HASH_FINALIZED', 'Digest already called');
    this.#state.update(bytesOf(data, inputEncoding, 'data'));
    return this;
  }
  digest(encoding) {
    if (this.#done) throw codeError(Error, 'ERR_CRYPTO_HASH_FINALIZED', 'Digest already called');
    this.#done = true;
    const out = Buffer.from(this.#state.digest());
    if (encoding === 'base64url') return toBase64url(out.toString('base64'));
    return encoding === undefined || encoding === 'buffer' ? out : out.toString(encoding);
  }
  copy() {
    if (this.#done) throw codeError(Error, 'ERR_CRYPTO_HASH_FINALIZED', 'Digest already called');
    return new this.constructor(this.#state.clone());
  }
}
class Hash extends Digest {}
class Hmac extends Digest {}

function createHash(algorithm) {
  return new Hash(hashOf(algorithm).create());
}

function createHmac(algorithm, key) {
  return new Hmac(hmac.create(hashOf(algorithm), bytesOf(key, 'utf8', 'key')));
}

function timingSafeEqual(a, b) {
  const x = bytesOf(a, undefined, 'buf1');
  const y = bytesOf(b, undefined, 'buf2');
  if (typeof a === 'string' || typeof b === 'string') throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "buf1" and "buf2" arguments must be instances of ArrayBuffer, Buffer, TypedArray, or DataView.');
  if (x.byteLength !== y.byteLength) throw codeError(RangeError, 'ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH', 'Input buffers must have the same byte length');
  let diff = 0;
  for (let i = 0; i < x.byteLength; i++) diff |= x[i] ^ y[i];
  return diff === 0;
}

function randomBytes(size, callback) {
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 0 || size > 2 ** 31 - 1) {
    throw codeError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "size" is out of range. It must be >= 0 && <= ${2 ** 31 - 1}. Received ${String(size)}`);
  }
  const out = Buffer.alloc(size);
  // WebCrypto fills at most 65,536 bytes a call.
  for (let at = 0; at < size; at += 65536) globalThis.crypto.getRandomValues(out.subarray(at, Math.min(size, at + 65536)));
  if (typeof callback !== 'function') return out;
  setTimeout(() => callback(null, out), 0);
  return undefined;
}

const provided = {
  createHash,
  createHmac,
  Hash,
  Hmac,
  timingSafeEqual,
  randomBytes,
  randomUUID: () => globalThis.crypto.randomUUID(),
  getRandomValues: (array) => globalThis.crypto.getRandomValues(array),
  getHashes: () => Object.keys(HASHES),
  get webcrypto() {
    return globalThis.crypto;
  },
  get subtle() {
    return globalThis.crypto.subtle;
  },
};

// What a package may reach for beyond that fails when it runs, in one line naming what there is.
for (const name of [
  'createCipheriv', 'createDecipheriv', 'createSign', 'createVerify', 'sign', 'verify', 'createPrivateKey', 'createPublicKey', 'createSecretKey',
  'generateKeyPair', 'generateKeyPairSync', 'publicEncrypt', 'privateDecrypt', 'privateEncrypt', 'publicDecrypt', 'pbkdf2', 'pbkdf2Sync',
  'scrypt', 'scryptSync', 'hkdf', 'hkdfSync', 'createECDH', 'createDiffieHellman', 'randomFill', 'randomFillSync', 'randomInt',
]) {
  provided[name] = () => {
    throw codeError(Error, 'ERR_FEATURE_UNAVAILABLE_ON_PLATFORM', `crypto.${name}: the sandbox's Node crypto provides only ${PROVIDED}; use crypto.subtle (WebCrypto) for the rest`);
  };
}

module.exports = provided;
