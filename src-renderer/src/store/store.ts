import { useSyncExternalStore } from 'react';

/** A plain store: state, a setter, and a hook that re-renders on change. */
export function createStore<T>(initial: T) {
  let state = initial;
  const listeners = new Set<() => void>();
  const get = (): T => state;
  const set = (update: Partial<T> | ((s: T) => Partial<T>)): void => {
    const patch = typeof update === 'function' ? update(state) : update;
    state = { ...state, ...patch };
    for (const l of listeners) l();
  };
  const subscribe = (l: () => void): (() => void) => {
    listeners.add(l);
    return () => listeners.delete(l);
  };
  function use(): T;
  function use<S>(select: (s: T) => S): S;
  function use<S>(select?: (s: T) => S): T | S {
    return useSyncExternalStore(subscribe, () => (select ? select(state) : state));
  }
  return { get, set, subscribe, use };
}
