import type Database from 'better-sqlite3';
import { performance } from 'node:perf_hooks';
import { checkSchema, corruptionOf, idleCheckpointer, writeTransaction, type Db, type IdleCheckpointer } from '../store/database.ts';
import { StudioError, type ApprovalDecision, type RunRecord } from '../model/index.ts';

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
  approval: string | null;
}

const MAX_ARGS_BYTES = 64 * 1024;
/** The runs' part of the database, as damage found there is named. */
const HISTORY = 'the run history';
/** Each run's approval decision, when it had one (kept in its own table). */
const WITH_APPROVAL = 'LEFT JOIN run_approvals a ON a.run_id = r.id';

/**
 * How many runs wait in memory while the database refuses them (disk full, read-only, a lock held
 * for long). Past it the oldest are dropped, counted and reported: the newest runs are the ones a user
 * looks for. Each record's arguments are capped at 64 KiB, so the buffer stays bounded in bytes too.
 */
export const AUDIT_BUFFER_MAX = 1000;
/** How many of the newest runs keep their recording (requests and result, to become a test case); older ones are pruned. */
export const RECORDINGS_KEPT = 50;

/** A run's recording (engine/savedTests/recordings.ts) as the ledger writes it beside the run. */
export interface KeptRecording {
  recordedAt: string;
  json: string;
}
/** How long a background write waits for another process's write lock before giving the thread back and trying later. */
export const BACKGROUND_BUSY_MS = 25;
/** The first retry delay; each failed attempt doubles it, up to the maximum for its cause. */
export const RETRY_FIRST_MS = 50;
/** The longest wait between two attempts while another process holds the write lock. */
export const RETRY_BUSY_MAX_MS = 1000;
/** The longest wait between two attempts while the disk is full or the database read-only. */
export const RETRY_FAULT_MAX_MS = 2000;
/** After this long behind another process's lock, the wait is reported once. */
const BUSY_REPORT_MS = 5000;
/**
 * Group commit: a run recorded within this long of the last write waits for the window to end, so a
 * burst of calls shares one commit per window instead of paying for one each (a commit of one run
 * cost about a quarter of the engine's CPU per call in a burst). An idle ledger writes right after
 * the turn, as before; a read, a flush or close writes at once.
 */
export const GROUP_COMMIT_MS = 20;

/** Something the ledger has to say after the call that recorded a run has returned: a failure, or a recovery. */
export interface AuditNotice {
  message: string;
  error?: StudioError | undefined;
  /** Set when it says runs that had waited were recorded (a recovery, not a fault). */
  recovered?: true;
}

/**
 * Every run, from every caller, in one table: what ran, for whom, how long, how it ended.
 * Records are written in batches: right after the current turn of the event loop, or, when the last
 * write was less than GROUP_COMMIT_MS ago, at the end of that window, so a burst of calls shares one
 * transaction instead of paying for a commit each; reads flush first.
 *
 * Those background writes never hold the event loop: they wait at most BACKGROUND_BUSY_MS for another
 * process's write lock, and when the database refuses them (lock held, disk full, read-only) the runs
 * stay in a bounded buffer (AUDIT_BUFFER_MAX) and the write is tried again later, with backoff, until
 * it lands. A schema moved by another version stops the writes for good (`ready` refuses new runs).
 */
export class RunLedger {
  readonly #db: Db;
  readonly #insert: Database.Statement;
  /** How a call that needed a person's approval was decided, beside its run. */
  readonly #insertApproval: Database.Statement;
  readonly #pending: Array<{ run: RunRecord; recording?: KeptRecording | undefined }> = [];
  /** A run's requests and result, for turning it into a test case (engine/savedTests/recordings.ts), beside its run. */
  readonly #insertRecording: Database.Statement;
  readonly #pruneRecordings: Database.Statement;
  /** The next background write: right after this turn, or at the end of the group-commit window. */
  #scheduled: { cancel(): void } | undefined;
  /** performance.now() of the last write that landed. */
  #lastWrite = Number.NEGATIVE_INFINITY;
  #retry: NodeJS.Timeout | undefined;
  #retryMs = 0;
  readonly #notify: (notice: AuditNotice) => void;
  /** Empties the WAL once recording has been quiet (a reader elsewhere may have let it grow). */
  readonly #checkpoint: IdleCheckpointer;
  /** Oldest runs dropped from a full buffer since the last write that landed. */
  #dropped = 0;
  /** The failure the background writer last reported, until a write lands. */
  #failure: StudioError | undefined;
  /** Runs (pending + dropped) the last failure notice covered: a notice is repeated only for new runs. */
  #reportedRuns = 0;
  #busySince: number | undefined;
  #busyReported = false;
  /** Set once the schema moved under this process: nothing more is written. */
  #stopped: StudioError | undefined;

