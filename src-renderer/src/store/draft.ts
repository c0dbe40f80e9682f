import { specOf, type FunctionRecord, type FunctionSpec } from '../../../src-preload/model.ts';
import type { UngrantedCredential } from '../../../src-preload/contract.ts';
import { asUiError, studio, type UiError } from '../api/studio.ts';
import { refreshFunctions, setDirty, toast } from './app.ts';
import { createStore } from './store.ts';

export interface Problem {
  message: string;
  line: number;
  column: number;
}

/** The function being edited: what is saved, and what the user has typed since. */
export interface DraftState {
  record: FunctionRecord | undefined;
  source: string;
  spec: FunctionSpec | undefined;
  saving: boolean;
  /** Compile errors from the last save, shown inline in the editor. */
  problems: Problem[];
  /** Any other save error (bad spec, keychain, …). */
  error: UiError | undefined;
  /** Credentials the saved function lists and has not been granted (nothing is sent until they are), as the engine answers them. */
  ungranted: UngrantedCredential[];
}

export const draft = createStore<DraftState>({ record: undefined, source: '', spec: undefined, saving: false, problems: [], error: undefined, ungranted: [] });


export function isDirty(s: DraftState = draft.get()): boolean {
  if (!s.record || !s.spec) return false;
  return s.source !== s.record.source || JSON.stringify(s.spec) !== JSON.stringify(specOf(s.record));
}

function markDirty(): void {
  const s = draft.get();
  if (s.record) setDirty(s.record.name, isDirty(s));
}

export async function loadDraft(name: string): Promise<void> {
  const record = await studio.functions.get({ name });
  draft.set({ record, source: record.source, spec: specOf(record), problems: [], error: undefined, ungranted: [] });
  setDirty(name, false);
}

/** The credentials `record` lists and has not been granted, as the engine sees them now (empty when they cannot be read). */
export async function ungrantedOf(record: FunctionRecord): Promise<UngrantedCredential[]> {
  if (record.credentials.length === 0) return [];
  try {
    return (await studio.functions.ungranted({ name: record.name })).ungranted;
  } catch {
    return [];
  }
}

export function editSource(source: string): void {
  draft.set({ source });
  markDirty();
}

export function editSpec(patch: Partial<FunctionSpec>): void {
  draft.set((s) => ({ spec: s.spec ? ({ ...s.spec, ...patch } as FunctionSpec) : s.spec }));
  markDirty();
}

/** Saves source and settings together. On failure nothing typed is lost: the draft stays. */
export async function saveDraft(): Promise<boolean> {
  const s = draft.get();
  if (!s.record || !s.spec || s.saving) return false;
  draft.set({ saving: true });
  try {
    const { ungranted, ...record } = await studio.functions.save({ spec: s.spec, source: s.source });
    const now = draft.get();
    // Keep anything typed while the save was in flight.
    draft.set({ record, saving: false, problems: [], error: undefined, ungranted, ...(now.source === s.source ? {} : { source: now.source }) });
    markDirty();
    await refreshFunctions();
    toast(`Saved ${record.name} (revision ${record.revision})${ungranted.length > 0 ? `; not granted: ${ungranted.map((c) => c.name).join(', ')}` : ''}`);
    return true;
  } catch (error) {
    const e = asUiError(error);
    const problems = e.code === 'compile_error' ? ((e.details?.problems as Problem[] | undefined) ?? []) : [];
    draft.set({ saving: false, problems, error: e });
    toast(`Not saved: ${e.message}`, 'error');
    return false;
  }
}
