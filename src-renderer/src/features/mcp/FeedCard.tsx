import { useEffect, useState } from 'react';
import { RunsTable } from '../../components/RunsTable.tsx';
import { toast } from '../../store/app.ts';
import { useRuns } from '../history/useRuns.ts';

const FEED_SIZE = 50;
const ALL_RUNS = { limit: FEED_SIZE };

/** "Live calls": the newest runs of every function, from every process, as they finish. */
export function FeedCard() {
  const { runs, error } = useRuns(ALL_RUNS);
  const [mcpOnly, setMcpOnly] = useState(false);

  useEffect(() => {
    if (error) toast(`Could not load recent calls: ${error}`, 'error');
  }, [error]);

  const shown = mcpOnly ? runs.filter((r) => r.caller === 'mcp') : runs;
  return (
    <div className="card">
      <div className="row">
        <h3 className="mcp-grow">Live calls</h3>
        <label className="mcp-check">
          <input type="checkbox" checked={mcpOnly} onChange={(e) => setMcpOnly(e.target.checked)} />
          MCP calls only
        </label>
      </div>
      <p className="muted">Calls from every process (MCP clients over stdio or HTTP, the CLI, the test console), newest first.</p>
      {shown.length === 0 ? (
        <p className="muted">No calls yet.</p>
      ) : (
        <RunsTable runs={shown} columns={['time', 'function', 'caller', 'outcome', 'duration']} rowClassName={(run) => (run.caller === 'mcp' ? 'mcp-feed-mcp' : undefined)} />
      )}
    </div>
  );
}