  /** `notify` hears what happens to runs after the call that recorded them returned (not written, written late, dropped). */
  constructor(db: Db, notify?: (notice: AuditNotice) => void) {
    this.#db = db;
    this.#notify = notify ?? (() => {});
    this.#checkpoint = idleCheckpointer(db);
    this.#insert = db.prepare(
      `INSERT INTO runs (id, function_name, caller, client_name, client_version, transport, profile, args, started_at, duration_ms, ok, error_code, error_message, bytes_out)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#insertApproval = db.prepare('INSERT OR REPLACE INTO run_approvals (run_id, approval) VALUES (?, ?)');
    this.#insertRecording = db.prepare('INSERT OR REPLACE INTO run_recordings (run_id, function_name, recorded_at, body) VALUES (?, ?, ?, ?)');
    // Rowids only grow (the newest recording has the largest), so the ones to drop are a range: no scan.
    this.#pruneRecordings = db.prepare('DELETE FROM run_recordings WHERE rowid <= (SELECT max(rowid) FROM run_recordings) - ?');
  }

  /**
   * Before a run: throws `schema_changed` once another version of Callable Studio has moved the
   * database's schema, so nothing runs that could only be recorded in the old shape.
   */
  ready(): void {
    if (this.#stopped) throw this.#stopped;
    try {
      checkSchema(this.#db);
    } catch (error) {
      if (error instanceof StudioError && error.code === 'schema_changed') {
        this.#stop(error);
        throw error;
      }
      // Any other read failure is the run's own to report.
    }
  }

  /** Records a run, with its recording when it has one (written in the same transaction, so a reader sees both or neither). */
  record(run: RunRecord, recording?: KeptRecording): void {
    this.#pending.push({ run, recording });
    if (this.#pending.length > AUDIT_BUFFER_MAX) {
      const over = this.#pending.length - AUDIT_BUFFER_MAX;
      this.#pending.splice(0, over);
      if (this.#dropped === 0) {
        this.#notify({ message: `the runs waiting to be recorded in ${this.#db.name} fill the buffer (${AUDIT_BUFFER_MAX}): the oldest are being dropped` });
      }
      this.#dropped += over;
    }
    // Behind another process's lock the retry timer paces the attempts (each may wait BACKGROUND_BUSY_MS);
    // a full disk or a read-only file fails at once, so a new run is tried (and reported) right away.
    const paced = this.#retry !== undefined && this.#failure === undefined;
    if (!paced && this.#stopped === undefined) this.#scheduled ??= this.#schedule();
  }

