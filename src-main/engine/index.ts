import { homedir } from 'node:os';
import { join } from 'node:path';
import { RunLedger } from './audit/ledger.ts';
import { CredentialService } from './credentials/credentials.ts';
import { FolderSecrets } from './credentials/folderSecrets.ts';
import { secretStoreFromEnv, type SecretStore } from './credentials/secretStore.ts';
import { PackageStore } from './functions/packages/install.ts';
import { packageSummary, withAdded, withRemoved, type PackageSummary } from './functions/packages/edit.ts';
import { collectTypes, type PackageTypes } from './functions/packages/types.ts';
import { readImportableFunctions, writeFunctionFolders } from './functions/files.ts';
import { FunctionRepository, parseSpec, type SaveInput } from './functions/repository.ts';
import { findTemplate } from './functions/templates.ts';
import { loadOpenApi, operationsOf, scaffoldFunction, type OpenApiOperation, type ScaffoldResult, type ScaffoldSource } from './functions/scaffold/index.ts';
import { advise, observationsOf, type Advice, type AdviceKind, type Observation } from './functions/advice.ts';
import { SchemaValidator } from './functions/schemas.ts';
import {
  effectiveLimits,
  FunctionNameSchema,
  specOf,
  StudioError,
  type ElicitAnswer,
  type ElicitRequest,
  type FunctionRecord,
  type RunResult,
} from './model/index.ts';
import type { guardedFetch as GuardedFetch, Resolver } from './net/guardedFetch.ts';
import type { Sandbox, SandboxOptions } from './sandbox/sandbox.ts';
import { runFunction, type RunOptions } from './run.ts';
import { corruptionOf, openDatabase, type Db } from './store/database.ts';
import { changeFeed, type ChangeFeed } from './store/changes.ts';
import { diskFullOf } from './store/faults.ts';
import { databaseFileOf, Upkeep } from './store/retention.ts';
import { ProfileRepository } from './functions/profiles.ts';
import { RecordingStore } from './savedTests/recordings.ts';
import { TestService } from './savedTests/service.ts';
import { PromptDesk } from './prompts/prompts.ts';
import { Approvals, needsApproval, type ApprovalOutcome, type ApprovalRequest } from './prompts/approval.ts';

export * from './model/index.ts';
export type { SecretStore } from './credentials/secretStore.ts';
export { KeychainSecretStore, EnvSecretStore, MemorySecretStore, KEYCHAIN_SERVICE } from './credentials/secretStore.ts';
export { OAUTH_PRESETS, PRESET_NAMES, type OAuthPreset } from './credentials/oauthPresets.ts';
export type { Resolver } from './net/guardedFetch.ts';
export type { ProgressUpdate } from './sandbox/protocol.ts';
export type { SandboxOptions } from './sandbox/sandbox.ts';
export { canonicalSpecJson, readFunctionFolders } from './functions/files.ts';
export { parseDependencySpec } from './functions/packages/install.ts';
export type { PackageSummary } from './functions/packages/edit.ts';
export type { PackageTypes, TypeFile } from './functions/packages/types.ts';
export { readTemplates, type Template } from './functions/templates.ts';
export type { Advice, AdviceKind } from './functions/advice.ts';
export { credentialCommand, harEntries, listOperations, loadOpenApi, type CredentialSuggestion, type HarEntryInfo, type OpenApiOperation, type ScaffoldResult, type ScaffoldSource } from './functions/scaffold/index.ts';
export { diskFullOf } from './store/faults.ts';
export { corruptionOf } from './store/database.ts';
export type { BackupInfo, BackupKind, RestoreResult } from './store/backup.ts';
export { shellQuote } from './store/backup.ts';
export {
  backupDataFolder,
  listDataFolderBackups,
  restoreDataFolder,
  readKeepSettings,
  writeKeepSettings,
  KEEP_DEFAULTS,
  KEEP_LIMITS,
  type KeepSettings,
} from './store/retention.ts';

export type { PromptDesk, PromptState, AskOptions, AskOutcome } from './prompts/prompts.ts';
export { needsApproval, approvalSchema, APPROVAL_CHOICES, type ApprovalChoice, type ApprovalOutcome, type ApprovalRequest } from './prompts/approval.ts';

export const PRODUCT_NAME = 'Callable Studio';

/** How many functions a prewarm readies. */
const PREWARM_LIMIT = 8;
/** How long after a prewarm the network stack is loaded, if no request has loaded it by then. */
const NET_PRELOAD_DELAY_MS = 300;

