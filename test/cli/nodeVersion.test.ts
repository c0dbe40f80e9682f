import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CALLABLE_BIN } from '../support/callable.ts';

// `callable` started by a Node older than 24 says so in one line and exits 2, instead of failing
// on the TypeScript it cannot load.

function olderNode(): string | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    const r = spawnSync(candidate, ['-p', 'process.versions.node'], { encoding: 'utf8' });
    if (r.status === 0 && Number(r.stdout.split('.')[0]) < 24) return candidate;
  }
  return undefined;
}

describe('callable on an old Node', () => {
  it('says Node 24 is needed and how to get it, and exits 2 (Node 20 simulated)', () => {
    const pretend = `data:text/javascript,Object.defineProperty(process, 'versions', { value: { ...process.versions, node: '20.11.0' } });`;
    const r = spawnSync(process.execPath, ['--import', pretend, CALLABLE_BIN, 'list'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^callable: needs Node\.js 24 or newer, but this is Node 20\.11\.0 .*npm install -g node@24/);
  });

  const old = olderNode();
  it.skipIf(old === undefined)(`does the same under a real older Node (${old ?? 'skipped: no Node older than 24 on this machine'})`, () => {
    const r = spawnSync(old!, [CALLABLE_BIN, 'list'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^callable: needs Node\.js 24 or newer/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
