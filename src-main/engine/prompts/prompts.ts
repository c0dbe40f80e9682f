// Questions a process puts to the person at the studio, across processes, through the shared
// database. A `callable mcp` process (or the studio's own HTTP server) inserts a pending row and
// waits for its answer; the desktop engine process, which marks the studio's presence with a
// heartbeat, sees the row, shows it in the window, and writes the answer back. Both sides hear of
// a change through the connection's change feed (store/changes.ts), and read the table only then.
import { randomUUID } from 'node:crypto';
import { StudioError, type PromptAnswer, type PromptKind, type PromptView } from '../model/index.ts';
import { changeFeed, TICK_MS, type ChangeFeed } from '../store/changes.ts';
import { writeTransaction, type Db } from '../store/database.ts';

export type { PromptAnswer, PromptKind, PromptView };
export type PromptState = 'pending' | 'answered' | 'expired' | 'cancelled';

export interface AskOptions {
  kind: PromptKind;
  functionName: string;
  client?: string | undefined;
  /** Already redacted by the caller; stored and shown as they are. */
  args: unknown;
  message: string;
  schema?: Record<string, unknown> | undefined;
  sessionScoped?: boolean | undefined;
  /** How long to wait for an answer before the prompt expires. */
  waitMs: number;
  signal?: AbortSignal | undefined;
}

/** How a prompt ended for the process that asked it. */
export type AskOutcome = { state: 'answered'; answer: PromptAnswer } | { state: 'expired' } | { state: 'cancelled' };

/** The studio's heartbeat period; a presence older than STALE_AFTER_MS is a studio that went away without saying so. */
export const HEARTBEAT_MS = 2_000;
export const STALE_AFTER_MS = 3 * HEARTBEAT_MS;
/** How often a waiting asker looks for its answer (the studio's watcher looks every TICK_MS). */
export const POLL_MS = 100;
/** Answered, expired and cancelled prompts are kept this long (they are part of the audit), then pruned. */
export const KEEP_PROMPTS_MS = 30 * 24 * 3600 * 1000;
const MAX_ARGS_CHARS = 16 * 1024;

interface Row {
  id: string;
  kind: string;
  function_name: string;
  client: string | null;
  args: string;
  message: string;
  schema: string | null;
  session_scoped: number;
  created_at: string;
  expires_at: number;
  state: string;
  answer: string | null;
}

/**
 * The prompts of one data folder, seen from one process: ask (and wait), list the pending ones,
 * answer, and — in the desktop engine process — mark the studio as open and watch for new ones.
 */
export class PromptDesk {
  readonly #db: Db;
  readonly #feed: ChangeFeed;
  /** Waiters of this process, woken at once when this process answers (the feed would tell them at its next tick). */
  readonly #local = new Map<string, () => void>();
  readonly #watchers = new Set<(pending: PromptView[]) => void>();
  #stopWatch: (() => void) | undefined;
  /** The ids of the pending list the watchers last heard; undefined before the first. */
  #lastEmitted: string | undefined;
  #presence: { id: string; timer: NodeJS.Timeout } | undefined;

  constructor(db: Db) {
    this.#db = db;
    this.#feed = changeFeed(db);
  }

  /** Whether a studio window is open on this data folder (in any process): a presence whose heartbeat is fresh. */
  studioOpen(now = Date.now()): boolean {
    return this.#db.prepare('SELECT EXISTS (SELECT 1 FROM studio_presence WHERE heartbeat_at > ?)').pluck().get(now - STALE_AFTER_MS) === 1;
  }

