// The studio's API behind the bridge: one handler per contract method, each validated by the
// contract's schema. Runs in the engine process (src-main/engineProcess/main.ts), which answers the
// calls Electron main relays to it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import { contract, events, type ClientConfigs, type PackagesView, type Envelope, type EventName, type EventPayload, type MethodName, type ResponseOf, type UngrantedCredential } from '../../src-preload/contract.ts';
import { credentialCommand, defaultDataDir, formatZodError, PRESET_NAMES, readTemplates, StudioError, toErrorInfo, type Engine, type EngineReport, type ErrorInfo, type PromptView } from '../engine/index.ts';
import { stdioConfigs, stdioLaunch } from '../mcp/clientConfig.ts';
import type { McpHttpHost } from '../mcp/httpHost.ts';

export interface StudioHost {
  engine: Engine;
  /** The app's resources folder (templates in examples/, editor typings in types/). */
  resourcesDir: string;
  /** Absolute path of the `callable` command of this install, for client configs. */
  callableCommand: string;
  mcp: McpHttpHost;
  diagnostic: (message: string) => void;
  /** Asks the app to open an OAuth sign-in page in the system browser (main checks it is on `authorizationEndpoint`). */
  openUrl?: (request: { url: string; authorizationEndpoint: string; credential: string }) => void;
  /** Subscribes to the engine's reports about its data (its `notice`), forwarded to the window as `engine:notice`. */
  notices?: (listener: (report: EngineReport) => void) => () => void;
}

type Handlers = { [M in MethodName]: (request: z.output<(typeof contract)[M]['request']>) => Promise<ResponseOf<M>> | ResponseOf<M> };

export interface StudioApiServer {
  /** Validates and runs one call; never throws: errors come back as `{ ok: false, error }`. */
  dispatch(channel: string, payload: unknown): Promise<Exclude<Envelope<unknown>, { ok: false }> | { ok: false; error: ErrorInfo }>;
  subscribe<E extends EventName>(event: E, listener: (payload: EventPayload<E>) => void): () => void;
  close(): void;
}

