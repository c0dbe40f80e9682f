import type { FunctionSummary } from '../../../src-preload/contract.ts';
import { studio } from '../api/studio.ts';
import { createStore } from './store.ts';

export type Page = 'functions' | 'credentials' | 'mcp';
export type Tab = 'editor' | 'settings' | 'console' | 'history' | 'tests' | 'advice';

export interface Toast {
  id: number;
  kind: 'info' | 'error';
  text: string;
  action?: { label: string; run: () => void };
}

export interface AppState {
  page: Page;
  tab: Tab;
  functions: FunctionSummary[];
  selected: string | undefined;
  /** Names of functions with unsaved edits. */
  dirty: string[];
  toasts: Toast[];
}

export const app = createStore<AppState>({ page: 'functions', tab: 'editor', functions: [], selected: undefined, dirty: [], toasts: [] });

let toastId = 0;
export function toast(text: string, kind: Toast['kind'] = 'info', action?: Toast['action']): void {
  const id = ++toastId;
  app.set((s) => ({ toasts: [...s.toasts, { id, kind, text, ...(action ? { action } : {}) }] }));
  setTimeout(() => app.set((s) => ({ toasts: s.toasts.filter((t) => t.id !== id) })), action ? 10_000 : 5_000);
}

export async function refreshFunctions(): Promise<void> {
  const functions = await studio.functions.list({});
  app.set((s) => ({ functions, selected: s.selected ?? functions[0]?.name }));
}

export function setDirty(name: string, dirty: boolean): void {
  app.set((s) => ({ dirty: dirty ? [...new Set([...s.dirty, name])] : s.dirty.filter((n) => n !== name) }));
}
