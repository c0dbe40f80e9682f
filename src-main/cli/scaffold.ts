import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  credentialCommand,
  defaultDataDir,
  harEntries,
  listOperations,
  loadOpenApi,
  StudioError,
  type FunctionRecord,
  type ScaffoldResult,
  type ScaffoldSource,
} from '../engine/index.ts';
import { EXIT_OK, UsageError, withCommand, type CommandContext } from './common.ts';

/** The flags of `callable new` that start a function from a request instead of a template. */
export const FROM_FLAGS = ['--from-curl', '--from-har', '--from-openapi'] as const;

/** The largest HAR file read (a browser session saved whole can be large; one entry is used). */
export const MAX_HAR_BYTES = 100 * 1024 * 1024;

/** Does this `callable new` command line start from curl, HAR or OpenAPI? */
export function wantsScaffold(args: readonly string[]): boolean {
  return args.some((a) => FROM_FLAGS.some((f) => a === f || a.startsWith(`${f}=`)));
}

/** `callable new NAME --from-curl … | --from-har FILE [--entry N] | --from-openapi SPEC (--operation ID | --all) [--server URL]`. */
export async function newFromRequest(ctx: CommandContext, printUngranted: (ctx: CommandContext, records: FunctionRecord[]) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: ctx.args,
    options: {
      'from-curl': { type: 'string' },
      'from-har': { type: 'string' },
      entry: { type: 'string' },
      'from-openapi': { type: 'string' },
      operation: { type: 'string' },
      all: { type: 'boolean' },
      server: { type: 'string' },
      template: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const given = (['from-curl', 'from-har', 'from-openapi'] as const).filter((f) => values[f] !== undefined);
  if (given.length > 1) throw new UsageError(`give one of --${given.join(', --')}, not several`);
  if (values.template !== undefined) throw new UsageError(`--template and --${given[0]} start a function from different things; give one`);
  const from = given[0]!;
  if (values.entry !== undefined && from !== 'from-har') throw new UsageError('--entry chooses an entry of a HAR file: it goes with --from-har');
  for (const flag of ['operation', 'all', 'server'] as const) if (values[flag] !== undefined && from !== 'from-openapi') throw new UsageError(`--${flag} goes with --from-openapi`);

  if (values.all) {
    if (values.operation !== undefined) throw new UsageError('--all lists the operations; --operation picks one: give one of them');
    if (positionals.length > 0) throw new UsageError(`--all lists the operations and creates nothing: leave out "${positionals[0]}"`);
    const spec = resolve(ctx.io.cwd, values['from-openapi']!);
    const ops = listOperations(await loadOpenApi(spec, values['from-openapi']!));
    if (ops.length === 0) throw new StudioError('bad_input', `${values['from-openapi']} has no operations (its "paths" is empty)`);
    const idWidth = Math.min(40, Math.max(...ops.map((o) => o.id.length)));
    const lineWidth = Math.min(50, Math.max(...ops.map((o) => o.method.length + 1 + o.path.length)));
    for (const o of ops) ctx.out(`${o.id.padEnd(idWidth)}  ${`${o.method} ${o.path}`.padEnd(lineWidth)}  ${o.summary}`.trimEnd());
    ctx.out(`\n${ops.length} operation${ops.length === 1 ? '' : 's'}; create one: ${ctx.callable} new NAME --from-openapi ${shellQuote(values['from-openapi']!)} --operation ID`);
    return EXIT_OK;
  }
  if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'give the new function a NAME' : `expected 1 argument (NAME), got ${positionals.length}`);
  const name = positionals[0]!;

  let source: ScaffoldSource;
  let what: string;
  if (from === 'from-curl') {
    const command = values['from-curl'] === '-' ? await readStdin(ctx) : values['from-curl']!;
    if (command.trim() === '') throw new UsageError('--from-curl is empty: give the curl command in quotes, or - to read it from standard input');
    source = { kind: 'curl', command };
    what = 'the curl command';
  } else if (from === 'from-har') {
    const file = resolve(ctx.io.cwd, values['from-har']!);
    const text = readTextFile(file, values['from-har']!, 'HAR file');
    const entry = values.entry === undefined ? undefined : positiveInteger(values.entry, '--entry');
    if (entry === undefined) {
      const entries = harEntries(text, values['from-har']!);
      if (entries.length > 1) {
        for (const e of entries) ctx.out(`${String(e.entry).padStart(String(entries.length).length)}  ${e.method} ${e.url.length > 100 ? `${e.url.slice(0, 99)}…` : e.url}  ${e.status || '-'}`);
        throw new StudioError('bad_input', `${values['from-har']} has ${entries.length} entries (listed above); choose one with --entry N`);
      }
    }
    source = { kind: 'har', text, file: values['from-har']!, ...(entry !== undefined ? { entry } : {}) };
    what = `the HAR file ${values['from-har']}${entry !== undefined ? ` (entry ${entry})` : ''}`;
  } else {
    if (values.operation === undefined) throw new UsageError(`--from-openapi needs --operation ID (callable new --from-openapi ${shellQuote(values['from-openapi']!)} --all lists them)`);
    source = { kind: 'openapi', file: resolve(ctx.io.cwd, values['from-openapi']!), shown: values['from-openapi']!, operation: values.operation, ...(values.server !== undefined ? { server: values.server } : {}) };
    what = `the operation ${values.operation} of ${values['from-openapi']}`;
  }

  const engine = ctx.engine();
  const { record, scaffold, testCase } = await engine.createFromRequest(name, source).catch((error: unknown) => {
    // The engine names some of the spec's operations; here, the command that lists them all.
    if (source.kind === 'openapi' && error instanceof StudioError && error.code === 'not_found' && error.details?.operation !== undefined) {
      throw new StudioError('not_found', `${error.message} (callable new --from-openapi ${shellQuote(values['from-openapi']!)} --all lists them)`, error.details);
    }
    throw error;
  });
  const dataDir = dataDirFlag(ctx);
  const request = /^\/\/ Made by callable new from [^:]+: (.*)$/m.exec(record.source)?.[1] ?? '';
  ctx.out(`created ${name} from ${what} (revision ${record.revision}): ${request}`);
  for (const note of scaffold.notes) ctx.out(`note: ${withCommand(note, ctx.callable)}`);
  const credential = scaffold.credential;
  const runNext = `${ctx.callable} run ${name} --args ${shellQuote(JSON.stringify(runArgs(record, scaffold)))}${dataDir}`;
  if (credential?.oauth && engine.credentials.oauth.status(credential.name)?.state === 'not_connected') {
    ctx.out(`it needs an OAuth account (${credential.from}): the credential ${credential.name} is defined with its server, scopes and hosts (${credential.hosts.join(', ')}); connect it once, then run it: ${runNext}`);
    printUngranted(ctx, [record]);
    ctx.out(`next: ${withCommand(credentialCommand(credential, dataDir), ctx.callable)}`);
    return EXIT_OK;
  }
  if (credential) {
    const stored = engine.credentials.find(credential.name);
    if (stored) ctx.out(`it uses your credential ${credential.name} (for ${stored.hosts.join(', ')}), which already exists`);
    else {
      ctx.out(
        source.kind === 'openapi'
          ? `it needs a secret (${credential.from}): store it once as the credential ${credential.name}; the command reads it from standard input:`
          : `the secret (${credential.from}) was not saved anywhere. Store it once as the credential ${credential.name}; the command reads it from standard input:`,
      );
      ctx.out(`  ${withCommand(credentialCommand(credential, dataDir), ctx.callable)}`);
      if (credential.basic) ctx.out('  (USER:PASSWORD is what curl -u takes, e.g. "sk_test_…:" with an empty password)');
    }
    printUngranted(ctx, [record]);
  }
  if (testCase) ctx.out(`saved the entry's response as the test case "${testCase}": ${ctx.callable} test ${name}${dataDir}`);
  ctx.out(`next: ${runNext}`);
  return EXIT_OK;
}

