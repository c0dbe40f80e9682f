// @ts-check
// Event, CustomEvent, EventTarget, AbortController and AbortSignal, per the DOM standard, and the
// helpers the runtime's own modules use. Loaded on first use (eventGlobals.js defines the globals), so
// its top level may run after function code: it takes every intrinsic from intrinsics.js. State
// lives in private fields, so what a function does to these prototypes cannot change how the
// runtime's own code (fetch, streams) reads a signal: it uses the helpers exported at the end.
import {
  ReflectApply,
  ObjectDefineProperty,
  ArrayPush,
  NumberIsFinite,
  MathFloor,
  PromiseThen,
  TypeErrorCtor,
  MapCtor,
  MapGet,
  MapSet,
  MapDelete,
  SymbolIterator,
  SymbolToStringTag,
  SymbolCtor,
  call,
  str,
  bareList,
} from '../intrinsics.js';
import { start } from '../host.js';
import { now, reportException } from './eventsBase.js';
import { domException, needArgs } from './domException.js';

const NONE = 0;
const CAPTURING_PHASE = 1;
const AT_TARGET = 2;
const BUBBLING_PHASE = 3;

/**
 * @typedef {{ type: string, callback: any, capture: boolean, once: boolean, passive: boolean, removed: boolean }} Listener
 * @typedef {{ fn: () => void, removed: boolean }} AbortAlgorithm
 */

/** @template T @returns {T[]} */
const list = () => /** @type {T[]} */ (/** @type {unknown} */ (bareList()));

/** A WebIDL dictionary argument: undefined and null are {}; anything else must be an object. @param {unknown} value @param {string} what @returns {any} */
const dictionary = (value, what) => {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' && typeof value !== 'function') throw new TypeErrorCtor(`${what}: the options must be an object`);
  return value;
};


/** @type {(...args: any[]) => any} */
let dispatch;
/** @type {(...args: any[]) => any} */
let isDispatchable;
/** @type {(...args: any[]) => any} */
let isEvent;
/** @type {(...args: any[]) => any} */
let listenersOf;
/** @type {(...args: any[]) => any} */
let removeListener;
/** @type {(...args: any[]) => any} */
let getHandler;
/** @type {(...args: any[]) => any} */
let setHandler;
/** @type {(...args: any[]) => any} */
let isAbortSignalImpl;
/** @type {(...args: any[]) => any} */
let abortedImpl;
/** @type {(...args: any[]) => any} */
let reasonImpl;
/** @type {(...args: any[]) => any} */
let abortImpl;
/** @type {(...args: any[]) => any} */
let onAbortImpl;
const CREATE = SymbolCtor('AbortSignal');

