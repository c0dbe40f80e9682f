import { useState } from 'react';
import { TestCaseNameSchema } from '../../../../src-preload/model.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { toast } from '../../store/app.ts';
import { bumpTests } from './testsStore.ts';
import './tests.css';

/**
 * "Save as test" for a run (the console's run just made, or a past one in the history): asks for a
 * case name and saves the run's arguments, requests and result as a test case of its function.
 */
export function SaveAsTest({ runId, source, suggested }: { runId: string; source: 'console' | 'history'; suggested?: string }) {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState(suggested ?? 'case_1');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const check = TestCaseNameSchema.safeParse(name);

  const save = async (): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      const saved = await studio.tests.fromRun({ runId, case: name, source });
      toast(`Saved test case ${saved.name} (${saved.exchanges.length} request${saved.exchanges.length === 1 ? '' : 's'}); the Tests tab replays it`);
      bumpTests();
      setOpen(false);
    } catch (e) {
      setError(asUiError(e).message);
    } finally {
      setBusy(false);
    }
  };

  if (!open) return <button onClick={() => setOpen(true)} title="Keep this run's arguments, requests and result as a test that replays offline">Save as test</button>;
  return (
    <span className="tests-save">
      <input aria-label="Test case name" value={name} onChange={(e) => setName(e.target.value)} onKeyDown={(e) => e.key === 'Enter' && check.success && void save()} autoFocus />
      <button className="primary" disabled={busy || !check.success} onClick={() => void save()}>
        Save test
      </button>
      <button onClick={() => setOpen(false)}>Cancel</button>
      {!check.success && <span className="error-text">{check.error.issues[0]?.message}</span>}
      {error && (
        <span className="error-text" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}
