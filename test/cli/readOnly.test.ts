import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { CALLABLE_COMMAND, REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { cannotMount, faultDir, immutable, readOnlyView } from '../support/fsFaults.ts';
import { until } from '../support/wait.ts';
import { folderWithEcho } from '../support/engine.ts';

// A read-only data folder or database, made so for real: `chattr +i` (root ignores chmod) or a
// read-only bind mount. Every command, servers included, refuses at start with one line that names
// the path and the fix, exit 2, before anything runs: a run that could not be recorded never starts.

const ENV = { ...process.env, CALLABLE_SECRETS: 'env' };
const RAW = /SQLITE_|SqliteError|unable to open database file|internal error|\n\s+at /;

/** A data folder holding the function `echo`, closed cleanly (no -wal or -shm left). */
function dataFolder(): Promise<string> {
  return folderWithEcho(faultDir('callable-readonly-'));
}

/** The commands tried on each read-only folder: readers and writers alike. */
function commands(dataDir: string): Array<{ name: string; argv: string[]; stdin?: string }> {
  return [
    { name: 'list', argv: ['list', '--data-dir', dataDir] },
    { name: 'runs', argv: ['runs', '--data-dir', dataDir] },
    { name: 'import', argv: ['import', join(REPO, 'resources/examples/word_stats'), '--data-dir', dataDir] },
    { name: 'run', argv: ['run', 'echo', '--args', '{"text":"x"}', '--data-dir', dataDir] },
    { name: 'credentials', argv: ['credentials', 'set', 'vendor', '--host', 'api.example.com', '--data-dir', dataDir], stdin: '' },
  ];
}

async function expectRefused(dataDir: string, line: RegExp): Promise<void> {
  for (const { name, argv, stdin } of commands(dataDir)) {
    const result = await cli(argv, { env: ENV, ...(stdin === undefined ? {} : { stdin }) });
    expect(result.stderr).not.toMatch(RAW);
    expect(result.stderr.trim().split('\n'), name).toEqual([expect.stringMatching(new RegExp(`^callable ${name}: ${line.source}$`))]);
    expect(result.stdout).toBe('');
    expect(result.code, name).toBe(2);
  }
}

/** A real `callable mcp` (or `serve`): refused at start, it exits 2 with one line instead of serving. */
function server(dataDir: string, command: 'mcp' | 'serve'): Promise<{ code: number | null; stderr: string }> {
  const extra = command === 'serve' ? ['--port', '0'] : [];
  const child = spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, command, ...extra, '--data-dir', dataDir], { stdio: ['pipe', 'pipe', 'pipe'], env: ENV });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stderr });
    }),
  );
}

async function expectServersRefused(dataDir: string, line: RegExp): Promise<void> {
  for (const command of ['mcp', 'serve'] as const) {
    const refused = await server(dataDir, command);
    expect(refused.stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^callable ${command}: ${line.source}$`))]);
    expect(refused.code).toBe(2);
  }
}

const esc = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe.skipIf(cannotMount !== undefined)(`a read-only data folder (skipped unless root with mount and chattr${cannotMount ? `: ${cannotMount}` : ''})`, () => {
  it('the database file made immutable: every command names it in one line and exits 2', async () => {
    const dataDir = await dataFolder();
    const file = join(dataDir, DATABASE_FILE);
    immutable(file);
    const line = new RegExp(`the database ${esc(file)} is read-only \\(EPERM\\), and every run is recorded in it; make it writable \\(chmod u\\+w, chattr -i\\) or choose another data folder \\(--data-dir or CALLABLE_DATA_DIR\\)`);
    await expectRefused(dataDir, line);
    await expectServersRefused(dataDir, line);
  }, 60_000);

  it('the folder made immutable (the database itself writable): one line naming the folder, not "unable to open database file"', async () => {
    const dataDir = await dataFolder();
    immutable(dataDir);
    const line = new RegExp(
      `cannot open ${esc(join(dataDir, DATABASE_FILE))} for writing: the data folder ${esc(dataDir)} is read-only \\(EPERM\\), and the database creates its -wal and -shm files there; make the folder writable \\(chattr -i, remount rw\\) or choose another data folder \\(--data-dir or CALLABLE_DATA_DIR\\)`,
    );
    await expectRefused(dataDir, line);
    await expectServersRefused(dataDir, line);
  }, 60_000);

  it('a read-only mount of the folder: every command and the server name the database in one line and exit 2', async () => {
    const view = readOnlyView(await dataFolder());
    const line = new RegExp(`the database ${esc(join(view, DATABASE_FILE))} is read-only \\(EROFS\\), and every run is recorded in it; make it writable \\(chmod u\\+w, chattr -i\\) or choose another data folder \\(--data-dir or CALLABLE_DATA_DIR\\)`);
    await expectRefused(view, line);
    await expectServersRefused(view, line);
  }, 60_000);

  it('a file made read-only under a running engine: runs go on, the runs not recorded are reported with the path, and they land once it is writable again', async () => {
    const dataDir = await dataFolder();
    const notices: string[] = [];
    const engine = createEngine({ dataDir, secrets: new MemorySecretStore(), diagnostic: (m) => notices.push(m) });
    // After the test's own assertions have been reported, and after fsFaults made the file writable again.
    onTestFinished(() => engine.close());
    expect((await engine.run('echo', { text: 'a' }, { caller: 'cli' })).ok).toBe(true);
    engine.runs.flush();
    // The next write must append to an empty -wal, which is then made immutable.
    engine.database.pragma('wal_checkpoint(TRUNCATE)');
    const wal = join(dataDir, `${DATABASE_FILE}-wal`);
    immutable(wal);
    for (const text of ['b', 'c']) expect((await engine.run('echo', { text }, { caller: 'cli' })).ok).toBe(true);
    // What the user reads: each notice names the file and the fix, and by the last one every run
    // not recorded has been counted (runs written together may share a notice).
    const waiting = /^(\d+) run\(s\) \(echo\) could not be recorded yet: (.*)$/;
    await until(() => notices.some((m) => m.startsWith('2 run(s) (echo) could not be recorded yet')), `both waiting runs to be reported (notices: ${JSON.stringify(notices)})`);
    const reported = notices.map((m) => waiting.exec(m));
    expect(reported.every(Boolean), JSON.stringify(notices)).toBe(true);
    for (const m of reported) {
      expect(m![2]).toBe(`${wal} has become read-only (EPERM); make the data folder and its files writable again (remount rw, chattr -i); they wait in memory (at most 1000) and are written once it can`);
    }
    expect(engine.runs.list().map((r) => r.args)).toEqual([{ text: 'a' }]);

    spawnSync('chattr', ['-i', wal]);
    await until(() => engine.runs.unwritten === 0, 'the waiting runs to be written');
    expect(engine.runs.list().map((r) => r.args)).toEqual([{ text: 'c' }, { text: 'b' }, { text: 'a' }]);
    expect(notices.at(-1)).toBe(`recorded 2 run(s) that had waited to be written to ${join(dataDir, DATABASE_FILE)}`);
  }, 60_000);
});

