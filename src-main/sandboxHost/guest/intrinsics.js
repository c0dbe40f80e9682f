// @ts-check
// The intrinsics the guest runtime relies on, captured when the bundle is evaluated in a fresh
// context: before any function code runs, so what a function later does to the globals and their
// prototypes cannot change them. Guest modules use these, never the globals: a module loaded on
// first use (web/index.js) runs its top level after function code, so it captures nothing itself.
export const ReflectApply = Reflect.apply;
export const ReflectOwnKeys = Reflect.ownKeys;
export const ReflectGetOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
export const ObjectCreate = Object.create;
export const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
export const ObjectFreeze = Object.freeze;
export const ObjectKeys = Object.keys;
export const ObjectHasOwn = Object.hasOwn;
export const ObjectGetOwnPropertyNames = Object.getOwnPropertyNames;
export const ObjectDefineProperty = Object.defineProperty;
export const ObjectGetPrototypeOf = Object.getPrototypeOf;
export const ObjectSetPrototypeOf = Object.setPrototypeOf;
export const ObjectPrototypeToString = Object.prototype.toString;
export const ArrayIsArray = Array.isArray;
export const ArrayPush = Array.prototype.push;
export const ArrayIncludes = Array.prototype.includes;
export const ArrayJoin = Array.prototype.join;
export const ArrayMap = Array.prototype.map;
export const ArraySlice = Array.prototype.slice;
export const ArraySort = Array.prototype.sort;
export const JSONStringify = JSON.stringify;
export const JSONParse = JSON.parse;
export const MathFloor = Math.floor;
export const MathMin = Math.min;
export const MathMax = Math.max;
export const DateNow = Date.now;
export const NumberIsFinite = Number.isFinite;
export const NumberParseInt = Number.parseInt;
export const StringCtor = String;
export const StringFromCharCode = String.fromCharCode;
export const StringCharCodeAt = String.prototype.charCodeAt;
export const StringCodePointAt = String.prototype.codePointAt;
export const StringSlice = String.prototype.slice;
export const StringIndexOf = String.prototype.indexOf;
export const StringSplit = String.prototype.split;
export const StringReplace = String.prototype.replace;
export const StringToLowerCase = String.prototype.toLowerCase;
export const StringTrim = String.prototype.trim;
export const StringToWellFormed = String.prototype.toWellFormed;
export const RegExpTest = RegExp.prototype.test;
export const PromiseCtor = Promise;
export const PromiseResolve = Promise.resolve.bind(Promise);
export const PromiseThen = Promise.prototype.then;
export const ErrorCtor = Error;
// V8's own: gives an object the `stack` an Error has (DOMException).
export const ErrorCaptureStackTrace = /** @type {(target: object, ctor?: Function) => void} */ (/** @type {any} */ (Error).captureStackTrace);
export const TypeErrorCtor = TypeError;
export const RangeErrorCtor = RangeError;
export const Uint8ArrayCtor = Uint8Array;
export const ArrayBufferIsView = ArrayBuffer.isView;
export const TypedArrayProto = ObjectGetPrototypeOf(Uint8Array.prototype);
// Accessors the intrinsic prototypes always have.
export const TypedArrayByteLength = /** @type {() => number} */ (/** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(TypedArrayProto, 'byteLength')).get);
export const TypedArrayBuffer = /** @type {() => ArrayBuffer} */ (/** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(TypedArrayProto, 'buffer')).get);
export const TypedArrayByteOffset = /** @type {() => number} */ (/** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(TypedArrayProto, 'byteOffset')).get);
// The array's own kind ('Uint8Array'…), undefined for anything else: unlike Object.prototype.toString, not fooled by an own Symbol.toStringTag.
export const TypedArrayName = /** @type {() => string | undefined} */ (/** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(TypedArrayProto, Symbol.toStringTag)).get);
export const ArrayBufferByteLength = /** @type {() => number} */ (/** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength')).get);
/** SharedArrayBuffer's byteLength getter (a brand check), or undefined where there is none. */
export const SharedByteLength = typeof SharedArrayBuffer === 'function' ? /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(SharedArrayBuffer.prototype, 'byteLength')).get : undefined;
export const ArrayBufferSlice = ArrayBuffer.prototype.slice;
export const TypedArraySet = TypedArrayProto.set;
export const DataViewCtor = DataView;
// The typed-array constructors by name (what a clone of a view is made with).
export const TypedArrayCtors = /** @type {Record<string, new (buffer: ArrayBuffer, offset: number, length: number) => ArrayBufferView>} */ (
  /** @type {unknown} */ ({ __proto__: null, Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array, Float32Array, Float64Array })
);
export const MapCtor = Map;
export const MapGet = Map.prototype.get;
export const MapSet = Map.prototype.set;
export const MapDelete = Map.prototype.delete;
export const MapHas = Map.prototype.has;
export const MapForEach = Map.prototype.forEach;
export const SetForEach = Set.prototype.forEach;
export const WeakMapCtor = WeakMap;
export const WeakMapGet = WeakMap.prototype.get;
export const WeakMapSet = WeakMap.prototype.set;
export const WeakMapHas = WeakMap.prototype.has;
export const SymbolCtor = Symbol;
export const SymbolIterator = Symbol.iterator;
export const SymbolToStringTag = Symbol.toStringTag;
export const IteratorPrototype = ObjectGetPrototypeOf(ObjectGetPrototypeOf(/** @type {any} */ ([])[SymbolIterator]()));
export const encodeURIComponentFn = encodeURIComponent;
export const decodeURIComponentFn = decodeURIComponent;

/** @type {(fn: Function, self: unknown, ...args: unknown[]) => any} */
export const call = (fn, self, ...args) => ReflectApply(fn, self, args);
/** @param {unknown} v */
export const str = (v) => StringCtor(v);
/** @type {(v: unknown) => v is Uint8Array} */
export const isBytes = (v) => ArrayBufferIsView(v) && call(ObjectPrototypeToString, v) === '[object Uint8Array]';
// The byteLength getter throws for anything but a real ArrayBuffer (a toStringTag can be faked).
/** @type {(v: unknown) => v is ArrayBuffer} */
export const isArrayBuffer = (v) => {
  try {
    call(ArrayBufferByteLength, v);
    return true;
  } catch {
    return false;
  }
};
// An array with no prototype: what the function did to Array.prototype (index setters, its
// iterator) cannot change what is pushed into it or read out of it.
export const bareList = () => /** @type {number[]} */ (ObjectSetPrototypeOf([], null));
const dataViewGetter = /** @param {string} name */ (name) => /** @type {(this: DataView) => any} */ (/** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(DataView.prototype, name)).get);
export const DataViewBuffer = dataViewGetter('buffer');
export const DataViewByteOffset = dataViewGetter('byteOffset');
export const DataViewByteLength = dataViewGetter('byteLength');
/** The bytes any ArrayBufferView (a typed array or a DataView) looks at, as a Uint8Array view. @param {ArrayBufferView} view */
export const viewOf = (view) => {
  try {
    return new Uint8ArrayCtor(call(TypedArrayBuffer, view), call(TypedArrayByteOffset, view), call(TypedArrayByteLength, view));
  } catch {
    // The typed-array getters refuse a DataView.
    return new Uint8ArrayCtor(call(DataViewBuffer, view), call(DataViewByteOffset, view), call(DataViewByteLength, view));
  }
};
/** @param {ArrayBufferView} view */
export const copyBytes = (view) => {
  // A fresh Uint8Array with exactly the view's bytes (works for any ArrayBufferView).
  const bytes = viewOf(view);
  const offset = call(TypedArrayByteOffset, bytes);
  return new Uint8ArrayCtor(call(ArrayBufferSlice, call(TypedArrayBuffer, bytes), offset, offset + call(TypedArrayByteLength, bytes)));
};
// An own element, whatever setters the function put on Array.prototype's indexes (push would call them).
/** @param {unknown[]} array @param {unknown} value */
export const append = (array, value) => ObjectDefineProperty(array, array.length, /** @type {PropertyDescriptor} */ ({ __proto__: null, value, writable: true, enumerable: true, configurable: true }));
/**
 * A name-value list with `name` set to `value`, as Headers.set and URLSearchParams.set do: the first
 * pair of that name takes the value, later ones go; without one, the pair is appended.
 * @param {[string, string][]} list @param {string} name @param {string} value
 */
export const setPair = (list, name, value) => {
  const out = /** @type {[string, string][]} */ ([]);
  let done = false;
  for (let i = 0; i < list.length; i++) {
    const p = /** @type {[string, string]} */ (list[i]);
    if (p[0] !== name) append(out, p);
    else if (!done) {
      append(out, [name, value]);
      done = true;
    }
  }
  if (!done) append(out, [name, value]);
  return out;
};
