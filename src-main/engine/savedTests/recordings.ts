import type { KeptRecording } from '../audit/ledger.ts';
import type { Db } from '../store/database.ts';
import { MAX_RECORDED_BODY_BYTES, type Exchange, type TestExpect } from '../model/index.ts';

/** How many of the newest recordings this process also keeps in memory (the run just made is there even if the database refused it). */
const RECENT_IN_MEMORY = 5;

/** What a past run needs to become a test case: its arguments, its exchanges and how it ended. */
export interface RunRecording {
  runId: string;
  functionName: string;
  recordedAt: string;
  args: unknown;
  expect: TestExpect;
  exchanges: Exchange[];
  /** Why the recording is incomplete (a body or the number of requests over the bound): such a run cannot become a case. */
  truncated?: string | undefined;
}

/**
 * The exchanges of the last RECORDINGS_KEPT runs (audit/ledger.ts) (from every caller, MCP clients included), so the
 * console and the history can turn a run into a test case. `keep` bounds a run's recording and hands
 * it to the run ledger, which writes it beside the run, in the same transaction (a reader sees both
 * or neither); a recording the database refuses waits with its run. The newest few are also kept in
 * memory, so the run just made can become a case even while the database refuses writes.
 */
export class RecordingStore {
  readonly #db: Db;
  readonly #recent = new Map<string, RunRecording>();

  constructor(db: Db) {
    this.#db = db;
  }

  /** Bounds `kept` (past MAX_RECORDED_BODY_BYTES only the reason is kept) and returns it as the ledger writes it. */
  keep(kept: RunRecording): KeptRecording {
    let recording = kept;
    // The arguments and the result are bounded like a body: past it only the reason is kept.
    const size = Buffer.byteLength(JSON.stringify(recording.args) ?? '') + Buffer.byteLength(JSON.stringify(recording.expect));
    if (size > MAX_RECORDED_BODY_BYTES) {
      const truncated = `the arguments and result of the run (${size} bytes) are larger than a test case keeps (${MAX_RECORDED_BODY_BYTES} bytes)`;
      recording = { ...recording, args: null, expect: { ok: false, code: 'internal' }, exchanges: [], truncated };
    }
    this.#recent.set(recording.runId, recording);
    if (this.#recent.size > RECENT_IN_MEMORY) this.#recent.delete(this.#recent.keys().next().value!);
    return { recordedAt: recording.recordedAt, json: JSON.stringify(recording) };
  }

  /** The recording of run `runId`, if it is still kept. */
  get(runId: string): RunRecording | undefined {
    const recent = this.#recent.get(runId);
    if (recent) return recent;
    const row = this.#db.prepare('SELECT body FROM run_recordings WHERE run_id = ?').get(runId) as { body: string } | undefined;
    return row ? (JSON.parse(row.body) as RunRecording) : undefined;
  }
}
