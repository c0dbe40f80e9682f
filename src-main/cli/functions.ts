import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { canonicalSpecJson, defaultDataDir, shellQuote, specOf, type FunctionSpec, type RevisionRecord } from '../engine/index.ts';
import { EXIT_OK, parse, UsageError, type Command, type CommandContext } from './common.ts';
import { newFromRequest, wantsScaffold } from './scaffold.ts';
import { packageLines, packagesJson } from './packages.ts';

/** The templates `callable new` copies: the same folders the studio's "New from template" offers. */
export const TEMPLATES_DIR = fileURLToPath(new URL('../../resources/examples', import.meta.url));
/** Pure computation, no network and no credential: runs as soon as it is created. */
export const DEFAULT_TEMPLATE = 'word_stats';

const newCommand: Command = {
  usage: "new NAME [--template T | --from-curl 'curl …' | --from-har FILE [--entry N] | --from-openapi SPEC --operation ID [--server URL]] | new --from-openapi SPEC --all",
  createsDataDir: (args) => !args.includes('--all'),
  summary: `Creates the function NAME from a template (a folder of resources/examples), ready to run. The default, ${DEFAULT_TEMPLATE}, is pure computation: no network, no credential. Or from a request you already have: a curl command, a browser HAR entry (its response becomes the first test case) or an OpenAPI operation; the request's secret is never saved: it prints the "callable credentials set" command that stores it.`,
  options: [
    ['NAME', 'the new function (a-z, 0-9 and _, starting with a letter); an existing name is refused'],
    ['--template T', `the template: deepl_translate, ocr_image, replicate_image or word_stats (default ${DEFAULT_TEMPLATE})`],
    ['--from-curl CMD', 'a curl command (quoted; - reads it from standard input): its query, JSON and form values become arguments'],
    ['--from-har FILE', 'a HAR file saved by the browser; with several entries give --entry N (the entries are listed when it is missing)'],
    ['--entry N', 'the entry of the HAR file, from 1'],
    ['--operation ID', 'with --from-openapi: the operation, by operationId or "METHOD /path"'],
    ['--from-openapi SPEC', 'an OpenAPI 3 spec (JSON or YAML file): the function calls one of its operations'],
    ['--all', 'with --from-openapi: lists the operations (id, method, path, summary) and creates nothing'],
    ['--server URL', "with --from-openapi: the API's base URL instead of the spec's first server"],
  ],
  examples: [
    'callable new my_stats',
    'callable new my_translate --template deepl_translate',
    `callable new list_issues --from-curl 'curl -H "Authorization: Bearer $GITHUB_TOKEN" "https://api.github.com/repos/OWNER/REPO/issues?state=open"'`,
    'callable new get_pet --from-openapi petstore.yaml --operation getPetById',
  ],
  async run(ctx) {
    if (wantsScaffold(ctx.args)) return newFromRequest(ctx, printUngranted);
    const { positionals, values } = parse(ctx.args, { template: { type: 'string' } }, 1);
    const name = positionals[0]!;
    const template = values.template ?? DEFAULT_TEMPLATE;
    const record = await ctx.engine().createFromTemplate(TEMPLATES_DIR, template, name);
    const dataDir = dataDirFlag(ctx);
    ctx.out(`created ${name} from the template ${template} (revision ${record.revision})`);
    if (record.credentials.length > 0) {
      ctx.out(`first: it uses the credential${record.credentials.length > 1 ? 's' : ''} ${record.credentials.join(', ')}; store ${record.credentials.length > 1 ? 'them' : 'it'} once (${ctx.callable} credentials --help)`);
      printUngranted(ctx, [record]);
    }
    ctx.out(`next: ${ctx.callable} run ${name} --args ${shellQuote(JSON.stringify(exampleArgs(specOf(record))))}${dataDir}`);
    const pad = ' '.repeat('next: '.length);
    ctx.out(`${pad}${ctx.callable} show ${name}${dataDir}    (its source and settings; edit: ${ctx.callable} export DIR --name ${name}, then ${ctx.callable} import DIR/${name})`);
    return EXIT_OK;
  },
};

const show: Command = {
  usage: 'show NAME [--revision N] [--json]',
  summary: 'Prints a function: its settings (as function.json) and its source, as now or as of an earlier revision; for the current revision also its npm packages, each as asked for and the exact version locked, with the bundle size.',
  options: [
    ['--revision N', 'as it was at revision N ("callable history NAME" lists them)'],
    ['--json', 'revision, date, settings and source as one JSON document'],
  ],
  examples: ['callable show word_stats', 'callable show word_stats --revision 1'],
  async run(ctx) {
    const { positionals, values } = parse(ctx.args, { revision: { type: 'string' }, json: { type: 'boolean' } }, 1);
    const name = positionals[0]!;
    const functions = ctx.engine().functions;
    const current = functions.get(name);
    const wanted = values.revision === undefined ? current.revision : positiveInteger(values.revision, '--revision');
    const shown = functions.revision(name, wanted);
    // A revision keeps the name it was saved under; a function renamed since is shown by its name now.
    const spec: FunctionSpec = { ...shown.spec, name };
    if (values.json) {
      const packages = shown.revision === current.revision ? { packages: packagesJson(ctx.engine(), name) } : {};
      ctx.out(JSON.stringify({ name, revision: shown.revision, current: shown.revision === current.revision, savedAt: shown.createdAt, spec, source: shown.source, ...packages }, null, 2));
      return EXIT_OK;
    }
    const which = shown.revision === current.revision ? 'the current one' : `the current one is ${current.revision}`;
    ctx.out(`${name}: revision ${shown.revision} (${which}), saved ${shown.createdAt}`);
    ctx.out(`--- function.json ---\n${canonicalSpecJson(spec).trimEnd()}`);
    ctx.out(`--- index.${spec.language} ---\n${shown.source.trimEnd()}`);
    if (shown.revision === current.revision) for (const line of packageLines(ctx.engine(), name)) ctx.out(line);
    return EXIT_OK;
  },
};

