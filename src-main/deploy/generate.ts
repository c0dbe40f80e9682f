import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'esbuild';
import { effectiveLimits, isHostPatternError, parseHostPattern, StudioError, type Engine, type EffectiveLimits, type FunctionRecord } from '../engine/index.ts';
import { SchemaValidator } from '../engine/functions/schemas.ts';
import { hasProtoKey } from '../engine/model/schemaAliases.ts';
import { classifyAddress, unbracket } from '../engine/net/addresses.ts';

/**
 * `callable deploy`: writes the enabled functions (of a profile) as a project for workerd or for
 * Cloudflare Workers: a gateway Worker (MCP over Streamable HTTP, both eras, through the MCP SDK's
 * web-standard handler), the function runtime each call's fresh isolate runs, and an egress Worker.
 * Pure generation from the catalog: no secret is read here and none is written.
 */

export type DeployTarget = 'workerd' | 'cloudflare';

export interface DeployOptions {
  target: DeployTarget;
  outDir: string;
  profile?: string | undefined;
  /** The workerd socket's port (the config's default; `workerd serve --socket-addr http=…` overrides it). */
  port?: number;
  /** Browser origins the gateway accepts (canonical scheme://host[:port]); none by default. */
  allowedOrigins?: readonly string[];
}

export interface DeploySecret {
  credential: string;
  /** An OAuth client credentials grant: the binding holds its client secret, and the egress Worker obtains the tokens. */
  oauthClient?: boolean;
  /** The egress Worker's binding that holds it. */
  binding: string;
  /** workerd: the environment variable the binding reads. */
  envVar: string;
}

export interface Deployment {
  target: DeployTarget;
  outDir: string;
  /** The file to run: config.capnp (workerd) or DEPLOY.md (cloudflare). */
  entry: string;
  files: string[];
  functions: string[];
  secrets: DeploySecret[];
  /** The environment variable the gateway's bearer token comes from (workerd). */
  tokenVar: string;
  /** Functions left out, and why. */
  skipped: Array<{ function: string; reason: string }>;
  /** Each served function's deadline (timeoutMs). */
  timeouts: Record<string, number>;
  /** A function whose credential grant is missing: it is deployed, and its credential calls are refused. */
  ungranted: Array<{ function: string; credential: string }>;
}

export const TOKEN_VAR = 'CALLABLE_MCP_TOKEN';
export const COMPATIBILITY_DATE = '2025-09-01';
const HERE = dirname(fileURLToPath(import.meta.url));
const WORKERS = join(HERE, 'workers');
/** The "__proto__" aliasing the engine validates with, bundled into the gateway with the validators that need it. */
const SCHEMA_ALIASES = join(HERE, '..', 'engine', 'model', 'schemaAliases.ts');

/** What the gateway knows of one function. */
interface CatalogEntry {
  name: string;
  title?: string | undefined;
  description: string;
  inputSchema: object;
  outputSchema?: object | undefined;
  annotations?: object | undefined;
  code: string;
  limits: EffectiveLimits;
  /** ctx.secret's answer for each credential the function lists: its hosts when it may use it, else why not. */
  secrets: Array<{ name: string; hosts?: string[]; refused?: string }>;
}

