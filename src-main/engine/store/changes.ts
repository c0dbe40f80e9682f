// What other processes (and this one) change in the shared database, watched by one timer per
// connection. Each tick reads a probe, `PRAGMA data_version` (it moves when another connection
// commits) with `total_changes()` (it moves with this connection's own writes, which data_version
// does not see); only when the probe moved are the subscribed topics read, and the listeners of a
// topic whose value moved are called. The timer runs only while anyone subscribes, and never keeps
// the process alive. A read that fails (busy, closed) is skipped until the next tick.
import type Database from 'better-sqlite3';
import { COUNTER_SQL } from './catalog.ts';
import type { Db } from './database.ts';

export type Topic = 'catalog' | 'credentials' | 'runs' | 'prompts';

/** The tick a subscriber gets unless it asks for a faster one: how soon a change in another process shows. */
export const TICK_MS = 250;

interface TopicRead {
  sql: string;
  params: () => unknown[];
  /** Read this often even when nothing was committed: the value also moves with the clock. */
  refreshMs?: number;
}

const TOPICS: Record<Topic, TopicRead> = {
  // Counters every writer bumps in the transaction of its change (store/catalog.ts).
  catalog: { sql: COUNTER_SQL, params: () => ['catalog_version'] },
  credentials: { sql: COUNTER_SQL, params: () => ['credentials_version'] },
  // A run is written once, when it ends, and never deleted: the largest rowid moves exactly when one is recorded.
  runs: { sql: 'SELECT max(rowid) FROM runs', params: () => [] },
  // The set of prompts still waiting (pending, not past their deadline): a new rowid is always larger
  // than the pending ones, so count and sum of rowids move whenever a prompt comes, goes or expires.
  prompts: { sql: "SELECT count(*) || ':' || total(rowid) FROM prompts WHERE state = 'pending' AND expires_at > ?", params: () => [Date.now()], refreshMs: 1000 },
};

/** Called when its topic changed; one that returns false (its own read failed) is called again at the next tick. */
export type ChangeListener = () => boolean | void;

interface Subscription {
  topic: Topic;
  listener: ChangeListener;
  tickMs: number;
  again: boolean;
}

interface TopicState {
  statement: Database.Statement;
  /** The last value read; undefined until a first read succeeds. */
  value: string | undefined;
  readAt: number;
}

/** One change feed per connection, so one timer per connection whoever watches. */
const feeds = new WeakMap<Db, ChangeFeed>();

/** The change feed of `db`. */
export function changeFeed(db: Db): ChangeFeed {
  let feed = feeds.get(db);
  if (!feed) feeds.set(db, (feed = new ChangeFeed(db)));
  return feed;
}

export class ChangeFeed {
  readonly #db: Db;
  readonly #subscriptions = new Set<Subscription>();
  readonly #topics = new Map<Topic, TopicState>();
  #probe: Database.Statement | undefined;
  #seenProbe: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #timerMs = 0;
  #closed = false;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Whether the feed's timer runs (it does only while anyone subscribes). */
  get running(): boolean {
    return this.#timer !== undefined;
  }

  /**
   * Calls `listener` whenever `topic` changes, in any process; `tickMs` asks for a faster tick
   * than TICK_MS while this subscription lasts. Returns the unsubscribe function.
   */
  subscribe(topic: Topic, listener: ChangeListener, tickMs = TICK_MS): () => void {
    if (this.#closed) return () => {};
    const subscription: Subscription = { topic, listener, tickMs, again: false };
    this.#subscriptions.add(subscription);
    if (!this.#topics.has(topic)) this.#topics.set(topic, this.#firstRead(topic));
    this.#schedule();
    return () => {
      if (!this.#subscriptions.delete(subscription)) return;
      if (![...this.#subscriptions].some((s) => s.topic === topic)) this.#topics.delete(topic);
      this.#schedule();
    };
  }

  /** Stops the timer and forgets every subscriber, for good (the connection is closing). */
  close(): void {
    this.#closed = true;
    this.#subscriptions.clear();
    this.#topics.clear();
    this.#schedule();
  }

  /** The value a topic had when its first subscriber came: later moves are changes. */
  #firstRead(topic: Topic): TopicState {
    const read = TOPICS[topic];
    const state: TopicState = { statement: this.#db.prepare(read.sql).pluck(), value: undefined, readAt: 0 };
    try {
      state.value = String(state.statement.get(...read.params()));
      state.readAt = Date.now();
    } catch {
      // The first tick that reads it sets the baseline.
    }
    return state;
  }

  /** One timer at the fastest tick any subscriber asked for; none without subscribers. */
  #schedule(): void {
    const tickMs = this.#subscriptions.size === 0 ? 0 : Math.min(...[...this.#subscriptions].map((s) => s.tickMs));
    if (tickMs === this.#timerMs) return;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#timerMs = tickMs;
    if (tickMs === 0) {
      this.#seenProbe = undefined;
      return;
    }
    this.#timer = setInterval(() => this.#tick(), tickMs);
    this.#timer.unref();
  }

  #tick(): void {
    const now = Date.now();
    const values = new Map<Topic, string>();
    let probe: string;
    try {
      this.#probe ??= this.#db.prepare('SELECT data_version, total_changes() FROM pragma_data_version').raw();
      probe = (this.#probe.get() as number[]).join(':');
      const moved = probe !== this.#seenProbe;
      for (const [topic, state] of this.#topics) {
        const read = TOPICS[topic];
        if (moved || state.value === undefined || (read.refreshMs !== undefined && now - state.readAt >= read.refreshMs)) values.set(topic, String(state.statement.get(...read.params())));
      }
    } catch {
      // Nothing is taken from a tick that failed: the next one reads again.
      return;
    }
    this.#seenProbe = probe;
    const changed = new Set<Topic>();
    for (const [topic, value] of values) {
      const state = this.#topics.get(topic)!;
      if (state.value !== undefined && state.value !== value) changed.add(topic);
      state.value = value;
      state.readAt = now;
    }
    for (const subscription of [...this.#subscriptions]) {
      if (!(changed.has(subscription.topic) || subscription.again) || !this.#subscriptions.has(subscription)) continue;
      subscription.again = subscription.listener() === false;
    }
  }
}
