import { useState } from 'react';
import { RunsTable } from '../../components/RunsTable.tsx';
import { rerun } from '../../store/console.ts';
import { draft } from '../../store/draft.ts';
import { SaveAsTest } from '../savedTests/SaveAsTest.tsx';
import './history.css';
import { useRuns } from './useRuns.ts';

const LIMIT = 100;

/** Past runs of the selected function, from every caller, live. */
export function HistoryPane() {
  const name = draft.use((s) => s.record?.name);
  const [reload, setReload] = useState(0);
  const { runs, loading, error } = useRuns(name ? { name, limit: LIMIT } : undefined, reload);

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
        <RunsTable
          runs={runs}
          columns={['time', 'caller', 'args', 'outcome', 'duration']}
          className="history-table"
          actions={(run) => (
            <>
              <button onClick={() => rerun(run.args)} title="Open the test console with these arguments and run them">
                Re-run
              </button>
              {run.errorCode !== 'bad_input' && <SaveAsTest runId={run.id} source="history" />}
            </>
          )}
        />
      )}
    </div>
  );
}
