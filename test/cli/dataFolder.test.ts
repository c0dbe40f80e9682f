import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CALLABLE_COMMAND, REPO } from '../support/callable.ts';
import { cli, type CliRun } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { cannotMakeImmutable, immutable } from '../support/fsFaults.ts';

const WORD_STATS = join(REPO, 'resources/examples/word_stats');

/** One line naming the problem, no stack trace. */
function expectOneClearLine(run: CliRun | { stderr: string }, ...words: string[]): void {
  const lines = run.stderr.trim().split('\n');
  expect(lines, run.stderr).toHaveLength(1);
  expect(run.stderr).not.toMatch(/^\s+at /m);
  for (const w of words) expect(run.stderr).toContain(w);
}

function spawnCallableSync(args: string[]) {
  return spawnSync(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, ...args], { encoding: 'utf8', timeout: 15_000 });
}

describe('an unusable data folder is one clear line, exit 2, never a stack trace', () => {
  it('--data-dir pointing at a file', async () => {
    const file = join(tempDir(), 'notes.txt');
    writeFileSync(file, 'hello');
    for (const argv of [['list'], ['import', WORD_STATS]]) {
      const run = await cli([...argv, '--data-dir', file]);
      expect(run.code).toBe(2);
      expectOneClearLine(run, `${file} is a file, not a folder`, '--data-dir');
    }
    expect(readFileSync(file, 'utf8')).toBe('hello');
  });

  it('--data-dir below a file (ENOTDIR)', async () => {
    const file = join(tempDir(), 'notes.txt');
    writeFileSync(file, 'hello');
    const run = await cli(['import', WORD_STATS, '--data-dir', join(file, 'data')]);
    expect(run.code).toBe(2);
    expectOneClearLine(run, `${file} is a file`, '--data-dir');
  });

  it.skipIf(cannotMakeImmutable)('--data-dir in a folder that is not writable (EPERM: an immutable folder)', async () => {
    const parent = tempDir();
    immutable(parent);
    const run = await cli(['import', WORD_STATS, '--data-dir', join(parent, 'data')]);
    expect(run.code).toBe(2);
    expectOneClearLine(run, `${parent} is not writable (EPERM)`, '--data-dir');
  });

  it.skipIf(cannotMakeImmutable)('--data-dir that exists but is not writable (the database cannot be created)', async () => {
    const data = tempDir();
    immutable(data);
    const run = await cli(['import', WORD_STATS, '--data-dir', data]);
    expect(run.code).toBe(2);
    expectOneClearLine(run, `cannot open ${join(data, 'callable.db')} for writing`, 'writable');
  });

  it('a data folder under /proc fails at once instead of retrying mkdir forever', () => {
    for (const argv of [['list'], ['import', WORD_STATS]]) {
      const started = Date.now();
      const run = spawnCallableSync([...argv, '--data-dir', '/proc/nope']);
      expect(run.signal, 'callable was still running after 15 s').toBeNull();
      expect(run.status, run.stderr).toBe(2);
      expect(Date.now() - started).toBeLessThan(10_000);
      expectOneClearLine(run, '/proc/nope');
    }
  });

  it('a corrupt database is named, left untouched, and the fix suggested', async () => {
    const data = tempDir();
    const db = join(data, 'callable.db');
    const garbage = 'this is not a database\n'.repeat(300);
    writeFileSync(db, garbage);
    for (const argv of [['list'], ['run', 'word_stats']]) {
      const run = await cli([...argv, '--data-dir', data]);
      expect(run.code).toBe(2);
      expectOneClearLine(run, db, 'file is not a database', 'left untouched', 'restore it from a backup', 'move it aside');
    }
    expect(readFileSync(db, 'utf8')).toBe(garbage);
    expect(existsSync(`${db}-wal`)).toBe(false);
  });

  it.skipIf(cannotMakeImmutable)('a read-only database refuses the run before it starts instead of crashing while recording it', async () => {
    const data = tempDir();
    expect((await cli(['import', WORD_STATS, '--data-dir', data])).code).toBe(0);
    immutable(join(data, 'callable.db'));
    const run = spawnCallableSync(['run', 'word_stats', '--args', '{"text":"a b"}', '--data-dir', data]);
    expect(run.status, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    expectOneClearLine(run, join(data, 'callable.db'), 'read-only', 'writable');
  });

  it('`serve` on a port in use says so and suggests --port', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const child = spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'serve', '--no-auth', '--port', String(port), '--data-dir', tempDir()], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code, stderr).toBe(2);
      expectOneClearLine({ stderr: stderr.replace(/^callable: created the data folder .*\n/m, '') }, `port ${port}`, 'in use', '--port');
    } finally {
      blocker.close();
    }
  });
});

describe('a data folder that does not exist', () => {
  it('read-only commands say so, exit 2 and create nothing', async () => {
    const missing = join(tempDir(), 'typo');
    for (const argv of [['list'], ['runs'], ['export', join(tempDir(), 'out')], ['profiles', 'list'], ['run', 'word_stats']]) {
      const run = await cli([...argv, '--data-dir', missing]);
      expect(run.code, argv.join(' ')).toBe(2);
      expectOneClearLine(run, `no data folder at ${missing}`, 'nothing was created', '--data-dir');
      expect(existsSync(missing)).toBe(false);
    }
  });

  it('commands that write create it and say so once', async () => {
    const parent = tempDir();
    const data = join(parent, 'new', 'data');
    const first = await cli(['import', WORD_STATS, '--data-dir', data]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toBe(`callable: created the data folder ${data}\n`);
    expect(existsSync(join(data, 'callable.db'))).toBe(true);
    const second = await cli(['import', WORD_STATS, '--data-dir', data]);
    expect(second.stderr).toBe('');
    mkdirSync(join(parent, 'other'));
    expect((await cli(['list', '--data-dir', join(parent, 'other')])).code).toBe(0);
  });
});