/**
 * The data folder Electron's `userData` would be for the product name, so the app, the CLI and
 * every MCP server share one database. `--data-dir` and CALLABLE_DATA_DIR override it.
 */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  if (env.CALLABLE_DATA_DIR) return env.CALLABLE_DATA_DIR;
  const home = homedir();
  if (platform === 'darwin') return join(home, 'Library', 'Application Support', PRODUCT_NAME);
  if (platform === 'win32') return join(env.APPDATA ?? join(home, 'AppData', 'Roaming'), PRODUCT_NAME);
  return join(env.XDG_CONFIG_HOME ?? join(home, '.config'), PRODUCT_NAME);
}

/** A report of the engine's own about its data: `info` when it recovered (runs that had waited were recorded). */
export interface EngineReport {
  level: 'warning' | 'info';
  message: string;
}

export interface EngineOptions {
  dataDir: string;
  /** Create the data folder if it is missing (the default); when false, a missing folder is a `not_found` error. */
  createDataDir?: boolean;
  /** Where secrets live; by default the OS keychain (or CALLABLE_SECRETS=env). */
  secrets?: SecretStore;
  env?: NodeJS.ProcessEnv;
  /** DNS for ctx.fetch; tests make names resolve to chosen addresses. */
  resolver?: Resolver;
  /** Diagnostics (never stdout: it may carry MCP). */
  diagnostic?: (message: string) => void;
  /** Hears the engine's reports about its data (runs not recorded yet or recorded late, a moved schema, a failed backup), also given to `diagnostic`. */
  notice?: (notice: EngineReport) => void;
  /** Sandbox host processes: how many, and the most one may grow to. */
  sandbox?: Omit<SandboxOptions, 'diagnostic'>;
}

export type { RunOptions } from './run.ts';
export type { LoadedFunction } from './functions/repository.ts';

/**
 * The engine: functions, sandbox, egress, credentials and audit behind one facade, shared by
 * the desktop app, the `callable` command and the tests. Runs the same under Electron and Node.
 */
export class Engine {
  readonly dataDir: string;
  readonly functions: FunctionRepository;
  readonly credentials: CredentialService;
  readonly runs: RunLedger;
  readonly profiles: ProfileRepository;
  /** Saved test cases: made from runs, replayed offline. */
  readonly tests: TestService;
  readonly #recordings: RecordingStore;
  /** Questions put to the person at the studio, across processes (approvals, elicitation forms). */
  readonly prompts: PromptDesk;
  readonly #approvals: Approvals;
  readonly #packages: PackageStore;
  readonly #db: Db;
  readonly #secrets: FolderSecrets;
  readonly #env: NodeJS.ProcessEnv;
  /** What this and other processes change in the database: one timer for every watcher of this connection. */
  readonly #changes: ChangeFeed;
  #sandbox: Promise<Sandbox> | undefined;
  #net: Promise<{ guardedFetch: typeof import('./net/guardedFetch.ts').guardedFetch; resolver: Resolver }> | undefined;
  #sandboxNow: Sandbox | undefined;
  readonly #sandboxOptions: EngineOptions['sandbox'];
  readonly #diagnostic: ((message: string) => void) | undefined;
  readonly #notice: ((notice: EngineReport) => void) | undefined;
  readonly #schemas = new SchemaValidator();
  readonly #resolver: Resolver | undefined;
  readonly #interrupt = new AbortController();
  readonly #inflight = new Set<Promise<RunResult>>();
  /** The automatic backup and the pruning of old run bodies, in the background. */
  readonly #upkeep: Upkeep;

