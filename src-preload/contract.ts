/**
 * The bridge between the renderer and main, defined once. Each method: a channel `noun:verb`, the
 * zod schema main validates its request with, and (as a type) what it answers. Each event: a
 * channel and its payload type. The preload's `window.studio` and main's handler registration are
 * both derived from this file; the renderer imports only its types.
 */
import { z } from 'zod';
import {
  CredentialNameSchema,
  CredentialSpecSchema,
  FunctionNameSchema,
  FunctionSpecSchema,
  ProfileNameSchema,
  ProfileSpecSchema,
  type CredentialInfo,
  type CredentialSpec,
  type ErrorInfo,
  type FunctionRecord,
  type McpStatus,
  type ProfileSpec,
  type PromptView,
  type RevisionRecord,
  type RunRecord,
  type RunResult,
  TestCaseNameSchema,
  type TestCase,
  type TestCaseInfo,
  type TestCaseResult,
} from '../src-main/engine/model/index.ts';

/** A method: its request schema, and its response type carried as a phantom. */
interface Method<Req extends z.ZodType, Res> {
  request: Req;
  /** Never set at runtime: carries the response type. */
  response?: Res;
}
const method = <Res>() => <Req extends z.ZodType>(request: Req): Method<Req, Res> => ({ request });
const event = <Payload>(): { payload?: Payload } => ({});

const None = z.object({}).strict();
const ByName = z.object({ name: FunctionNameSchema }).strict();

export interface FunctionSummary {
  name: string;
  title?: string;
  description: string;
  enabled: boolean;
  revision: number;
  language: 'ts' | 'js';
  updatedAt: string;
}

/** A credential a function lists and has not been granted: nothing is sent until it is (`exists`: it has been added). */
export interface UngrantedCredential {
  name: string;
  exists: boolean;
}

/** What a save answers: the saved function, and the credentials it asks for that it has not been granted. */
export interface SavedFunction extends FunctionRecord {
  ungranted: UngrantedCredential[];
}

export interface TemplateInfo {
  id: string;
  title: string;
  description: string;
}

/** A function made from a pasted curl command or an OpenAPI operation, and what to tell the user. */
export interface ScaffoldedFunction {
  record: FunctionRecord;
  /** The credential it names: where the secret goes (never the secret), and whether one of that name is stored. */
  credential?: { name: string; hosts: string[]; placement: CredentialSpec['placement']; from: string; exists: boolean; command: string };
  notes: string[];
}

/** One operation of an OpenAPI spec, to start a function from: `id` is its operationId, or "METHOD /path" when the spec gives none. */
export interface OpenApiOperationView {
  id: string;
  method: string;
  path: string;
  summary: string;
}

/** One piece of advice about a function (as `callable lint --json` gives it), with the evidence it rests on; `function` is absent for advice about the whole catalog. */
export interface AdviceView {
  function?: string | undefined;
  kind: 'unused_host' | 'read_only' | 'output_schema' | 'tool_name_length' | 'description_length' | 'timeout' | 'tool_count';
  message: string;
  evidence: string;
  /** For `output_schema`: the schema inferred from the recorded results, which `functions:applyAdvice` saves. */
  suggestion?: unknown;
}

/** A function's npm packages, as `callable show` lists them: each as asked for and as locked, and the bundle they make. */
export interface PackagesView {
  packages: Array<{ name: string; range: string; version: string }>;
  /** How many packages the lock holds, dependencies of dependencies included. */
  locked: number;
  bundleBytes: number;
}

/** What adding or removing packages answers: the function saved as a new revision, and its packages now. */
export interface SavedPackages {
  record: FunctionRecord;
  packages: PackagesView;
}

/** The installed packages' declaration files for the editor, at `node_modules/PKG/…` paths; `skipped`: left out to stay within the size bound. */
export interface PackageTypesView {
  files: Array<{ path: string; content: string }>;
  skipped: string[];
}

export interface CredentialView extends CredentialInfo {
  /** Functions that list this credential (those in `grantedTo` may use it). */
  usedBy: string[];
}

export type { McpStatus, PromptView };

export interface ClientConfigs {
  /** Absolute path of the `callable` command of this install. */
  command: string;
  stdio: { claudeCode: string; claudeDesktop: string; cursor: string; vscode: string };
  http: { url: string; claudeCode: string; json: string } | undefined;
}

