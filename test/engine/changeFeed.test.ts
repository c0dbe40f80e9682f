// The change feed (src-main/engine/store/changes.ts), on real SQLite files: what another connection
// or another process commits reaches the subscribers of each topic, and so do this connection's own
// writes; another process holding the write lock, or a connection closed under it, does not stop it;
// its timer runs only while anyone subscribes and never keeps a process alive.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore, type Engine, type RunRecord } from '../../src-main/engine/index.ts';
import { changeFeed, type Topic } from '../../src-main/engine/store/changes.ts';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { createStudioApi } from '../../src-main/engineProcess/studioApi.ts';
import { McpHttpHost } from '../../src-main/mcp/httpHost.ts';
import { CALLABLE_BIN, CALLABLE_COMMAND, REPO } from '../support/callable.ts';
import { holdWriteLock, undoFaults } from '../support/fsFaults.ts';
import { scratch } from '../support/scratch.ts';
import { until } from '../support/wait.ts';

const s = scratch();
afterEach(undoFaults);

function engineOn(dir: string): Engine {
  return s.engine(createEngine({ dataDir: dir, secrets: new MemorySecretStore() }));
}

/** Counts each topic's events heard on `engine`'s connection, through the engine's own subscriptions where it has one. */
function listen(engine: Engine): Record<Topic, number> {
  const counts: Record<Topic, number> = { catalog: 0, credentials: 0, runs: 0, prompts: 0 };
  engine.onCatalogChange(() => counts.catalog++);
  engine.onCredentialsChange(() => counts.credentials++);
  engine.onRunsRecorded(() => counts.runs++);
  changeFeed(engine.database).subscribe('prompts', () => void counts.prompts++);
  return counts;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('the change feed', () => {
  it.each(['another connection', 'the same connection'])('a change committed by %s reaches the subscribers of its topic, and only those', async (writerIs) => {
    const dir = s.dir('callable-changes-');
    const watcher = engineOn(dir);
    // Through the same connection, data_version does not move: the feed still hears of the write.
    const writer = writerIs === 'the same connection' ? watcher : engineOn(dir);
    const counts = listen(watcher);

    await writer.saveFunction({ spec: { name: 'echo' }, source: 'export default (args) => args' });
    await until(() => counts.catalog === 1, 'the catalog event', 5_000);

    await writer.credentials.set({ name: 'vendor-key', hosts: ['api.example.com'], placement: { kind: 'header', header: 'X-Key', template: '{secret}' } }, undefined);
    await until(() => counts.credentials === 1, 'the credentials event', 5_000);

    // Failed or not, a run is recorded: the topic is the record.
    expect(await writer.run('echo', { n: 1 }, { caller: 'test' })).toMatchObject({ runId: expect.any(String) });
    await until(() => counts.runs === 1, 'the runs event', 10_000);

    const asking = new AbortController();
    const asked = writer.prompts.ask({ kind: 'approval', functionName: 'echo', args: {}, message: 'Allow?', waitMs: 20_000, signal: asking.signal });
    await until(() => counts.prompts === 1, 'the prompts event for the new prompt', 5_000);
    asking.abort();
    expect(await asked).toEqual({ state: 'cancelled' });
    await until(() => counts.prompts === 2, 'the prompts event for the withdrawn prompt', 5_000);

    // A few ticks more: nothing was counted twice, and no topic heard another's change.
    await pause(600);
    expect(counts).toEqual({ catalog: 1, credentials: 1, runs: 1, prompts: 2 });
  }, 60_000);

  it("brings the studio's run feed the runs another process records, and the studio's own", async () => {
    const dir = s.dir('callable-changes-');
    const engine = engineOn(dir);
    await engine.saveFunction({ spec: { name: 'echo' }, source: 'export default (args) => args' });
    const api = createStudioApi({ engine, mcp: new McpHttpHost(engine, { port: 0 }), resourcesDir: join(REPO, 'resources'), callableCommand: CALLABLE_BIN, diagnostic: () => {} });
    const fed: RunRecord[] = [];
    const off = api.subscribe('runs:feed', (run) => fed.push(run));
    try {
      const cli = s.child(spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'run', 'echo', '--args', '{"from":"cli"}', '--data-dir', dir], { stdio: 'ignore' }));
      expect(await new Promise((resolve) => cli.on('close', resolve))).toBe(0);
      await until(() => fed.length === 1, 'the run of the other process in the feed', 5_000);
      expect(fed[0]).toMatchObject({ functionName: 'echo', caller: 'cli', args: { from: 'cli' }, ok: true });

      const studioRun = await api.dispatch('runs:start', { name: 'echo', args: { from: 'studio' }, token: 'studio-run' });
      expect(studioRun).toMatchObject({ ok: true });
      await until(() => fed.length === 2, "the studio's own run in the feed", 5_000);
      expect(fed[1]).toMatchObject({ functionName: 'echo', args: { from: 'studio' } });
    } finally {
      off();
      api.close();
    }
    expect(changeFeed(engine.database).running).toBe(false);
  }, 60_000);

  it('keeps working while another process holds the write lock; that process committing no topic is no event', async () => {
    const dir = s.dir('callable-changes-');
    const watcher = engineOn(dir);
    const writer = engineOn(dir);
    const counts = listen(watcher);
    const lock = await holdWriteLock(join(dir, DATABASE_FILE), 10_000, REPO);
    await pause(600);
    expect(changeFeed(watcher.database).running).toBe(true);
    lock.release();
    await lock.released;
    // The holder's commit (a settings row of its own) moved data_version, and no topic.
    await pause(600);
    expect(counts).toEqual({ catalog: 0, credentials: 0, runs: 0, prompts: 0 });
    await writer.saveFunction({ spec: { name: 'after_lock' }, source: 'export default () => 1' });
    await until(() => counts.catalog === 1, 'the catalog event after the lock', 5_000);
  }, 30_000);

  it('skips the reads of a connection closed under it, without throwing, until unsubscribed', async () => {
    const dir = s.dir('callable-changes-');
    engineOn(dir);
    const db = new Database(join(dir, DATABASE_FILE));
    const feed = changeFeed(db);
    const off = feed.subscribe('catalog', () => {});
    db.close();
    // Ticks read a closed connection: each read throws and is skipped (an uncaught one fails this run).
    await pause(600);
    expect(feed.running).toBe(true);
    off();
    expect(feed.running).toBe(false);
  });

  it('runs its timer only while anyone subscribes', async () => {
    const dir = s.dir('callable-changes-');
    const engine = engineOn(dir);
    const feed = changeFeed(engine.database);
    expect(feed.running).toBe(false);

    const offCatalog = engine.onCatalogChange(() => {});
    const offRuns = engine.onRunsRecorded(() => {});
    expect(feed.running).toBe(true);
    offCatalog();
    expect(feed.running).toBe(true);
    offRuns();
    expect(feed.running).toBe(false);

    // A prompt's asker listens while it waits; the studio's watch while it is open.
    const asking = new AbortController();
    const asked = engine.prompts.ask({ kind: 'approval', functionName: 'f', args: {}, message: 'Allow?', waitMs: 20_000, signal: asking.signal });
    expect(feed.running).toBe(true);
    asking.abort();
    await asked;
    expect(feed.running).toBe(false);
    const stopWatch = engine.prompts.watch(() => {});
    expect(feed.running).toBe(true);
    stopWatch();
    expect(feed.running).toBe(false);

    engine.onCredentialsChange(() => {});
    expect(feed.running).toBe(true);
    engine.close();
    expect(feed.running).toBe(false);
  });

  it('never keeps a process alive: one with an engine and subscribers exits on its own', async () => {
    const dir = s.dir('callable-changes-');
    const engineUrl = pathToFileURL(join(REPO, 'src-main/engine/index.ts')).href;
    const script = `
      import { createEngine, MemorySecretStore } from ${JSON.stringify(engineUrl)};
      const engine = createEngine({ dataDir: ${JSON.stringify(dir)}, secrets: new MemorySecretStore() });
      engine.onCatalogChange(() => {});
      engine.prompts.watch(() => {});
      process.stdout.write('watching\\n');`;
    const child = s.child(spawn(process.execPath, ['--no-node-snapshot', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] }));
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(out).toBe('watching\n');
    expect(code).toBe(0);
  });
});
