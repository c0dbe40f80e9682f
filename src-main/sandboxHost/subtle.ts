// crypto.subtle for the guest, performed by this process's WebCrypto (Node's, on the libuv
// threadpool). Keys never enter the isolate: each run has its own table of CryptoKeys, and the
// guest holds only a handle number (unique in this process) plus a copy of the key's public
// attributes. Every argument is checked and copied here; answers are copies (bytes, JWK data, key
// descriptions); errors carry the WebCrypto name the guest turns into a DOMException.
import { webcrypto } from 'node:crypto';

type Key = webcrypto.CryptoKey;
type Algorithm = Record<string, unknown>;

const MB = 1024 * 1024;

/**
 * The bounds of one run's crypto.subtle. A resource bound crossed is a QuotaExceededError; a
 * parameter over its bound is an OperationError naming it.
 */
export const SUBTLE_LIMITS = {
  /** Keys a run may hold (imported, generated, derived, unwrapped; a key pair counts two). */
  keys: 1000,
  /** Bytes one call may pass in (data, signature, key material, algorithm parameters together). */
  inputBytes: 16 * MB,
  /** Input bytes held by a run's unfinished calls together: a guest can pass one buffer many times. */
  heldBytes: 32 * MB,
  /** A run's unfinished calls (running or waiting their turn). */
  pending: 1024,
  /**
   * A run's calls on the threadpool at once; the others wait in the run's queue, which is dropped
   * when the run ends, so at most this many calls outlive it (each bounded by the limits below).
   */
  concurrent: 2,
  /** PBKDF2: iterations × output blocks (of the hash's size) per call (about 1.5 s with SHA-512 here). */
  pbkdf2Work: 2_000_000,
  /** RSA key generation (4096 bits takes about 0.4 s; 8192 bits tens of seconds). */
  rsaGenerateBits: 4096,
  /** RSA keys that may be imported (a private operation with a 16384-bit key takes seconds). */
  rsaImportBits: 8192,
  /** Any length in bits (HMAC key length, deriveBits output). */
  bits: 131_072,
} as const;

/** The algorithms of W3C WebCrypto and its Secure Curves draft (Ed448, X448), by their names in lower case (names match case-insensitively). */
const ALGORITHMS = new Map(
  ['SHA-1', 'SHA-256', 'SHA-384', 'SHA-512', 'HMAC', 'AES-GCM', 'AES-CBC', 'AES-CTR', 'AES-KW', 'RSASSA-PKCS1-v1_5', 'RSA-PSS', 'RSA-OAEP', 'ECDSA', 'ECDH', 'Ed25519', 'X25519', 'Ed448', 'X448', 'PBKDF2', 'HKDF'].map(
    (name) => [name.toLowerCase(), name],
  ),
);
const HASH_BYTES: Record<string, number> = { 'SHA-1': 20, 'SHA-256': 32, 'SHA-384': 48, 'SHA-512': 64 };
const HASH_BLOCK_BITS: Record<string, number> = { 'SHA-1': 512, 'SHA-256': 512, 'SHA-384': 1024, 'SHA-512': 1024 };
const BYTE_MEMBERS = new Set(['iv', 'additionalData', 'salt', 'info', 'label', 'counter', 'publicExponent', 'context']);
const INTEGER_MEMBERS = new Set(['tagLength', 'length', 'iterations', 'saltLength', 'modulusLength']);
const USAGES = new Set(['encrypt', 'decrypt', 'sign', 'verify', 'deriveKey', 'deriveBits', 'wrapKey', 'unwrapKey']);
const FORMATS = new Set(['raw', 'spki', 'pkcs8', 'jwk']);
const JWK_STRINGS = new Set(['kty', 'use', 'alg', 'crv', 'x', 'y', 'd', 'n', 'e', 'p', 'q', 'dp', 'dq', 'qi', 'k']);
/** The error names the guest gets (anything else from WebCrypto is an OperationError). */
const ERROR_NAMES = new Set(['NotSupportedError', 'InvalidAccessError', 'DataError', 'OperationError', 'SyntaxError', 'InvalidStateError', 'QuotaExceededError', 'TypeError']);

/** A failure the guest sees as `name` (a DOMException name, or TypeError). */
export class SubtleError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