export function secretBinding(credential: string): string {
  return `SECRET_${credential.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

export function secretEnvVar(credential: string): string {
  return `CALLABLE_${secretBinding(credential)}`;
}

/** The functions a deployment serves: the enabled ones, of the profile when one is named. */
function servedFunctions(engine: Engine, profile: string | undefined): FunctionRecord[] {
  const all = engine.functions.list().filter((f) => f.enabled);
  if (profile === undefined) return all;
  const names = new Set(engine.profiles.get(profile).functions);
  return all.filter((f) => names.has(f.name));
}

/** Why a function cannot be served by the deployed gateway, which has no person to ask and no client model. */
function notDeployable(record: FunctionRecord): string | undefined {
  if (record.askBeforeCall === true || record.annotations?.destructiveHint === true) {
    return 'it asks a person before every call (askBeforeCall or destructiveHint), and a deployed gateway has no one to ask';
  }
  if (record.sampling !== undefined) return "it has the sampling setting (ctx.sample asks the client's model), which a deployed gateway does not offer";
  return undefined;
}

export async function writeDeployment(engine: Engine, options: DeployOptions): Promise<Deployment> {
  const skipped: Deployment['skipped'] = [];
  const records = servedFunctions(engine, options.profile).filter((record) => {
    // A client credentials grant deploys (the egress Worker asks for its tokens); a user's sign-in does not.
    const oauth = record.credentials.find((name) => engine.credentials.oauth.isOAuth(name) && engine.credentials.oauth.deployable(name) === undefined);
    const grant = oauth === undefined ? undefined : engine.credentials.oauth.status(oauth)?.grant;
    const reason =
      notDeployable(record) ??
      (oauth === undefined
        ? undefined
        : grant === 'client_credentials'
          ? `it uses OAuth credential "${oauth}", which is not connected with a client secret yet: connect it first ("callable credentials connect ${oauth} --grant client_credentials --client-secret-stdin")`
          : `it uses OAuth credential "${oauth}" (grant ${grant}: a person signs in, and a deployed gateway does not carry the refresh token); only client_credentials OAuth credentials deploy`);
    if (reason !== undefined) skipped.push({ function: record.name, reason });
    return reason === undefined;
  });
  if (records.length === 0 && skipped.length > 0) {
    throw new StudioError('bad_input', `no function can be deployed: ${skipped.map((k) => `${k.function}: ${k.reason}`).join('; ')}`);
  }
  if (records.length === 0) {
    throw new StudioError(
      'bad_input',
      options.profile === undefined
        ? 'there is no enabled function to deploy; import some first: callable import DIR'
        : `profile "${options.profile}" has no enabled function to deploy`,
    );
  }
  const catalog: CatalogEntry[] = [];
  const policies: Record<string, { allowedHosts: string[]; credentials: string[]; responseBytes: number }> = {};
  const credentials = new Map<
    string,
    { name: string; binding: string; hosts: string[]; hostsText: string; header?: string; template?: string; query?: string; oauth?: ReturnType<Engine['credentials']['oauth']['deployable']> }
  >();
  const ungranted: Deployment['ungranted'] = [];
  const localLiterals = new Set<string>();
  for (const record of records) {
    const { compiled } = engine.functions.load(record.name);
    const limits = effectiveLimits(record);
    catalog.push({
      name: record.name,
      title: record.title,
      description: record.description,
      inputSchema: record.inputSchema,
      outputSchema: record.outputSchema,
      annotations: record.annotations,
      code: compiled.code,
      limits,
      secrets: record.credentials.map((name) => {
        try {
          return { name, hosts: engine.credentials.usable(name, record).hosts };
        } catch (error) {
          return { name, refused: error instanceof Error ? error.message : String(error) };
        }
      }),
    });
    const granted = engine.credentials.grantsOf(record.name);
    const usable = record.credentials.filter((c) => granted.includes(c) && engine.credentials.find(c) !== undefined);
    for (const c of record.credentials) if (!usable.includes(c)) ungranted.push({ function: record.name, credential: c });
    policies[record.name] = { allowedHosts: [...record.allowedHosts], credentials: usable, responseBytes: limits.responseBytes };
    for (const name of usable) {
      const spec = engine.credentials.find(name)!;
      const p = spec.placement;
      const oauth = engine.credentials.oauth.deployable(name);
      credentials.set(name, {
        name,
        binding: secretBinding(name),
        hosts: spec.hosts,
        hostsText: spec.hosts.join(', '),
        ...(p.kind === 'header' ? { header: p.header, template: p.template } : { query: p.param }),
        ...(oauth ? { oauth } : {}),
      });
      // The token endpoint is the egress Worker's own destination: a local one (a test server) must be reachable.
      if (oauth) {
        const host = unbracket(new URL(oauth.tokenUrl).hostname);
        if (!classifyAddress(host, false).allowed && classifyAddress(host, true).allowed) localLiterals.add(host);
      }
    }
    for (const host of record.allowedHosts) {
      const pattern = parseHostPattern(host);
      if (isHostPatternError(pattern) || !pattern.literal) continue;
      const address = unbracket(pattern.host);
      // A local literal the allow-list names exactly is the only non-public address workerd's network may reach.
      if (!classifyAddress(address, false).allowed && classifyAddress(address, true).allowed) localLiterals.add(address);
    }
  }

  const validators = await validatorModules(records);
  // The isolate's module: the function itself is the loader's second module, not bundled in.
  const runtime = await bundle(join(WORKERS, 'runtime.js'), {}, ['./function.js']);
  const settings = {
    compatibilityDate: COMPATIBILITY_DATE,
    checkHost: options.target === 'workerd',
    allowedOrigins: [...(options.allowedOrigins ?? [])],
    instance: options.target,
  };
  const virtual: Record<string, string> = {
    'callable:catalog': `export const CATALOG = ${JSON.stringify(catalog)};\nexport const SETTINGS = ${JSON.stringify(settings)};\nexport const RUNTIME = ${JSON.stringify(runtime)};\n`,
    'callable:egress': `export const POLICIES = ${JSON.stringify(policies)};\nexport const CREDENTIALS = ${JSON.stringify(Object.fromEntries(credentials))};\n`,
    ...validators,
  };
  const gateway = await bundle(join(WORKERS, 'gateway.js'), virtual);
  const egress = await bundle(join(WORKERS, 'egress.js'), virtual);
  const secrets: DeploySecret[] = [...credentials.values()].map((c) => ({ credential: c.name, binding: c.binding, envVar: secretEnvVar(c.name), ...(c.oauth ? { oauthClient: true } : {}) }));

  const files: Record<string, string> =
    options.target === 'workerd'
      ? {
          'gateway.js': gateway,
          'egress.js': egress,
          'config.capnp': workerdConfig(options.port ?? 8787, secrets, [...localLiterals]),
          'README.md': workerdReadme(secrets),
        }
      : {
          'gateway/index.js': gateway,
          'gateway/wrangler.jsonc': wranglerGateway(),
          'egress/index.js': egress,
          'egress/wrangler.jsonc': wranglerEgress(),
          'DEPLOY.md': cloudflareReadme(secrets),
        };
  for (const [name, text] of Object.entries(files)) {
    const path = join(options.outDir, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
  return {
    target: options.target,
    outDir: options.outDir,
    entry: join(options.outDir, options.target === 'workerd' ? 'config.capnp' : 'DEPLOY.md'),
    files: Object.keys(files),
    functions: records.map((r) => r.name),
    secrets,
    tokenVar: TOKEN_VAR,
    timeouts: Object.fromEntries(catalog.map((f) => [f.name, f.limits.timeoutMs])),
    skipped,
    ungranted,
  };
}

/**
 * Argument and result validators compiled ahead (the isolates of workerd may not compile code at
 * run time) exactly as the engine keeps a saved function's (SchemaValidator.storeStored): ajv's
 * standalone code with the same options (own properties only), dialect and "__proto__" aliasing.
 * A schema that names a "__proto__" field gets its validator wrapped as the engine's is
 * (protoAware), so the deployed gateway answers an argument as the local server does.
 */
async function validatorModules(records: FunctionRecord[]): Promise<Record<string, string>> {
  const validator = new SchemaValidator();
  const modules: Record<string, string> = {};
  const lines: string[] = [];
  let i = 0;
  const compile = (schema: object, what: string): string => {
    let code: string | undefined;
    validator.storeStored(schema, what, { read: () => undefined, write: (_key, written) => (code = written) });
    // storeStored leaves a schema that does not compile to its call: compiling it says why.
    if (code === undefined) {
      validator.compile(schema, what);
      throw new StudioError('bad_input', `${what}: its validator could not be written out as code`);
    }
    const id = `callable:validator/${i++}`;
    modules[id] = code;
    const { $schema: _declared, ...rest } = schema as Record<string, unknown>;
    if (!hasProtoKey(rest)) return id;
    modules[`${id}/aware`] = `import validate from ${JSON.stringify(id)};\nimport { protoAware } from ${JSON.stringify(SCHEMA_ALIASES)};\nexport default protoAware(validate);\n`;
    return `${id}/aware`;
  };
  const imports: string[] = [];
  for (const record of records) {
    const input = compile(record.inputSchema, `${record.name}'s inputSchema`);
    imports.push(`import v${imports.length} from ${JSON.stringify(input)};`);
    const inputVar = `v${imports.length - 1}`;
    let outputVar = 'undefined';
    if (record.outputSchema) {
      const output = compile(record.outputSchema, `${record.name}'s outputSchema`);
      imports.push(`import v${imports.length} from ${JSON.stringify(output)};`);
      outputVar = `v${imports.length - 1}`;
    }
    lines.push(`  ${JSON.stringify(record.name)}: { input: ${inputVar}, output: ${outputVar} },`);
  }
  modules['callable:validators'] = `${imports.join('\n')}\nexport const VALIDATORS = {\n${lines.join('\n')}\n};\n`;
  return modules;
}