  #schedule(): { cancel(): void } {
    const wait = this.#lastWrite + GROUP_COMMIT_MS - performance.now();
    if (wait <= 0) {
      const immediate = setImmediate(() => this.#background());
      return { cancel: () => clearImmediate(immediate) };
    }
    // Ref'd like the immediate: a process that ends on its own writes its last runs first.
    const timer = setTimeout(() => this.#background(), wait);
    return { cancel: () => clearTimeout(timer) };
  }

  /**
   * Writes the records not yet written, waiting for another process's lock up to the busy timeout.
   * When the database refuses them (read-only, disk full), they stay pending and a StudioError (with
   * the cause's code) says how many runs are not recorded and why.
   */
  flush(): void {
    const failure = this.#attempt();
    if (!failure) return;
    // The caller reports it; the runs keep waiting for the background writer.
    this.#retryLater(failure, false);
    throw this.#unrecorded(failure);
  }

  /** Forgets the runs not written, once the caller has said they are not recorded (a command that exits); returns how many. */
  discard(): number {
    const count = this.#pending.length;
    this.#pending.length = 0;
    this.#dropped = 0;
    return count;
  }

  /** Stops the retry and idle checkpoint timers (before the database is closed). */
  stop(): void {
    this.#scheduled?.cancel();
    if (this.#retry) clearTimeout(this.#retry);
    this.#scheduled = this.#retry = undefined;
    this.#checkpoint.stop();
  }

  /** Runs recorded but not yet written (a failed write keeps them here). */
  get unwritten(): number {
    return this.#pending.length;
  }

  /** Runs dropped from the full buffer since the last write that landed. */
  get dropped(): number {
    return this.#dropped;
  }

  /** One write of everything pending; the failure, mapped to one StudioError, or undefined when written (or nothing to write). */
  #attempt(busyTimeoutMs?: number): StudioError | undefined {
    this.#scheduled?.cancel();
    this.#scheduled = undefined;
    if (this.#pending.length === 0) return undefined;
    if (this.#stopped) return this.#stopped;
    const batch = this.#pending.slice();
    try {
      writeTransaction(
        this.#db,
        () => {
          for (const entry of batch) this.#write(entry);
          if (batch.some((entry) => entry.recording)) this.#pruneRecordings.run(RECORDINGS_KEPT);
        },
        busyTimeoutMs === undefined ? { writing: HISTORY } : { busyTimeoutMs, writing: HISTORY },
      );
    } catch (error) {
      const failure = error instanceof StudioError ? error : new StudioError('internal', `writing runs to ${this.#db.name} failed: ${(error as Error).message}`);
      if (failure.code === 'schema_changed') this.#stop(failure);
      return failure;
    }
    this.#pending.splice(0, batch.length);
    this.#lastWrite = performance.now();
    this.#checkpoint.wrote();
    this.#landed(batch.length);
    return undefined;
  }

  /** The write right after a turn of the event loop, and every retry: never waits long for a lock. */
  #background(): void {
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = undefined;
    const failure = this.#attempt(BACKGROUND_BUSY_MS);
    if (failure) this.#retryLater(failure);
  }

  /** Reports a background failure (once per cause, again only for runs added since) and schedules the next attempt. */
  #retryLater(failure: StudioError, report = true): void {
    if (this.#stopped) return;
    const busy = failure.code === 'database_busy';
    if (!report) {
      // Counted as reported: the background writer speaks again only for runs recorded after this.
      if (!busy) {
        this.#failure = failure;
        this.#reportedRuns = this.#pending.length + this.#dropped;
      }
    } else if (busy) {
      this.#busySince ??= Date.now();
      if (!this.#busyReported && Date.now() - this.#busySince >= BUSY_REPORT_MS) {
        this.#busyReported = true;
        this.#notify({ message: `${this.#describePending()} wait to be recorded: another process has held the write lock on ${this.#db.name} for ${Math.round((Date.now() - this.#busySince) / 1000)} s; still trying`, error: failure });
      }
    } else {
      const runs = this.#pending.length + this.#dropped;
      if (this.#failure?.code !== failure.code || runs > this.#reportedRuns) {
        // A damaged database does not heal by waiting, and it can be restored only once this process has stopped.
        const fate = isDamage(failure)
          ? 'they are held in memory only and will be lost when this process exits: stop it and restore the database to record runs again'
          : `they wait in memory (at most ${AUDIT_BUFFER_MAX}) and are written once it can`;
        this.#notify({ message: `${this.#describePending()} could not be recorded yet: ${failure.message}; ${fate}`, error: failure });
        this.#reportedRuns = runs;
      }
      this.#failure = failure;
    }
    if (this.#retry) return;
    this.#retryMs = Math.min(Math.max(this.#retryMs * 2, RETRY_FIRST_MS), busy ? RETRY_BUSY_MAX_MS : RETRY_FAULT_MAX_MS);
    this.#retry = setTimeout(() => this.#background(), this.#retryMs);
    this.#retry.unref();
  }

  /** A write landed: says so when runs had waited (reported) or were dropped, and clears the fault. */
  #landed(count: number): void {
    if (this.#failure || this.#busyReported || this.#dropped > 0) {
      const dropped = this.#dropped > 0 ? `; ${this.#dropped} older run(s) were dropped (at most ${AUDIT_BUFFER_MAX} wait in memory)` : '';
      this.#notify({ message: `recorded ${count} run(s) that had waited to be written to ${this.#db.name}${dropped}`, recovered: true });
    }
    this.#failure = undefined;
    this.#reportedRuns = 0;
    this.#busySince = undefined;
    this.#busyReported = false;
    this.#dropped = 0;
    this.#retryMs = 0;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = undefined;
  }

  #stop(error: StudioError): void {
    if (this.#stopped) return;
    this.#stopped = error;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = undefined;
    const unwritten = this.#pending.length > 0 ? `; ${this.#describePending()} were not recorded` : '';
    this.#notify({ message: `${error.message}${unwritten}`, error });
  }

  #describePending(): string {
    const names = [...new Set(this.#pending.map((entry) => entry.run.functionName))];
    const which = names.length > 5 ? `${names.slice(0, 5).join(', ')}…` : names.join(', ');
    const dropped = this.#dropped > 0 ? `, and ${this.#dropped} dropped` : '';
    return `${this.#pending.length} run(s) (${which}${dropped})`;
  }

  #unrecorded(failure: StudioError): StudioError {
    const outcome = isDamage(failure) ? 'were not recorded' : 'could not be recorded';
    return new StudioError(failure.code, `${this.#describePending()} ${outcome} in ${this.#db.name}: ${failure.message}`, failure.details);
  }

  /** Reads include the records not yet written when they can, without waiting for a lock; a failure is reported by the background writer. */
  #flushForRead(): void {
    if (this.#retry !== undefined || this.#stopped !== undefined) return;
    const failure = this.#attempt(BACKGROUND_BUSY_MS);
    if (failure) this.#retryLater(failure);
  }

  #write({ run, recording }: { run: RunRecord; recording?: KeptRecording | undefined }): void {
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
    if (run.approval) this.#insertApproval.run(run.id, run.approval);
    if (recording) this.#insertRecording.run(run.id, run.functionName, recording.recordedAt, recording.json);
  }

  /** Before a read of what runs wrote: writes what is pending without waiting long; a refusal is left to the background writer. */
  catchUp(): void {
    this.#flushForRead();
  }

  /** A read of the run history; damage SQLite finds there is the one line that says how to restore. */
  #read<T>(read: () => T): T {
    this.#flushForRead();
    try {
      return read();
    } catch (error) {
      throw corruptionOf(error, this.#db.name, HISTORY) ?? error;
    }
  }

  /** The recorded bodies (requests and results) of `functionName`'s recent runs, oldest first. */
  recordings(functionName: string): string[] {
    return this.#read(() => this.#db.prepare('SELECT body FROM run_recordings WHERE function_name = ? ORDER BY recorded_at').all(functionName) as Array<{ body: string }>).map((row) => row.body);
  }

  /** The newest rowid: a cursor for `after`. */
  cursor(): number {
    return this.#read(() => (this.#db.prepare('SELECT COALESCE(MAX(rowid), 0) AS c FROM runs').get() as { c: number }).c);
  }

  /** Runs recorded (by any process) after `cursor`, oldest first, with the new cursor. */
  after(cursor: number, limit = 100): { runs: RunRecord[]; cursor: number } {
    const rows = this.#read(() => this.#db.prepare(`SELECT r.rowid AS rid, r.*, a.approval FROM runs r ${WITH_APPROVAL} WHERE r.rowid > ? ORDER BY r.rowid LIMIT ?`).all(cursor, limit) as Array<Row & { rid: number }>);
    return { runs: rows.map(toRecord), cursor: rows.length > 0 ? rows[rows.length - 1]!.rid : cursor };
  }

  list(filter: { functionName?: string | undefined; limit?: number | undefined } = {}): RunRecord[] {
    const limit = Math.min(Math.max(filter.limit ?? 50, 1), 1000);
    const rows = this.#read(() =>
      filter.functionName === undefined
        ? this.#db.prepare(`SELECT r.*, a.approval FROM runs r ${WITH_APPROVAL} ORDER BY r.started_at DESC LIMIT ?`).all(limit)
        : this.#db.prepare(`SELECT r.*, a.approval FROM runs r ${WITH_APPROVAL} WHERE r.function_name = ? ORDER BY r.started_at DESC LIMIT ?`).all(filter.functionName, limit),
    ) as Row[];
    return rows.map(toRecord);
  }
}

/** A write refused because SQLite found the database damaged (see corruptionOf). */
function isDamage(failure: StudioError): boolean {
  return failure.details?.damaged !== undefined;
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
    ...(r.approval === null || r.approval === undefined ? {} : { approval: r.approval as ApprovalDecision }),
  };
}
