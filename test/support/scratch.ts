import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { Engine } from '../../src-main/engine/index.ts';

/**
 * What a test starts and must not leave behind: child processes (killed), engines (closed) and temp
 * folders (removed), all after each test.
 */
export function scratch() {
  const children = new Set<ChildProcess>();
  const engines = new Set<Engine>();
  const dirs = new Set<string>();
  afterEach(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    children.clear();
    for (const engine of engines) engine.close();
    engines.clear();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    dirs.clear();
  });
  return {
    child<T extends ChildProcess>(child: T): T {
      children.add(child);
      return child;
    },
    engine<T extends Engine>(engine: T): T {
      engines.add(engine);
      return engine;
    },
    dir(prefix: string): string {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      dirs.add(dir);
      return dir;
    },
  };
}