export function createStudioApi(host: StudioHost): StudioApiServer {
  const { engine } = host;
  const running = new Map<string, AbortController>();
  const connecting = new Map<string, AbortController>();
  const templatesDir = join(host.resourcesDir, 'examples');
  /** The credentials `fn` lists and has not been granted (what `callable import` and `new` print), and whether each exists yet. */
  const ungrantedOf = (fn: { name: string; credentials: readonly string[] }): UngrantedCredential[] =>
    engine.credentials.ungranted(fn).map((name) => ({ name, exists: engine.credentials.find(name) !== undefined }));

  const handlers: Handlers = {
    'functions:list': () =>
      engine.functions.list().map((f) => ({
        name: f.name,
        ...(f.title ? { title: f.title } : {}),
        description: f.description,
        enabled: f.enabled,
        revision: f.revision,
        language: f.language,
        updatedAt: f.updatedAt,
      })),
    'functions:get': ({ name }) => engine.functions.get(name),
    'functions:save': async ({ spec, source }) => {
      const record = await engine.saveFunction({ spec, source });
      return { ...record, ungranted: ungrantedOf(record) };
    },
    'functions:ungranted': ({ name }) => ({ ungranted: ungrantedOf(engine.functions.get(name)) }),
    'functions:create': ({ template, name }) => engine.createFromTemplate(templatesDir, template, name),
    'functions:createFromRequest': async ({ name, from }) => {
      const { record, scaffold } = await engine.createFromRequest(name, from.kind === 'curl' ? from : { kind: 'openapi', file: from.file, operation: from.operation });
      const c = scaffold.credential;
      return {
        record,
        notes: scaffold.notes,
        ...(c ? { credential: { name: c.name, hosts: c.hosts, placement: c.placement, from: c.from, exists: engine.credentials.find(c.name) !== undefined, command: credentialCommand(c) } } : {}),
      };
    },
    'functions:openapiOperations': ({ file }) => engine.openApiOperations(file),
    'functions:rename': ({ name, newName }) => engine.functions.rename(name, newName),
    'functions:duplicate': ({ name, newName }) => engine.duplicateFunction(name, newName),
    'functions:delete': ({ name }) => {
      const removed = engine.functions.delete(name);
      return { spec: removed, source: removed.source };
    },
    'functions:advise': ({ name }) => engine.advise([name]),
    'functions:applyAdvice': async ({ name, kind, revision }) => {
      const record = await engine.applyAdvice(name, kind, revision);
      return { ...record, ungranted: ungrantedOf(record) };
    },
    'functions:setEnabled': ({ name, enabled }) => engine.functions.setEnabled(name, enabled),
    'functions:revisions': ({ name }) => engine.functions.revisions(name),
    'functions:restore': ({ name, revision }) => engine.functions.restore(name, revision),
    'templates:list': () => readTemplates(templatesDir).map(({ id, title, description }) => ({ id, title, description })),
    'packages:list': ({ name }) => packagesView(engine, name),
    'packages:add': async ({ name, specs }) => ({ record: await engine.addPackages(name, specs), packages: packagesView(engine, name) }),
    'packages:remove': async ({ name, packages }) => ({ record: await engine.removePackages(name, packages), packages: packagesView(engine, name) }),
    'types:packages': ({ name }) => engine.packageTypes(name),
    'types:runtime': () => ({ dts: readFileSync(join(host.resourcesDir, 'types', 'callable.d.ts'), 'utf8') }),
    'schemas:validate': ({ schema, value }) => ({ problems: engine.schemaProblems(schema, value) }),
    'runs:start': async ({ name, args, token }) => {
      const controller = new AbortController();
      running.set(token, controller);
      try {
        // The person at the console answers the function's ctx.elicit questions in the studio's prompt.
        return await engine.run(name, args, { caller: 'console', signal: controller.signal, elicit: (request, signal) => engine.askInStudio(request, signal) });
      } finally {
        running.delete(token);
      }
    },
    'runs:cancel': ({ token }) => {
      const controller = running.get(token);
      controller?.abort();
      return { cancelled: controller !== undefined };
    },
    'runs:list': ({ name, limit }) => engine.runs.list({ functionName: name, limit }),
    'tests:list': ({ name }) => engine.tests.list(name),
    'tests:get': ({ name, case: caseName }) => engine.tests.get(name, caseName),
    'tests:fromRun': ({ runId, case: caseName, source }) => engine.tests.fromRun(runId, caseName, { source }),
    'tests:run': ({ name, case: caseName }) => engine.tests.run(name, caseName),
    'tests:delete': ({ name, case: caseName }) => {
      engine.tests.delete(name, caseName);
      return { deleted: true as const };
    },
    'tests:rename': ({ name, case: caseName, newName }) => engine.tests.rename(name, caseName, newName),
    'credentials:list': async () => {
      const functions = engine.functions.list();
      const credentials = (await engine.credentials.list()).map((c) => ({ ...c, usedBy: functions.filter((f) => f.credentials.includes(c.name)).map((f) => f.name) }));
      return { credentials, store: engine.credentials.storeKind, oauthPresets: [...PRESET_NAMES] };
    },
    'credentials:set': ({ spec, secret }) => engine.credentials.set(spec, secret === '' ? undefined : secret),
    'credentials:delete': async ({ name }) => {
      await engine.credentials.remove(name);
      return { deleted: true as const };
    },
    'credentials:grant': ({ name, function: fn }) => engine.credentials.grant(name, fn),
    'credentials:connect': async ({ name, clientId, clientSecret, preset, issuer, hosts, scopes, grant: asked }) => {
      if (connecting.has(name)) throw new StudioError('conflict', `"${name}" is already waiting for its sign-in; finish it in the browser, or cancel it`);
      const status = engine.credentials.oauth.status(name);
      if (!status && engine.credentials.find(name)) throw new StudioError('bad_input', `credential "${name}" is not an OAuth credential; only OAuth credentials connect`);
      if (!status && issuer === undefined && preset === undefined) throw new StudioError('bad_input', `give the authorization server (its issuer URL) or a provider to connect "${name}"`);
      const grant = asked ?? status?.grant ?? 'code';
      const controller = new AbortController();
      connecting.set(name, controller);
      try {
        return await engine.credentials.connect(
          { name, hosts: hosts ?? [], clientId: clientId ?? '', scopes: scopes ?? [], grant, preset, issuer },
          {
            clientSecret: clientSecret ?? (await engine.credentials.oauth.storedClientSecret(name, controller.signal)),
            signal: controller.signal,
            onAuthorizeUrl: (url, { authorizationEndpoint }) => host.openUrl?.({ url, authorizationEndpoint, credential: name }),
            // The page shows the code to enter on another device while this call waits.
            onDeviceCode: ({ verificationUri, verificationUriComplete, userCode }) =>
              emit('credentials:deviceCode', { name, verificationUri, userCode, ...(verificationUriComplete ? { verificationUriComplete } : {}) }),
          },
        );
      } finally {
        connecting.delete(name);
      }
    },
    'credentials:cancelConnect': ({ name, reason }) => {
      const controller = connecting.get(name);
      controller?.abort(reason === undefined ? undefined : new StudioError('cancelled', reason));
      return { cancelled: controller !== undefined };
    },
    'credentials:disconnect': async ({ name }) => {
      const note = await engine.credentials.oauth.disconnect(name);
      return note === undefined ? {} : { note };
    },
    'credentials:revoke': ({ name, function: fn }) => {
      engine.credentials.revoke(name, fn);
      return { revoked: true as const };
    },
    'mcp:status': () => host.mcp.status,
    'mcp:start': ({ port }) => host.mcp.start(port),
    'mcp:stop': () => host.mcp.stop(),
    'mcp:token': async ({ regenerate }) => {
      const token = await engine.mcpToken({ regenerate: regenerate === true });
      if (regenerate && host.mcp.status.running) await host.mcp.start(host.mcp.status.port);
      return { token };
    },
    'mcp:configs': ({ profile }) => clientConfigs(host, profile),
    'profiles:list': () => engine.profiles.list(),
    'profiles:set': (spec) => engine.profiles.set(spec),
    'profiles:delete': ({ name }) => {
      engine.profiles.delete(name);
      return { deleted: true as const };
    },
    'prompts:list': () => engine.prompts.pending(),
    'prompts:answer': ({ id, action, content }) => {
      engine.prompts.answer(id, { action, ...(content ? { content } : {}) });
      return { answered: true as const };
    },
  };

  // ---- events ----
  const listeners = new Map<EventName, Set<(payload: unknown) => void>>();
  const emit = (event: EventName, payload: unknown): void => {
    for (const l of listeners.get(event) ?? []) l(payload);
  };
  let stopFeed: (() => void) | undefined;
  let feedCursor = 0;
  const stopCatalog = engine.onCatalogChange(() => emit('catalog:changed', {}));
  const stopCredentials = engine.onCredentialsChange(() => emit('credentials:changed', {}));
  const stopMcp = host.mcp.onStatus((status) => emit('mcp:status', status));
  // The studio is open while this API serves a window: `callable mcp` processes on this folder ask the person here.
  const stopPrompts = openPrompts(host, (pending) => emit('prompts:pending', pending));
  const stopNotices = host.notices?.(({ level, message }) => emit('engine:notice', { level, message, at: new Date().toISOString() }));

  // Runs recorded by any process, heard through the engine's change feed while a window listens.
  const ensureFeed = (): void => {
    if (stopFeed || (listeners.get('runs:feed')?.size ?? 0) === 0) return;
    feedCursor = engine.runs.cursor();
    stopFeed = engine.onRunsRecorded(() => {
      try {
        // Read to the end: a burst may hold more runs than one read returns.
        for (;;) {
          const { runs, cursor } = engine.runs.after(feedCursor);
          if (runs.length === 0) break;
          feedCursor = cursor;
          for (const run of runs) emit('runs:feed', run);
        }
      } catch (error) {
        host.diagnostic(`run feed: ${(error as Error).message}`);
      }
    });
  };

  return {
    async dispatch(channel, payload) {
      if (!Object.hasOwn(contract, channel)) return { ok: false, error: { code: 'bad_input', message: `unknown method "${String(channel).slice(0, 100)}"` } };
      const name = channel as MethodName;
      const parsed = contract[name].request.safeParse(payload);
      if (!parsed.success) return { ok: false, error: { code: 'bad_input', message: `${name}: ${formatZodError(parsed.error)}` } };
      try {
        const handler = handlers[name] as (request: unknown) => unknown;
        return { ok: true, value: await handler(parsed.data) };
      } catch (error) {
        if (error instanceof StudioError) return { ok: false, error: toErrorInfo(error) };
        host.diagnostic(`${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        return { ok: false, error: { code: 'internal', message: `${name} failed unexpectedly: ${error instanceof Error ? error.message : String(error)}` } };
      }
    },
    subscribe(event, listener) {
      if (!Object.hasOwn(events, event)) throw new Error(`unknown event ${String(event)}`);
      let set = listeners.get(event);
      if (!set) listeners.set(event, (set = new Set()));
      set.add(listener as (payload: unknown) => void);
      ensureFeed();
      return () => {
        set.delete(listener as (payload: unknown) => void);
        if (event === 'runs:feed' && set.size === 0 && stopFeed) {
          stopFeed();
          stopFeed = undefined;
        }
      };
    },
    close() {
      stopCatalog();
      stopCredentials();
      stopMcp();
      stopPrompts();
      stopNotices?.();
      stopFeed?.();
      for (const c of [...running.values(), ...connecting.values()]) c.abort();
      listeners.clear();
    },
  };
}

/** Marks the studio open (a heartbeat other processes read) and forwards the pending prompts as they change; returns the closer. */
function openPrompts(host: StudioHost, emit: (pending: PromptView[]) => void): () => void {
  try {
    host.engine.prompts.openStudio();
  } catch (error) {
    // Calls keep being refused with the way to allow them, as if the studio were closed; the next start tries again.
    host.diagnostic(`the studio cannot take approval prompts: ${(error as Error).message}`);
  }
  const stopWatch = host.engine.prompts.watch(emit);
  return () => {
    stopWatch();
    host.engine.prompts.closeStudio();
  };
}

function packagesView(engine: Engine, name: string): PackagesView {
  const p = engine.packages(name);
  const packages = Object.keys(p.dependencies)
    .sort()
    .map((pkg) => ({ name: pkg, range: p.dependencies[pkg]!, version: p.versions[pkg] ?? '?' }));
  return { packages, locked: p.locked, bundleBytes: p.bundleBytes };
}

function clientConfigs(host: StudioHost, profile: string | undefined): ClientConfigs {
  const command = host.callableCommand;
  const args = [...(profile ? ['--profile', profile] : []), ...(host.engine.dataDir !== defaultDataDir() ? ['--data-dir', host.engine.dataDir] : [])];
  const json = (value: unknown): string => JSON.stringify(value, null, 2);
  const status = host.mcp.status;
  const url = status.url ? `${status.url}${profile ? `/${profile}` : ''}` : undefined;
  return {
    command,
    // This engine process is the Node 24 the studio runs on; its environment holds the keychain's session.
    stdio: stdioConfigs(stdioLaunch(process.execPath, command, args, process.env)),
    http: url
      ? {
          url,
          claudeCode: `claude mcp add --transport http callable ${url}${status.auth ? ' --header "Authorization: Bearer <token>"' : ''}`,
          json: json({ mcpServers: { callable: { type: 'http', url, ...(status.auth ? { headers: { Authorization: 'Bearer <token>' } } : {}) } } }),
        }
      : undefined,
  };
}
