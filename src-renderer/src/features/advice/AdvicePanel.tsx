import { useCallback, useEffect, useRef, useState } from 'react';
import type { AdviceView } from '../../../../src-preload/contract.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { refreshFunctions, toast } from '../../store/app.ts';
import { draft, isDirty, loadDraft } from '../../store/draft.ts';
import { useRuns } from '../history/useRuns.ts';
import './advice.css';

const TITLES: Record<AdviceView['kind'], string> = {
  unused_host: 'Unused allowed host',
  read_only: 'Read-only',
  output_schema: 'Output schema',
  tool_name_length: 'Tool name too long',
  description_length: 'Description too long',
  timeout: 'Timeout',
  tool_count: 'Too many tools',
};

/** The advice that has a fix the panel can apply, and its button's label. */
const FIXES: Partial<Record<AdviceView['kind'], { kind: 'output_schema' | 'read_only'; label: string }>> = {
  output_schema: { kind: 'output_schema', label: 'Accept this outputSchema' },
  read_only: { kind: 'read_only', label: 'Mark readOnlyHint' },
};

/**
 * Advice about the selected function from what it was seen doing (its recent recorded runs and
 * saved test cases) and from what common MCP clients accept, as `callable lint NAME` gives it, each
 * with its evidence; the inferred outputSchema and readOnlyHint can be applied with a button.
 * Read again when opened, when the function is saved, and when a run of it comes in.
 */
export function AdvicePanel() {
  const name = draft.use((s) => s.record?.name);
  const revision = draft.use((s) => s.record?.revision);
  const dirty = draft.use((s) => isDirty(s));
  const [advice, setAdvice] = useState<AdviceView[] | undefined>();
  const [error, setError] = useState<string>();
  const [applying, setApplying] = useState<string | undefined>();
  const { runs } = useRuns(name === undefined ? undefined : { name, limit: 1 });
  const latestRun = runs[0]?.id;
  const asked = useRef(0);

  const load = useCallback(async (): Promise<void> => {
    if (!name) return;
    const ask = ++asked.current;
    try {
      const list = await studio.functions.advise({ name });
      if (ask !== asked.current) return;
      setAdvice(list);
      setError(undefined);
    } catch (e) {
      if (ask === asked.current) setError(asUiError(e).message);
    }
  }, [name]);

  useEffect(() => {
    setAdvice(undefined);
  }, [name]);

  // A run's recording is written with its record, so the run that arrives is already in the advice.
  useEffect(() => {
    void load();
  }, [load, revision, latestRun]);

  const apply = async (fix: { kind: 'output_schema' | 'read_only' }): Promise<void> => {
    if (!name || revision === undefined || applying) return;
    setApplying(fix.kind);
    try {
      const saved = await studio.functions.applyAdvice({ name, kind: fix.kind, revision });
      toast(`Saved ${saved.name} (revision ${saved.revision}) with ${fix.kind === 'output_schema' ? 'the inferred outputSchema' : '"readOnlyHint": true'}`);
      await loadDraft(name);
      await refreshFunctions();
    } catch (e) {
      toast(asUiError(e).message, 'error');
      await load();
    } finally {
      setApplying(undefined);
    }
  };

  if (!name) return null;
  return (
    <div className="page advice" data-testid="advice-panel">
      <div className="row advice-head">
        <h2>Advice for {name}</h2>
        <span className="muted">from its recent recorded runs and saved test cases, and what common MCP clients accept</span>
        <span className="advice-spacer" />
        <button onClick={() => void load()}>Check again</button>
      </div>
      {error && (
        <p className="error-text" role="alert">
          Could not read the advice: {error}
        </p>
      )}
      {dirty && <p className="hint">This function has unsaved edits: save or discard them to apply advice (it applies to the saved function).</p>}
      {!error && advice?.length === 0 && <p className="muted">No advice. Run the function (in the test console, the CLI or from an MCP client) for advice from what it does.</p>}
      {advice && advice.length > 0 && (
        <ul className="advice-list">
          {advice.map((a) => {
            const fix = FIXES[a.kind];
            return (
              <li key={`${a.kind}-${a.message}`} className="card advice-item" data-testid={`advice-${a.kind}`}>
                <div>
                  <span className="badge advice-kind">{TITLES[a.kind]}</span>
                  {a.function === undefined && <span className="muted">(all functions) </span>}
                  <span>{a.message}</span>
                </div>
                <p className="muted advice-evidence" data-testid="advice-evidence">
                  Evidence: {a.evidence}
                </p>
                {a.suggestion !== undefined && (
                  <pre className="code" data-testid="advice-suggestion">
                    {JSON.stringify(a.suggestion, null, 2)}
                  </pre>
                )}
                {fix && (
                  <div className="row">
                    <button className="primary" disabled={dirty || applying !== undefined} onClick={() => void apply(fix)}>
                      {applying === fix.kind ? 'Saving…' : fix.label}
                    </button>
                  </div>
                )}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}
