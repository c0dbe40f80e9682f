// The replay log of one 2025-era session: the events sent on each of its SSE streams, so a client
// that lost a stream reconnects with Last-Event-ID and gets what it missed. Bounded per stream by
// count and bytes (the oldest go first) and per session by streams (the oldest stream goes first);
// it lives and dies with its session.
import type { EventId, EventStore, JSONRPCMessage, StreamId } from '@modelcontextprotocol/server';

export interface EventLogLimits {
  /** Events kept per stream. */
  maxEvents: number;
  /** Bytes (of serialised messages) kept per stream. */
  maxBytes: number;
  /** Streams whose log is kept per session. */
  maxStreams: number;
}

interface Entry {
  id: EventId;
  message: JSONRPCMessage;
  bytes: number;
}

interface StreamLog {
  entries: Entry[];
  bytes: number;
  /** Events of this stream evicted so far: an id at or below this sequence is gone. */
  evictedThrough: number;
}

/** A replay request for an event the log no longer (or never) held. */
export class EventNotFoundError extends Error {}

export class BoundedEventStore implements EventStore {
  readonly #streams = new Map<StreamId, StreamLog>();
  #seq = 0;
  readonly limits: EventLogLimits;

  constructor(limits: EventLogLimits) {
    this.limits = limits;
  }

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    let log = this.#streams.get(streamId);
    if (!log) {
      log = { entries: [], bytes: 0, evictedThrough: 0 };
      this.#streams.set(streamId, log);
      while (this.#streams.size > this.limits.maxStreams) {
        const oldest = this.#streams.keys().next().value as StreamId;
        this.#streams.delete(oldest);
      }
    }
    const seq = ++this.#seq;
    const id = `${seq}_${streamId}`;
    const bytes = Buffer.byteLength(JSON.stringify(message));
    log.entries.push({ id, message, bytes });
    log.bytes += bytes;
    while (log.entries.length > this.limits.maxEvents || (log.bytes > this.limits.maxBytes && log.entries.length > 1)) {
      const gone = log.entries.shift()!;
      log.bytes -= gone.bytes;
      log.evictedThrough = sequenceOf(gone.id) ?? log.evictedThrough;
    }
    return Promise.resolve(id);
  }

  /**
   * Why a replay after this id cannot be served, or undefined when it can: the id is malformed, its
   * stream's log is gone, or events after it were evicted.
   */
  refusal(lastEventId: EventId): string | undefined {
    const seq = sequenceOf(lastEventId);
    const log = seq === undefined ? undefined : this.#streams.get(streamOf(lastEventId));
    if (seq === undefined || !log) return `Last-Event-ID ${JSON.stringify(lastEventId)} names no stream this session still keeps`;
    if (seq < log.evictedThrough) return `the events after Last-Event-ID ${JSON.stringify(lastEventId)} are no longer kept (each stream keeps its last ${this.limits.maxEvents} events, at most ${this.limits.maxBytes} bytes)`;
    return undefined;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return Promise.resolve(this.refusal(eventId) === undefined ? streamOf(eventId) : undefined);
  }

  async replayEventsAfter(lastEventId: EventId, { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> }): Promise<StreamId> {
    const why = this.refusal(lastEventId);
    if (why !== undefined) throw new EventNotFoundError(why);
    const streamId = streamOf(lastEventId);
    const after = sequenceOf(lastEventId)!;
    for (const entry of [...(this.#streams.get(streamId)?.entries ?? [])]) {
      // The priming event ({}) carries no message: it is not sent again.
      if (sequenceOf(entry.id)! > after && Object.keys(entry.message).length > 0) await send(entry.id, entry.message);
    }
    return streamId;
  }

  /** Events and bytes held, over all streams. */
  get size(): { streams: number; events: number; bytes: number } {
    let events = 0;
    let bytes = 0;
    for (const log of this.#streams.values()) {
      events += log.entries.length;
      bytes += log.bytes;
    }
    return { streams: this.#streams.size, events, bytes };
  }

  /** Drops every log (the session ended). */
  clear(): void {
    this.#streams.clear();
  }
}

function sequenceOf(id: EventId): number | undefined {
  const m = /^(\d+)_/.exec(id);
  return m ? Number(m[1]) : undefined;
}

function streamOf(id: EventId): StreamId {
  return id.slice(id.indexOf('_') + 1);
}