  constructor(options: EngineOptions) {
    this.dataDir = options.dataDir;
    this.#db = openDatabase(options.dataDir, { create: options.createDataDir ?? true });
    this.#changes = changeFeed(this.#db);
    this.#env = options.env ?? process.env;
    this.#packages = new PackageStore(join(options.dataDir, 'packages'), this.#env);
    this.functions = new FunctionRepository(this.#db, this.#packages);
    this.#secrets = new FolderSecrets(this.#db, options.secrets ?? secretStoreFromEnv(this.#env), this.#env);
    this.credentials = new CredentialService(this.#db, this.#secrets);
    this.runs = new RunLedger(this.#db, (notice) => this.#report({ level: notice.recovered ? 'info' : 'warning', message: notice.message }));
    this.profiles = new ProfileRepository(this.#db);
    this.#recordings = new RecordingStore(this.#db);
    this.tests = new TestService({
      db: this.#db,
      functions: this.functions,
      recordings: this.#recordings,
      run: (name, args, options) => this.run(name, args, options),
      storedSecrets: async () => (await this.credentials.storedSecrets()).map(({ name, secret }) => ({ name, label: `credential "${name}"`, secret })),
      notice: (message) => this.#report({ level: 'warning', message }),
    });
    this.prompts = new PromptDesk(this.#db);
    this.#approvals = new Approvals(this.prompts, this.runs);
    this.#upkeep = new Upkeep(this.#db, databaseFileOf(options.dataDir), { diagnostic: (message) => this.#report({ level: 'warning', message }) });
    this.#resolver = options.resolver;
    this.#diagnostic = options.diagnostic;
    this.#notice = options.notice;
    this.#sandboxOptions = options.sandbox;
  }

  get database(): Db {
    return this.#db;
  }

  #report(report: EngineReport): void {
    this.#diagnostic?.(report.message);
    this.#notice?.(report);
  }

  /** This data folder's id, kept in its database; part of every keychain account it uses. */
  get installId(): string {
    return this.#secrets.installId;
  }

  /** Checks `value` against `schema` exactly as a run checks arguments (same dialect rules, same validator). */
  schemaProblems(schema: object, value: unknown): Array<{ instancePath: string; schemaPath: string; keyword: string; params: Record<string, unknown>; message: string }> {
    return this.#schemas.problems(schema, value, 'inputSchema').map((e) => ({
      instancePath: e.instancePath,
      schemaPath: e.schemaPath,
      keyword: e.keyword,
      params: { ...e.params },
      message: e.message ?? 'is invalid',
    }));
  }

  /** Validates schemas, compiles and stores a function (created or updated by name). */
  async saveFunction(input: SaveInput): Promise<FunctionRecord> {
    this.#checkSchemas(input.spec as { inputSchema?: object; outputSchema?: object });
    return this.functions.save(input);
  }

  /** The npm packages `name` imports: as asked for, as locked, and the bundle's size. */
  packages(name: string): PackageSummary {
    const { dependencies, versions, locked, bundleBytes } = packageSummary(this.functions.load(name).compiled);
    return { dependencies, versions, locked, bundleBytes };
  }

  /** Adds (or changes the range of) npm packages, `name[@range]` each; installed, locked, bundled and saved as a new revision. */
  async addPackages(name: string, specs: readonly string[]): Promise<FunctionRecord> {
    const { dependencies, lock } = packageSummary(this.functions.load(name).compiled);
    return this.#savePackages(name, withAdded(dependencies, specs), lock);
  }

  /** Removes npm packages by name (the source must no longer import them); the rest re-locked and saved as a new revision. */
  async removePackages(name: string, names: readonly string[]): Promise<FunctionRecord> {
    const { dependencies, lock } = packageSummary(this.functions.load(name).compiled);
    return this.#savePackages(name, withRemoved(name, dependencies, names), lock);
  }

  async #savePackages(name: string, dependencies: Record<string, string>, lock: string | undefined): Promise<FunctionRecord> {
    const fn = this.functions.get(name);
    return this.saveFunction({ spec: specOf(fn), source: fn.source, packages: { dependencies, lock } });
  }

  /** The type declarations of `name`'s installed packages, for an editor (installed again from the cache if the install is gone). */
  async packageTypes(name: string): Promise<PackageTypes> {
    const p = this.functions.load(name).compiled.packages;
    if (!p || Object.keys(p.dependencies).length === 0) return { files: [], skipped: [] };
    const installed = await this.#packages.install(name, p.dependencies, p.lock);
    return collectTypes(installed.root, Object.keys(p.dependencies));
  }

  /**
   * Creates the function `name` as a copy of the template `template` (a function folder of
   * `templatesDir`). Refuses a name that is taken or invalid, and an unknown template (naming the
   * templates there are).
   */
  async createFromTemplate(templatesDir: string, template: string, name: string): Promise<FunctionRecord> {
    this.#assertNewName(name);
    const found = findTemplate(templatesDir, template);
    return this.saveFunction({ spec: { ...found.input.spec, name }, source: found.input.source });
  }

  /** Creates `newName` as a copy of the function `name` (its spec and source); `newName` must be free. */
  async duplicateFunction(name: string, newName: string): Promise<FunctionRecord> {
    this.functions.assertNameFree(newName);
    const original = this.functions.get(name);
    return this.saveFunction({ spec: { ...specOf(original), name: newName }, source: original.source });
  }