/**
 * One problem the host's validator found in a value (ajv with the options and dialect choice runs
 * use): where (`instancePath`, a JSON pointer), which schema keyword (`schemaPath`), ajv's message.
 */
export interface SchemaProblem {
  instancePath: string;
  schemaPath: string;
  keyword: string;
  params: Record<string, unknown>;
  message: string;
}

export const contract = {
  'functions:list': method<FunctionSummary[]>()(None),
  'functions:get': method<FunctionRecord>()(ByName),
  /** Compiles and saves; a compile error comes back as `compile_error` with `details.problems` (line, column). */
  'functions:save': method<SavedFunction>()(z.object({ spec: FunctionSpecSchema, source: z.string().max(1_000_000) }).strict()),
  'functions:create': method<FunctionRecord>()(z.object({ template: z.string().regex(/^[a-z0-9_]{1,64}$/), name: FunctionNameSchema }).strict()),
  /** A new function from a pasted curl command, or from an operation of an OpenAPI spec file (JSON or YAML). */
  'functions:createFromRequest': method<ScaffoldedFunction>()(
    z
      .object({
        name: FunctionNameSchema,
        from: z.discriminatedUnion('kind', [
          z.object({ kind: z.literal('curl'), command: z.string().min(1).max(200_000) }).strict(),
          z.object({ kind: z.literal('openapi'), file: z.string().min(1).max(4096), operation: z.string().min(1).max(300) }).strict(),
        ]),
      })
      .strict(),
  ),
  /** The operations of an OpenAPI spec file (JSON or YAML), in the order of its paths, for `functions:createFromRequest` to pick one of. */
  'functions:openapiOperations': method<OpenApiOperationView[]>()(z.object({ file: z.string().min(1).max(4096) }).strict()),
  'functions:rename': method<FunctionRecord>()(z.object({ name: FunctionNameSchema, newName: FunctionNameSchema }).strict()),
  'functions:duplicate': method<FunctionRecord>()(z.object({ name: FunctionNameSchema, newName: FunctionNameSchema }).strict()),
  /** Deletes; answers what was deleted so the renderer can offer undo (save it back). */
  'functions:delete': method<{ spec: FunctionRecord; source: string }>()(ByName),
  /** The credentials the function lists and has not been granted (as `functions:save` answers them). */
  'functions:ungranted': method<{ ungranted: UngrantedCredential[] }>()(ByName),
  /** Advice about the function from its recorded runs and saved test cases, and from what common MCP clients accept (as `callable lint NAME`). */
  'functions:advise': method<AdviceView[]>()(ByName),
  /** Applies a piece of advice that has a fix (the inferred outputSchema, readOnlyHint) by saving a new revision; `conflict` when the function moved past `revision` or the advice no longer holds. */
  'functions:applyAdvice': method<SavedFunction>()(z.object({ name: FunctionNameSchema, kind: z.enum(['output_schema', 'read_only']), revision: z.number().int().positive() }).strict()),
  'functions:setEnabled': method<FunctionRecord>()(z.object({ name: FunctionNameSchema, enabled: z.boolean() }).strict()),
  'functions:revisions': method<RevisionRecord[]>()(ByName),
  'functions:restore': method<FunctionRecord>()(z.object({ name: FunctionNameSchema, revision: z.number().int().positive() }).strict()),
  'templates:list': method<TemplateInfo[]>()(None),
  /** The function's npm packages (the editor's packages panel). */
  'packages:list': method<PackagesView>()(ByName),
  /** Adds packages, `name[@range]` each, as `callable add` does: installed, locked, bundled, saved as a new revision; a failure is one `bad_input` line and nothing changes. */
  'packages:add': method<SavedPackages>()(z.object({ name: FunctionNameSchema, specs: z.array(z.string().min(1).max(400)).min(1).max(50) }).strict()),
  /** Removes packages by name, as `callable remove` does. */
  'packages:remove': method<SavedPackages>()(z.object({ name: FunctionNameSchema, packages: z.array(z.string().min(1).max(214)).min(1).max(50) }).strict()),
  /** Typings for the editor: `ctx` and the built-ins of the sandbox. */
  'types:runtime': method<{ dts: string }>()(None),
  /** Typings for the editor: the declaration files of the function's installed packages, bounded in total size. */
  'types:packages': method<PackageTypesView>()(ByName),
  /** Validates a value against a JSON Schema as a run validates its arguments (the console's form, as the user types); a schema that is not valid JSON Schema is `bad_input`. */
  'schemas:validate': method<{ problems: SchemaProblem[] }>()(z.object({ schema: z.record(z.string(), z.unknown()), value: z.unknown() }).strict()),
  /** Runs a function from the test console. `token` lets the renderer cancel it. */
  'runs:start': method<RunResult>()(z.object({ name: FunctionNameSchema, args: z.unknown(), token: z.string().max(100) }).strict()),
  'runs:cancel': method<{ cancelled: boolean }>()(z.object({ token: z.string().max(100) }).strict()),
  'runs:list': method<RunRecord[]>()(z.object({ name: FunctionNameSchema.optional(), limit: z.number().int().min(1).max(500).optional() }).strict()),
  /** The saved test cases of a function (the Tests tab). */
  'tests:list': method<TestCaseInfo[]>()(ByName),
  'tests:get': method<TestCase>()(z.object({ name: FunctionNameSchema, case: TestCaseNameSchema }).strict()),
  /** Saves a recent run (the console's run just made, or one from the history) as a test case of its function. */
  'tests:fromRun': method<TestCase>()(z.object({ runId: z.string().uuid(), case: TestCaseNameSchema, source: z.enum(['console', 'history']) }).strict()),
  /** Replays the function's cases offline (all, or the one named). */
  'tests:run': method<TestCaseResult[]>()(z.object({ name: FunctionNameSchema, case: TestCaseNameSchema.optional() }).strict()),
  'tests:delete': method<{ deleted: true }>()(z.object({ name: FunctionNameSchema, case: TestCaseNameSchema }).strict()),
  'tests:rename': method<TestCase>()(z.object({ name: FunctionNameSchema, case: TestCaseNameSchema, newName: z.string().max(100) }).strict()),
  /** `oauthPresets`: the providers an OAuth credential can be connected to by name (`credentials:connect`'s `preset`). */
  'credentials:list': method<{ credentials: CredentialView[]; store: 'keychain' | 'env' | 'memory'; oauthPresets: string[] }>()(None),
  /** Creates or replaces a credential. The secret goes one way: it is never sent back. */
  'credentials:set': method<CredentialSpec>()(z.object({ spec: CredentialSpecSchema, secret: z.string().max(10_000).optional() }).strict()),
  'credentials:delete': method<{ deleted: true }>()(z.object({ name: CredentialNameSchema }).strict()),
  /** Lets a function that lists the credential use it: nothing is sent for a function until it is granted. */
  'credentials:grant': method<{ granted: boolean; credentialExists: boolean }>()(z.object({ name: CredentialNameSchema, function: FunctionNameSchema }).strict()),
  /**
   * Connects an OAuth credential: a new one with its server (`issuer` or `preset`), client, hosts,
   * scopes and grant; one defined or connected before with what it stored (and `clientId` the first
   * time). The code grant's sign-in page opens in the system browser; answers once connected, or with why not.
   */
  'credentials:connect': method<CredentialInfo>()(
    z
      .object({
        name: CredentialNameSchema,
        clientId: z.string().min(1).max(500).optional(),
        clientSecret: z.string().min(1).max(10_000).optional(),
        preset: z.string().min(1).max(50).optional(),
        issuer: z.string().min(1).max(2048).optional(),
        hosts: z.array(z.string().min(1).max(300)).max(50).optional(),
        scopes: z.array(z.string().min(1).max(300)).max(100).optional(),
        grant: z.enum(['code', 'device', 'client_credentials']).optional(),
      })
      .strict(),
  ),
  /**
   * Stops waiting for a sign-in `credentials:connect` started; that call answers `cancelled`, with
   * `reason` as its message when one is given (main gives one when the sign-in page could not be opened).
   */
  'credentials:cancelConnect': method<{ cancelled: boolean }>()(z.object({ name: CredentialNameSchema, reason: z.string().min(1).max(1000).optional() }).strict()),
  /** Revokes an OAuth credential's grant at the server where it can and forgets its tokens; the credential stays, not connected. */
  'credentials:disconnect': method<{ note?: string }>()(z.object({ name: CredentialNameSchema }).strict()),
  /** Takes a grant back: the function's next runs are refused the credential. */
  'credentials:revoke': method<{ revoked: true }>()(z.object({ name: CredentialNameSchema, function: FunctionNameSchema }).strict()),
  'mcp:status': method<McpStatus>()(None),
  'mcp:start': method<McpStatus>()(z.object({ port: z.number().int().min(0).max(65535).optional() }).strict()),
  'mcp:stop': method<McpStatus>()(None),
  'mcp:token': method<{ token: string }>()(z.object({ regenerate: z.boolean().optional() }).strict()),
  'mcp:configs': method<ClientConfigs>()(z.object({ profile: ProfileNameSchema.optional() }).strict()),
  'profiles:list': method<ProfileSpec[]>()(None),
  'profiles:set': method<ProfileSpec>()(ProfileSpecSchema),
  'profiles:delete': method<{ deleted: true }>()(z.object({ name: ProfileNameSchema }).strict()),
  /** The prompts waiting for the person at the studio (approvals of destructive MCP calls, elicitation forms), oldest first. */
  'prompts:list': method<PromptView[]>()(None),
  /** Answers a prompt; `conflict` when it no longer waits (answered elsewhere, withdrawn by its caller, past its deadline). */
  'prompts:answer': method<{ answered: true }>()(
    z
      .object({
        id: z.string().uuid(),
        action: z.enum(['accept', 'decline', 'cancel']),
        content: z.record(z.string(), z.union([z.string().max(10_000), z.number(), z.boolean(), z.array(z.string().max(10_000)).max(100)])).optional(),
      })
      .strict(),
  ),
} as const;