const fail = (name: string, message: string): never => {
  throw new SubtleError(name, `crypto.subtle: ${message}`);
};

/** A key as the guest sees it: its handle and a copy of its public attributes. */
export interface KeyDescription {
  handle: number;
  type: string;
  extractable: boolean;
  algorithm: Algorithm;
  usages: string[];
}

/** Handles are unique in this process, so one run's handle never names a key of another. */
let nextHandle = 1;

/** One call, checked: its input bytes, the keys it will make (at most), and the work itself. */
interface Checked {
  bytes: number;
  keys: number;
  work: () => Promise<unknown>;
}

/**
 * One run's crypto.subtle: its key table, its queue of calls, and their bounds. `close()` (when the
 * run ends) drops the keys and the queue; a call still on the threadpool then finishes unseen.
 */
export class SubtleKeys {
  readonly #keys = new Map<number, Key>();
  readonly #queue: Array<() => void> = [];
  #closed = false;
  #running = 0;
  #pending = 0;
  #heldBytes = 0;
  /** Keys promised to unfinished calls (reserved so concurrent calls cannot pass the bound together). */
  #reservedKeys = 0;

  get size(): number {
    return this.#keys.size;
  }

  /**
   * Starts one guest call; `done(ok, value)` is called once, later, with its answer (on failure
   * `{ code: errorName, message }`), unless the run ends first. Never throws.
   */
  start(payload: unknown, done: (ok: boolean, value: unknown) => void): void {
    let checked: Checked;
    try {
      if (this.#closed) fail('InvalidStateError', 'the run has ended');
      checked = this.#check(payload);
      if (this.#pending >= SUBTLE_LIMITS.pending) fail('QuotaExceededError', `more than ${SUBTLE_LIMITS.pending} calls unfinished at once; await some before starting more`);
      if (this.#heldBytes + checked.bytes > SUBTLE_LIMITS.heldBytes) {
        fail('QuotaExceededError', `the unfinished calls would hold over ${SUBTLE_LIMITS.heldBytes / MB} MB of input; await some before starting more`);
      }
      if (this.#keys.size + this.#reservedKeys + checked.keys > SUBTLE_LIMITS.keys) {
        fail('QuotaExceededError', `a run may hold at most ${SUBTLE_LIMITS.keys} keys; reuse the keys it has`);
      }
    } catch (error) {
      queueMicrotask(() => done(false, errorAnswer(error)));
      return;
    }
    this.#pending++;
    this.#heldBytes += checked.bytes;
    this.#reservedKeys += checked.keys;
    const runNow = (): void => {
      if (this.#closed) return;
      this.#running++;
      // A work function that throws at once fails like one that rejects.
      new Promise((resolve) => resolve(checked.work()))
        .then(
          (value) => ({ ok: true, value }),
          (error: unknown) => ({ ok: false, value: errorAnswer(error) }),
        )
        .then((answer) => {
          if (this.#closed) return;
          this.#running--;
          this.#pending--;
          this.#heldBytes -= checked.bytes;
          this.#reservedKeys -= checked.keys;
          done(answer.ok, answer.value);
          this.#queue.shift()?.();
        })
        .catch(() => {});
    };
    if (this.#running < SUBTLE_LIMITS.concurrent) runNow();
    else this.#queue.push(runNow);
  }

  /** The run has ended: its keys and waiting calls are dropped, and nothing more is answered. */
  close(): void {
    this.#closed = true;
    this.#keys.clear();
    this.#queue.length = 0;
  }

  #key(handle: unknown, what: string): Key {
    const key = typeof handle === 'number' ? this.#keys.get(handle) : undefined;
    if (!key) return fail('InvalidAccessError', `${what} is not a key of this run`);
    return key;
  }

  /** Adds a key the guest may use from now on (unless the run ended meanwhile). */
  #add(key: Key): KeyDescription {
    const handle = nextHandle++;
    if (!this.#closed) this.#keys.set(handle, key);
    return { handle, type: key.type, extractable: key.extractable, algorithm: plainCopy(key.algorithm) as Algorithm, usages: [...key.usages] };
  }

  #describeKeys(made: Key | webcrypto.CryptoKeyPair): KeyDescription | { publicKey: KeyDescription; privateKey: KeyDescription } {
    if ('privateKey' in made) return { publicKey: this.#add(made.publicKey), privateKey: this.#add(made.privateKey) };
    return this.#add(made);
  }

  #check(payload: unknown): Checked {
    if (!isRecord(payload)) return fail('TypeError', 'bad call');
    const subtle = webcrypto.subtle;
    const input = new Input();
    const p = payload;
    const out = bytesOut;
    switch (p.method) {
      case 'digest': {
        const algorithm = this.#algorithm(p.algorithm, input);
        const data = input.bytes(p.data, 'data');
        return input.done(0, () => subtle.digest(algorithm as never, data).then(out));
      }
      case 'encrypt':
      case 'decrypt':
      case 'sign': {
        const method = p.method;
        const algorithm = this.#algorithm(p.algorithm, input);
        const key = this.#key(p.key, 'key');
        const data = input.bytes(p.data, 'data');
        return input.done(0, () => subtle[method](algorithm as never, key, data).then(out));
      }
      case 'verify': {
        const algorithm = this.#algorithm(p.algorithm, input);
        const key = this.#key(p.key, 'key');
        const signature = input.bytes(p.signature, 'signature');
        const data = input.bytes(p.data, 'data');
        return input.done(0, () => subtle.verify(algorithm as never, key, signature, data));
      }
      case 'generateKey': {
        const algorithm = this.#algorithm(p.algorithm, input);
        const extractable = readBoolean(p.extractable);
        const usages = readUsages(p.usages);
        if (isRsa(algorithm) && typeof algorithm.modulusLength === 'number' && algorithm.modulusLength > SUBTLE_LIMITS.rsaGenerateBits) {
          fail('OperationError', `RSA keys of more than ${SUBTLE_LIMITS.rsaGenerateBits} bits cannot be generated here`);
        }
        const keys = name(algorithm).startsWith('AES-') || algorithm.name === 'HMAC' ? 1 : 2;
        return input.done(keys, () => subtle.generateKey(algorithm as never, extractable, usages as never).then((made) => this.#describeKeys(made)));
      }
      case 'deriveBits': {
        const algorithm = this.#algorithm(p.algorithm, input);
        const baseKey = this.#key(p.baseKey, 'baseKey');
        const length = p.length === null ? null : readInteger(p.length, 'length');
        checkPbkdf2(algorithm, length ?? 0);
        return input.done(0, () => subtle.deriveBits(algorithm as never, baseKey, length as number).then(out));
      }
      case 'deriveKey': {
        const algorithm = this.#algorithm(p.algorithm, input);
        const baseKey = this.#key(p.baseKey, 'baseKey');
        const derivedKeyType = this.#algorithm(p.derivedKeyType, input);
        const extractable = readBoolean(p.extractable);
        const usages = readUsages(p.usages);
        checkPbkdf2(algorithm, derivedBits(derivedKeyType));
        return input.done(1, () => subtle.deriveKey(algorithm as never, baseKey, derivedKeyType as never, extractable, usages as never).then((key) => this.#add(key)));
      }
      case 'importKey': {
        const format = readFormat(p.format);
        const keyData = format === 'jwk' ? input.jwk(p.keyData) : input.bytes(p.keyData, 'keyData');
        const algorithm = this.#algorithm(p.algorithm, input);
        const extractable = readBoolean(p.extractable);
        const usages = readUsages(p.usages);
        return input.done(1, async () => this.#add(checkImported(await subtle.importKey(format as never, keyData as never, algorithm as never, extractable, usages as never))));
      }
      case 'exportKey': {
        const format = readFormat(p.format);
        const key = this.#key(p.key, 'key');
        return input.done(0, () => subtle.exportKey(format as never, key).then((exported) => (exported instanceof ArrayBuffer ? out(exported) : (JSON.parse(JSON.stringify(exported)) as unknown))));
      }
      case 'wrapKey': {
        const format = readFormat(p.format);
        const key = this.#key(p.key, 'key');
        const wrappingKey = this.#key(p.wrappingKey, 'wrappingKey');
        const algorithm = this.#algorithm(p.wrapAlgorithm, input);
        return input.done(0, () => subtle.wrapKey(format as never, key, wrappingKey, algorithm as never).then(out));
      }
      case 'unwrapKey': {
        const format = readFormat(p.format);
        const wrapped = input.bytes(p.wrappedKey, 'wrappedKey');
        const unwrappingKey = this.#key(p.unwrappingKey, 'unwrappingKey');
        const algorithm = this.#algorithm(p.unwrapAlgorithm, input);
        const keyAlgorithm = this.#algorithm(p.unwrappedKeyAlgorithm, input);
        const extractable = readBoolean(p.extractable);
        const usages = readUsages(p.usages);
        return input.done(1, async () =>
          this.#add(checkImported(await subtle.unwrapKey(format as never, wrapped, unwrappingKey, algorithm as never, keyAlgorithm as never, extractable, usages as never))),
        );
      }
      default:
        return fail('TypeError', 'unknown method');
    }
  }

  /** A copy of an algorithm dictionary with only the members WebCrypto reads, each of its type. */
  #algorithm(raw: unknown, input: Input): Algorithm {
    if (!isRecord(raw) || typeof raw.name !== 'string') return fail('TypeError', 'an algorithm must be a name or an object with a name');
    const name = ALGORITHMS.get(raw.name.toLowerCase());
    if (!name) return fail('NotSupportedError', `unrecognized algorithm name "${raw.name.slice(0, 64)}"`);
    const algorithm: Algorithm = { name };
    for (const [member, value] of Object.entries(raw)) {
      if (value === undefined || member === 'name') continue;
      if (BYTE_MEMBERS.has(member)) algorithm[member] = input.bytes(value, member);
      else if (INTEGER_MEMBERS.has(member)) algorithm[member] = readInteger(value, member);
      else if (member === 'hash') algorithm.hash = this.#algorithm(typeof value === 'string' ? { name: value } : value, input).name;
      else if (member === 'namedCurve') algorithm.namedCurve = readString(value, member, 64);
      else if (member === 'public') algorithm.public = this.#key(value, 'algorithm.public');
    }
    if (typeof algorithm.length === 'number' && algorithm.length > SUBTLE_LIMITS.bits) fail('OperationError', `length is over ${SUBTLE_LIMITS.bits} bits`);
    return algorithm;
  }
}

/** Counts a call's input bytes against SUBTLE_LIMITS.inputBytes as they are read. */
class Input {
  #bytes = 0;

  #count(n: number): void {
    this.#bytes += n;
    if (this.#bytes > SUBTLE_LIMITS.inputBytes) fail('QuotaExceededError', `a call may pass at most ${SUBTLE_LIMITS.inputBytes / MB} MB of input`);
  }

  bytes(value: unknown, what: string): Uint8Array {
    if (!(value instanceof Uint8Array)) return fail('TypeError', `${what} must be an ArrayBuffer or a view of one`);
    this.#count(value.byteLength);
    return value;
  }

  /** A JsonWebKey with only its members, each of its type. */
  jwk(raw: unknown): webcrypto.JsonWebKey {
    if (!isRecord(raw)) return fail('TypeError', 'a JWK must be an object');
    const jwk: Record<string, unknown> = {};
    for (const [member, value] of Object.entries(raw)) {
      if (value === undefined) continue;
      if (JWK_STRINGS.has(member)) {
        jwk[member] = readString(value, `jwk.${member}`, SUBTLE_LIMITS.inputBytes);
        this.#count((value as string).length);
      } else if (member === 'ext') jwk.ext = readBoolean(value);
      else if (member === 'key_ops') jwk.key_ops = readStrings(value, 'jwk.key_ops');
      else if (member === 'oth') {
        if (!Array.isArray(value) || value.length > 16) fail('TypeError', 'jwk.oth must be a short list');
        jwk.oth = (value as unknown[]).map((prime) => {
          if (!isRecord(prime)) return fail('TypeError', 'jwk.oth holds objects');
          const copy: Record<string, string> = {};
          for (const m of ['r', 'd', 't']) {
            if (prime[m] === undefined) continue;
            copy[m] = readString(prime[m], `jwk.oth.${m}`, SUBTLE_LIMITS.inputBytes);
            this.#count(copy[m].length);
          }
          return copy;
        });
      }
    }
    return jwk;
  }

  done(keys: number, work: () => Promise<unknown>): Checked {
    return { bytes: this.#bytes, keys, work };
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

function name(algorithm: Algorithm): string {
  return algorithm.name as string;
}

function isRsa(algorithm: Algorithm): boolean {
  return algorithm.name === 'RSASSA-PKCS1-v1_5' || algorithm.name === 'RSA-PSS' || algorithm.name === 'RSA-OAEP';
}

function readInteger(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 0xffff_ffff) return fail('TypeError', `${what} must be a whole number`);
  return value;
}

function readString(value: unknown, what: string, max: number): string {
  if (typeof value !== 'string') return fail('TypeError', `${what} must be a string`);
  if (value.length > max) return fail('QuotaExceededError', `${what} is over ${max} characters`);
  return value;
}

function readStrings(value: unknown, what: string): string[] {
  if (!Array.isArray(value) || value.length > 16) return fail('TypeError', `${what} must be a short list of strings`);
  return value.map((v) => readString(v, what, 64));
}

function readBoolean(value: unknown): boolean {
  if (typeof value !== 'boolean') return fail('TypeError', 'extractable must be a boolean');
  return value;
}

function readUsages(value: unknown): string[] {
  const usages = readStrings(value, 'keyUsages');
  for (const usage of usages) if (!USAGES.has(usage)) fail('TypeError', `"${usage}" is not a key usage`);
  return usages;
}

function readFormat(value: unknown): string {
  if (typeof value !== 'string' || !FORMATS.has(value)) return fail('TypeError', 'format must be "raw", "spki", "pkcs8" or "jwk"');
  return value;
}

/** The key length in bits a deriveKey asks its base algorithm for (the spec's "get key length"); 0 when unknown. */
function derivedBits(type: Algorithm): number {
  if (typeof type.length === 'number') return type.length;
  return type.name === 'HMAC' && typeof type.hash === 'string' ? (HASH_BLOCK_BITS[type.hash] ?? 0) : 0;
}

/** PBKDF2's cost is its iterations times the hash blocks of output: bounded, since a call cannot be stopped once it runs. */
function checkPbkdf2(algorithm: Algorithm, bits: number): void {
  if (algorithm.name !== 'PBKDF2' || typeof algorithm.iterations !== 'number' || typeof algorithm.hash !== 'string') return;
  if (bits > SUBTLE_LIMITS.bits) fail('OperationError', `length is over ${SUBTLE_LIMITS.bits} bits`);
  const blocks = Math.max(1, Math.ceil(bits / 8 / (HASH_BYTES[algorithm.hash] ?? 32)));
  if (algorithm.iterations * blocks > SUBTLE_LIMITS.pbkdf2Work) {
    fail('OperationError', `PBKDF2 with ${algorithm.iterations} iterations × ${blocks} output block(s) is over the limit of ${SUBTLE_LIMITS.pbkdf2Work} per call; use fewer iterations`);
  }
}

function checkImported(key: Key): Key {
  const bits = (key.algorithm as { modulusLength?: unknown }).modulusLength;
  if (typeof bits === 'number' && bits > SUBTLE_LIMITS.rsaImportBits) fail('OperationError', `RSA keys of more than ${SUBTLE_LIMITS.rsaImportBits} bits are not accepted`);
  return key;
}

function bytesOut(buffer: ArrayBuffer): Uint8Array {
  return new Uint8Array(buffer);
}

/** Plain data (objects, arrays, strings, numbers, booleans, bytes) copied out of a key's algorithm. */
function plainCopy(value: unknown): unknown {
  if (value instanceof Uint8Array) return new Uint8Array(value);
  if (Array.isArray(value)) return value.map(plainCopy);
  if (typeof value === 'object' && value !== null) {
    const copy: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) copy[k] = plainCopy(v);
    return copy;
  }
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : undefined;
}

function errorAnswer(error: unknown): { code: string; message: string } {
  const name = error instanceof Error && ERROR_NAMES.has(error.name) ? error.name : 'OperationError';
  const raw = error instanceof Error && ERROR_NAMES.has(error.name) ? error.message : 'The operation failed for an operation-specific reason';
  const message = raw.startsWith('crypto.subtle: ') ? raw : `crypto.subtle: ${raw}`;
  return { code: name, message: message.slice(0, 500) };
}
