import { writeTransaction, type Db } from '../store/database.ts';
import { MAX_RECORDED_BODY_BYTES, type Exchange, type TestExpect } from '../model/index.ts';

/** How many recent runs keep their ctx.fetch exchanges in the database (older ones are pruned). */
export const RECORDINGS_KEPT = 50;
/** How many of the newest recordings this process also keeps in memory (the run just made is there even if the database refused it). */
const RECENT_IN_MEMORY = 5;
/** A background write waits this long at most for another process's write lock, then tries again with the next run. */
const BACKGROUND_BUSY_MS = 25;
/** Recordings are written this long after the first one waiting: a burst of calls shares one commit (about 1 ms each otherwise). */
const WRITE_DELAY_MS = 200;

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
 * The exchanges of the last RECORDINGS_KEPT runs (from every caller, MCP clients included), so the
 * console and the history can turn a run into a test case. Written in the background (WRITE_DELAY_MS), batched,
 * never waiting long for a lock: a recording the database refuses is lost (the audit of the run is
 * not), except for the newest few this process keeps in memory.
 */
export class RecordingStore {
  readonly #db: Db;
  readonly #recent = new Map<string, RunRecording>();
  #pending: Array<{ recording: RunRecording; json: string }> = [];
  #scheduled: NodeJS.Timeout | undefined;

  constructor(db: Db) {
    this.#db = db;
  }

  keep(kept: RunRecording): void {
    let recording = kept;
    let json = JSON.stringify(recording);
    // The arguments and the result are bounded like a body: past it only the reason is kept.
    const size = Buffer.byteLength(JSON.stringify(recording.args) ?? '') + Buffer.byteLength(JSON.stringify(recording.expect));
    if (size > MAX_RECORDED_BODY_BYTES) {
      const truncated = `the arguments and result of the run (${size} bytes) are larger than a test case keeps (${MAX_RECORDED_BODY_BYTES} bytes)`;
      recording = { ...recording, args: null, expect: { ok: false, code: 'internal' }, exchanges: [], truncated };
      json = JSON.stringify(recording);
    }
    this.#recent.set(recording.runId, recording);
    if (this.#recent.size > RECENT_IN_MEMORY) this.#recent.delete(this.#recent.keys().next().value!);
    this.#pending.push({ recording, json });
    if (this.#pending.length > RECORDINGS_KEPT) this.#pending.splice(0, this.#pending.length - RECORDINGS_KEPT);
    if (!this.#scheduled) {
      this.#scheduled = setTimeout(() => {
        this.#scheduled = undefined;
        this.flush(BACKGROUND_BUSY_MS);
      }, WRITE_DELAY_MS);
      this.#scheduled.unref();
    }
  }

  /** The recording of run `runId`, if it is still kept. */
  get(runId: string): RunRecording | undefined {
    const recent = this.#recent.get(runId);
    if (recent) return recent;
    const row = this.#db.prepare('SELECT body FROM run_recordings WHERE run_id = ?').get(runId) as { body: string } | undefined;
    return row ? (JSON.parse(row.body) as RunRecording) : undefined;
  }

  /** Writes what is pending; returns false when the database refused it (it stays pending). */
  flush(busyTimeoutMs?: number): boolean {
    if (this.#scheduled) clearTimeout(this.#scheduled);
    this.#scheduled = undefined;
    if (this.#pending.length === 0) return true;
    const batch = this.#pending;
    try {
      writeTransaction(
        this.#db,
        () => {
          const insert = this.#db.prepare('INSERT OR REPLACE INTO run_recordings (run_id, function_name, recorded_at, body) VALUES (?, ?, ?, ?)');
          for (const { recording: r, json } of batch) insert.run(r.runId, r.functionName, r.recordedAt, json);
          this.#db
            .prepare('DELETE FROM run_recordings WHERE rowid NOT IN (SELECT rowid FROM run_recordings ORDER BY rowid DESC LIMIT ?)')
            .run(RECORDINGS_KEPT);
        },
        busyTimeoutMs === undefined ? {} : { busyTimeoutMs },
      );
    } catch {
      // A lock held, a full disk, a read-only file: the audit reports those; the recordings wait for the next run.
      return false;
    }
    this.#pending = this.#pending.slice(batch.length);
    return true;
  }

  /** Before the database closes: one last short write (never a long wait for another process's lock). */
  close(): void {
    this.flush(BACKGROUND_BUSY_MS);
    if (this.#scheduled) clearTimeout(this.#scheduled);
    this.#scheduled = undefined;
  }
}
