import type Database from 'better-sqlite3';
import { idleCheckpointer, writeTransaction, type Db, type IdleCheckpointer } from '../store/database.ts';
import { StudioError, type RunRecord } from '../model/index.ts';

interface Row {
  id: string;
  function_name: string;
  caller: string;
  client_name: string | null;
  client_version: string | null;
  transport: string | null;
  profile: string | null;
  args: string;
  started_at: string;
  duration_ms: number;
  ok: number;
  error_code: string | null;
  error_message: string | null;
  bytes_out: number;
}

const MAX_ARGS_BYTES = 64 * 1024;

/**
 * Every run, from every caller, in one table: what ran, for whom, how long, how it ended.
 * Records are written in batches right after the current turn of the event loop, so a burst of
 * calls shares one transaction instead of paying for a commit each; reads flush first.
 */
export class RunLedger {
  readonly #db: Db;
  readonly #insert: Database.Statement;
  readonly #pending: RunRecord[] = [];
  #scheduled: NodeJS.Immediate | undefined;
  readonly #onBackgroundError: ((error: StudioError) => void) | undefined;
  /** Empties the WAL once recording has been quiet (a reader elsewhere may have let it grow). */
  readonly #checkpoint: IdleCheckpointer;

  /** `onBackgroundError` hears of batches that could not be written after the call that recorded them returned. */
  constructor(db: Db, onBackgroundError?: (error: StudioError) => void) {
    this.#db = db;
    this.#onBackgroundError = onBackgroundError;
    this.#checkpoint = idleCheckpointer(db);
    this.#insert = db.prepare(
      `INSERT INTO runs (id, function_name, caller, client_name, client_version, transport, profile, args, started_at, duration_ms, ok, error_code, error_message, bytes_out)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  record(run: RunRecord): void {
    this.#pending.push(run);
    this.#scheduled ??= setImmediate(() => {
      try {
        this.flush();
      } catch (error) {
        this.#onBackgroundError?.(error as StudioError);
      }
    });
  }

  /**
   * Writes the records not yet written. When the database refuses them (read-only, disk full), they
   * stay pending and a StudioError says how many runs are not recorded and why.
   */
  flush(): void {
    if (this.#scheduled) clearImmediate(this.#scheduled);
    this.#scheduled = undefined;
    if (this.#pending.length === 0) return;
    const batch = this.#pending.splice(0);
    try {
      writeTransaction(this.#db, () => {
        for (const run of batch) this.#write(run);
      });
      this.#checkpoint.wrote();
    } catch (error) {
      this.#pending.unshift(...batch);
      const names = [...new Set(this.#pending.map((r) => r.functionName))];
      const runs = names.length > 5 ? `${names.slice(0, 5).join(', ')}…` : names.join(', ');
      throw new StudioError('internal', `${this.#pending.length} run(s) (${runs}) could not be recorded in ${this.#db.name}: ${(error as Error).message}`);
    }
  }

  /** Reads include the records not yet written when they can; a failed write is reported by `flush`, not by reads. */
  #flushForRead(): void {
    try {
      this.flush();
    } catch {
      // Kept pending: the writer that called flush() or the background handler reports it.
    }
  }

  /** Stops the idle checkpoint timer (before the database is closed). */
  stop(): void {
    this.#checkpoint.stop();
  }

  /** Runs recorded but not yet written (a failed write keeps them here). */
  get unwritten(): number {
    return this.#pending.length;
  }

  #write(run: RunRecord): void {
    let args = JSON.stringify(run.args ?? null);
    if (args.length > MAX_ARGS_BYTES) args = JSON.stringify({ truncated: true, bytes: args.length });
    this.#insert.run(
        run.id,
        run.functionName,
        run.caller,
        run.clientName ?? null,
        run.clientVersion ?? null,
        run.transport ?? null,
        run.profile ?? null,
        args,
        run.startedAt,
        run.durationMs,
        run.ok ? 1 : 0,
        run.errorCode ?? null,
        run.errorMessage ?? null,
        run.bytesOut,
      );
  }

  /** The newest rowid: a cursor for `after`. */
  cursor(): number {
    this.#flushForRead();
    return (this.#db.prepare('SELECT COALESCE(MAX(rowid), 0) AS c FROM runs').get() as { c: number }).c;
  }

  /** Runs recorded (by any process) after `cursor`, oldest first, with the new cursor. */
  after(cursor: number, limit = 100): { runs: RunRecord[]; cursor: number } {
    this.#flushForRead();
    const rows = this.#db.prepare('SELECT rowid AS rid, * FROM runs WHERE rowid > ? ORDER BY rowid LIMIT ?').all(cursor, limit) as Array<Row & { rid: number }>;
    return { runs: rows.map(toRecord), cursor: rows.length > 0 ? rows[rows.length - 1]!.rid : cursor };
  }

  list(filter: { functionName?: string | undefined; limit?: number | undefined } = {}): RunRecord[] {
    this.#flushForRead();
    const limit = Math.min(Math.max(filter.limit ?? 50, 1), 1000);
    const rows = (
      filter.functionName === undefined
        ? this.#db.prepare('SELECT * FROM runs ORDER BY started_at DESC LIMIT ?').all(limit)
        : this.#db.prepare('SELECT * FROM runs WHERE function_name = ? ORDER BY started_at DESC LIMIT ?').all(filter.functionName, limit)
    ) as Row[];
    return rows.map(toRecord);
  }
}

function toRecord(r: Row): RunRecord {
  return {
    id: r.id,
    functionName: r.function_name,
    caller: r.caller as RunRecord['caller'],
    ...(r.client_name === null ? {} : { clientName: r.client_name }),
    ...(r.client_version === null ? {} : { clientVersion: r.client_version }),
    ...(r.transport === null ? {} : { transport: r.transport }),
    ...(r.profile === null ? {} : { profile: r.profile }),
    args: JSON.parse(r.args) as unknown,
    startedAt: r.started_at,
    durationMs: r.duration_ms,
    ok: r.ok === 1,
    ...(r.error_code === null ? {} : { errorCode: r.error_code }),
    ...(r.error_message === null ? {} : { errorMessage: r.error_message }),
    bytesOut: r.bytes_out,
  };
}
