import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { CALLABLE_COMMAND, REPO, startServe } from '../support/callable.ts';
import { cli, type CliRun } from '../support/cli.ts';
import { scratch } from '../support/scratch.ts';

// The `callable backup`, `restore` and `retention` commands on real data folders, with real faults:
// a damaged page, a running server holding the folder, a full file system.

const made = scratch();
const WORD_STATS = join(REPO, 'resources/examples/word_stats');
const sha = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex');

function expectOneLine(run: CliRun | { stderr: string }, ...words: string[]): void {
  const lines = run.stderr.trim().split('\n');
  expect(lines, run.stderr).toHaveLength(1);
  expect(run.stderr).not.toMatch(/^\s+at /m);
  for (const w of words) expect(run.stderr).toContain(w);
}

/** A data folder with word_stats imported and run once; automatic backups off unless `automatic`. */
async function folder(automatic = false): Promise<string> {
  const dataDir = join(made.dir('callable-cli-backup-'), 'data');
  expect((await cli(['import', WORD_STATS, '--data-dir', dataDir])).code).toBe(0);
  if (!automatic) expect((await cli(['backup', '--every', '0', '--data-dir', dataDir])).code).toBe(0);
  expect((await cli(['run', 'word_stats', '--args', '{"text":"a b"}', '--data-dir', dataDir])).code).toBe(0);
  return dataDir;
}

const mounts: string[] = [];
afterEach(() => {
  for (const dir of mounts.splice(0)) spawnSync('umount', [dir]);
});

