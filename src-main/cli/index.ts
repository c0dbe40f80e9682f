import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { corruptionOf, createEngine, defaultDataDir, diskFullOf, EnvSecretStore, StudioError, type Engine, type RunResult, type TraceEntry } from '../engine/index.ts';
import { commands as functionCommands, printUngranted } from './functions.ts';
import { commands as mcpCommands } from './mcp.ts';
import { commands as backupCommands } from './backup.ts';
import { commands as testCommands } from './savedTests.ts';
import { commands as deployCommands } from './deploy.ts';
import { commands as lintCommands } from './lint.ts';
import { commands as packageCommands } from './packages.ts';
import { commands as clientConfigCommands } from './clientConfig.ts';
import { CONNECT_OPTIONS, connectCommand } from './oauth.ts';
import { aborted, commandHelp, EXIT_FAILED, EXIT_OK, EXIT_USAGE, invokedAs, parse, signalExitCode, UsageError, usageOfParseError, withCommand, type CliIo, type Command, type CommandContext } from './common.ts';

export { EXIT_FAILED, EXIT_OK, EXIT_USAGE, type CliIo } from './common.ts';

const usageHead = (callable: string): string => `callable — run and serve Callable Studio functions without the window

Usage: ${callable} <command> [options]      (every command takes --data-dir DIR; env CALLABLE_DATA_DIR)
`;

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const out = (text: string): void => void io.stdout.write(`${text}\n`);
  const err = (text: string): void => void io.stderr.write(`${text}\n`);
  const { dataDir, rest } = extractDataDir(argv, io);
  const [name, ...args] = rest;
  const callable = invokedAs(io.env, io.script ?? process.argv[1]);
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    out(helpText(callable));
    return name === undefined ? EXIT_USAGE : EXIT_OK;
  }
  if (name === '--version' || name === '-v') {
    out(readVersion());
    return EXIT_OK;
  }
  const command = COMMANDS[name];
  if (!command) {
    err(`callable: unknown command "${name}"\n\n${helpText(callable)}`);
    return EXIT_USAGE;
  }
  let engine: Engine | undefined;
  const creates = command.createsDataDir?.(args) ?? false;
  const openEngine = (): Engine => {
    const existed = existsSync(dataDir);
    if (!existed && !creates) {
      throw new StudioError('not_found', `no data folder at ${dataDir} (nothing was created); check --data-dir or CALLABLE_DATA_DIR, or create it by importing functions: ${callable} import DIR`);
    }
    const opened = createEngine({ dataDir, createDataDir: creates, env: io.env, diagnostic: (m) => err(`callable: ${m}`) });
    if (!existed) err(`callable: created the data folder ${dataDir}`);
    return opened;
  };
  const ctx: CommandContext = {
    io,
    args,
    dataDir,
    callable,
    interrupted: io.interrupt ?? new AbortController().signal,
    out,
    err,
    engine: () => (engine ??= openEngine()),
  };
  try {
    if (args.includes('--help') || args.includes('-h')) {
      out(commandHelp(command, callable));
      return EXIT_OK;
    }
    const running = command.run(ctx);
    if (!io.interrupt) return await running;
    // Stopping wins over whatever the command waits for: runs in flight are cancelled and recorded.
    const stopping = aborted(io.interrupt).then(async () => {
      const signal = String(io.interrupt?.reason);
      const unrecorded = (await engine?.interrupt()) ?? 0;
      err(`callable ${name}: interrupted (${signal})${unrecorded > 0 ? `; ${unrecorded} run(s) did not stop in time and were not recorded` : ''}`);
      return signalExitCode(signal);
    });
    const code = await Promise.race([running, stopping]);
    // A run that ended because of the interruption still exits as interrupted.
    return io.interrupt.aborted ? await stopping : code;
  } catch (caught) {
    // A command that parses its own flags: the nearest one is named from its usage line.
    const parsed = usageOfParseError(caught, [...new Set([...command.usage.matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1]!))]);
    // Damage SQLite finds in any table, whatever read it: the line opening gives for it (the restore command), exit 2.
    const error = (engine && corruptionOf(parsed, engine.database.name)) ?? parsed;
    if (error instanceof UsageError) {
      err(`callable ${name}: ${withCommand(error.message, callable)}\nUsage: ${callable} ${command.usage}`);
      return EXIT_USAGE;
    }
    if (error instanceof StudioError) {
      err(`callable ${name}: ${withCommand(error.message, callable)}`);
      return ['bad_input', 'not_found', 'compile_error', 'conflict', 'disabled'].includes(error.code) ? EXIT_USAGE : EXIT_FAILED;
    }
    // A file written on a full disk (export): the same one line as the database's.
    const full = diskFullOf(error);
    if (full) {
      err(`callable ${name}: ${full.message}`);
      return EXIT_FAILED;
    }
    // A bug, not an expected failure: one line by default, the stack when asked for.
    const detail = io.env.CALLABLE_DEBUG ? ((error as Error)?.stack ?? String(error)) : error instanceof Error ? error.message : String(error);
    err(`callable ${name}: internal error: ${detail}${io.env.CALLABLE_DEBUG ? '' : ' (CALLABLE_DEBUG=1 shows the stack)'}`);
    return EXIT_FAILED;
  } finally {
    try {
      engine?.close();
    } catch (error) {
      // The command's outcome stands; what could not be saved on the way out is said, in one line.
      err(`callable ${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

function helpText(callable: string): string {
  return `${usageHead(callable)}\n${Object.values(COMMANDS)
    .map((c) => `  ${c.usage}\n      ${c.summary}`)
    .join('\n')}\n\n"${callable} <command> --help" tells more. Exit codes: 0 ok, 1 the function or operation failed, 2 usage, bad input or an unusable data folder, 130/143 stopped by SIGINT/SIGTERM (runs in flight are recorded as interrupted).`;
}

function readVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

function extractDataDir(argv: string[], io: CliIo): { dataDir: string; rest: string[] } {
  const rest: string[] = [];
  let dataDir: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--data-dir') {
      dataDir = argv[++i];
    } else if (a.startsWith('--data-dir=')) {
      dataDir = a.slice('--data-dir='.length);
    } else rest.push(a);
  }
  return { dataDir: resolve(io.cwd, dataDir ?? defaultDataDir(io.env)), rest };
}

// ---- commands ----

const list: Command = {
  usage: 'list [--json]',
  summary: 'Lists the functions: name, state, revision and description.',
  options: [['--json', 'everything as JSON (without the sources)']],
  examples: ['callable list', 'callable list --json'],
  async run(ctx) {
    const { values } = parse(ctx.args, { json: { type: 'boolean' } }, 0);
    const functions = ctx.engine().functions.list();
    if (values.json) {
      ctx.out(JSON.stringify(functions.map(({ source: _s, ...rest }) => rest), null, 2));
      return EXIT_OK;
    }
    if (functions.length === 0) {
      ctx.out(`No functions yet in ${ctx.dataDir}. Import some: ${ctx.callable} import resources/examples`);
      return EXIT_OK;
    }
    const width = Math.max(...functions.map((f) => f.name.length));
    for (const f of functions) {
      ctx.out(`${f.name.padEnd(width)}  ${f.enabled ? 'enabled ' : 'disabled'}  r${String(f.revision).padEnd(3)}  ${firstLine(f.title ?? f.description)}`);
    }
    return EXIT_OK;
  },
};

const importCommand: Command = {
  usage: 'import DIR',
  createsDataDir: () => true,
  summary: "Imports functions from DIR: one function's folder (function.json + index.ts|index.js) or a folder of them. All or nothing.",
  options: [['DIR', 'a folder with function.json + index.ts|index.js, or a folder of such folders; a function already there gets a new revision']],
  examples: ['callable import resources/examples', 'callable import ./functions/translate_text'],
  async run(ctx) {
    const { positionals } = parse(ctx.args, {}, 1);
    const dir = resolve(ctx.io.cwd, positionals[0]!);
    const records = await ctx.engine().importFunctions(dir);
    for (const r of records) ctx.out(`imported ${r.name} (revision ${r.revision})`);
    printUngranted(ctx, records);
    return EXIT_OK;
  },
};

const exportCommand: Command = {
  usage: 'export DIR [--name NAME]…',
  summary: 'Writes functions (all, or the named ones) to DIR/<name>/function.json + index.ts|js, ready for git.',
  options: [
    ['DIR', 'where to write (created if missing; existing files of those functions are overwritten)'],
    ['--name NAME', 'only this function; repeat for several'],
  ],
  examples: ['callable export ./functions', 'callable export ./functions --name word_stats'],
  async run(ctx) {
    const { positionals, values } = parse(ctx.args, { name: { type: 'string', multiple: true } }, 1);
    const folders = ctx.engine().exportFunctions(resolve(ctx.io.cwd, positionals[0]!), values.name);
    for (const f of folders) ctx.out(`wrote ${f}`);
    return EXIT_OK;
  },
};

const runCommand: Command = {
  usage: "run NAME [--args JSON | --args-file FILE] [--json] [--save-test CASE]",
  summary: 'Runs a function once in the sandbox. The result goes to stdout as JSON; logs and requests to stderr. With --json, everything as one JSON document.',
  options: [
    ['--args JSON', 'the arguments, a JSON object checked against the inputSchema (default {})'],
    ['--args-file FILE', 'the arguments from a JSON file instead'],
    ['--json', 'the whole result (value, logs, network trace, metrics) as one JSON document on stdout'],
    ['--save-test CASE', 'save this run as the test case CASE of the function (its arguments, requests and result; "callable test" replays it)'],
  ],
  examples: [`callable run word_stats --args '{"text":"The cat sat. The cat ran!"}'`, 'callable run word_stats --args-file args.json --json'],
  async run(ctx) {
    const { positionals, values } = parse(ctx.args, { args: { type: 'string' }, 'args-file': { type: 'string' }, json: { type: 'boolean' }, 'save-test': { type: 'string' } }, 1);
    if (values.args !== undefined && values['args-file'] !== undefined) throw new UsageError('give --args or --args-file, not both');
    const text = values['args-file'] !== undefined ? readArgsFile(resolve(ctx.io.cwd, values['args-file'])) : (values.args ?? '{}');
    let args: unknown;
    try {
      args = JSON.parse(text);
    } catch (error) {
      throw new UsageError(`--args is not valid JSON (${(error as Error).message}); e.g. --args '{"text":"hi"}'`);
    }
    const name = positionals[0]!;
    // A name that could not be saved is refused before the call is paid for.
    if (values['save-test'] !== undefined) ctx.engine().tests.checkNewName(name, values['save-test']);
    const engine = ctx.engine();
    const result = await engine.run(name, args, {
      caller: 'cli',
      // A function's ctx.elicit question goes to the studio when it is open on this data folder; else it is refused, saying so.
      elicit: (request, signal) => engine.askInStudio(request, signal),
      onLog: values.json ? undefined : (entry) => ctx.err(`[${entry.level}] ${entry.message}`),
    });
    if (values.json) {
      ctx.out(JSON.stringify(result, null, 2));
    } else {
      for (const t of result.trace) ctx.err(describeTrace(t));
      if (result.ok) ctx.out(JSON.stringify(result.content ?? result.value, null, 2));
      else ctx.err(`${name} failed (${result.error.code}): ${withCommand(result.error.message, ctx.callable)}`);
      ctx.err(`${result.ok ? 'ok' : 'failed'} in ${result.metrics.durationMs} ms`);
    }
    if (values['save-test'] !== undefined) {
      const saved = await ctx.engine().tests.fromRun(result.runId, values['save-test'], { source: 'cli' });
      ctx.err(`saved test case ${saved.name} of ${name} (${saved.exchanges.length} request${saved.exchanges.length === 1 ? '' : 's'}, expects ${saved.expect.ok ? 'the result' : `error ${saved.expect.code}`}); replay it: ${ctx.callable} test ${name} --case ${saved.name}`);
    }
    try {
      ctx.engine().runs.flush();
    } catch (error) {
      ctx.err(`callable run: ${name} ran, but the run was not recorded: ${(error as Error).message}`);
      // Said once: closing the engine does not report the same run again.
      ctx.engine().runs.discard();
      return EXIT_FAILED;
    }
    if (result.ok) return EXIT_OK;
    return result.error.code === 'bad_input' ? EXIT_USAGE : EXIT_FAILED;
  },
};

function toggle(enabled: boolean): Command {
  return {
    usage: `${enabled ? 'enable' : 'disable'} NAME`,
    summary: enabled ? 'Enables a function (it is served as an MCP tool again).' : 'Disables a function (no longer served as an MCP tool; kept with its history).',
    examples: [`callable ${enabled ? 'enable' : 'disable'} word_stats`],
    async run(ctx) {
      const { positionals } = parse(ctx.args, {}, 1);
      await ctx.engine().functions.setEnabled(positionals[0]!, enabled);
      ctx.out(`${enabled ? 'enabled' : 'disabled'} ${positionals[0]}`);
      return EXIT_OK;
    },
  };
}

const remove: Command = {
  usage: 'rm NAME',
  summary: 'Deletes a function and its history (export it first to keep a copy).',
  examples: ['callable rm word_stats', 'callable export ./backup --name word_stats && callable rm word_stats'],
  async run(ctx) {
    const { positionals } = parse(ctx.args, {}, 1);
    ctx.engine().functions.delete(positionals[0]!);
    ctx.out(`deleted ${positionals[0]}`);
    return EXIT_OK;
  },
};

const runs: Command = {
  usage: 'runs [--function NAME] [--limit N] [--json]',
  summary: 'Shows recent runs from every caller (CLI, studio, MCP clients), newest first.',
  options: [
    ['--function NAME', 'only the runs of this function'],
    ['--limit N', 'at most N runs (default 20)'],
    ['--json', 'the run records as JSON'],
  ],
  examples: ['callable runs --function word_stats --limit 5'],
  async run(ctx) {
    const { values } = parse(ctx.args, { function: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } }, 0);
    const limit = values.limit === undefined ? 20 : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a positive whole number');
    const engine = ctx.engine();
    const records = engine.runs.list({ functionName: values.function, limit });
    // A deleted function keeps its runs; a name with neither is a typo worth naming.
    if (records.length === 0 && values.function !== undefined && engine.functions.find(values.function) === undefined) {
      throw new StudioError('not_found', `no function named "${values.function}" and no runs recorded for it; "callable list" shows the functions`);
    }
    if (values.json) {
      ctx.out(JSON.stringify(records, null, 2));
      return EXIT_OK;
    }
    if (records.length === 0) ctx.out('No runs yet.');
    for (const r of records) {
      const who = r.caller === 'mcp' ? `mcp ${r.clientName ?? '?'}${r.clientVersion ? `@${r.clientVersion}` : ''} (${r.transport ?? '?'}${r.profile ? `, profile ${r.profile}` : ''})` : r.caller;
      ctx.out(`${r.startedAt}  ${r.functionName}  ${r.ok ? 'ok' : `failed: ${r.errorCode}`}  ${r.durationMs} ms  ${who}${r.approval ? `  approval: ${r.approval}` : ''}`);
    }
    return EXIT_OK;
  },
};

const credentials: Command = {
  usage:
    'credentials set NAME --host HOST… [--header NAME --template T | --query NAME] [--grant FUNCTION…] | connect NAME (--preset NAME | --issuer URL --host HOST…) --client-id ID [--scope "a b"] [--grant code|device|client_credentials] [--client-secret-stdin] [--no-browser] [--authorize-url URL --token-url URL] [--revocation-url URL] [--authorize-param KEY=VALUE…] | disconnect NAME | list [--json] | rm NAME | grant NAME FUNCTION | revoke NAME FUNCTION',
  createsDataDir: (args) => args[0] === 'set' || args[0] === 'connect',
  summary:
    'Manages credentials. "set" reads the secret from standard input (never from the command line) and stores it in the OS keychain (with CALLABLE_SECRETS=env it saves only the metadata: give no input, the secret comes from CALLABLE_SECRET_<NAME>); default placement: --header Authorization --template "Bearer {secret}".',
  options: [
    ['set NAME', 'creates or replaces a credential; the secret is read from standard input'],
    ['--host HOST', 'a host the credential may be sent to (api.example.com, *.example.com); repeat for several'],
    ['--header NAME', 'the header that carries it (default Authorization)'],
    ['--template T', 'the header value, {secret} standing for the secret (default "Bearer {secret}")'],
    ['--query NAME', 'send it as this query parameter instead of a header'],
    ['--grant FUNCTION', 'also grant it to FUNCTION (which must list it); repeat for several. Functions that list it and are not granted are named, with the command'],
    ...CONNECT_OPTIONS,
    ['disconnect NAME', 'revokes an OAuth grant at the server where it can and forgets its tokens; the credential stays, to connect again'],
    ['list [--json]', 'names, hosts, placement, whether a secret is set and the functions granted it; for OAuth: state, expiry, scopes and account; never the secret'],
    ['rm NAME', 'deletes the credential, its secret and its grants (an OAuth grant is revoked at the server where it can be)'],
    ['grant NAME FUNCTION', 'lets FUNCTION use the credential (it must list it in its "credentials"); nothing is sent for a function until it is granted'],
    ['revoke NAME FUNCTION', "takes the grant back: the function's next runs are refused the credential"],
  ],
  examples: [
    `printf %s "$DEEPL_KEY" | callable credentials set deepl --host api-free.deepl.com --header Authorization --template 'DeepL-Auth-Key {secret}' --grant deepl_translate`,
    'callable credentials grant deepl deepl_translate',
    'callable credentials connect google --preset google --client-id ID.apps.googleusercontent.com --client-secret-stdin',
    'callable credentials connect graph --issuer https://login.microsoftonline.com/common/v2.0 --client-id ID --host graph.microsoft.com --scope "User.Read offline_access"',
    'callable credentials list',
  ],
  async run(ctx) {
    const [sub, ...rest] = ctx.args;
    if (sub === 'list') {
      const { values } = parse(rest, { json: { type: 'boolean' } }, 0);
      const all = await ctx.engine().credentials.list();
      if (values.json) ctx.out(JSON.stringify(all, null, 2));
      else if (all.length === 0) ctx.out(`No credentials yet. Add one: printf %s "$KEY" | ${ctx.callable} credentials set NAME --host api.example.com`);
      else
        for (const c of all) {
          if (c.kind === 'oauth') {
            const state =
              c.state === 'needs_reconnect'
                ? `NEEDS RECONNECT: ${ctx.callable} credentials connect ${c.name}`
                : c.state === 'not_connected'
                  ? `NOT CONNECTED: ${ctx.callable} credentials connect ${c.name}${c.clientId ? '' : ' --client-id <your client id>'}`
                  : `connected${c.account ? ` as ${c.account}` : ''}`;
            const granted = c.grantedTo.length > 0 ? `granted to ${c.grantedTo.join(', ')}` : 'granted to no function';
            const failed = c.lastRefreshError ? `  last refresh failed: ${c.lastRefreshError.message}` : '';
            ctx.out(`${c.name}  ${c.hosts.join(', ')}  oauth ${c.issuer}  ${state}  scopes: ${c.scopes?.join(' ') || '-'}  expires ${c.expiresAt ?? 'never'}  ${granted}${failed}`);
            continue;
          }
          const where = c.placement.kind === 'header' ? `header ${c.placement.header}: ${c.placement.template}` : `query ?${c.placement.param}=`;
          const secret = c.hasSecret === true ? 'secret set' : c.hasSecret === false ? 'NO SECRET' : 'secret not checked';
          const granted = c.grantedTo.length > 0 ? `granted to ${c.grantedTo.join(', ')}` : 'granted to no function';
          ctx.out(`${c.name}  ${c.hosts.join(', ')}  ${where}  (${secret})  ${granted}`);
        }
      // The metadata is listed whatever the keychain does; why the secrets could not be checked is said once.
      const problem = all.find((c) => c.secretProblem)?.secretProblem;
      if (problem) ctx.err(`callable credentials: secrets not checked: ${withCommand(problem.message, ctx.callable)}`);
      return EXIT_OK;
    }
    if (sub === 'rm') {
      const { positionals } = parse(rest, {}, 1);
      const grantees = await ctx.engine().credentials.remove(positionals[0]!, (note) => ctx.out(`credential ${positionals[0]}: ${note}`));
      ctx.out(`deleted credential ${positionals[0]}${grantees.length > 0 ? ` (and its grants to ${grantees.join(', ')})` : ''}`);
      return EXIT_OK;
    }
    if (sub === 'grant' || sub === 'revoke') {
      const { positionals } = parse(rest, {}, 2);
      const [credential, fn] = positionals as [string, string];
      const service = ctx.engine().credentials;
      if (sub === 'revoke') {
        service.revoke(credential, fn);
        ctx.out(`revoked credential ${credential} from ${fn}: its runs are refused it from now on`);
        return EXIT_OK;
      }
      const { granted, credentialExists } = service.grant(credential, fn);
      ctx.out(`${granted ? 'granted' : 'already granted'} credential ${credential} to ${fn}`);
      if (!credentialExists) ctx.out(`credential ${credential} does not exist yet; create it: ${ctx.callable} credentials set ${credential} --host HOST`);
      return EXIT_OK;
    }
    if (sub === 'connect') return connectCommand(ctx, rest, readSecret);
    if (sub === 'disconnect') {
      const name = parse(rest, {}, 1).positionals[0]!;
      const note = await ctx.engine().credentials.oauth.disconnect(name);
      if (note) ctx.out(`credential ${name}: ${note}`);
      ctx.out(`disconnected ${name}: its tokens are forgotten; connect it again: ${ctx.callable} credentials connect ${name}`);
      return EXIT_OK;
    }
    if (sub === 'set') {
      const { positionals, values } = parse(
        rest,
        { host: { type: 'string', multiple: true }, header: { type: 'string' }, template: { type: 'string' }, query: { type: 'string' }, grant: { type: 'string', multiple: true }, secret: { type: 'string' } },
        1,
      );
      if (values.secret !== undefined) throw new UsageError('secrets are never taken from the command line (they end up in shell history); pipe the secret to standard input');
      if (!values.host || values.host.length === 0) throw new UsageError('give at least one --host the credential may be sent to');
      if (values.query !== undefined && (values.header !== undefined || values.template !== undefined)) throw new UsageError('--query cannot be combined with --header/--template');
      const placement =
        values.query !== undefined
          ? { kind: 'query' as const, param: values.query }
          : { kind: 'header' as const, header: values.header ?? 'Authorization', template: values.template ?? 'Bearer {secret}' };
      const name = positionals[0]!;
      const service = ctx.engine().credentials;
      const grants = [...new Set(values.grant ?? [])];
      // A grant that cannot be made is refused before anything is stored.
      for (const fn of grants) {
        const listed = ctx.engine().functions.get(fn).credentials;
        if (!listed.includes(name)) throw new UsageError(`--grant ${fn}: function "${fn}" does not list credential "${name}" in its "credentials" (${listed.length === 0 ? 'it lists none' : `it lists ${listed.join(', ')}`}); nothing was saved`);
      }
      if (service.storeKind === 'env') {
        // Env mode keeps no secrets: piped input is read only to refuse it, never to store it.
        const piped = ctx.io.stdin.isTTY ? '' : await readSecret(ctx.io.stdin);
        await service.set({ name, hosts: values.host, placement }, piped === '' ? undefined : piped);
        const variable = EnvSecretStore.variableFor(name);
        const now = ctx.io.env[variable] ? 'it is set in this environment' : 'it is not set in this environment yet';
        ctx.out(`saved credential ${name} (metadata only: with CALLABLE_SECRETS=env the secret comes from ${variable}; ${now})`);
        grantAfterSet(ctx, name, grants);
        return EXIT_OK;
      }
      if (ctx.io.stdin.isTTY) ctx.err(`Secret for "${name}" (input hidden), then Enter:`);
      const secret = await readSecret(ctx.io.stdin);
      await service.set({ name, hosts: values.host, placement }, secret);
      ctx.out(`saved credential ${name} (secret in the OS keychain)`);
      grantAfterSet(ctx, name, grants);
      return EXIT_OK;
    }
    throw new UsageError(sub === undefined ? 'missing subcommand' : `unknown subcommand "${sub}"`);
  },
};

/** Grants what `credentials set --grant` named, then names each function that lists the credential and still has no grant. */
function grantAfterSet(ctx: CommandContext, name: string, grants: string[]): void {
  const engine = ctx.engine();
  for (const fn of grants) {
    const { granted } = engine.credentials.grant(name, fn);
    ctx.out(`${granted ? 'granted' : 'already granted'} credential ${name} to ${fn}`);
  }
  for (const f of engine.functions.list()) {
    if (!engine.credentials.ungranted(f).includes(name)) continue;
    ctx.out(
      `${f.name} lists credential ${name} and has not been granted it (nothing is sent until you grant it): ${ctx.callable} credentials grant ${name} ${f.name}  (or add --grant ${f.name} to credentials set)`,
    );
  }
}

/** Every command, in the order `callable --help` lists them. */
export const COMMANDS: Record<string, Command> = {
  list,
  ...functionCommands,
  import: importCommand,
  export: exportCommand,
  run: runCommand,
  enable: toggle(true),
  disable: toggle(false),
  rm: remove,
  runs,
  credentials,
  ...mcpCommands,
  ...clientConfigCommands,
  ...backupCommands,
  ...deployCommands,
  ...testCommands,
  ...lintCommands,
  ...packageCommands,
};

// ---- helpers ----

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 80 ? `${line.slice(0, 77)}…` : line;
}

function readArgsFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read --args-file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

function describeTrace(t: TraceEntry): string {
  const head = `→ ${t.method} ${t.url}`;
  if (t.refused) return `${head}  REFUSED: ${t.refused}`;
  if (t.error) return `${head}  ERROR: ${t.error} (${t.ms} ms)`;
  return `${head}  ${t.status} ${t.ms} ms ${t.bytesIn} B${t.credential ? `  [credential ${t.credential}]` : ''}`;
}

/** Reads a secret from stdin: hidden input on a terminal, else everything piped in (one trailing newline dropped). */
async function readSecret(stdin: CliIo['stdin']): Promise<string> {
  if (stdin.isTTY && stdin.setRawMode) {
    stdin.setRawMode(true);
    try {
      return await new Promise<string>((resolveSecret, reject) => {
        let text = '';
        const onData = (chunk: Buffer): void => {
          for (const ch of chunk.toString('utf8')) {
            if (ch === '\r' || ch === '\n') {
              stdin.off('data', onData);
              resolveSecret(text);
              return;
            }
            if (ch === '\u0003') {
              stdin.off('data', onData);
              reject(new UsageError('cancelled'));
              return;
            }
            text = ch === '\u007f' ? text.slice(0, -1) : text + ch;
          }
        };
        stdin.on('data', onData);
        stdin.resume();
      });
    } finally {
      stdin.setRawMode(false);
      stdin.pause();
    }
  }
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

export type { RunResult };