  /** A name for a new function: valid, and not another function's. */
  #assertNewName(name: string): void {
    const parsedName = FunctionNameSchema.safeParse(name);
    if (!parsedName.success) throw new StudioError('bad_input', `"${name}" is not a valid function name: ${parsedName.error.issues[0]?.message ?? 'invalid'}`);
    this.functions.assertNameFree(name);
  }

  /**
   * Creates the function `name` from a curl command, a HAR entry or an OpenAPI operation (see
   * functions/scaffold). The request's secret is never kept: the result names the credential to
   * store. A HAR entry's response becomes the function's first test case ("har").
   */
  async createFromRequest(name: string, source: ScaffoldSource): Promise<{ record: FunctionRecord; scaffold: ScaffoldResult; testCase?: string }> {
    this.#assertNewName(name);
    const scaffold = await scaffoldFunction(name, source, (credential) => this.credentials.find(credential));
    const record = await this.saveFunction(scaffold.input);
    // An OAuth scheme's credential is defined with its server, scopes and hosts; connecting it is the user's next step.
    const oauth = scaffold.credential?.oauth;
    if (oauth) this.credentials.defineOAuth({ name: scaffold.credential!.name, hosts: scaffold.credential!.hosts, ...oauth });
    if (!scaffold.testCase) return { record, scaffold };
    try {
      return { record, scaffold, testCase: (await this.tests.save(name, scaffold.testCase)).name };
    } catch (error) {
      // The function stands; the case is refused (e.g. the response holds a stored secret), and the user is told why.
      if (!(error instanceof StudioError)) throw error;
      scaffold.notes.push(`the entry's response was not saved as a test case: ${error.message}`);
      return { record, scaffold };
    }
  }

  /**
   * The operations of the OpenAPI 3 spec `file` (JSON or YAML), in the order of its paths, to pick
   * one for `createFromRequest`. A file that cannot be read, is not an OpenAPI 3 spec or describes
   * no operations is one bad_input line.
   */
  async openApiOperations(file: string): Promise<OpenApiOperation[]> {
    return operationsOf(await loadOpenApi(file));
  }

  /**
   * Advice about functions (all, or the named ones) from what they were seen doing — the requests
   * and results of their recent recorded runs and of their saved test cases — and from what common
   * MCP clients accept (`callable lint`).
   */
  advise(names: readonly string[] = []): Advice[] {
    const chosen = names.length > 0 ? names.map((n) => this.functions.get(n)) : this.functions.list();
    const observed = (name: string): Observation[] => observationsOf(this.runs.recordings(name), this.tests.all(name));
    return advise(chosen, observed, this.functions.list().filter((f) => f.enabled).length);
  }

  /**
   * Applies the `kind` advice `advise` gives for `name` now, saved like any edit (schema validated,
   * source compiled, a revision kept). Refused as a conflict when the function moved past `revision`
   * (the revision the advice was read at) or the advice is no longer given.
   */
  async applyAdvice(name: string, kind: Extract<AdviceKind, 'output_schema' | 'read_only'>, revision: number): Promise<FunctionRecord> {
    const fn = this.functions.get(name);
    if (fn.revision !== revision) throw new StudioError('conflict', `${name} changed since this advice was given (it is now at revision ${fn.revision}); look at the advice again`);
    const advice = this.advise([name]).find((a) => a.function === name && a.kind === kind);
    if (!advice) throw new StudioError('conflict', `there is no "${kind}" advice for ${name} any more; nothing was changed`);
    const spec = specOf(fn);
    const next = kind === 'output_schema' ? { ...spec, outputSchema: advice.suggestion as SaveInput['spec']['outputSchema'] } : { ...spec, annotations: { ...spec.annotations, readOnlyHint: true } };
    return this.saveFunction({ spec: next, source: fn.source });
  }

  /** Imports every function under `dir`; all or nothing. */
  async importFunctions(dir: string): Promise<FunctionRecord[]> {
    // Schemas and sources are checked for every folder first, so one error lists every problem.
    const inputs = await readImportableFunctions(dir, async (input, sourcePath) => {
      const spec = parseSpec(input.spec);
      const problems: string[] = [];
      for (const check of [() => this.#checkSchemas(spec), () => this.functions.compile(input, sourcePath), () => this.tests.checkCases(spec.name, input.tests ?? [])]) {
        try {
          await check();
        } catch (error) {
          if (!(error instanceof StudioError)) throw error;
          problems.push(error.message);
        }
      }
      if (problems.length > 0) throw new StudioError('bad_input', problems.join('; '));
    });
    const records = await this.functions.saveAll(inputs);
    // The cases were checked with the functions above (none truncated, none holding a stored secret).
    for (const input of inputs) if (input.tests) await this.tests.importCases(input.spec.name, input.tests);
    return records;
  }

  /** Writes functions (all, or the named ones) as folders under `dir`. */
  exportFunctions(dir: string, names?: string[]): string[] {
    const records = names && names.length > 0 ? names.map((n) => this.functions.get(n)) : this.functions.list();
    try {
      return writeFunctionFolders(dir, records, (name) => this.tests.all(name), (name) => this.functions.load(name).compiled.packages);
    } catch (error) {
      throw diskFullOf(error, dir) ?? error;
    }
  }

  /**
   * Runs a function once: arguments checked against its inputSchema, the call sandboxed, the
   * result checked against its outputSchema, secrets redacted, the run recorded.
   * Throws only for a function that does not exist (or is disabled when `requireEnabled`).
   */
  async run(name: string, args: unknown, options: RunOptions): Promise<RunResult> {
    const running = runFunction(
      {
        functions: this.functions,
        credentials: this.credentials,
        runs: this.runs,
        schemas: this.#schemas,
        sandbox: async () => ({ sandbox: await this.#loadSandbox(), guardedFetch: this.#fetch, resolver: this.#resolve }),
        interrupt: this.#interrupt.signal,
        record: (recording) => this.#recordings.keep(recording),
      },
      name,
      args,
      options,
    );
    this.#inflight.add(running);
    try {
      return await running;
    } catch (error) {
      // Damage SQLite finds while the run loads the function (any table) is the line opening gives for it.
      throw corruptionOf(error, this.#db.name) ?? error;
    } finally {
      this.#inflight.delete(running);
      this.#upkeep.wrote();
    }
  }

  /**
   * Before an MCP call: whether it may run. A function marked destructive (or set to ask before
   * every call) needs a person's approval, asked by elicitation in the client, else in the studio
   * when it is open (in any process), else refused. A call that may not run is recorded here.
   */
  async approveCall(request: ApprovalRequest): Promise<ApprovalOutcome> {
    // Most functions need no approval: their arguments are validated once, by the run.
    if (!needsApproval(request.fn)) return { allowed: true };
    // Arguments the run would refuse anyway (bad_input, nothing runs) are not put to a person.
    if (this.#schemas.check(request.fn.inputSchema, request.args, `${request.fn.name}'s inputSchema`, 'args') !== undefined) return { allowed: true };
    return this.#approvals.check(request);
  }

  /**
   * Puts a function's ctx.elicit question to the person at the studio (in any process on this data
   * folder), for an MCP client without elicitation. Rejects with `ask_unavailable` when no studio is
   * open; a prompt nobody answers before the run's deadline, or that the caller withdraws, is `cancel`.
   */
  async askInStudio(request: ElicitRequest, signal: AbortSignal): Promise<ElicitAnswer> {
    if (!this.prompts.studioOpen()) {
      throw new StudioError(
        'ask_unavailable',
        `${request.functionName} asked for input and there is no one to ask: this client does not support elicitation and Callable Studio is not open. Open Callable Studio, or use a client that supports elicitation.`,
      );
    }
    const outcome = await this.prompts.ask({ kind: 'elicitation', functionName: request.functionName, args: {}, message: request.message, schema: request.requestedSchema, waitMs: request.timeoutMs, signal });
    return outcome.state === 'answered' ? { ...outcome.answer, via: 'studio' } : { action: 'cancel', via: 'studio' };
  }

  /**
   * For the process that hosts the engine when it is told to stop (SIGINT, SIGTERM): cancels every
   * run in flight (their vendor requests closed), waits up to `graceMs` for them to be recorded as
   * `interrupted`, and writes the audit. Runs started afterwards are interrupted at once.
   * Resolves with the number of runs that had not ended in time (and so were not recorded).
   */
  async interrupt(graceMs = 600): Promise<number> {
    this.#interrupt.abort();
    const pending = [...this.#inflight].map((p) => p.then(() => undefined, () => undefined));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(pending), new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    try {
      this.runs.flush();
    } catch (error) {
      this.#diagnostic?.((error as Error).message);
    }
    return this.#inflight.size;
  }

  /**
   * Loads the sandbox and readies the isolates of the first PREWARM_LIMIT of `names` in the
   * background, so the first calls after a client lists its tools do not pay for it; with
   * `validators` (the default) their argument validators are compiled here too. Errors are left to the call.
   */
  prewarm(names: string[], options: { validators?: boolean } = {}): void {
    setImmediate(() => {
      void this.#loadSandbox()
        .then((executor) => {
          executor.start();
          const records = names.slice(0, PREWARM_LIMIT).map((name) => {
            const { record, compiled } = this.functions.load(name);
            executor.warm(name, effectiveLimits(record).memoryMb, compiled);
            return record;
          });
          // While the hosts ready the isolates, the argument validators are compiled here: on later
          // turns (the warm messages go out first), one a turn, so a call that comes meanwhile waits for one at most.
          const prepare = (i: number): void => {
            const record = records[i];
            if (!record) return;
            this.#schemas.prepareStored(record.inputSchema, `${record.name}'s inputSchema`);
            setImmediate(prepare, i + 1);
          };
          if (options.validators !== false) setImmediate(prepare, 0);
          // The network stack once things are quiet (a run's first request loads it otherwise).
          if (records.length > 0) setTimeout(() => void this.#loadNet().catch(() => {}), NET_PRELOAD_DELAY_MS).unref();
        })
        .catch(() => {});
    });
  }

  /** The sandbox host processes now: pid, resident size and memory cap (empty before the first run). */
  get sandboxHosts(): Sandbox['hosts'] {
    return this.#sandboxNow?.hosts ?? [];
  }

  /** The sandbox hosts and the network stack, loaded by the first run (a server that only lists tools starts faster). */
  #loadSandbox(): Promise<Sandbox> {
    this.#sandbox ??= import('./sandbox/sandbox.ts').then((sandbox) => {
      this.#sandboxNow = new sandbox.Sandbox({ ...this.#sandboxOptions, diagnostic: this.#diagnostic });
      return this.#sandboxNow;
    });
    return this.#sandbox;
  }

  /** ctx.fetch: the network stack loads with a run's first request (a function that never fetches never waits for it). */
  readonly #fetch: typeof GuardedFetch = async (request, policy) => (await this.#loadNet()).guardedFetch(request, policy);
  readonly #resolve: Resolver = async (hostname) => (await this.#loadNet()).resolver(hostname);

  /** The network stack behind ctx.fetch, loaded by the first request. */
  #loadNet() {
    this.#net ??= import('./net/guardedFetch.ts').then((net) => ({ guardedFetch: net.guardedFetch, resolver: this.#resolver ?? net.systemResolver }));
    return this.#net;
  }

  #checkSchemas(spec: { inputSchema?: object; outputSchema?: object }, prefix = ''): void {
    if (spec.inputSchema && typeof spec.inputSchema === 'object') this.#schemas.compile(spec.inputSchema, `${prefix}inputSchema`);
    if (spec.outputSchema && typeof spec.outputSchema === 'object') this.#schemas.compile(spec.outputSchema, `${prefix}outputSchema`);
  }

  /**
   * Calls `listener` whenever any process changes the functions or profiles MCP servers list.
   * Watched through the change feed (store/changes.ts), so changes from other processes arrive
   * within half a second. Returns the unsubscribe function.
   */
  onCatalogChange(listener: () => void): () => void {
    // `void`: whatever the listener returns, it is not the feed's retry signal.
    return this.#changes.subscribe('catalog', () => void listener());
  }

  /**
   * Calls `listener` whenever any process changes credentials or their grants (see
   * bumpCredentials), polled like onCatalogChange. Returns the unsubscribe function.
   */
  onCredentialsChange(listener: () => void): () => void {
    return this.#changes.subscribe('credentials', () => void listener());
  }

  /** Calls `listener` whenever a run is recorded, by any process (read them with `runs.after()`). Returns the unsubscribe function. */
  onRunsRecorded(listener: () => void): () => void {
    return this.#changes.subscribe('runs', () => void listener());
  }

  /** The bearer token of the Streamable HTTP MCP server (see CredentialService.mcpToken). */
  mcpToken(options: { regenerate?: boolean } = {}): Promise<string> {
    return this.credentials.mcpToken(options);
  }

  close(): void {
    this.#changes.close();
    this.prompts.close();
    this.#sandboxNow?.dispose();
    void this.#sandbox?.then((s) => s.dispose());
    this.#secrets.dispose();
    this.#upkeep.stop();
    try {
      this.runs.flush();
    } finally {
      this.runs.stop();
      this.#db.close();
    }
  }
}

export function createEngine(options: EngineOptions): Engine {
  return new Engine(options);
}
