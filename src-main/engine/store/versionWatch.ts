// A counter in the shared database that any process bumps when it changes something (the catalog,
// the credentials), watched by polling: one cheap read every interval while anyone listens, and
// the listeners called when it moved. A read that fails (busy, closed) is skipped until the next.

export class VersionWatch {
  readonly #read: () => number;
  readonly #intervalMs: number;
  readonly #listeners = new Set<() => void>();
  #timer: NodeJS.Timeout | undefined;
  #seen = 0;

  constructor(read: () => number, intervalMs: number) {
    this.#read = read;
    this.#intervalMs = intervalMs;
  }

  /** Calls `listener` whenever the counter moves; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    if (!this.#timer) {
      this.#seen = this.#read();
      this.#timer = setInterval(() => this.#poll(), this.#intervalMs);
      this.#timer.unref();
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.stop();
    };
  }

  /** Stops polling and forgets every listener. */
  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#listeners.clear();
  }

  #poll(): void {
    let now: number;
    try {
      now = this.#read();
    } catch {
      return;
    }
    if (now === this.#seen) return;
    this.#seen = now;
    for (const listener of [...this.#listeners]) listener();
  }
}