async function bundle(entry: string, virtual: Record<string, string>, external: string[] = []): Promise<string> {
  const { build } = await import('esbuild');
  const repoRoot = join(HERE, '..', '..', '..');
  const plugin: Plugin = {
    name: 'callable-virtual',
    setup(b) {
      b.onResolve({ filter: /^callable:/ }, (args) => ({ path: args.path, namespace: 'callable' }));
      b.onLoad({ filter: /.*/, namespace: 'callable' }, (args) => ({ contents: virtual[args.path] ?? '', loader: 'js', resolveDir: repoRoot }));
    },
  };
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    target: 'es2023',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'browser', 'import', 'default'],
    external: ['cloudflare:*', 'node:*', ...external],
    logLevel: 'silent',
    legalComments: 'none',
    // Bundled engine modules call createRequire(import.meta.url) at load (schemas.ts); the URL only has to be one.
    define: { 'import.meta.url': '"file:///worker.js"' },
    plugins: [plugin],
  });
  return result.outputFiles[0]!.text;
}

function capnpString(text: string): string {
  return JSON.stringify(text);
}

function workerdConfig(port: number, secrets: DeploySecret[], localLiterals: string[]): string {
  const egressBindings = secrets.map((s) => `    (name = ${capnpString(s.binding)}, fromEnvironment = ${capnpString(s.envVar)}),`).join('\n');
  // workerd's own network filter is a second wall: public addresses, after DNS too, plus only the
  // local literals some function's allowedHosts names exactly.
  const allow = ['public', ...localLiterals.map((a) => (a.includes(':') ? `${a}/128` : `${a}/32`))].map(capnpString).join(', ');
  return `# Written by "callable deploy --target workerd". Run: ${TOKEN_VAR}=… workerd serve --experimental config.capnp
# (--experimental: the Worker Loader binding is experimental in workerd). Secrets come from the
# environment only (fromEnvironment): see README.md in this folder.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "gateway", worker = .gateway),
    (name = "egress", worker = .egress),
    (name = "internet", network = (allow = [${allow}], tlsOptions = (trustBrowserCas = true))),
    (name = "nowhere", network = (allow = [])),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "gateway") ],
);

const gateway :Workerd.Worker = (
  modules = [ (name = "gateway.js", esModule = embed "gateway.js") ],
  compatibilityDate = "${COMPATIBILITY_DATE}",
  compatibilityFlags = ["nodejs_compat", "enable_ctx_exports"],
  bindings = [
    (name = "LOADER", workerLoader = ()),
    (name = "EGRESS", service = "egress"),
    (name = "MCP_TOKEN", fromEnvironment = "${TOKEN_VAR}"),
  ],
  globalOutbound = "nowhere",
);

const egress :Workerd.Worker = (
  modules = [ (name = "egress.js", esModule = embed "egress.js") ],
  compatibilityDate = "${COMPATIBILITY_DATE}",
  compatibilityFlags = ["nodejs_compat"],
  bindings = [
${egressBindings}
  ],
  globalOutbound = "internet",
);
`;
}