/**
 * Something the engine reports that no call returned: runs it could not record yet (a full disk, a
 * lock held by another process) and when they land, a schema moved by another version, a failed
 * automatic backup. `at` is an ISO time.
 */
export interface EngineNotice {
  /** `info` when it says the engine recovered (runs that had waited were recorded). */
  level: 'warning' | 'info';
  message: string;
  at: string;
}

/** Where the engine process stands, as main sees it; `message` is for the user. */
export interface EngineStatus {
  state: 'starting' | 'ready' | 'restarting' | 'unavailable';
  message: string;
}

export const events = {
  /** A run finished, from any caller in any process (console, CLI, MCP clients). */
  'runs:feed': event<RunRecord>(),
  /** Functions or profiles changed, in this or another process. */
  'catalog:changed': event<Record<string, never>>(),
  /** Credentials or their grants changed, in this or another process. */
  'credentials:changed': event<Record<string, never>>(),
  /** A device grant `credentials:connect` runs waits for the person to enter `userCode` at `verificationUri` (on any device). */
  'credentials:deviceCode': event<{ name: string; verificationUri: string; verificationUriComplete?: string; userCode: string }>(),
  /** The HTTP MCP server started, stopped or failed. */
  'mcp:status': event<McpStatus>(),
  /** The engine process started, crashed and is being restarted, or cannot run (sent by main). */
  'engine:status': event<EngineStatus>(),
  /** A report of the engine's own (see EngineNotice). */
  'engine:notice': event<EngineNotice>(),
  /** The prompts waiting for the person at the studio changed (one arrived, was answered, withdrawn or expired): all of them, oldest first. */
  'prompts:pending': event<PromptView[]>(),
} as const;