  /**
   * Marks the studio as open until `closeStudio()`: a presence row refreshed every HEARTBEAT_MS.
   * Also prunes old prompts and presences left by studios that went away without saying so.
   */
  openStudio(): void {
    if (this.#presence) return;
    const id = randomUUID();
    const now = Date.now();
    writeTransaction(this.#db, () => {
      this.#db.prepare('DELETE FROM studio_presence WHERE heartbeat_at <= ?').run(now - STALE_AFTER_MS);
      this.#db.prepare("DELETE FROM prompts WHERE state <> 'pending' AND expires_at < ?").run(now - KEEP_PROMPTS_MS);
      this.#db.prepare('INSERT INTO studio_presence (id, pid, started_at, heartbeat_at) VALUES (?, ?, ?, ?)').run(id, process.pid, new Date(now).toISOString(), now);
    });
    const beat = this.#db.prepare('INSERT INTO studio_presence (id, pid, started_at, heartbeat_at) VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at');
    const timer = setInterval(() => {
      try {
        // A short wait for the lock: a missed beat is taken again in two seconds; three missed read as closed.
        writeTransaction(this.#db, () => beat.run(id, process.pid, new Date().toISOString(), Date.now()), { busyTimeoutMs: 200 });
      } catch {
        // Busy, full or read-only: the next beat tries again.
      }
    }, HEARTBEAT_MS);
    timer.unref();
    this.#presence = { id, timer };
  }

  /** Removes this process's presence (a clean exit of the studio). */
  closeStudio(): void {
    if (!this.#presence) return;
    clearInterval(this.#presence.timer);
    const { id } = this.#presence;
    this.#presence = undefined;
    try {
      writeTransaction(this.#db, () => this.#db.prepare('DELETE FROM studio_presence WHERE id = ?').run(id), { busyTimeoutMs: 500 });
    } catch {
      // The heartbeat goes stale on its own.
    }
  }

  /**
   * Puts a question to the person at the studio and waits for the answer, until `waitMs` passes
   * (the row becomes `expired`) or `signal` aborts (`cancelled`): a withdrawn prompt leaves the
   * studio's window. Throws a StudioError when the row cannot be written (busy, disk full, read-only).
   */
  async ask(options: AskOptions): Promise<AskOutcome> {
    if (options.signal?.aborted) return { state: 'cancelled' };
    const id = randomUUID();
    const now = Date.now();
    let args = JSON.stringify(options.args ?? {});
    if (args.length > MAX_ARGS_CHARS) args = JSON.stringify({ truncated: true, chars: args.length, start: args.slice(0, 2000) });
    writeTransaction(this.#db, () =>
      this.#db
        .prepare(
          `INSERT INTO prompts (id, kind, function_name, client, args, message, schema, session_scoped, created_at, expires_at, state)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')`,
        )
        .run(
          id,
          options.kind,
          options.functionName,
          options.client ?? null,
          args,
          options.message.slice(0, 2000),
          options.schema ? JSON.stringify(options.schema) : null,
          options.sessionScoped ? 1 : 0,
          new Date(now).toISOString(),
          now + options.waitMs,
        ),
    );
    const read = this.#db.prepare('SELECT state, answer FROM prompts WHERE id = ?');
    return new Promise<AskOutcome>((resolve) => {
      let done = false;
      const finish = (outcome: AskOutcome): void => {
        if (done) return;
        done = true;
        stopFeed();
        clearTimeout(deadline);
        this.#local.delete(id);
        options.signal?.removeEventListener('abort', onAbort);
        resolve(outcome);
      };
      /** How the row says the prompt ended; undefined while it waits. Throws when the read fails. */
      const outcome = (): AskOutcome | undefined => {
        const row = read.get(id) as { state: string; answer: string | null } | undefined;
        if (row?.state === 'answered' && row.answer !== null) return { state: 'answered', answer: JSON.parse(row.answer) as PromptAnswer };
        if (row && row.state !== 'pending') return { state: row.state === 'expired' ? 'expired' : 'cancelled' };
        return undefined;
      };
      /** Finishes once the row has an outcome; false when the read failed (busy checkpoint): the feed asks again at its next tick. */
      const check = (): boolean => {
        try {
          const ended = outcome();
          if (ended) finish(ended);
          return true;
        } catch {
          return false;
        }
      };
      /** Ends the wait, unless the answer landed first; the row says which. */
      const withdraw = (state: 'expired' | 'cancelled'): void => {
        if (done) return;
        let won = false;
        try {
          won = writeTransaction(this.#db, () => this.#db.prepare("UPDATE prompts SET state = ?, answered_at = ? WHERE id = ? AND state = 'pending'").run(state, new Date().toISOString(), id).changes === 1, { busyTimeoutMs: 1000 });
        } catch {
          // Could not write: the studio drops it once expires_at passes.
          won = true;
        }
        let ended: AskOutcome | undefined;
        try {
          if (!won) ended = outcome();
        } catch {
          // Unreadable: it ends as this side meant it to.
        }
        finish(ended ?? { state });
      };
      const onAbort = (): void => withdraw('cancelled');
      const stopFeed = this.#feed.subscribe('prompts', check, POLL_MS);
      const deadline = setTimeout(() => withdraw('expired'), options.waitMs);
      this.#local.set(id, check);
      options.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** The prompts waiting for an answer now, oldest first (those whose asker stopped waiting are left out). */
  pending(now = Date.now()): PromptView[] {
    const rows = this.#db.prepare("SELECT * FROM prompts WHERE state = 'pending' AND expires_at > ? ORDER BY created_at, rowid").all(now) as Row[];
    return rows.map(toView);
  }

  /**
   * Writes the person's answer. Refuses (`conflict`) a prompt that is no longer waiting: answered
   * elsewhere, withdrawn by its caller, or past its deadline.
   */
  answer(id: string, answer: PromptAnswer): void {
    const changes = writeTransaction(this.#db, () =>
      this.#db
        .prepare("UPDATE prompts SET state = 'answered', answer = ?, answered_at = ? WHERE id = ? AND state = 'pending' AND expires_at > ?")
        .run(JSON.stringify(answer), new Date().toISOString(), id, Date.now()).changes,
    );
    this.#local.get(id)?.();
    if (changes === 0) {
      const row = this.#db.prepare('SELECT state FROM prompts WHERE id = ?').pluck().get(id) as string | undefined;
      const why = row === undefined ? 'there is no such prompt' : row === 'answered' ? 'it was already answered' : row === 'cancelled' ? 'the caller stopped waiting for it' : 'its deadline passed';
      throw new StudioError('conflict', `the prompt can no longer be answered: ${why}`);
    }
  }

  /** A prompt and where it stands (for the audit and tests). */
  get(id: string): (PromptView & { state: PromptState; answer?: PromptAnswer }) | undefined {
    const row = this.#db.prepare('SELECT * FROM prompts WHERE id = ?').get(id) as Row | undefined;
    if (!row) return undefined;
    return { ...toView(row), state: row.state as PromptState, ...(row.answer === null ? {} : { answer: JSON.parse(row.answer) as PromptAnswer }) };
  }

  /** Prompts of every state, newest first. */
  recent(limit = 50): Array<PromptView & { state: PromptState; answer?: PromptAnswer }> {
    const ids = this.#db.prepare('SELECT id FROM prompts ORDER BY created_at DESC, rowid DESC LIMIT ?').pluck().all(limit) as string[];
    return ids.map((id) => this.get(id)!);
  }

  /**
   * Calls `listener` with the pending prompts whenever that list changes (a new prompt, one
   * answered, withdrawn or expired), from any process. Returns the unsubscribe function.
   */
  watch(listener: (pending: PromptView[]) => void): () => void {
    this.#watchers.add(listener);
    this.#stopWatch ??= this.#feed.subscribe('prompts', () => this.#emitPending(), TICK_MS);
    return () => {
      this.#watchers.delete(listener);
      if (this.#watchers.size === 0) this.#stopWatching();
    };
  }

  close(): void {
    this.closeStudio();
    this.#watchers.clear();
    this.#stopWatching();
  }

  #stopWatching(): void {
    this.#stopWatch?.();
    this.#stopWatch = undefined;
    this.#lastEmitted = undefined;
  }

  /** False when the read failed: the feed calls again at its next tick. */
  #emitPending(): boolean {
    let pending: PromptView[];
    try {
      pending = this.pending();
    } catch {
      return false;
    }
    const key = pending.map((p) => p.id).join(',');
    if (key === this.#lastEmitted) return true;
    this.#lastEmitted = key;
    for (const listener of [...this.#watchers]) listener(pending);
    return true;
  }
}

function toView(row: Row): PromptView {
  return {
    id: row.id,
    kind: row.kind as PromptKind,
    functionName: row.function_name,
    ...(row.client === null ? {} : { client: row.client }),
    args: JSON.parse(row.args) as unknown,
    message: row.message,
    ...(row.schema === null ? {} : { schema: JSON.parse(row.schema) as Record<string, unknown> }),
    sessionScoped: row.session_scoped === 1,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}