function workerdReadme(secrets: DeploySecret[]): string {
  const vars = [`${TOKEN_VAR}=<the bearer token clients send>`, ...secrets.map((s) => `${s.envVar}=<the ${s.oauthClient ? 'OAuth client secret' : 'secret'} of credential ${s.credential}>`)];
  return `# Callable Studio functions on workerd

Written by \`callable deploy --target workerd\`. Run it with the npm \`workerd\` binary:

    ${vars.join(' \\\n    ')} \\
    npx workerd serve --experimental config.capnp

MCP (Streamable HTTP, 2026-07-28 and 2025-11-25 clients) is at http://127.0.0.1:PORT/mcp with
\`Authorization: Bearer <token>\`. \`--socket-addr http=ADDR:PORT\` moves the socket. Start as many
processes as you like behind a load balancer: the gateway keeps no state between requests.
No secret is written in this folder; each comes from the environment of the workerd process.
`;
}

function wranglerGateway(): string {
  return `${JSON.stringify(
    {
      name: 'callable-gateway',
      main: 'index.js',
      compatibility_date: COMPATIBILITY_DATE,
      compatibility_flags: ['nodejs_compat', 'enable_ctx_exports'],
      worker_loaders: [{ binding: 'LOADER' }],
      services: [{ binding: 'EGRESS', service: 'callable-egress' }],
    },
    null,
    2,
  )}\n`;
}

