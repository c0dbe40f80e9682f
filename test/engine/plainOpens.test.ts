import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { CALLABLE_COMMAND, REPO } from '../support/callable.ts';
import { folderWithEcho } from '../support/engine.ts';
import { cannotMakeImmutable, crashedWriter, faultDir, immutable } from '../support/fsFaults.ts';
import { callableProcess } from '../support/process.ts';
import { untilValue } from '../support/wait.ts';

// On POSIX, closing any descriptor of a file releases every lock the process holds on it: a plain
// open and close of callable.db, its -wal or its -shm beside SQLite's connection silently drops the
// connection's locks (SQLite's "How To Corrupt An SQLite Database File", 2.2). Each fault path runs
// under strace with a stack trace per call (-k): every open and close of those files must come from
// SQLite's own code (its unix VFS, inside better-sqlite3's addon), none from Node's fs.

const STRACE = '/usr/bin/strace';
const ENV = { ...process.env, CALLABLE_SECRETS: 'env' };

function cannotTrace(): string | undefined {
  if (!existsSync(STRACE)) return `no ${STRACE}`;
  const probe = spawnSync(STRACE, ['-f', '-k', '-qq', '-e', 'trace=openat', '-o', '/dev/null', 'true'], { encoding: 'utf8' });
  return probe.status === 0 ? undefined : `strace -k does not work here: ${probe.stderr.trim()}`;
}
const skip = cannotTrace() ?? cannotMakeImmutable;

/**
 * strace's arguments that trace, into `out`, every open and close of `dataDir`'s database files by
 * `callable` and its threads (and children), descriptors named, each with its stack.
 */
function straceArgs(out: string, dataDir: string): string[] {
  const paths = ['', '-wal', '-shm', '-journal'].flatMap((suffix) => ['-P', join(dataDir, `${DATABASE_FILE}${suffix}`)]);
  return [STRACE, '-f', '-k', '-qq', '-y', '-e', 'trace=open,openat,creat,close', ...paths, '-o', out];
}

interface Call {
  text: string;
  frames: string[];
}

/** The opens and closes of `dataDir`'s database files in a trace, each with its stack. */
function databaseCalls(trace: string, dataDir: string): Call[] {
  const file = new RegExp(`${join(dataDir, DATABASE_FILE).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(-wal|-shm|-journal)?["<>(]`);
  const calls: Call[] = [];
  const unfinished = new Map<string, string>();
  let last: Call | undefined;
  for (const line of trace.split('\n')) {
    if (line.startsWith(' > ')) {
      last?.frames.push(line);
      continue;
    }
    const m = /^(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const [, pid, rest] = m as unknown as [string, string, string];
    if (rest.endsWith('<unfinished ...>')) {
      unfinished.set(pid, rest);
      last = undefined;
      continue;
    }
    const text = rest.startsWith('<...') ? `${unfinished.get(pid) ?? ''}${rest}` : rest;
    unfinished.delete(pid);
    last = { text, frames: [] };
    if (file.test(text)) calls.push(last);
  }
  return calls;
}

/** Calls whose stack does not pass through SQLite (inside better-sqlite3's addon): plain opens and closes. */
function plainCalls(calls: Call[]): string[] {
  return calls.filter((c) => !c.frames.some((f) => f.includes('/better-sqlite3/'))).map((c) => `${c.text}\n${c.frames.slice(0, 4).join('\n')}`);
}

/** Nothing but SQLite opened or closed the database's files; when `sqliteOpened`, its own open is in the trace (the check sees it). */
function expectOnlySqlite(trace: string, dataDir: string, sqliteOpened = true): void {
  const calls = databaseCalls(trace, dataDir);
  if (sqliteOpened) expect(calls.some((c) => /openat\(.*callable\.db"/.test(c.text) && c.frames.some((f) => f.includes('unixOpen')))).toBe(true);
  expect(plainCalls(calls)).toEqual([]);
}

describe.skipIf(skip !== undefined)(`no plain open or close of the database's files (skipped without strace -k and chattr${skip ? `: ${skip}` : ''})`, () => {
  it('a command opening the database (callable list): only SQLite opens callable.db', async () => {
    const dataDir = await folderWithEcho(faultDir('callable-strace-'));
    const out = join(dataDir, 'trace.txt');
    const run = await callableProcess(['list', '--data-dir', dataDir], { env: ENV, prefix: straceArgs(out, dataDir), timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/echo/);
    expectOnlySqlite(readFileSync(out, 'utf8'), dataDir);
  }, 90_000);

  it('a read-only -shm refused at start-up: found without opening it', async () => {
    const dataDir = await folderWithEcho(faultDir('callable-strace-'));
    crashedWriter(join(dataDir, DATABASE_FILE), REPO);
    immutable(join(dataDir, `${DATABASE_FILE}-shm`));
    const out = join(dataDir, 'trace.txt');
    const run = await callableProcess(['run', 'echo', '--args', '{"text":"x"}', '--data-dir', dataDir], { env: ENV, prefix: straceArgs(out, dataDir), timeoutMs: 60_000 });
    expect(run.stderr).toMatch(/callable\.db-shm is read-only/);
    expect(run.code).toBe(2);
    // Refused before SQLite opened anything: no descriptor of the files at all.
    expect(databaseCalls(readFileSync(out, 'utf8'), dataDir).map((c) => c.text)).toEqual([]);
  }, 90_000);

  it('a write failing with a disk I/O error under a running server (its -wal made immutable): the file at fault is found without opening it', async () => {
    const dataDir = await folderWithEcho(faultDir('callable-strace-'));
    const out = join(dataDir, 'trace.txt');
    const [command, ...args] = [...straceArgs(out, dataDir), CALLABLE_COMMAND.command, ...CALLABLE_COMMAND.args, 'mcp', '--data-dir', dataDir];
    const transport = new StdioClientTransport({ command: command!, args, stderr: 'pipe', env: ENV as Record<string, string> });
    let stderr = '';
    transport.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const client = new Client({ name: 'strace-client', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect((await client.callTool({ name: 'echo', arguments: { text: 'a' } })).isError ?? false).toBe(false);
      // The idle checkpoint empties the -wal: the next write must append to it, and it is immutable.
      const wal = join(dataDir, `${DATABASE_FILE}-wal`);
      await untilValue('the idle checkpoint to empty the -wal', () => statSync(wal).size, (size) => size === 0, 20_000);
      immutable(wal);
      expect((await client.callTool({ name: 'echo', arguments: { text: 'b' } })).isError ?? false).toBe(false);
      await untilValue('the unrecorded run to be reported', () => stderr, (s) => s.includes(`${wal} has become read-only (EPERM)`), 20_000);
    } finally {
      await client.close();
    }
    expectOnlySqlite(readFileSync(out, 'utf8'), dataDir);
  }, 120_000);
});
