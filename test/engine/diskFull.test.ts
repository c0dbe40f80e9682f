import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AUDIT_BUFFER_MAX } from '../../src-main/engine/audit/ledger.ts';
import { createEngine, KeychainSecretStore, MemorySecretStore, type Engine, type RunRecord } from '../../src-main/engine/index.ts';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { CALLABLE_COMMAND, REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { cannotMount, faultDir, smallDisk, type SmallDisk } from '../support/fsFaults.ts';
import { untilValue } from '../support/wait.ts';

// A full disk, for real: the data folder lives on a small tmpfs that the test fills to the last
// byte (until ENOSPC). Needs root (mount); skipped, saying why, where mounting is not possible.

const RAW = /SQLITE_|SqliteError|disk I\/O error|internal error|\n\s+at /;
const servers: Client[] = [];
const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((c) => c.close().catch(() => {})));
  for (const e of engines.splice(0)) {
    try {
      e.close();
    } catch {
      // A test may leave runs it could not record; the mount is going away.
    }
  }
});

/** A data folder on a small tmpfs, holding the function `echo`. */
async function dataOnSmallDisk(): Promise<{ disk: SmallDisk; dataDir: string }> {
  const disk = smallDisk('4m');
  const dataDir = join(disk.dir, 'data');
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  try {
    await engine.saveFunction({ spec: { name: 'echo' }, source: 'export default ({ text }) => ({ echo: text })' });
    // No automatic daily backup: it would fail on the full disk too and say so in a line of its own.
    engine.database.prepare("INSERT OR REPLACE INTO settings (key, value) VALUES ('backup_every_days', '0')").run();
  } finally {
    engine.close();
  }
  return { disk, dataDir };
}

function runIds(dataDir: string): string[] {
  const db = new Database(join(dataDir, DATABASE_FILE), { readonly: true });
  try {
    return db.prepare('SELECT id FROM runs ORDER BY rowid').pluck().all() as string[];
  } finally {
    db.close();
  }
}