/** The values the request sent, and a placeholder of its type for each other required argument. */
function runArgs(record: FunctionRecord, scaffold: ScaffoldResult): Record<string, unknown> {
  const schema = record.inputSchema as { properties?: Record<string, { type?: unknown }>; required?: string[] };
  const args: Record<string, unknown> = { ...scaffold.exampleArgs };
  for (const key of schema.required ?? []) {
    if (key in args) continue;
    const type = schema.properties?.[key]?.type;
    args[key] = type === 'integer' || type === 'number' ? 1 : type === 'boolean' ? true : type === 'array' ? [] : type === 'object' ? {} : 'text';
  }
  return args;
}

function readTextFile(path: string, shown: string, what: string): string {
  try {
    const size = statSync(path).size;
    if (size > MAX_HAR_BYTES) throw new StudioError('bad_input', `the ${what} ${shown} is ${Math.round(size / 1024 / 1024)} MiB, over the ${MAX_HAR_BYTES / 1024 / 1024} MiB read; save only the requests you need`);
    return readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof StudioError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new StudioError('bad_input', `cannot read the ${what} ${shown}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a folder' : (code ?? (error as Error).message)}`);
  }
}

async function readStdin(ctx: CommandContext): Promise<string> {
  if (ctx.io.stdin.isTTY) ctx.err('Paste the curl command, then Ctrl-D:');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.io.stdin) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += b.length;
    if (size > 1024 * 1024) throw new StudioError('bad_input', 'standard input holds over 1 MiB: give the curl command only');
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function positiveInteger(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a positive whole number`);
  return n;
}

/** ` --data-dir DIR` when the data folder is not the one the printed command would use anyway. */
function dataDirFlag(ctx: CommandContext): string {
  return ctx.dataDir === resolve(ctx.io.cwd, defaultDataDir(ctx.io.env)) ? '' : ` --data-dir ${shellQuote(ctx.dataDir)}`;
}

function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
