// Waiting in tests for something another process or the event loop will do: polled, bounded, and
// a timeout says what was awaited.

import { existsSync, readFileSync } from 'node:fs';

/** Resolves once `condition()` is true; rejects after `ms` naming `what`. */
export async function until(condition: () => boolean, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Resolves with `read()` once `ok` holds for it; the timeout error shows the last value read. */
export async function untilValue<T>(what: string, read: () => T, ok: (value: T) => boolean, ms = 10_000): Promise<T> {
  let value = read();
  try {
    await until(() => ok((value = read())), what, ms);
  } catch (error) {
    throw new Error(`${(error as Error).message}; last: ${JSON.stringify(value)}`);
  }
  return value;
}

/** Whether a process still runs (a zombie waiting for a parent that does not reap it counts as gone). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  const stat = `/proc/${pid}/stat`;
  return !(existsSync(stat) && /^\d+ \(.*\) Z/.test(readFileSync(stat, 'utf8')));
}
