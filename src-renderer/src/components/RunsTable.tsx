import type { ReactNode } from 'react';
import type { RunRecord } from '../../../src-preload/model.ts';
import '../features/history/history.css';
import { JsonView } from './JsonView.tsx';

export type RunColumn = 'time' | 'function' | 'caller' | 'args' | 'outcome' | 'duration';

const HEADINGS: Record<RunColumn, string> = { time: 'Time', function: 'Function', caller: 'Caller', args: 'Arguments', outcome: 'Outcome', duration: 'Duration' };

/**
 * Runs as a table, one row per run in the order given: the History tab and the MCP page's live
 * feed. `actions`, when given, fills a last, untitled column.
 */
export function RunsTable(props: {
  runs: readonly RunRecord[];
  columns: readonly RunColumn[];
  className?: string;
  rowClassName?: (run: RunRecord) => string | undefined;
  actions?: (run: RunRecord) => ReactNode;
}) {
  const { runs, columns, className, rowClassName, actions } = props;
  return (
    <table className={className ? `grid ${className}` : 'grid'}>
      <thead>
        <tr>
          {columns.map((c) => (
            <th key={c}>{HEADINGS[c]}</th>
          ))}
          {actions && <th />}
        </tr>
      </thead>
      <tbody>
        {runs.map((run) => (
          <tr key={run.id} className={rowClassName?.(run)}>
            {columns.map((c) => (
              <RunCell key={c} column={c} run={run} />
            ))}
            {actions && <td>{actions(run)}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function RunCell({ column, run }: { column: RunColumn; run: RunRecord }) {
  switch (column) {
    case 'time':
      return (
        <td>
          <RunTime iso={run.startedAt} />
        </td>
      );
    case 'function':
      return <td className="mono">{run.functionName}</td>;
    case 'caller':
      return (
        <td>
          <RunCaller run={run} />
        </td>
      );
    case 'args':
      return (
        <td className="history-args">
          <RunArgs args={run.args} />
        </td>
      );
    case 'outcome':
      return (
        <td>
          <RunOutcome run={run} />
        </td>
      );
    case 'duration':
      return (
        <td className="mono">
          <RunDuration ms={run.durationMs} />
        </td>
      );
  }
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

function RunTime({ iso }: { iso: string }) {
  const date = new Date(iso);
  const today = date.toDateString() === new Date().toDateString();
  return (
    <time dateTime={iso} title={date.toLocaleString()} className="run-nowrap">
      {today ? date.toLocaleTimeString() : date.toLocaleString()}
    </time>
  );
}

function RunDuration({ ms }: { ms: number }) {
  return <span className="run-nowrap">{ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`}</span>;
}

function RunOutcome({ run }: { run: RunRecord }) {
  // A call that needed a person's approval says how it was decided.
  const approval = run.approval && <span className="badge" title="How the person's approval was decided">approval: {run.approval}</span>;
  if (run.ok) {
    return (
      <span>
        <span className="badge ok">ok</span> {approval}
      </span>
    );
  }
  return (
    <span>
      <span className="badge err">{run.errorCode ?? 'error'}</span> {approval} {run.errorMessage && <span className="error-text">{run.errorMessage}</span>}
    </span>
  );
}

function RunCaller({ run }: { run: RunRecord }) {
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
