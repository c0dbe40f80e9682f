import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, KeychainSecretStore, MemorySecretStore, StudioError, type RunRecord } from '../../src-main/engine/index.ts';
import { BUSY_TIMEOUT_MS, busyError, DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { CALLABLE_COMMAND, REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { holdWriteLock } from '../support/fsFaults.ts';
import { scratch } from '../support/scratch.ts';
import { untilValue } from '../support/wait.ts';
import { folderWithEcho } from '../support/engine.ts';

// The write path under faults, with real processes on a real SQLite file: another process holding
// the write lock must not freeze a running server (its audit writes wait off the event loop), and a
// schema moved by another version stops a running server's writes before a row of the old shape lands.

const made = scratch();
const servers: Client[] = [];
afterEach(async () => {
  // Closing the client ends the server (its stdin closes) and kills it if it lingers.
  await Promise.all(servers.splice(0).map((c) => c.close().catch(() => {})));
});

/** A data folder holding the function `echo`. */
function dataFolder(): Promise<string> {
  return folderWithEcho(made.dir('callable-dbwrite-'));
}

interface Server {
  client: Client;
  stderr: () => string;
}

/** A real `callable mcp` on `dataDir`, with a real (2025-11-25) MCP client over its stdio. */
async function serve(dataDir: string): Promise<Server> {
  const transport = new StdioClientTransport({
    command: CALLABLE_COMMAND.command,
    args: [...CALLABLE_COMMAND.args, 'mcp', '--data-dir', dataDir],
    stderr: 'pipe',
    env: process.env as Record<string, string>,
  });
  let stderr = '';
  transport.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: 'faults-client', version: '1.0.0' });
  await client.connect(transport);
  servers.push(client);
  return { client, stderr: () => stderr };
}

function runRows(dataDir: string): Array<{ id: string; function_name: string; client_name: string | null }> {
  const db = new Database(join(dataDir, DATABASE_FILE), { readonly: true });
  try {
    return db.prepare('SELECT id, function_name, client_name FROM runs ORDER BY rowid').all() as Array<{ id: string; function_name: string; client_name: string | null }>;
  } finally {
    db.close();
  }
}