function wranglerEgress(): string {
  return `${JSON.stringify({ name: 'callable-egress', main: 'index.js', compatibility_date: COMPATIBILITY_DATE, compatibility_flags: ['nodejs_compat'] }, null, 2)}\n`;
}

/** The `wrangler secret put` lines a Cloudflare deployment needs (the secrets are typed in, never written). */
export function secretPutLines(secrets: DeploySecret[]): string[] {
  return [`wrangler secret put MCP_TOKEN --name callable-gateway`, ...secrets.map((s) => `wrangler secret put ${s.binding} --name callable-egress`)];
}

function cloudflareReadme(secrets: DeploySecret[]): string {
  return `# Callable Studio functions on Cloudflare Workers

Written by \`callable deploy --target cloudflare\`; nothing here has been deployed. Two Workers:
\`egress/\` (callable-egress: allow-lists, credentials, limits) and \`gateway/\` (callable-gateway:
MCP at https://<its route>/mcp, and each call in an isolate of its own through the Worker Loader).

Needs: a Cloudflare account whose plan offers the Worker Loader binding (Dynamic Workers,
\`worker_loaders\` in wrangler.jsonc), and Wrangler logged in (\`wrangler login\`).

1. Deploy the egress Worker first (the gateway binds to it):

       (cd egress && wrangler deploy)
       (cd gateway && wrangler deploy)

2. Give each secret (Wrangler asks for the value; it is never written to a file):

${secretPutLines(secrets)
  .map((l) => `       ${l}`)
  .join('\n')}
${secrets.some((s) => s.oauthClient) ? `\n   For ${secrets.filter((s) => s.oauthClient).map((s) => s.binding).join(', ')} (OAuth client credentials) give the client secret: the egress Worker asks for the access tokens.\n` : ''}
On Cloudflare, the Host check of the local server is not made (the Worker answers on its own
public name); the bearer token and the Origin allow-list are checked as locally.
`;
}