describe('callable backup', () => {
  it('writes a checked backup into backups/, lists it, and prints the command that restores it', async () => {
    const dataDir = await folder();
    const run = await cli(['backup', '--data-dir', dataDir]);
    expect(run.code, run.stderr).toBe(0);
    const [, file] = /^backed up .*callable\.db to (\S+) \(\d+ KiB, checked\)$/m.exec(run.stdout)!;
    expect(file).toMatch(new RegExp(`^${dataDir}/backups/callable-[\\dT-]+Z-manual\\.db$`));
    expect(run.stdout).toContain(`restore it with: callable restore ${file} --data-dir ${dataDir}`);
    const listed = await cli(['backup', '--list', '--data-dir', dataDir]);
    expect(listed.stdout).toContain(`automatic backups are off (callable backup --every 1 turns them on); backups go to ${dataDir}/backups`);
    expect(listed.stdout).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z {2}manual +\\d+ KiB {2}${file}$`, 'm'));
  });

  it('to FILE; a FILE that exists is refused and kept', async () => {
    const dataDir = await folder();
    const elsewhere = made.dir('callable-elsewhere-');
    const run = await cli(['backup', './before-upgrade.db', '--data-dir', dataDir], { cwd: elsewhere });
    expect(run.code, run.stderr).toBe(0);
    const copy = new Database(join(elsewhere, 'before-upgrade.db'), { readonly: true });
    expect(copy.prepare('SELECT name FROM functions').pluck().all()).toEqual(['word_stats']);
    copy.close();
    const again = await cli(['backup', 'before-upgrade.db', '--data-dir', dataDir], { cwd: elsewhere });
    expect(again.code).toBe(2);
    expectOneLine(again, `${join(elsewhere, 'before-upgrade.db')} already exists; choose another FILE`);
    // And back, as the README writes it.
    expect((await cli(['rm', 'word_stats', '--data-dir', dataDir])).code).toBe(0);
    const restored = await cli(['restore', './before-upgrade.db', '--data-dir', dataDir], { cwd: elsewhere });
    expect(restored.code, restored.stderr).toBe(0);
    expect((await cli(['list', '--data-dir', dataDir])).stdout).toMatch(/^word_stats +enabled/);
  });

  it('--every and --keep change the schedule, shown by --list; bad values are refused', async () => {
    const dataDir = await folder(true);
    const set = await cli(['backup', '--every', '7', '--keep', '4', '--data-dir', dataDir]);
    expect(set).toMatchObject({ code: 0, stderr: '' });
    expect(set.stdout).toBe(`an automatic backup when the newest is 7 day(s) old, the newest 4 kept, in ${dataDir}/backups\n`);
    const listed = await cli(['backup', '--list', '--data-dir', dataDir]);
    expect(listed.stdout.split('\n')[0]).toBe(`an automatic backup when the newest is 7 day(s) old, the newest 4 kept, in ${dataDir}/backups`);
    // The run in folder() found no backup and took the first automatic one.
    expect(listed.stdout).toMatch(/ daily +\d+ KiB {2}\S+-daily\.db$/m);
    for (const [argv, message] of [
      [['--every', 'weekly'], '--every must be a whole number from 0 to 365, not "weekly"'],
      [['--keep', '0'], '--keep must be a whole number from 1 to 1000, not "0"'],
      [['x.db', '--list'], 'FILE cannot be combined with --list, --every or --keep'],
      [['a.db', 'b.db'], 'expected at most one FILE, got 2 arguments'],
    ] as const) {
      const run = await cli(['backup', ...argv, '--data-dir', dataDir]);
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(`callable backup: ${message}\nUsage: callable backup [FILE] | backup --list | backup [--every DAYS] [--keep N]\n`);
    }
  });

  it('to a full file system: one line, exit 1, no partial file left', async (t) => {
    const dataDir = await folder();
    // Enough recorded runs that the database outgrows the 256 KiB file system.
    const engine = made.engine(createEngine({ dataDir, secrets: new MemorySecretStore() }));
    for (let i = 0; i < 20; i++) await engine.run('word_stats', { text: `${i} `.padEnd(30_000, 'w ') }, { caller: 'test' });
    engine.close();
    const small = made.dir('callable-full-');
    if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', small]).status !== 0) t.skip(); // needs root (mount)
    mounts.push(small);
    const run = await cli(['backup', join(small, 'copy.db'), '--data-dir', dataDir]);
    expect(run.code).toBe(1);
    expectOneLine(run, `could not write the backup ${join(small, 'copy.db')}: the disk holding ${small} is full (free some space and retry)`);
    expect(readdirSync(small)).toEqual([]);
  });
});

describe('a damaged database, and callable restore', () => {
  /** Garbage over the first bytes of the `functions` b-tree page, as a torn write leaves it. */
  function damageFunctionsPage(dbFile: string): void {
    const db = new Database(dbFile, { readonly: true });
    const root = db.prepare("SELECT rootpage FROM sqlite_schema WHERE name = 'functions'").pluck().get() as number;
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    db.close();
    const bytes = readFileSync(dbFile);
    bytes.fill(0xa5, (root - 1) * pageSize, (root - 1) * pageSize + 64);
    writeFileSync(dbFile, bytes);
  }

  it('is refused at open with the newest backup and the exact restore command, which brings the folder back', async () => {
    const dataDir = await folder();
    const dbFile = join(dataDir, 'callable.db');
    expect((await cli(['backup', '--data-dir', dataDir])).code).toBe(0);
    damageFunctionsPage(dbFile);
    const damaged = sha(dbFile);
    let command = '';
    // `runs` does not read the functions table: the check at open is what stops it.
    for (const argv of [['list'], ['runs'], ['run', 'word_stats']]) {
      const run = await cli([...argv, '--data-dir', dataDir]);
      expect(run.code, argv.join(' ')).toBe(2);
      expectOneLine(run, `${dbFile} is not a usable database (the integrity check of its table functions failed`, 'left untouched', 'restore it from a backup', 'move it aside');
      command = /is restored by: (callable restore .*)$/.exec(run.stderr.trim())![1]!;
    }
    expect(sha(dbFile)).toBe(damaged);
    expect(existsSync(`${dbFile}-wal`)).toBe(false);

    const [, file, dir] = /^callable restore (\S+) --data-dir (\S+)$/.exec(command)!;
    expect(file).toMatch(/-manual\.db$/);
    expect(dir).toBe(dataDir);
    const restored = await cli(command.split(' ').slice(1));
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toMatch(/^restored \S+ into \S+callable\.db: schema \d+, 1 function\(s\), 1 run\(s\)$/m);
    const [, replaced] = /replaced is kept as (\S+)$/m.exec(restored.stdout)!;
    expect(replaced).toMatch(/-replaced\.db$/);
    expect(sha(replaced!)).toBe(damaged);
    expect((await cli(['list', '--data-dir', dataDir])).stdout).toMatch(/^word_stats +enabled/);
    // The damaged file is not offered as the newest backup next time.
    const listed = await cli(['backup', '--list', '--data-dir', dataDir]);
    expect(listed.stdout).toMatch(/ replaced +\d+ KiB/);
  });

  it('a damaged run history does not stop the folder opening, but `callable backup` refuses to keep a copy of it (exit 1)', async () => {
    const dataDir = await folder();
    const db = new Database(join(dataDir, 'callable.db'), { readonly: true });
    const root = db.prepare("SELECT rootpage FROM sqlite_schema WHERE name = 'runs'").pluck().get() as number;
    db.close();
    const bytes = readFileSync(join(dataDir, 'callable.db'));
    bytes.fill(0xa5, (root - 1) * 4096, (root - 1) * 4096 + 64);
    writeFileSync(join(dataDir, 'callable.db'), bytes);
    expect((await cli(['list', '--data-dir', dataDir])).code).toBe(0);
    const run = await cli(['backup', '--data-dir', dataDir]);
    expect(run.code).toBe(1);
    expectOneLine(run, `the database ${join(dataDir, 'callable.db')} is damaged (quick_check:`, 'the backup was not kept');
    expect(readdirSync(join(dataDir, 'backups'))).toEqual([]);
  });

  it('with no backup at all, the message says so and shows the command for a copy kept elsewhere', async () => {
    const dataDir = await folder();
    damageFunctionsPage(join(dataDir, 'callable.db'));
    const run = await cli(['list', '--data-dir', dataDir]);
    expect(run.code).toBe(2);
    expectOneLine(run, `There is no backup in ${dataDir}/backups; one you kept elsewhere is restored by: callable restore FILE --data-dir ${dataDir}`);
  });

  it('is refused while a server has the folder open, then works once it stopped', async () => {
    const dataDir = await folder();
    const dbFile = join(dataDir, 'callable.db');
    const backup = join(made.dir('callable-keep-'), 'keep.db');
    expect((await cli(['backup', backup, '--data-dir', dataDir])).code).toBe(0);
    const server = await startServe(dataDir, ['--no-auth']);
    made.child(server.child);
    const before = sha(dbFile);
    const refused = await cli(['restore', backup, '--data-dir', dataDir]);
    expect(refused.code).toBe(1);
    expectOneLine(refused, `the data folder ${dataDir} is in use`, 'stop it, then restore again (nothing was replaced)');
    expect(sha(dbFile)).toBe(before);
    await server.stop();
    const run = await cli(['restore', backup, '--data-dir', dataDir]);
    expect(run.code, run.stderr).toBe(0);
  });

  it('refuses a file that is not a Callable Studio database, in one line, exit 2', async () => {
    const dataDir = await folder();
    const notes = join(made.dir('callable-notes-'), 'notes.txt');
    writeFileSync(notes, 'hello\n'.repeat(100));
    for (const [file, why] of [
      [notes, `${notes} cannot be restored: it is not a usable database`],
      [join(dataDir, 'nope.db'), `cannot read the backup ${join(dataDir, 'nope.db')} (ENOENT: no such file or directory)`],
    ] as const) {
      const run = await cli(['restore', file, '--data-dir', dataDir]);
      expect(run.code).toBe(2);
      expectOneLine(run, why);
    }
    const usage = await cli(['restore', '--data-dir', dataDir]);
    expect(usage.code).toBe(2);
  });

  it('fills a new data folder (one level), and the command run from a shell works as a process', async () => {
    const dataDir = await folder();
    const backup = join(made.dir('callable-keep-'), 'keep.db');
    expect((await cli(['backup', backup, '--data-dir', dataDir])).code).toBe(0);
    const fresh = join(made.dir('callable-new-'), 'data');
    const run = spawnSync(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'restore', backup, '--data-dir', fresh], { encoding: 'utf8', timeout: 15_000 });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toBe(`callable: created the data folder ${fresh}\n`);
    expect(run.stdout).not.toContain('replaced');
    expect((await cli(['list', '--data-dir', fresh])).stdout).toMatch(/^word_stats/);
    const deep = join(made.dir('callable-new-'), 'a', 'b');
    const refused = await cli(['restore', backup, '--data-dir', deep]);
    expect(refused.code).toBe(2);
    expectOneLine(refused, `cannot create the data folder ${deep} (ENOENT)`);
    expect(existsSync(join(deep, '..'))).toBe(false);
    // A restore refused for its FILE leaves no new data folder behind.
    const unborn = join(made.dir('callable-new-'), 'data');
    const missing = await cli(['restore', join(unborn, 'no-such.db'), '--data-dir', unborn]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).not.toContain('created the data folder');
    expect(existsSync(unborn)).toBe(false);
  });
});

describe('the help', () => {
  it('lists backup, restore and retention', async () => {
    const help = await cli(['--help']);
    for (const usage of ['backup [FILE] | backup --list | backup [--every DAYS] [--keep N]', 'restore FILE', 'retention [--days N] [--max-mib N]']) expect(help.stdout).toContain(`  ${usage}\n`);
  });

  it('a value the option parser refuses (a negative number) is one line and the usage', async () => {
    const dataDir = await folder();
    const run = await cli(['retention', '--days', '-3', '--data-dir', dataDir]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^callable retention: Option '--days' argument is ambiguous\. .*'--days=-XYZ'\.$/), 'Usage: callable retention [--days N] [--max-mib N]']);
  });
});
