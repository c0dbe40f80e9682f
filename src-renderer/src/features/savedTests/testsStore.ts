import { createStore } from '../../store/store.ts';

/** Bumped when a test case is saved from the console or the history, so an open Tests tab reloads. */
export const testsChanged = createStore<{ version: number }>({ version: 0 });

export function bumpTests(): void {
  testsChanged.set((s) => ({ version: s.version + 1 }));
}