const fullLine = (dataDir: string): string => `the disk holding ${dataDir} is full (free some space and retry)`;
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe.skipIf(cannotMount !== undefined)(`a full disk (skipped unless a tmpfs can be mounted${cannotMount ? `: ${cannotMount}` : ''})`, () => {
  it('callable mcp keeps serving, says which runs it cannot record, and writes them once there is space', async () => {
    const { disk, dataDir } = await dataOnSmallDisk();
    const transport = new StdioClientTransport({
      command: CALLABLE_COMMAND.command,
      args: [...CALLABLE_COMMAND.args, 'mcp', '--data-dir', dataDir],
      stderr: 'pipe',
      env: process.env as Record<string, string>,
      cwd: REPO,
    });
    let stderr = '';
    transport.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const client = new Client({ name: 'disk-client', version: '1.0.0' });
    await client.connect(transport);
    servers.push(client);
    await client.callTool({ name: 'echo', arguments: { text: 'before' } });
    await untilValue('the first run to be recorded', () => runIds(dataDir).length, (n) => n === 1);

    disk.fill();
    for (const text of ['one', 'two', 'three']) {
      const result = (await client.callTool({ name: 'echo', arguments: { text } })) as { isError?: boolean; content: Array<{ text?: string }> };
      expect(result.content[0]!.text).toBe(JSON.stringify({ echo: text }));
      expect(result.isError ?? false).toBe(false);
    }
    await untilValue('the runs not recorded to be reported', () => stderr, (s) => /3 run\(s\) \(echo\) could not be recorded yet/.test(s));
    // The first report names the runs waiting then: one, or more when they shared a group commit.
    expect(stderr).toMatch(new RegExp(`^callable: [123] run\\(s\\) \\(echo\\) could not be recorded yet: ${escape(fullLine(dataDir))}; they wait in memory \\(at most ${AUDIT_BUFFER_MAX}\\) and are written once it can$`, 'm'));
    expect(stderr).not.toMatch(RAW);
    expect(runIds(dataDir)).toHaveLength(1);
    await client.ping();

    disk.unfill();
    await untilValue('the buffered runs to land', () => runIds(dataDir).length, (n) => n === 4);
    await untilValue('the recovery to be reported', () => stderr, (s) => /recorded 3 run\(s\) that had waited to be written to \S+callable\.db/.test(s));
    // Still serving, and recording at once again.
    await client.callTool({ name: 'echo', arguments: { text: 'after' } });
    await untilValue('the next run to be recorded', () => runIds(dataDir).length, (n) => n === 5);
  }, 60_000);

  it(`keeps at most ${AUDIT_BUFFER_MAX} runs waiting: the oldest are dropped, counted and reported`, async () => {
    const { disk, dataDir } = await dataOnSmallDisk();
    const notices: string[] = [];
    const engine = createEngine({ dataDir, secrets: new MemorySecretStore(), diagnostic: (m) => notices.push(m) });
    engines.push(engine);
    engine.database.pragma('wal_checkpoint(TRUNCATE)');
    disk.fill();
    const run = (i: number): RunRecord => ({ id: `run-${i}`, functionName: 'echo', caller: 'cli', args: { i }, startedAt: new Date().toISOString(), durationMs: 1, ok: true, bytesOut: 2 });
    for (let i = 0; i < AUDIT_BUFFER_MAX + 5; i++) engine.runs.record(run(i));
    await untilValue('the failure to be reported', () => notices, (n) => n.some((m) => m.includes('could not be recorded yet')));
    expect(engine.runs.unwritten).toBe(AUDIT_BUFFER_MAX);
    expect(engine.runs.dropped).toBe(5);
    expect(notices).toContain(`the runs waiting to be recorded in ${join(dataDir, DATABASE_FILE)} fill the buffer (${AUDIT_BUFFER_MAX}): the oldest are being dropped`);
    expect(notices.find((m) => m.includes('could not be recorded yet'))).toBe(
      `${AUDIT_BUFFER_MAX} run(s) (echo, and 5 dropped) could not be recorded yet: ${fullLine(dataDir)}; they wait in memory (at most ${AUDIT_BUFFER_MAX}) and are written once it can`,
    );
    expect(runIds(dataDir)).toEqual([]);

    disk.unfill();
    const ids = await untilValue('the buffered runs to land', () => runIds(dataDir), (r) => r.length > 0);
    expect(ids).toEqual(Array.from({ length: AUDIT_BUFFER_MAX }, (_, i) => `run-${i + 5}`));
    expect(notices.at(-1)).toBe(`recorded ${AUDIT_BUFFER_MAX} run(s) that had waited to be written to ${join(dataDir, DATABASE_FILE)}; 5 older run(s) were dropped (at most ${AUDIT_BUFFER_MAX} wait in memory)`);
    expect(engine.runs.dropped).toBe(0);
  }, 60_000);

  const ENV = { ...process.env, CALLABLE_SECRETS: 'env' };
  const commands = (dataDir: string): Array<[string, string[], string?]> => [
    ['import', ['import', join(REPO, 'resources/examples/word_stats'), '--data-dir', dataDir]],
    ['credentials', ['credentials', 'set', 'vendor', '--host', 'api.example.com', '--data-dir', dataDir], ''],
    ['list', ['list', '--data-dir', dataDir]],
  ];

  it('with nothing else open, import, run, credentials set, list and export each say it in one line and exit 1', async () => {
    const { disk, dataDir } = await dataOnSmallDisk();
    // A data folder elsewhere, to export from.
    const dataDirOff = faultDir('callable-export-from-');
    const from = createEngine({ dataDir: dataDirOff, secrets: new MemorySecretStore() });
    await from.saveFunction({ spec: { name: 'echo' }, source: 'export default ({ text }) => ({ echo: text })' });
    from.close();
    disk.fill();
    for (const [name, argv, stdin] of [...commands(dataDir), ['run', ['run', 'echo', '--args', '{"text":"x"}', '--data-dir', dataDir]] as [string, string[]]]) {
      const result = await cli(argv, { env: ENV, ...(stdin === undefined ? {} : { stdin }) });
      expect(result.stderr.trim().split('\n')).toEqual([`callable ${name}: ${fullLine(dataDir)}`]);
      expect(result.code).toBe(1);
    }
    // Exporting onto that disk: the line names the folder written to.
    const exported = await cli(['export', join(disk.dir, 'out'), '--data-dir', dataDirOff], { env: ENV });
    expect(exported.stderr.trim().split('\n')).toEqual([`callable export: ${fullLine(join(disk.dir, 'out'))}`]);
    expect(exported.code).toBe(1);
    // A new data folder on that disk: the same line, naming it.
    const fresh = join(disk.dir, 'fresh');
    const result = await cli(['import', join(REPO, 'resources/examples/word_stats'), '--data-dir', fresh], { env: ENV });
    expect(result.stderr.trim().split('\n')).toEqual([`callable import: ${fullLine(fresh)}`]);
    expect(result.code).toBe(1);
  }, 60_000);

  /**
   * The test keychain and the folder's keychain accounts (`<installId>:<key>`), while another engine
   * keeps the database open, so opening it needs no new space: a command's own write is what fails.
   * `fill()` checkpoints and fills the disk.
   */
  function keptOpen(disk: SmallDisk, dataDir: string): { keychain: KeychainSecretStore; account: (key: string) => string; fill: () => void } {
    const other = createEngine({ dataDir, secrets: new MemorySecretStore() });
    engines.push(other);
    const fill = (): void => {
      other.database.pragma('wal_checkpoint(TRUNCATE)');
      disk.fill();
    };
    return { keychain: new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!), account: (key) => `${other.installId}:${key}`, fill };
  }

  it('credentials set with a secret on a full disk leaves no secret in the keychain, new or replaced', async () => {
    const { disk, dataDir } = await dataOnSmallDisk();
    const { keychain, account: accountOf, fill } = keptOpen(disk, dataDir);
    const account = (name: string): string => accountOf(`credential:${name}`);
    // A credential saved while there was room: its secret must survive a refused replacement.
    const saved = await cli(['credentials', 'set', 'kept', '--host', 'api.example.com', '--data-dir', dataDir], { stdin: 'first-secret' });
    expect(saved.code).toBe(0);
    fill();
    try {
      for (const [name, secret] of [['fresh', 'never-kept'], ['kept', 'second-secret']] as const) {
        const result = await cli(['credentials', 'set', name, '--host', 'api.example.com', '--data-dir', dataDir], { stdin: secret });
        expect(result.stderr.trim().split('\n')).toEqual([`callable credentials: ${fullLine(dataDir)}; the secret was not kept`]);
        expect(result.code).toBe(1);
      }
      expect(await keychain.get(account('fresh'))).toBeUndefined();
      expect(await keychain.get(account('kept'))).toBe('first-secret');
    } finally {
      disk.unfill();
      await keychain.delete(account('kept')).catch(() => {});
      keychain.dispose?.();
    }
  }, 60_000);

  it('callable token --regenerate on a full disk keeps the token the running servers know in the keychain', async () => {
    const { disk, dataDir } = await dataOnSmallDisk();
    const { keychain, account: accountOf, fill } = keptOpen(disk, dataDir);
    const account = accountOf('mcp:http-token');
    const first = await cli(['token', '--data-dir', dataDir]);
    expect(first.code, first.stderr).toBe(0);
    const token = first.stdout.trim();
    expect(await keychain.get(account)).toBe(token);
    fill();
    try {
      const result = await cli(['token', '--regenerate', '--data-dir', dataDir]);
      expect(result.stderr.trim().split('\n')).toEqual([`callable token: ${fullLine(dataDir)}; the token was not changed`]);
      expect(result.stdout).toBe('');
      expect(result.code).toBe(1);
      expect(await keychain.get(account)).toBe(token);
      expect((await cli(['token', '--data-dir', dataDir])).stdout.trim()).toBe(token);
    } finally {
      disk.unfill();
      await keychain.delete(account).catch(() => {});
      keychain.dispose?.();
    }
  }, 60_000);

  it('while another process has the database open, a write fails with the same line; a run says it ran but was not recorded', async () => {
    const { disk, dataDir } = await dataOnSmallDisk();
    const other = createEngine({ dataDir, secrets: new MemorySecretStore() });
    engines.push(other);
    other.database.pragma('wal_checkpoint(TRUNCATE)');
    disk.fill();
    for (const [name, argv, stdin] of commands(dataDir).filter(([name]) => name !== 'list')) {
      const result = await cli(argv, { env: ENV, ...(stdin === undefined ? {} : { stdin }) });
      expect(result.stderr).not.toMatch(RAW);
      expect(result.stderr.trim().split('\n')).toEqual([`callable ${name}: ${fullLine(dataDir)}`]);
      expect(result.code).toBe(1);
    }
    expect((await cli(['list', '--data-dir', dataDir], { env: ENV })).code).toBe(0);
    const run = await cli(['run', 'echo', '--args', '{"text":"x"}', '--data-dir', dataDir], { env: ENV });
    expect(run.stderr).not.toMatch(RAW);
    expect(JSON.parse(run.stdout)).toEqual({ echo: 'x' });
    // Said once (closing the engine does not repeat it).
    expect(run.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^ok in [\d.]+ ms$/),
      `callable run: echo ran, but the run was not recorded: 1 run(s) (echo) could not be recorded in ${join(dataDir, DATABASE_FILE)}: ${fullLine(dataDir)}`,
    ]);
    expect(run.code).toBe(1);
    expect(runIds(dataDir)).toEqual([]);
  }, 60_000);
});