const history: Command = {
  usage: 'history NAME [--json]',
  summary: 'Lists the revisions of a function, newest first: number, date and what changed. "callable show NAME --revision N" prints one.',
  options: [['--json', 'the revisions as JSON (number, date, what changed)']],
  examples: ['callable history word_stats'],
  async run(ctx) {
    const { positionals, values } = parse(ctx.args, { json: { type: 'boolean' } }, 1);
    const name = positionals[0]!;
    const functions = ctx.engine().functions;
    const current = functions.get(name).revision;
    const revisions = functions.revisions(name);
    const rows = revisions.map((r) => ({ revision: r.revision, savedAt: r.createdAt, current: r.revision === current, lines: lineCount(r.source), changes: changesOf(r, revisions) }));
    if (values.json) {
      ctx.out(JSON.stringify(rows, null, 2));
      return EXIT_OK;
    }
    const width = Math.max(...rows.map((r) => String(r.revision).length));
    for (const r of rows) {
      ctx.out(`r${String(r.revision).padEnd(width)}  ${r.savedAt}  ${r.current ? 'current  ' : '         '}${r.changes}  (${r.lines} lines)`);
    }
    return EXIT_OK;
  },
};

export const commands: Record<string, Command> = { new: newCommand, show, history };

/** One line per credential a saved or imported function lists but has not been granted, with the command that grants it. */
export function printUngranted(ctx: CommandContext, records: ReadonlyArray<{ name: string; credentials: readonly string[] }>): void {
  const credentials = ctx.engine().credentials;
  for (const r of records) {
    for (const c of credentials.ungranted(r)) ctx.out(`${r.name} asks for credential ${c}, not granted (nothing is sent until you grant it): ${ctx.callable} credentials grant ${c} ${r.name}`);
  }
}

/** What revision `r` changed against the one before it, in a few words. */
function changesOf(r: RevisionRecord, all: RevisionRecord[]): string {
  const older = all.filter((o) => o.revision < r.revision);
  const previous = older[0];
  if (!previous) return 'created';
  const same = older.find((o) => o.source === r.source && JSON.stringify({ ...o.spec, name: '' }) === JSON.stringify({ ...r.spec, name: '' }));
  if (same && same !== previous) return `same as r${same.revision}`;
  const keys = [...new Set([...Object.keys(previous.spec), ...Object.keys(r.spec)])] as Array<keyof FunctionSpec>;
  const changed: string[] = keys.filter((k) => JSON.stringify(previous.spec[k]) !== JSON.stringify(r.spec[k])).map((k) => (k === 'enabled' ? (r.spec.enabled ? 'enabled' : 'disabled') : k));
  if (previous.source !== r.source) changed.unshift('source');
  return changed.length === 0 ? 'saved unchanged' : `changed ${changed.join(', ')}`;
}

/** Arguments a first run can use: each required property of the inputSchema with a placeholder of its type. */
function exampleArgs(spec: FunctionSpec): Record<string, unknown> {
  type Property = { type?: string; enum?: unknown[]; examples?: unknown[]; default?: unknown; description?: string; format?: string };
  const schema = spec.inputSchema as { properties?: Record<string, Property>; required?: string[] };
  const args: Record<string, unknown> = {};
  for (const key of schema.required ?? []) {
    const property = schema.properties?.[key] ?? {};
    const eg = /\be\.g\. ([^\s,;)]+)/.exec(property.description ?? '')?.[1];
    if (property.enum && property.enum.length > 0) args[key] = property.enum[0];
    else if (property.examples && property.examples.length > 0) args[key] = property.examples[0];
    else if (property.default !== undefined) args[key] = property.default;
    else if (property.type === 'string' && eg !== undefined) args[key] = eg;
    else if (property.type === 'string' && (property.format === 'uri' || /url$/i.test(key))) args[key] = 'https://example.com/';
    else if (property.type === 'integer' || property.type === 'number') args[key] = 1;
    else if (property.type === 'boolean') args[key] = true;
    else if (property.type === 'array') args[key] = [];
    else if (property.type === 'object') args[key] = {};
    else args[key] = 'Hello world. Hello again!';
  }
  return args;
}

/** ` --data-dir DIR` when the data folder is not the one the printed command would use anyway. */
function dataDirFlag(ctx: CommandContext): string {
  return ctx.dataDir === resolve(ctx.io.cwd, defaultDataDir(ctx.io.env)) ? '' : ` --data-dir ${shellQuote(ctx.dataDir)}`;
}

function positiveInteger(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a positive whole number`);
  return n;
}

function lineCount(source: string): number {
  return source === '' ? 0 : source.trimEnd().split('\n').length;
}
