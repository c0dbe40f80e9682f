import { useCallback, useEffect, useState } from 'react';
import type { TestCaseInfo, TestCaseResult, TestExpect } from '../../../../src-preload/model.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { toast } from '../../store/app.ts';
import { draft, isDirty, saveDraft } from '../../store/draft.ts';
import { testsChanged } from './testsStore.ts';
import './tests.css';

/** The saved test cases of the selected function: run one or all offline, see pass/fail and a side-by-side diff, rename, delete. */
export function TestsPane() {
  const name = draft.use((s) => s.record?.name);
  const changed = testsChanged.use((s) => s.version);
  const [cases, setCases] = useState<TestCaseInfo[]>([]);
  const [results, setResults] = useState<Record<string, TestCaseResult>>({});
  const [running, setRunning] = useState<string | undefined>();
  const [error, setError] = useState<string>();
  const [renaming, setRenaming] = useState<{ from: string; to: string } | undefined>();

  const load = useCallback(async (): Promise<void> => {
    if (!name) return;
    try {
      setCases(await studio.tests.list({ name }));
      setError(undefined);
    } catch (e) {
      setError(asUiError(e).message);
    }
  }, [name]);

  useEffect(() => {
    setResults({});
    void load();
  }, [load, changed]);

  const run = async (caseName?: string): Promise<void> => {
    if (!name || running) return;
    // The replay runs the saved function: unsaved edits are saved first, as the console does.
    if (isDirty() && !(await saveDraft())) return;
    setRunning(caseName ?? '*');
    try {
      const out = await studio.tests.run({ name, ...(caseName ? { case: caseName } : {}) });
      setResults((prev) => ({ ...prev, ...Object.fromEntries(out.map((r) => [r.case, r])) }));
    } catch (e) {
      toast(asUiError(e).message, 'error');
    } finally {
      setRunning(undefined);
    }
  };

  const remove = async (caseName: string): Promise<void> => {
    if (!name || !window.confirm(`Delete the test case ${caseName}?`)) return;
    try {
      await studio.tests.delete({ name, case: caseName });
      await load();
    } catch (e) {
      toast(asUiError(e).message, 'error');
    }
  };

  const rename = async (): Promise<void> => {
    if (!name || !renaming) return;
    try {
      await studio.tests.rename({ name, case: renaming.from, newName: renaming.to });
      setRenaming(undefined);
      setResults({});
      await load();
    } catch (e) {
      toast(asUiError(e).message, 'error');
    }
  };

  if (!name) return null;
  const ran = Object.values(results);
  return (
    <div className="page tests">
      <div className="row tests-head">
        <h2>Tests of {name}</h2>
        <span className="muted">
          {cases.length} case{cases.length === 1 ? '' : 's'}
          {ran.length > 0 && ` · ${ran.filter((r) => r.status === 'pass').length} passed, ${ran.filter((r) => r.status !== 'pass').length} failed`}
        </span>
        <span className="tests-spacer" />
        <button className="primary" disabled={cases.length === 0 || running !== undefined} onClick={() => void run()}>
          {running === '*' ? 'Running…' : 'Run all'}
        </button>
      </div>
      {error && (
        <p className="error-text" role="alert">
          Could not load the tests: {error}
        </p>
      )}
      {!error && cases.length === 0 && (
        <p className="muted">No saved tests yet. Run the function in the test console (or pick a run in the history) and press "Save as test": the run replays here offline, without network or keys.</p>
      )}
      {cases.length > 0 && (
        <table className="grid" data-testid="tests-table">
          <thead>
            <tr>
              <th>Case</th>
              <th>Requests</th>
              <th>Expects</th>
              <th>Recorded</th>
              <th>Result</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {cases.map((c) => {
              const r = results[c.name];
              return (
                <tr key={c.name} data-testid={`test-case-${c.name}`}>
                  <td className="mono">
                    {renaming?.from === c.name ? (
                      <span className="tests-save">
                        <input aria-label="New case name" value={renaming.to} onChange={(e) => setRenaming({ from: c.name, to: e.target.value })} onKeyDown={(e) => e.key === 'Enter' && void rename()} autoFocus />
                        <button onClick={() => void rename()}>OK</button>
                        <button onClick={() => setRenaming(undefined)}>Cancel</button>
                      </span>
                    ) : (
                      c.name
                    )}
                  </td>
                  <td>{c.exchanges}</td>
                  <td>{c.expectOk ? 'a result' : 'an error'}</td>
                  <td className="muted">
                    {new Date(c.recordedAt).toLocaleString()} · {c.source}
                  </td>
                  <td>{r ? <span className={`badge ${r.status === 'pass' ? 'ok' : 'err'}`}>{r.status}</span> : <span className="muted">not run</span>}</td>
                  <td className="row">
                    <button disabled={running !== undefined} onClick={() => void run(c.name)}>
                      {running === c.name ? 'Running…' : 'Run'}
                    </button>
                    <button onClick={() => setRenaming({ from: c.name, to: c.name })}>Rename</button>
                    <button onClick={() => void remove(c.name)}>Delete</button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {ran
        .filter((r) => r.status !== 'pass')
        .map((r) => (
          <FailureView key={r.case} result={r} />
        ))}
    </div>
  );
}

function FailureView({ result }: { result: TestCaseResult }) {
  return (
    <section className="card" data-testid={`test-failure-${result.case}`}>
      <div className="row">
        <span className="badge err">{result.status}</span> <strong className="mono">{result.case}</strong> <span className="error-text">{result.message}</span>
      </div>
      <div className="tests-diff">
        <div>
          <h4>Expected</h4>
          <pre className="code" data-testid="test-expected">{describe(result.expected)}</pre>
        </div>
        <div>
          <h4>Actual</h4>
          <pre className="code" data-testid="test-actual">{describe(result.actual)}</pre>
        </div>
      </div>
      {result.differences && result.differences.length > 0 && (
        <ul className="tests-differences" data-testid="test-differences">
          {result.differences.map((d, i) => (
            <li key={i} className="mono">
              {d.path}
              {d.note ? ` (${d.note})` : ''}: expected {show(d.expected)}, got {show(d.actual)}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function describe(expect: TestExpect | undefined): string {
  if (!expect) return '';
  return expect.ok ? JSON.stringify(expect.value, null, 2) : `error ${expect.code}`;
}

function show(value: unknown): string {
  return value === undefined ? '(absent)' : JSON.stringify(value);
}