export type Contract = typeof contract;
export type MethodName = keyof Contract;
export type EventName = keyof typeof events;
export type RequestOf<M extends MethodName> = z.input<Contract[M]['request']>;
export type ResponseOf<M extends MethodName> = NonNullable<Contract[M]['response']>;
export type EventPayload<E extends EventName> = NonNullable<(typeof events)[E]['payload']>;

/** What crosses the bridge for every call. */
export type Envelope<T> = { ok: true; value: T } | { ok: false; error: ErrorInfo };

type Noun<M> = M extends `${infer N}:${string}` ? N : never;

/** `window.studio`: `studio.functions.list({})`, …, plus `on(event, listener)` returning an unsubscribe function. */
export type StudioApi = {
  [N in Noun<MethodName>]: {
    [M in MethodName as M extends `${N}:${infer V}` ? V : never]: (request: RequestOf<M>) => Promise<ResponseOf<M>>;
  };
} & {
  on<E extends EventName>(event: E, listener: (payload: EventPayload<E>) => void): () => void;
};

export const METHOD_NAMES = Object.keys(contract) as MethodName[];
export const EVENT_NAMES = Object.keys(events) as EventName[];

/**
 * What a bridge call rejects with: a plain `{ code, message, details }` object, not an Error
 * subclass, because contextBridge keeps only the message of Error objects it passes on.
 */
export interface BridgeFailure {
  readonly code: string;
  readonly message: string;
  readonly details?: Record<string, unknown>;
}
