import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  backupDataFolder,
  KEEP_DEFAULTS,
  KEEP_LIMITS,
  listDataFolderBackups,
  readKeepSettings,
  restoreDataFolder,
  StudioError,
  writeKeepSettings,
  type KeepSettings,
} from '../engine/index.ts';
import { EXIT_OK, parse, UsageError, type Command, type CommandContext } from './common.ts';

const backup: Command = {
  usage: 'backup [FILE] | backup --list | backup [--every DAYS] [--keep N]',
  summary:
    "Backs up the database with SQLite's online backup (safe while servers and the studio run), checked in full, into the data folder's backups/ or to FILE. --list shows the backups and the schedule; --every and --keep change the automatic backups.",
  options: [
    ['FILE', 'where to write the backup (a file that exists is refused); default: a new file in <data folder>/backups/'],
    ['--list', 'the backups of this data folder, newest first, and the schedule of the automatic ones'],
    ['--every DAYS', `an automatic backup when the newest backup is DAYS days old (default ${KEEP_DEFAULTS.backupEveryDays}; 0 turns them off)`],
    ['--keep N', `how many automatic backups to keep (default ${KEEP_DEFAULTS.backupKeep}); the ones you take, and those taken before an upgrade or a restore, are never deleted`],
  ],
  examples: ['callable backup', 'callable backup ./before-upgrade.db', 'callable backup --list', 'callable backup --every 7 --keep 4'],
  async run(ctx) {
    const { values, positionals } = parseArgs({
      args: ctx.args,
      options: { list: { type: 'boolean' }, every: { type: 'string' }, keep: { type: 'string' } },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length > 1) throw new UsageError(`expected at most one FILE, got ${positionals.length} arguments`);
    const file = positionals[0];
    const schedule = values.every !== undefined || values.keep !== undefined;
    if (file !== undefined && (values.list || schedule)) throw new UsageError('FILE cannot be combined with --list, --every or --keep');
    const engine = ctx.engine();
    if (schedule) {
      const changes: Partial<KeepSettings> = {};
      if (values.every !== undefined) changes.backupEveryDays = wholeNumber(values.every, '--every', KEEP_LIMITS.backupEveryDays);
      if (values.keep !== undefined) changes.backupKeep = wholeNumber(values.keep, '--keep', KEEP_LIMITS.backupKeep);
      const settings = writeKeepSettings(engine.database, changes);
      ctx.out(describeSchedule(settings, ctx));
      if (!values.list) return EXIT_OK;
    }
    if (values.list) {
      if (!schedule) ctx.out(describeSchedule(readKeepSettings(engine.database), ctx));
      const backups = listDataFolderBackups(ctx.dataDir);
      if (backups.length === 0) ctx.out(`No backups yet. Take one: ${ctx.callable} backup`);
      for (const b of backups) ctx.out(`${b.takenAt}  ${b.kind.padEnd(13)}  ${size(b.bytes).padStart(9)}  ${b.file}`);
      return EXIT_OK;
    }
    const made = await backupDataFolder(engine.database, ctx.dataDir, file === undefined ? undefined : resolve(ctx.io.cwd, file));
    ctx.out(`backed up ${join(ctx.dataDir, 'callable.db')} to ${made.file} (${size(made.bytes)}, checked)`);
    ctx.out(`restore it with: ${ctx.callable} restore ${made.file}${dataDirFlag(ctx)}`);
    return EXIT_OK;
  },
};

const restore: Command = {
  usage: 'restore FILE',
  summary:
    "Replaces the data folder's database with the backup FILE. FILE is checked in full first (integrity, a Callable Studio schema this version knows); the database it replaces is moved, as it was, into <data folder>/backups/. Refused while another process (callable mcp or serve, the studio) has the folder open.",
  options: [['FILE', 'a backup: one from "callable backup --list", or a file "callable backup FILE" wrote']],
  examples: ['callable backup --list', 'callable restore ./before-upgrade.db'],
  async run(ctx) {
    const { positionals } = parse(ctx.args, {}, 1);
    const created = ensureFolder(ctx);
    // The engine is not opened: the database must not be open while it is replaced.
    let result: ReturnType<typeof restoreDataFolder>;
    try {
      result = restoreDataFolder(ctx.dataDir, resolve(ctx.io.cwd, positionals[0]!));
    } catch (error) {
      // A refused restore leaves no trace: a folder made for it (empty but for what the restore put there) goes again.
      if (created) rmSync(ctx.dataDir, { recursive: true, force: true });
      throw error;
    }
    if (created) ctx.err(`callable: created the data folder ${ctx.dataDir}`);
    ctx.out(`restored ${resolve(ctx.io.cwd, positionals[0]!)} into ${join(ctx.dataDir, 'callable.db')}: schema ${result.schema}, ${result.functions} function(s), ${result.runs} run(s)`);
    if (result.replaced !== undefined) ctx.out(`the database it replaced is kept as ${result.replaced}`);
    return EXIT_OK;
  },
};

const retention: Command = {
  usage: 'retention [--days N] [--max-mib N]',
  summary:
    'Shows or changes how long run records keep their bodies (the arguments). Each run keeps its row (function, time, outcome, duration, caller) for good; a body is kept whole while it is younger than --days and among the newest --max-mib MiB of bodies, and past that a body over 1 KiB becomes a summary (its size, SHA-256 and first 256 characters).',
  options: [
    ['--days N', `keep bodies whole for N days (default ${KEEP_DEFAULTS.runsDays})`],
    ['--max-mib N', `keep at most N MiB of whole bodies, the newest (default ${KEEP_DEFAULTS.runsMib})`],
  ],
  examples: ['callable retention', 'callable retention --days 7 --max-mib 50'],
  async run(ctx) {
    const { values } = parse(ctx.args, { days: { type: 'string' }, 'max-mib': { type: 'string' } }, 0);
    const engine = ctx.engine();
    const changes: Partial<KeepSettings> = {};
    if (values.days !== undefined) changes.runsDays = wholeNumber(values.days, '--days', KEEP_LIMITS.runsDays);
    if (values['max-mib'] !== undefined) changes.runsMib = wholeNumber(values['max-mib'], '--max-mib', KEEP_LIMITS.runsMib);
    const settings = Object.keys(changes).length > 0 ? writeKeepSettings(engine.database, changes) : readKeepSettings(engine.database);
    ctx.out(
      `run bodies are kept whole for ${settings.runsDays} day(s), at most the newest ${settings.runsMib} MiB of them; older ones over 1 KiB are summarised (every run's row is kept)`,
    );
    return EXIT_OK;
  },
};

export const commands: Record<string, Command> = { backup, restore, retention };

function describeSchedule(settings: KeepSettings, ctx: CommandContext): string {
  if (settings.backupEveryDays === 0) return `automatic backups are off (${ctx.callable} backup --every 1 turns them on); backups go to ${join(ctx.dataDir, 'backups')}`;
  return `an automatic backup when the newest is ${settings.backupEveryDays} day(s) old, the newest ${settings.backupKeep} kept, in ${join(ctx.dataDir, 'backups')}`;
}

function wholeNumber(text: string, flag: string, { min, max }: { min: number; max: number }): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isInteger(n) || n < min || n > max) throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, not "${text}"`);
  return n;
}

function size(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${Math.max(1, Math.round(bytes / 1024))} KiB`;
}

/** ` --data-dir DIR` when it was given (a restore command printed for later must name the folder). */
function dataDirFlag(ctx: CommandContext): string {
  return ` --data-dir ${/^[\w@%+=:,./-]+$/.test(ctx.dataDir) ? ctx.dataDir : `'${ctx.dataDir.replace(/'/g, `'\\''`)}'`}`;
}

/** Restore may fill a new data folder (one level: a mistyped parent is not created); true when it made it. */
function ensureFolder(ctx: CommandContext): boolean {
  try {
    if (statSync(ctx.dataDir).isDirectory()) return false;
    throw new StudioError('bad_input', `cannot use the data folder: ${ctx.dataDir} is a file, not a folder; choose another data folder (--data-dir or CALLABLE_DATA_DIR)`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  try {
    mkdirSync(ctx.dataDir);
  } catch (error) {
    throw new StudioError('bad_input', `cannot create the data folder ${ctx.dataDir} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); create its parent first, or choose another data folder`);
  }
  return true;
}
