import { useEffect, useState } from 'react';
import type { RunRecord } from '../../../../src-preload/model.ts';
import { asUiError, studio } from '../../api/studio.ts';

/** Newest first, one entry per run id, at most `limit`. */
function mergeRuns(a: readonly RunRecord[], b: readonly RunRecord[], limit: number): RunRecord[] {
  const byId = new Map<string, RunRecord>();
  for (const run of [...a, ...b]) byId.set(run.id, run);
  return [...byId.values()].sort((x, y) => Date.parse(y.startedAt) - Date.parse(x.startedAt)).slice(0, limit);
}

export interface RunsQuery {
  /** Only this function's runs; all runs when absent. */
  name?: string | undefined;
  limit: number;
}

/**
 * The newest runs, from every caller in every process, kept live by the runs:feed event: the
 * History tab (one function) and the MCP page's feed (all). `query` undefined loads nothing;
 * changing `reload` loads the list again.
 */
export function useRuns(query: RunsQuery | undefined, reload = 0): { runs: RunRecord[]; loading: boolean; error: string | undefined } {
  const [runs, setRuns] = useState<RunRecord[]>([]);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string>();
  const enabled = query !== undefined;
  const name = query?.name;
  const limit = query?.limit ?? 0;

  useEffect(() => {
    if (!enabled) return;
    let live = true;
    setRuns([]);
    setLoading(true);
    setError(undefined);
    // Subscribe before listing: a run landing in between arrives by the feed, and merging dedupes.
    const off = studio.on('runs:feed', (run) => {
      if (live && (name === undefined || run.functionName === name)) setRuns((prev) => mergeRuns([run], prev, limit));
    });
    studio.runs
      .list(name === undefined ? { limit } : { name, limit })
      .then((list) => live && setRuns((prev) => mergeRuns(prev, list, limit)))
      .catch((e: unknown) => live && setError(asUiError(e).message))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
      off();
    };
  }, [enabled, name, limit, reload]);

  return { runs, loading, error };
}
