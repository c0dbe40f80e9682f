// @ts-check
// DOMException (WebIDL): name, message and the legacy code as accessors on the prototype, the
// legacy code constants on the constructor and the prototype, Error.prototype as its prototype;
// and WebIDL's argument-count check the web modules share. Loaded on first use (web/index.js defines
// the global), so its top level may run after function code: it takes every intrinsic from intrinsics.js.
import { ObjectDefineProperty, ObjectSetPrototypeOf, ErrorCtor, ErrorCaptureStackTrace as captureStackTrace, TypeErrorCtor, SymbolToStringTag, str } from '../intrinsics.js';


/** The legacy code of each name that has one (the WebIDL error names table), in code order; made on first use. */
const legacyTable = () => /** @type {Array<[constant: string, name: string]>} */ ([
  ['INDEX_SIZE_ERR', 'IndexSizeError'],
  ['DOMSTRING_SIZE_ERR', ''],
  ['HIERARCHY_REQUEST_ERR', 'HierarchyRequestError'],
  ['WRONG_DOCUMENT_ERR', 'WrongDocumentError'],
  ['INVALID_CHARACTER_ERR', 'InvalidCharacterError'],
  ['NO_DATA_ALLOWED_ERR', ''],
  ['NO_MODIFICATION_ALLOWED_ERR', 'NoModificationAllowedError'],
  ['NOT_FOUND_ERR', 'NotFoundError'],
  ['NOT_SUPPORTED_ERR', 'NotSupportedError'],
  ['INUSE_ATTRIBUTE_ERR', 'InUseAttributeError'],
  ['INVALID_STATE_ERR', 'InvalidStateError'],
  ['SYNTAX_ERR', 'SyntaxError'],
  ['INVALID_MODIFICATION_ERR', 'InvalidModificationError'],
  ['NAMESPACE_ERR', 'NamespaceError'],
  ['INVALID_ACCESS_ERR', 'InvalidAccessError'],
  ['VALIDATION_ERR', ''],
  ['TYPE_MISMATCH_ERR', 'TypeMismatchError'],
  ['SECURITY_ERR', 'SecurityError'],
  ['NETWORK_ERR', 'NetworkError'],
  ['ABORT_ERR', 'AbortError'],
  ['URL_MISMATCH_ERR', 'URLMismatchError'],
  ['QUOTA_EXCEEDED_ERR', 'QuotaExceededError'],
  ['TIMEOUT_ERR', 'TimeoutError'],
  ['INVALID_NODE_TYPE_ERR', 'InvalidNodeTypeError'],
  ['DATA_CLONE_ERR', 'DataCloneError'],
]);

/** @type {ReturnType<typeof legacyTable> | undefined} */
let legacy;

/** @param {string} name */
const legacyCode = (name) => {
  if (name === '') return 0;
  const LEGACY = (legacy ??= legacyTable());
  for (let i = 0; i < LEGACY.length; i++) if (/** @type {[string, string]} */ (LEGACY[i])[1] === name) return i + 1;
  return 0;
};

/** @type {(value: unknown) => boolean} */
let isDOMExceptionImpl;

const make = () => {
  class DOMException {
    #name;
    #message;
    /** @param {unknown} [message] @param {unknown} [options] a name, or { name, cause } */
    constructor(message = '', options = 'Error') {
      this.#message = str(message);
      if (options !== null && typeof options === 'object') {
        const o = /** @type {{ name?: unknown, cause?: unknown }} */ (options);
        this.#name = o.name === undefined ? 'Error' : str(o.name);
        if ('cause' in o) ObjectDefineProperty(this, 'cause', { value: o.cause, writable: true, configurable: true, enumerable: false });
      } else {
        this.#name = str(options);
      }
      captureStackTrace(this, DOMException);
    }
    get name() {
      return this.#name;
    }
    get message() {
      return this.#message;
    }
    get code() {
      return legacyCode(this.#name);
    }
    static {
      isDOMExceptionImpl = (value) => value !== null && typeof value === 'object' && #name in value;
    }
  }
  ObjectSetPrototypeOf(DOMException.prototype, ErrorCtor.prototype);
  // WebIDL: attributes are enumerable; the class keeps its name whatever the bundler called it.
  for (const attribute of ['name', 'message', 'code']) ObjectDefineProperty(DOMException.prototype, attribute, { enumerable: true });
  ObjectDefineProperty(DOMException.prototype, SymbolToStringTag, { value: 'DOMException', configurable: true });
  ObjectDefineProperty(DOMException, 'name', { value: 'DOMException', configurable: true });
  const LEGACY = (legacy ??= legacyTable());
  for (let i = 0; i < LEGACY.length; i++) {
    const descriptor = { value: i + 1, writable: false, enumerable: true, configurable: false };
    const constant = /** @type {[string, string]} */ (LEGACY[i])[0];
    ObjectDefineProperty(DOMException, constant, descriptor);
    ObjectDefineProperty(DOMException.prototype, constant, descriptor);
  }
  return DOMException;
};
/** @type {ReturnType<typeof make> | undefined} */
let made;

/** This context's DOMException class, made on first use (its constants cost a plain call too much to make it up front). */
export const DOMExceptionClass = () => (made ??= make());

/** A DOMException named `name` (AbortError, TimeoutError, DataCloneError…). @param {string} message @param {string} name */
export const domException = (message, name) => new (DOMExceptionClass())(message, name);

/**
 * For the runtime's own modules: `new DOMException(message, name)` makes one of this context's
 * DOMExceptions (the class itself is made on first use; test a value with isDOMException, not instanceof).
 */
export const DOMException = /** @type {ReturnType<typeof make>} */ (
  /** @type {unknown} */ (
    /** @param {unknown} [message] @param {unknown} [options] */
    function DOMException(message, options) {
      return new (DOMExceptionClass())(message, options);
    }
  )
);

/** True for a DOMException made here, whatever the function did to its prototype. @param {unknown} value */
export const isDOMException = (value) => made !== undefined && isDOMExceptionImpl(value);

/** WebIDL's check of a call's argument count: a TypeError naming what was called. @param {number} given @param {number} needed @param {string} what */
export const needArgs = (given, needed, what) => {
  if (given < needed) throw new TypeErrorCtor(`${what}: ${needed} argument${needed > 1 ? 's' : ''} required, but only ${given} present`);
};
