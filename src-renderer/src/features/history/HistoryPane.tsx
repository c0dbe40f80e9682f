import { useEffect, useState } from 'react';
import type { RunRecord } from '../../../../src-preload/model.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { JsonView } from '../../components/JsonView.tsx';
import { rerun } from '../../store/console.ts';
import { draft } from '../../store/draft.ts';
import './history.css';

const LIMIT = 100;

/** Newest first, one entry per run id, at most `limit`. */
function mergeRuns(a: RunRecord[], b: RunRecord[], limit: number): RunRecord[] {
  const byId = new Map<string, RunRecord>();
  for (const run of [...a, ...b]) byId.set(run.id, run);
  return [...byId.values()].sort((x, y) => Date.parse(y.startedAt) - Date.parse(x.startedAt)).slice(0, limit);
}

/** Past runs of the selected function, from every caller, live. */
export function HistoryPane() {
  const name = draft.use((s) => s.record?.name);
  const [runs, setRuns] = useState<RunRecord[]>([]);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string>();
  const [reload, setReload] = useState(0);

  useEffect(() => {
    if (!name) return;
    let live = true;
    setRuns([]);
    setLoading(true);
    setError(undefined);
    // Subscribe before listing: a run landing in between arrives by the feed, and merging dedupes.
    const off = studio.on('runs:feed', (run) => {
      if (live && run.functionName === name) setRuns((prev) => mergeRuns([run], prev, LIMIT));
    });
    studio.runs
      .list({ name, limit: LIMIT })
      .then((list) => live && setRuns((prev) => mergeRuns(prev, list, LIMIT)))
      .catch((e: unknown) => live && setError(asUiError(e).message))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
      off();
    };
  }, [name, reload]);

  if (!name) return null;
  return (
    <div className="page history">
      <div className="row history-head">
        <h2>History of {name}</h2>
        <span className="muted">{runs.length === LIMIT ? `newest ${LIMIT} runs` : `${runs.length} run${runs.length === 1 ? '' : 's'}`}</span>
        <span className="history-spacer" />
        <button onClick={() => setReload((n) => n + 1)}>Refresh</button>
      </div>
      {error && <p className="error-text" role="alert">Could not load the history: {error}</p>}
      {!error && !loading && runs.length === 0 && (
        <p className="muted">No runs yet. Runs from the test console, the CLI and MCP clients appear here as they finish.</p>
      )}
      {runs.length > 0 && (
        <table className="grid history-table">
          <thead>
            <tr>
              <th>Time</th>
              <th>Caller</th>
              <th>Arguments</th>
              <th>Outcome</th>
              <th>Duration</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {runs.map((run) => (
              <tr key={run.id}>
                <td>
                  <RunTime iso={run.startedAt} />
                </td>
                <td>
                  <RunCaller run={run} />
                </td>
                <td className="history-args">
                  <RunArgs args={run.args} />
                </td>
                <td>
                  <RunOutcome run={run} />
                </td>
                <td className="mono">
                  <RunDuration ms={run.durationMs} />
                </td>
                <td>
                  <button onClick={() => rerun(run.args)} title="Open the test console with these arguments and run them">
                    Re-run
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function RunArgs({ args }: { args: unknown }) {
  const compact = JSON.stringify(args) ?? 'undefined';
  const nested = args !== null && typeof args === 'object' && Object.keys(args).length > 0;
  if (!nested) return <code className="mono">{compact}</code>;
  return (
    <details>
      <summary className="mono" title={compact}>
        {compact}
      </summary>
      <JsonView value={args} />
    </details>
  );
}

// Shared with the MCP page's live feed (components only, so Fast Refresh keeps working).

export function RunTime({ iso }: { iso: string }) {
  const date = new Date(iso);
  const today = date.toDateString() === new Date().toDateString();
  return (
    <time dateTime={iso} title={date.toLocaleString()} className="run-nowrap">
      {today ? date.toLocaleTimeString() : date.toLocaleString()}
    </time>
  );
}

export function RunDuration({ ms }: { ms: number }) {
  return <span className="run-nowrap">{ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`}</span>;
}

export function RunOutcome({ run }: { run: RunRecord }) {
  if (run.ok) return <span className="badge ok">ok</span>;
  return (
    <span>
      <span className="badge err">{run.errorCode ?? 'error'}</span> {run.errorMessage && <span className="error-text">{run.errorMessage}</span>}
    </span>
  );
}

export function RunCaller({ run }: { run: RunRecord }) {
  if (run.caller !== 'mcp') return <span className="badge">{run.caller}</span>;
  const client = [run.clientName ?? 'unknown client', run.clientVersion].filter(Boolean).join(' ');
  const extra = [run.transport, run.profile && `profile ${run.profile}`].filter(Boolean).join(' · ');
  return (
    <span>
      <span className="badge run-mcp">mcp</span> {client}
      {extra && <div className="muted run-sub">{extra}</div>}
    </span>
  );
}