describe('another process holding the write lock while a server runs', () => {
  it('pings and tool calls keep being answered through a 3 s lock; the runs are recorded once it is released', async () => {
    const dataDir = await dataFolder();
    const { client } = await serve(dataDir);
    // Warm: the sandbox host is up and the first run is recorded.
    await client.callTool({ name: 'echo', arguments: { text: 'warm' } });
    await untilValue('the first run to be recorded', () => runRows(dataDir).length, (n) => n === 1);

    const holder = await holdWriteLock(join(dataDir, DATABASE_FILE), 3000, REPO);
    const held = performance.now();
    const pings: number[] = [];
    const calls: string[] = [];
    let i = 0;
    // While the lock is held (and a little after), a ping every 100 ms and a tool call every 500 ms.
    while (performance.now() - held < 3300) {
      const started = performance.now();
      await client.ping();
      pings.push(performance.now() - started);
      if (i++ % 5 === 0) {
        const result = (await client.callTool({ name: 'echo', arguments: { text: `held ${i}` } })) as { isError?: boolean; structuredContent?: unknown; content: Array<{ text?: string }> };
        expect(result.isError ?? false).toBe(false);
        calls.push(JSON.parse(result.content[0]!.text!).echo as string);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const releasedAt = await holder.released;
    expect(pings.length).toBeGreaterThan(15);
    // Before: the first audit write after a call blocked the thread for the whole 3 s.
    expect(Math.max(...pings)).toBeLessThan(1000);
    expect(calls.length).toBeGreaterThanOrEqual(5);
    // Nothing could be written while the lock was held; every run lands after it is released.
    const rows = await untilValue('the runs made under the lock to be recorded', () => runRows(dataDir), (r) => r.length === 1 + calls.length);
    expect(rows.every((r) => r.function_name === 'echo' && r.client_name === 'faults-client')).toBe(true);
    expect(Date.now()).toBeGreaterThanOrEqual(releasedAt);
  }, 60_000);
});

describe('another process holding the write lock while the token is regenerated', () => {
  it('callable token --regenerate waits the busy timeout, says the database is busy, and leaves the keychain holding the old token', async () => {
    const dataDir = await dataFolder();
    const first = await cli(['token', '--data-dir', dataDir]);
    expect(first.code, first.stderr).toBe(0);
    const token = first.stdout.trim();
    const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
    const account = `${engine.installId}:mcp:http-token`;
    engine.close();
    const keychain = new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!);
    try {
      const holder = await holdWriteLock(join(dataDir, DATABASE_FILE), BUSY_TIMEOUT_MS + 2000, REPO);
      const result = await cli(['token', '--regenerate', '--data-dir', dataDir]);
      expect(result.stderr.trim().split('\n')).toEqual([`callable token: ${busyError(join(dataDir, DATABASE_FILE)).message}`]);
      expect(result.stdout).toBe('');
      expect(result.code).toBe(1);
      expect(await keychain.get(account)).toBe(token);
      await holder.released;
      expect((await cli(['token', '--data-dir', dataDir])).stdout.trim()).toBe(token);
    } finally {
      await keychain.delete(account).catch(() => {});
      keychain.dispose?.();
    }
  }, 60_000);
});

describe('another version changing the schema under a running server', () => {
  it('the next call is refused with a clear message, on stderr too, and no row of the old shape is written', async () => {
    const dataDir = await dataFolder();
    const { client, stderr } = await serve(dataDir);
    await client.callTool({ name: 'echo', arguments: { text: 'before' } });
    await untilValue('the first run to be recorded', () => runRows(dataDir).length, (n) => n === 1);

    // Another (newer) version migrates the database while this server runs.
    const other = new Database(join(dataDir, DATABASE_FILE));
    const version = other.pragma('user_version', { simple: true }) as number;
    other.exec(`ALTER TABLE runs ADD COLUMN added_by_newer TEXT; PRAGMA user_version = ${version + 1}`);
    other.close();

    const result = (await client.callTool({ name: 'echo', arguments: { text: 'after' } })) as { isError?: boolean; content: Array<{ text?: string }> };
    expect(result.isError).toBe(true);
    const message = new RegExp(`the database \\S+callable\\.db was changed by another version of Callable Studio \\(schema ${version + 1}, this process writes schema ${version}\\); this process stopped writing to it: restart it with the current version`);
    expect(result.content[0]!.text).toMatch(message);
    await untilValue('the message on stderr', stderr, (s) => message.test(s));
    // Said once, not per call.
    const again = (await client.callTool({ name: 'echo', arguments: { text: 'again' } })) as { isError?: boolean; content: Array<{ text?: string }> };
    expect(again.isError).toBe(true);
    expect(again.content[0]!.text).toMatch(message);
    expect(stderr().match(new RegExp(message.source, 'g'))).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(runRows(dataDir).map((r) => r.function_name)).toEqual(['echo']);
  }, 60_000);

  it('a token regenerated under a schema moved by another version is refused, and the running servers keep the old token', async () => {
    const dataDir = await dataFolder();
    const secrets = new MemorySecretStore();
    const engine = createEngine({ dataDir, secrets });
    try {
      const token = await engine.mcpToken();
      const other = new Database(join(dataDir, DATABASE_FILE));
      other.pragma(`user_version = ${(other.pragma('user_version', { simple: true }) as number) + 1}`);
      other.close();
      await expect(engine.mcpToken({ regenerate: true })).rejects.toMatchObject({ code: 'schema_changed', message: expect.stringMatching(/was changed by another version of Callable Studio/) });
      expect(await secrets.get(`${engine.installId}:mcp:http-token`)).toBe(token);
      expect(await engine.mcpToken()).toBe(token);
    } finally {
      engine.database.close();
    }
  });

  it('a run recorded before the change is not written after it: the write checks the schema under the lock', async () => {
    const dataDir = await dataFolder();
    const notices: string[] = [];
    const engine = createEngine({ dataDir, secrets: new MemorySecretStore(), diagnostic: (m) => notices.push(m) });
    const run: RunRecord = { id: 'pending-run', functionName: 'echo', caller: 'cli', args: {}, startedAt: new Date().toISOString(), durationMs: 1, ok: true, bytesOut: 2 };
    engine.runs.record(run);
    // Before the batch is written (right after this turn of the event loop), another connection moves the schema.
    const other = new Database(join(dataDir, DATABASE_FILE));
    const version = other.pragma('user_version', { simple: true }) as number;
    other.pragma(`user_version = ${version + 1}`);
    other.close();

    let error: unknown;
    try {
      engine.runs.flush();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(StudioError);
    expect((error as StudioError).code).toBe('schema_changed');
    expect((error as StudioError).message).toMatch(/^1 run\(s\) \(echo\) could not be recorded in \S+callable\.db: the database \S+ was changed by another version/);
    expect(notices).toEqual([expect.stringMatching(/was changed by another version of Callable Studio .*; 1 run\(s\) \(echo\) were not recorded$/)]);
    expect(runRows(dataDir)).toEqual([]);
    // Nothing runs any more, and writes of every kind are refused.
    await expect(engine.run('echo', { text: 'x' }, { caller: 'cli' })).rejects.toMatchObject({ code: 'schema_changed' });
    expect(() => engine.profiles.set({ name: 'p', functions: [], metaTools: false })).toThrow(/was changed by another version/);
    // Closing says what was not recorded, and still closes.
    expect(() => engine.close()).toThrow(/1 run\(s\) \(echo\) could not be recorded/);
    expect(engine.database.open).toBe(false);
    expect(runRows(dataDir)).toEqual([]);
  });
});