// The classes are made on first use: a plain call never pays for them.
const make = () => {

  class Event {
    #type;
    #bubbles;
    #cancelable;
    #composed;
    /** @type {EventTarget | null} */
    #target = null;
    /** @type {EventTarget | null} */
    #currentTarget = null;
    #phase = NONE;
    #stopPropagation = false;
    #stopImmediate = false;
    #canceled = false;
    #inPassiveListener = false;
    #dispatching = false;
    #trusted = false;
    #timeStamp;

    /** @param {unknown} type @param {unknown} [eventInitDict] */
    constructor(type, eventInitDict) {
      needArgs(arguments.length, 1, 'Event');
      this.#type = str(type);
      const init = dictionary(eventInitDict, 'Event');
      this.#bubbles = !!init.bubbles;
      this.#cancelable = !!init.cancelable;
      this.#composed = !!init.composed;
      this.#timeStamp = now();
    }
    get type() {
      return this.#type;
    }
    get target() {
      return this.#target;
    }
    get srcElement() {
      return this.#target;
    }
    get currentTarget() {
      return this.#currentTarget;
    }
    composedPath() {
      const path = [];
      if (this.#dispatching && this.#currentTarget !== null) path[0] = this.#currentTarget;
      return path;
    }
    get eventPhase() {
      return this.#phase;
    }
    stopPropagation() {
      this.#stopPropagation = true;
    }
    get cancelBubble() {
      return this.#stopPropagation;
    }
    set cancelBubble(value) {
      if (value) this.#stopPropagation = true;
    }
    stopImmediatePropagation() {
      this.#stopPropagation = true;
      this.#stopImmediate = true;
    }
    get bubbles() {
      return this.#bubbles;
    }
    get cancelable() {
      return this.#cancelable;
    }
    get returnValue() {
      return !this.#canceled;
    }
    set returnValue(value) {
      if (!value) this.#cancel();
    }
    preventDefault() {
      this.#cancel();
    }
    #cancel() {
      if (this.#cancelable && !this.#inPassiveListener) this.#canceled = true;
    }
    get defaultPrevented() {
      return this.#canceled;
    }
    get composed() {
      return this.#composed;
    }
    get isTrusted() {
      return this.#trusted;
    }
    get timeStamp() {
      return this.#timeStamp;
    }
    /** The legacy initializer: does nothing while the event is being dispatched. @param {unknown} type @param {unknown} [bubbles] @param {unknown} [cancelable] */
    initEvent(type, bubbles = false, cancelable = false) {
      needArgs(arguments.length, 1, 'Event.initEvent');
      if (this.#dispatching) return;
      this.#stopPropagation = this.#stopImmediate = this.#canceled = this.#trusted = false;
      this.#target = null;
      this.#type = str(type);
      this.#bubbles = !!bubbles;
      this.#cancelable = !!cancelable;
    }

    static {
      isEvent = (value) => value !== null && typeof value === 'object' && #type in value;
      isDispatchable = (event) => !event.#dispatching;
      // The DOM's dispatch for a target with no parent: capture listeners, then the others, at the target.
      dispatch = /** @param {Event} event @param {EventTarget} target @param {boolean} trusted */ (event, target, trusted) => {
        event.#trusted = trusted;
        event.#dispatching = true;
        event.#target = target;
        const phases = [true, false];
        for (let p = 0; p < 2 && !event.#stopPropagation; p++) {
          event.#phase = AT_TARGET;
          event.#currentTarget = target;
          const snapshot = listenersOf(target);
          for (let i = 0; i < snapshot.length; i++) {
            const listener = /** @type {Listener} */ (snapshot[i]);
            if (listener.removed || listener.type !== event.#type || listener.capture !== phases[p]) continue;
            if (listener.once) removeListener(target, listener);
            if (listener.passive) event.#inPassiveListener = true;
            try {
              const callback = listener.callback;
              if (typeof callback === 'function') ReflectApply(callback, target, [event]);
              else {
                const handleEvent = callback.handleEvent;
                if (typeof handleEvent !== 'function') throw new TypeErrorCtor('the event listener has no handleEvent method');
                ReflectApply(handleEvent, callback, [event]);
              }
            } catch (error) {
              reportException(error);
            }
            event.#inPassiveListener = false;
            if (event.#stopImmediate) break;
          }
        }
        event.#phase = NONE;
        event.#currentTarget = null;
        event.#dispatching = false;
        event.#stopPropagation = false;
        event.#stopImmediate = false;
        return !event.#canceled;
      };
    }
  }
  for (const [name, value] of /** @type {const} */ ([['NONE', NONE], ['CAPTURING_PHASE', CAPTURING_PHASE], ['AT_TARGET', AT_TARGET], ['BUBBLING_PHASE', BUBBLING_PHASE]])) {
    const descriptor = { value, writable: false, enumerable: true, configurable: false };
    ObjectDefineProperty(Event, name, descriptor);
    ObjectDefineProperty(Event.prototype, name, descriptor);
  }

  class CustomEvent extends Event {
    #detail;
    /** @param {unknown} type @param {unknown} [eventInitDict] */
    constructor(type, eventInitDict) {
      needArgs(arguments.length, 1, 'CustomEvent');
      super(type, eventInitDict);
      const init = dictionary(eventInitDict, 'CustomEvent');
      this.#detail = init.detail === undefined ? null : init.detail;
    }
    get detail() {
      return this.#detail;
    }
  }


  /** @param {unknown} options @returns {boolean} */
  const flattenCapture = (options) => (options !== null && typeof options === 'object' ? !!(/** @type {any} */ (options).capture) : !!options);

  class EventTarget {
    /** @type {Listener[]} */
    #listeners = list();
    /** @type {Map<string, { value: unknown, listener: Listener }> | undefined} */
    #handlers;

    /** @param {unknown} type @param {unknown} callback @param {unknown} [options] */
    addEventListener(type, callback, options) {
      needArgs(arguments.length, 2, 'EventTarget.addEventListener');
      let capture = false;
      let once = false;
      let passive = false;
      /** @type {AbortSignal | undefined} */
      let signal;
      if (options !== null && typeof options === 'object') {
        const o = /** @type {any} */ (options);
        capture = !!o.capture;
        once = !!o.once;
        passive = !!o.passive;
        const s = o.signal;
        if (s !== undefined) {
          if (!isAbortSignal(s)) throw new TypeErrorCtor("EventTarget.addEventListener: the 'signal' option must be an AbortSignal");
          signal = s;
        }
      } else capture = !!options;
      if (callback !== null && callback !== undefined && typeof callback !== 'object' && typeof callback !== 'function') {
        throw new TypeErrorCtor('EventTarget.addEventListener: the listener must be a function or an object with handleEvent');
      }
      if (signal !== undefined && signalAborted(signal)) return;
      if (callback === null || callback === undefined) return;
      const t = str(type);
      if (this.#find(t, callback, capture) !== undefined) return;
      /** @type {Listener} */
      const listener = { type: t, callback, capture, once, passive, removed: false };
      call(ArrayPush, this.#listeners, listener);
      if (signal !== undefined) onAbort(signal, () => removeListener(this, listener));
    }

    /** @param {unknown} type @param {unknown} callback @param {unknown} [options] */
    removeEventListener(type, callback, options) {
      needArgs(arguments.length, 2, 'EventTarget.removeEventListener');
      const capture = flattenCapture(options);
      if (callback === null || callback === undefined) return;
      const listener = this.#find(str(type), callback, capture);
      if (listener !== undefined) removeListener(this, listener);
    }

    /** @param {unknown} event */
    dispatchEvent(event) {
      needArgs(arguments.length, 1, 'EventTarget.dispatchEvent');
      if (!isEvent(event)) throw new TypeErrorCtor('EventTarget.dispatchEvent: the argument must be an Event');
      if (!isDispatchable(event)) throw domException('The event is already being dispatched.', 'InvalidStateError');
      return dispatch(event, this, false);
    }

    /** @param {string} type @param {unknown} callback @param {boolean} capture */
    #find(type, callback, capture) {
      const all = this.#listeners;
      for (let i = 0; i < all.length; i++) {
        const l = /** @type {Listener} */ (all[i]);
        if (l.type === type && l.callback === callback && l.capture === capture) return l;
      }
      return undefined;
    }

    static {
      // A copy: listeners added during a dispatch do not run in it, removed ones are flagged.
      listenersOf = (target) => {
        const copy = list();
        const all = target.#listeners;
        for (let i = 0; i < all.length; i++) copy[i] = all[i];
        return /** @type {Listener[]} */ (copy);
      };
      removeListener = (target, listener) => {
        listener.removed = true;
        const kept = list();
        const all = target.#listeners;
        for (let i = 0; i < all.length; i++) if (all[i] !== listener) call(ArrayPush, kept, all[i]);
        target.#listeners = /** @type {Listener[]} */ (kept);
      };
      getHandler = /** @param {EventTarget} target @param {string} type */ (target, type) => {
        const entry = target.#handlers && call(MapGet, target.#handlers, type);
        return entry === undefined ? null : entry.value;
      };
      // An event handler attribute (onabort…): its listener keeps the place it got when first set.
      setHandler = /** @param {EventTarget} target @param {string} type @param {unknown} value */ (target, type, value) => {
        const handlers = (target.#handlers ??= new MapCtor());
        const handler = value !== null && (typeof value === 'object' || typeof value === 'function') ? value : null;
        const entry = call(MapGet, handlers, type);
        if (handler === null) {
          if (entry !== undefined) {
            removeListener(target, entry.listener);
            call(MapDelete, handlers, type);
          }
          return;
        }
        if (entry !== undefined) {
          entry.value = handler;
          return;
        }
        /** @type {{ value: unknown, listener: Listener }} */
        const record = { value: handler, listener: /** @type {any} */ (undefined) };
        /** @param {Event} event */
        const callback = (event) => {
          const fn = record.value;
          if (typeof fn === 'function' && ReflectApply(fn, target, [event]) === false) event.preventDefault();
        };
        record.listener = { type, callback, capture: false, once: false, passive: false, removed: false };
        call(ArrayPush, target.#listeners, record.listener);
        call(MapSet, handlers, type, record);
      };
    }
  }

  // ------------------------------------------------------------ abort ----


  class AbortSignal extends EventTarget {
    #aborted = false;
    /** @type {unknown} */
    #reason = undefined;
    /** @type {AbortAlgorithm[]} */
    #algorithms = list();
    #dependent = false;
    /** @type {AbortSignal[]} */
    #sources = list();
    /** @type {AbortSignal[]} */
    #dependents = list();

    /** @param {unknown} [token] */
    constructor(token) {
      if (token !== CREATE) throw new TypeErrorCtor('AbortSignal: Illegal constructor');
      super();
    }

    /** @param {unknown} [reason] */
    static abort(reason) {
      const signal = new AbortSignal(CREATE);
      signal.#aborted = true;
      signal.#reason = reason === undefined ? domException('signal is aborted without reason', 'AbortError') : reason;
      return signal;
    }

    /** Aborts with a TimeoutError after `ms`, on the run's timers: never after the run's deadline. @param {unknown} milliseconds */
    static timeout(milliseconds) {
      needArgs(arguments.length, 1, 'AbortSignal.timeout');
      const ms = +(/** @type {any} */ (milliseconds));
      if (!NumberIsFinite(ms) || ms < 0 || ms > 9007199254740991) throw new TypeErrorCtor('AbortSignal.timeout: the delay must be a number of milliseconds from 0 to 2^53 - 1');
      const signal = new AbortSignal(CREATE);
      call(
        PromiseThen,
        start('sleep', MathFloor(ms)),
        () => abortImpl(signal, domException('signal timed out', 'TimeoutError')),
        () => {},
      );
      return signal;
    }

    /** @param {Iterable<unknown>} signals */
    static any(signals) {
      needArgs(arguments.length, 1, 'AbortSignal.any');
      if (signals === null || typeof signals !== 'object' || typeof (/** @type {any} */ (signals)[SymbolIterator]) !== 'function') {
        throw new TypeErrorCtor('AbortSignal.any: expected an iterable of AbortSignals');
      }
      /** @type {AbortSignal[]} */
      const given = list();
      for (const s of signals) {
        if (!isAbortSignalImpl(s)) throw new TypeErrorCtor('AbortSignal.any: every item must be an AbortSignal');
        call(ArrayPush, given, s);
      }
      const result = new AbortSignal(CREATE);
      for (let i = 0; i < given.length; i++) {
        const s = /** @type {AbortSignal} */ (given[i]);
        if (s.#aborted) {
          result.#aborted = true;
          result.#reason = s.#reason;
          return result;
        }
      }
      result.#dependent = true;
      /** @param {AbortSignal} source */
      const follow = (source) => {
        for (let j = 0; j < result.#sources.length; j++) if (result.#sources[j] === source) return;
        call(ArrayPush, result.#sources, source);
        call(ArrayPush, source.#dependents, result);
      };
      for (let i = 0; i < given.length; i++) {
        const s = /** @type {AbortSignal} */ (given[i]);
        if (!s.#dependent) follow(s);
        else for (let j = 0; j < s.#sources.length; j++) follow(/** @type {AbortSignal} */ (s.#sources[j]));
      }
      return result;
    }

    get aborted() {
      return this.#aborted;
    }
    get reason() {
      return this.#reason;
    }
    throwIfAborted() {
      if (this.#aborted) throw this.#reason;
    }
    get onabort() {
      abortedImpl(this);
      return getHandler(this, 'abort');
    }
    set onabort(value) {
      abortedImpl(this);
      setHandler(this, 'abort', value);
    }

    static {
      isAbortSignalImpl = (value) => value !== null && typeof value === 'object' && #aborted in value;
      abortedImpl = (signal) => signal.#aborted;
      reasonImpl = (signal) => signal.#reason;
      /** @param {AbortSignal} signal */
      const runAbortSteps = (signal) => {
        const algorithms = signal.#algorithms;
        signal.#algorithms = list();
        for (let i = 0; i < algorithms.length; i++) {
          const a = /** @type {AbortAlgorithm} */ (algorithms[i]);
          if (a.removed) continue;
          try {
            a.fn();
          } catch (error) {
            reportException(error);
          }
        }
        dispatch(new Event('abort'), signal, true);
      };
      abortImpl = (signal, reason) => {
        if (signal.#aborted) return;
        signal.#aborted = true;
        signal.#reason = reason === undefined ? domException('signal is aborted without reason', 'AbortError') : reason;
        /** @type {AbortSignal[]} */
        const dependents = list();
        for (let i = 0; i < signal.#dependents.length; i++) {
          const d = /** @type {AbortSignal} */ (signal.#dependents[i]);
          if (d.#aborted) continue;
          d.#aborted = true;
          d.#reason = signal.#reason;
          call(ArrayPush, dependents, d);
        }
        runAbortSteps(signal);
        for (let i = 0; i < dependents.length; i++) runAbortSteps(/** @type {AbortSignal} */ (dependents[i]));
      };
      onAbortImpl = (signal, fn) => {
        /** @type {AbortAlgorithm} */
        const algorithm = { fn, removed: false };
        if (!signal.#aborted) call(ArrayPush, signal.#algorithms, algorithm);
        return () => {
          algorithm.removed = true;
        };
      };
    }
  }

  class AbortController {
    #signal = new AbortSignal(CREATE);
    get signal() {
      return this.#signal;
    }
    /** @param {unknown} [reason] */
    abort(reason) {
      abortImpl(this.#signal, reason);
    }
  }
  const made = { Event, CustomEvent, EventTarget, AbortSignal, AbortController };
  // The names the platform gives them (the bundler may rename a class), and their toStringTag, as WebIDL interfaces have.
  for (const name of /** @type {const} */ (['Event', 'CustomEvent', 'EventTarget', 'AbortSignal', 'AbortController'])) {
    ObjectDefineProperty(made[name], 'name', { value: name, configurable: true });
    ObjectDefineProperty(made[name].prototype, SymbolToStringTag, { value: name, configurable: true });
  }
  return made;
};
/** @type {ReturnType<typeof make> | undefined} */
let made;

/** This context's Event, CustomEvent, EventTarget, AbortSignal and AbortController classes. */
export const events = () => (made ??= make());

/**
 * For the runtime's own modules: `new AbortController()` / `new Event(type)` make this context's
 * (the classes are made on first use; test values with isAbortSignal, not instanceof).
 */
export const AbortController = /** @type {ReturnType<typeof make>['AbortController']} */ (/** @type {unknown} */ (function AbortController() {
  return new (events().AbortController)();
}));
export const Event = /** @type {ReturnType<typeof make>['Event']} */ (
  /** @type {unknown} */ (
    /** @param {unknown} type @param {unknown} [init] */
    function Event(type, init) {
      return new (events().Event)(type, init);
    }
  )
);
/** AbortSignal's static methods (abort, timeout, any), for the runtime's own modules. */
export const AbortSignal = /** @type {Pick<ReturnType<typeof make>['AbortSignal'], 'abort' | 'timeout' | 'any'>} */ ({
  /** @param {unknown} [reason] */
  abort: (reason) => events().AbortSignal.abort(reason),
  /** @param {unknown} ms */
  timeout: (ms) => events().AbortSignal.timeout(ms),
  /** @param {Iterable<unknown>} signals */
  any: (signals) => events().AbortSignal.any(signals),
});

// The runtime's own view of a signal, through its private state rather than the (replaceable) prototype.

/** True for an AbortSignal (a brand check, not instanceof). @param {unknown} value @returns {boolean} */
export const isAbortSignal = (value) => made !== undefined && isAbortSignalImpl(value);
/** @param {object} signal an AbortSignal @returns {boolean} */
export const signalAborted = (signal) => abortedImpl(signal);
/** @param {object} signal an AbortSignal @returns {unknown} */
export const signalReason = (signal) => reasonImpl(signal);
/** Signals abort on `signal` (as its controller's abort() would) with `reason`, or an AbortError. @param {object} signal @param {unknown} [reason] */
export const abortSignal = (signal, reason) => abortImpl(signal, reason);
/**
 * Runs `fn` (once) when `signal` aborts, before its abort event; does nothing if it has already
 * aborted (check signalAborted first). Returns a function that cancels it.
 * @param {object} signal an AbortSignal @param {() => void} fn @returns {() => void}
 */
export const onAbort = (signal, fn) => onAbortImpl(signal, fn);
/** Fires `event` at `target` as the platform does (isTrusted). @param {object} target an EventTarget @param {object} event an Event @returns {boolean} */
export const fireEvent = (target, event) => dispatch(event, target, true);
/** An event handler attribute's value (onload…) on an EventTarget. @param {object} target @param {string} type @returns {unknown} */
export const getEventHandler = (target, type) => getHandler(target, type);
/** Sets an event handler attribute (onload…) on an EventTarget, as its IDL setter does. @param {object} target @param {string} type @param {unknown} value */
export const setEventHandler = (target, type, value) => setHandler(target, type, value);
