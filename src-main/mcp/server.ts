import {
  CLIENT_INFO_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type CallToolResult,
  type ElicitRequestFormParams,
  type JSONRPCRequest,
  type McpServerFactory,
  type Result,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import type { ApprovalRequest, LoadedFunction } from '../engine/index.ts';
import type { McpEnginePort as Engine, McpRunOptions } from './port.ts';
import { StudioError, type FunctionRecord, type LogLevel, type ProfileSpec, type RunResult } from '../engine/model/index.ts';
import { describeToolFailure, toolErrorResult } from '../engine/model/toolResults.ts';
import { keepWireArguments } from './wireArguments.ts';

export const SERVER_INFO = { name: 'callable-studio', title: 'Callable Studio', version: '0.1.0' };

/** The JSON-RPC error a call in flight gets when the server is stopped (Ctrl-C, SIGTERM). */
export const SHUTTING_DOWN = 'the server is shutting down (it was stopped); this call was interrupted and recorded as such: call again once it is back';

/** How long a result waits behind a progress notice sent just before it. */
const PROGRESS_GAP_MS = 20;
const FIND_TOOL = 'find_functions';
const CALL_TOOL = 'call_function';
const MCP_LEVEL: Record<LogLevel, 'debug' | 'info' | 'warning' | 'error'> = { debug: 'debug', info: 'info', warn: 'warning', error: 'error' };

export interface ToolServerOptions {
  /** Serve only this profile's functions (and its meta-tools, if it opts in). */
  profile?: string | undefined;
  transport: 'stdio' | 'http';
  diagnostic?: (message: string) => void;
}

/**
 * The MCP server as a factory: tools are the enabled functions (of a profile), read live from the
 * database on every request, so a call always runs the latest saved version. Transports stay thin
 * around this (serveStdio, createMcpHandler). `track` keeps instances that live for a connection
 * or session so they can be told when the tool list changes.
 */
export class ToolServer {
  readonly #engine: Engine;
  readonly #options: ToolServerOptions;
  readonly #live = new Set<Server>();
  /** Instances that live for a connection or session: "allow for this session" is remembered on them. */
  readonly #sessions = new WeakSet<Server>();
  #warmed = false;
  /** The tools/list answer for one catalog version: it depends on nothing else. */
  #tools: { version: number; tools: Tool[] } | undefined;
  /** This server's profile as read at one catalog version (every profile change moves it). */
  #profileAt: { version: number; profile: ProfileSpec | undefined } | undefined;

  constructor(engine: Engine, options: ToolServerOptions) {
    this.#engine = engine;
    this.#options = options;
    if (options.profile !== undefined) engine.profiles.get(options.profile);
  }

  /** A factory for per-connection instances (stdio, 2025-era sessions) that are told about changes. */
  readonly trackedFactory: McpServerFactory = () => {
    const server = this.#build();
    this.#live.add(server);
    this.#sessions.add(server);
    const previous = server.onclose;
    server.onclose = () => {
      this.#live.delete(server);
      previous?.();
    };
    return server;
  };

  /** A factory for per-request instances (2026-era HTTP), which are never tracked. */
  readonly requestFactory: McpServerFactory = () => this.#build();

  /** Tells every tracked instance that the tool list changed. */
  notifyToolsChanged(): void {
    for (const server of this.#live) {
      server.sendToolListChanged().catch(() => {});
    }
  }

  get liveConnections(): number {
    return this.#live.size;
  }

  /** This server's profile, read again once the catalog version moved (`version`: as just read, in this turn). */
  #profile(version?: number): ProfileSpec | undefined {
    if (this.#options.profile === undefined) return undefined;
    const now = version ?? this.#engine.functions.catalogVersion();
    if (this.#profileAt?.version !== now) this.#profileAt = { version: now, profile: this.#engine.profiles.find(this.#options.profile) };
    return this.#profileAt.profile;
  }

  /** The functions this server exposes right now (enabled, and in its profile if it has one). */
  servedFunctions(): FunctionRecord[] {
    const profile = this.#profile();
    const all = this.#engine.functions.list().filter((f) => f.enabled);
    if (this.#options.profile === undefined) return all;
    if (!profile) return [];
    const names = new Set(profile.functions);
    return all.filter((f) => names.has(f.name));
  }

  /** The function a call names, read live, if this server exposes it (enabled, in the profile). */
  #lookup(name: string, profile: ProfileSpec | undefined, version: number | undefined): LoadedFunction | undefined {
    if (this.#options.profile !== undefined && !profile?.functions.includes(name)) return undefined;
    let loaded: LoadedFunction;
    try {
      loaded = this.#engine.functions.load(name, version);
    } catch {
      return undefined;
    }
    return loaded.record.enabled ? loaded : undefined;
  }

  #build(): Server {
    const server = new ToolCallServer(SERVER_INFO, {
      capabilities: { tools: { listChanged: true }, logging: {} },
      instructions: 'Tools are functions written in Callable Studio; each runs in a sandbox with its own network allow-list.',
    });
    server.setRequestHandler('tools/list', () => {
      const tools = this.#listTools();
      // A client that lists tools is about to call them: ready the sandbox meanwhile (once).
      if (!this.#warmed) {
        this.#warmed = true;
        this.#engine.prewarm(this.servedFunctions().map((f) => f.name));
      }
      return { tools };
    });
    // The call's arguments as they came off the wire (an argument named "__proto__" kept).
    const takeWireArguments = keepWireArguments(server);
    server.setRequestHandler('tools/call', async (request, ctx) => {
      const name = request.params.name;
      const wire = takeWireArguments(ctx.mcpReq.id);
      const args = (wire && typeof wire === 'object' ? (wire as Record<string, unknown>) : request.params.arguments) ?? {};
      // One catalog read for the call: the profile, the lookup and the run all go by it, so a change
      // any process made before the call is seen. A read that fails is left to the lookup (as before).
      let version: number | undefined;
      try {
        version = this.#engine.functions.catalogVersion();
      } catch {
        version = undefined;
      }
      const profile = this.#profile(version);
      const metaTools = profile?.metaTools === true;
      const envelopeInfo = (ctx.mcpReq as { envelope?: Record<string, unknown> }).envelope?.[CLIENT_INFO_META_KEY] as { name?: string; version?: string } | undefined;
      const client = envelopeInfo ?? server.getClientVersion();
      const progressToken = ctx.mcpReq._meta?.progressToken;
      const sent: Array<Promise<unknown>> = [];
      let lastProgressAt = -Infinity;
      const runOptions = {
        caller: 'mcp' as const,
        client: client ? { name: client.name, version: client.version } : undefined,
        transport: this.#options.transport,
        profile: this.#options.profile,
        signal: ctx.mcpReq.signal,
        requireEnabled: true as const,
        ...this.#askers(server, ctx),
        onLog: (entry: { level: LogLevel; message: string }) => {
          sent.push(ctx.mcpReq.log(MCP_LEVEL[entry.level], entry.message, 'function').catch(() => {}));
        },
        onProgress:
          progressToken === undefined
            ? undefined
            : (update: { progress: number; total?: number; message?: string }) => {
                lastProgressAt = performance.now();
                sent.push(ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, ...update } }).catch(() => {}));
              },
      };

      // A call's notifications go out before its result. Clients on the v1 SDK hand progress
      // notices to their callback a turn late and drop one that arrives in the same read as the
      // result, so a result right behind a progress notice waits a few milliseconds.
      const settled = async (result: Promise<CallToolResult>): Promise<CallToolResult> => {
        const value = await result;
        await Promise.all(sent);
        const sinceProgress = performance.now() - lastProgressAt;
        if (sinceProgress < PROGRESS_GAP_MS) await new Promise((resolve) => setTimeout(resolve, PROGRESS_GAP_MS - sinceProgress));
        return value;
      };
      const target = this.#lookup(name, profile, version);
      const approval = this.#approvalRoute(server, ctx);
      if (target) return settled(this.#call(server, target, args, runOptions, false, approval));
      if (metaTools && name === FIND_TOOL) return this.#find(this.servedFunctions(), args);
      if (metaTools && name === CALL_TOOL) {
        const inner = typeof args.name === 'string' ? this.#lookup(args.name, profile, version) : undefined;
        if (!inner) {
          return errorResult(`No function named ${JSON.stringify(args.name)} in this server. Call ${FIND_TOOL} to see the functions there are.`);
        }
        const innerArgs = args.arguments === undefined ? {} : args.arguments;
        return settled(this.#call(server, inner, innerArgs, runOptions, true, approval));
      }
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
    });
    return server;
  }

  /**
   * Where this request's approval can be asked: the client by elicitation when it declared it on a
   * 2025-era connection (the 2026-07-28 revision has no server-to-client request), and the session
   * "allow for this session" is remembered on (none for a per-request 2026-era HTTP instance).
   */
  #approvalRoute(server: Server, ctx: ServerContext): ApprovalRoute {
    const modern = (ctx.mcpReq as { envelope?: unknown }).envelope !== undefined;
    const canElicit = !modern && server.getClientCapabilities()?.elicitation !== undefined;
    return {
      session: this.#sessions.has(server) ? server : undefined,
      elicit: canElicit
        ? async ({ message, requestedSchema }, signal) => {
            const answer = await ctx.mcpReq.elicitInput({ mode: 'form', message, requestedSchema: requestedSchema as ElicitRequestFormParams['requestedSchema'] }, { signal, timeout: 300_000 });
            return { action: answer.action, ...(answer.content ? { content: answer.content } : {}) };
          }
        : undefined,
    };
  }

  /**
   * Who answers the call's ctx.elicit and ctx.sample. On a 2025-era connection whose client declared
   * `elicitation` (form mode; a bare `{}` means form) or `sampling`, the question goes to the client
   * as a request related to this call (so over HTTP it rides this call's stream), with the run's
   * deadline as its timeout and the run's end as its cancellation. The 2026-07-28 revision has no
   * server-to-client request (only multi-round-trip input_required results, which cannot suspend a
   * running function), so there, and for clients without elicitation, the studio is asked
   * through the engine's askInStudio when it has one.
   */
  #askers(server: Server, ctx: ServerContext): Pick<McpRunOptions, 'elicit' | 'sample'> {
    const modern = (ctx.mcpReq as { envelope?: unknown }).envelope !== undefined;
    const caps = modern ? undefined : server.getClientCapabilities();
    const elicitation = caps?.elicitation as { form?: unknown; url?: unknown } | undefined;
    const formElicitation = elicitation !== undefined && (elicitation.form !== undefined || elicitation.url === undefined);
    const studio = this.#engine.askInStudio?.bind(this.#engine);
    return {
      elicit: formElicitation
        ? async ({ message, requestedSchema, timeoutMs }, signal) => {
            const answer = await ctx.mcpReq.send({ method: 'elicitation/create', params: { mode: 'form', message, requestedSchema } }, { signal, timeout: timeoutMs });
            return { action: answer.action, ...(answer.content ? { content: answer.content as Record<string, unknown> } : {}), via: 'client' as const };
          }
        : studio,
      sample:
        caps?.sampling !== undefined
          ? async ({ functionName: _fn, timeoutMs, ...params }, signal) => {
              const answer = await ctx.mcpReq.send({ method: 'sampling/createMessage', params }, { signal, timeout: timeoutMs });
              return { role: answer.role, content: answer.content, model: answer.model, ...(answer.stopReason === undefined ? {} : { stopReason: answer.stopReason }) };
            }
          : undefined,
    };
  }

  #listTools(): Tool[] {
    const version = this.#engine.functions.catalogVersion();
    if (this.#tools?.version !== version) this.#tools = { version, tools: this.#buildTools() };
    return this.#tools.tools;
  }

  #buildTools(): Tool[] {
    const functions = this.servedFunctions();
    const tools: Tool[] = functions.map(toolOf);
    if (this.#profile()?.metaTools) {
      const names = new Set(functions.map((f) => f.name));
      if (!names.has(FIND_TOOL)) {
        tools.push({
          name: FIND_TOOL,
          title: 'Find functions',
          description:
            'Searches the functions available in Callable Studio right now, including ones added after this tool list was fetched. Returns each match with its input schema; call it with call_function.',
          inputSchema: { type: 'object', properties: { query: { type: 'string', description: 'Words to look for in names and descriptions; empty lists all' } } },
          annotations: { readOnlyHint: true, openWorldHint: false },
        });
      }
      if (!names.has(CALL_TOOL)) {
        tools.push({
          name: CALL_TOOL,
          title: 'Call a function by name',
          description: 'Calls a Callable Studio function by name with the given arguments (see find_functions for names and schemas).',
          inputSchema: {
            type: 'object',
            properties: { name: { type: 'string', description: 'The function name' }, arguments: { type: 'object', description: "Arguments matching the function's input schema" } },
            required: ['name'],
          },
        });
      }
    }
    return tools;
  }

  #find(functions: FunctionRecord[], args: Record<string, unknown>): CallToolResult {
    const words = String(args.query ?? '')
      .toLowerCase()
      .split(/\s+/)
      .filter(Boolean);
    const matches = functions
      .filter((f) => {
        const hay = `${f.name} ${f.title ?? ''} ${f.description}`.toLowerCase();
        return words.every((w) => hay.includes(w));
      })
      .slice(0, 25)
      .map((f) => ({ name: f.name, title: f.title, description: f.description, inputSchema: f.inputSchema }));
    return built({ content: [{ type: 'text', text: JSON.stringify(matches, null, 2) }] });
  }

  async #call(server: Server, loaded: LoadedFunction, args: unknown, options: McpRunOptions, viaMeta = false, approval?: ApprovalRoute): Promise<CallToolResult> {
    const fn = loaded.record;
    let result: RunResult;
    try {
      // A destructive function runs only once a person allowed the call (engine/prompts/approval.ts).
      const allowed = await this.#engine.approveCall({ fn, args, client: options.client, transport: options.transport, profile: options.profile, signal: options.signal, ...approval });
      if (!allowed.allowed) return errorResult(allowed.message);
      // Without a decision nobody was asked (nothing was awaited but the check): the run uses the
      // function the lookup read for this call instead of reading the catalog version again. After
      // a person's answer, which may take minutes, the run reads it afresh.
      const run = allowed.decision === undefined ? { ...options, loaded } : { ...options, approval: allowed.decision };
      result = await this.#engine.run(fn.name, args, run);
    } catch (error) {
      if (error instanceof StudioError) return errorResult(`${fn.name} cannot run: ${error.message}`);
      this.#options.diagnostic?.(`tools/call ${fn.name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      return errorResult(`${fn.name} failed inside Callable Studio (an internal error, logged on the server).`);
    }
    // The process serving the call is stopping: a protocol error, not a tool result the agent might act on.
    if (!result.ok && result.error.code === 'interrupted') throw new ProtocolError(ProtocolErrorCode.InternalError, SHUTTING_DOWN);
    if (!result.ok) return errorResult(describeFailure(fn.name, result));
    if (result.content) return { content: result.content as CallToolResult['content'] };
    const value = result.value;
    const text = typeof value === 'string' && !fn.outputSchema ? value : JSON.stringify(value);
    const base: CallToolResult = { content: [{ type: 'text', text }] };
    // JSON.stringify gives no text for undefined: the SDK's check of the result says so, as before.
    if (typeof text !== 'string') return base;
    if (!fn.outputSchema || viaMeta) return built(base);
    const projected = server.projectCallToolResult({ ...base, structuredContent: value as Record<string, unknown> }, fn.outputSchema);
    // An object (the SDK wraps any other value as { result }), else the SDK checks it.
    const structured = projected.structuredContent;
    return structured !== null && typeof structured === 'object' && !Array.isArray(structured) ? built(projected) : projected;
  }
}

type ApprovalRoute = Pick<ApprovalRequest, 'session' | 'elicit'>;

/** The first protocol revision whose results the SDK encodes differently (the 2026 era). */
const FIRST_MODERN_PROTOCOL_VERSION = '2026-07-28';

/**
 * tools/call results this server built itself from text it made (a JSON value, an error message, a
 * search's answer): a content array of text items, an isError flag and an object structuredContent,
 * the shape the 2025-era result schema describes. Content a function returned is never here.
 */
const builtResults = new WeakSet<object>();

function built<T extends CallToolResult>(result: T): T {
  builtResults.add(result);
  return result;
}

type RequestHandler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>;

/**
 * The SDK's Server, whose tools/call wrapper (its documented subclass hook) checks the request
 * again after the registered handler's own check of the same request against the same schema, and
 * checks the result against the result schema: on a 2025-era connection, a call whose result this
 * server built (`builtResults`) goes straight to the registered handler, whose check of the request
 * still runs first. Anything else takes the SDK's wrapper as before: a request carrying
 * requestState, a 2026-era connection, a result with content a function returned (checked by the
 * SDK), and a handler that threw something other than a ProtocolError (the registered handler's
 * failed request check among them: the SDK's wrapper then answers it as it always did).
 */
class ToolCallServer extends Server {
  protected override _wrapHandler(method: string, handler: RequestHandler): RequestHandler {
    const checked = super._wrapHandler(method, handler);
    if (method !== 'tools/call') return checked;
    const viaSdk = (outcome: () => Promise<Result>, request: JSONRPCRequest, ctx: ServerContext): Promise<Result> => super._wrapHandler(method, outcome)(request, ctx);
    return async (request, ctx) => {
      const version = this.getNegotiatedProtocolVersion();
      const legacy = version !== undefined && version < FIRST_MODERN_PROTOCOL_VERSION && (ctx.mcpReq as { envelope?: unknown }).envelope === undefined;
      if (!legacy || ctx.mcpReq.requestState() !== undefined) return checked(request, ctx);
      let result: Result;
      try {
        result = await handler(request, ctx);
      } catch (error) {
        if (error instanceof ProtocolError) throw error;
        return viaSdk(() => Promise.reject(error as Error), request, ctx);
      }
      return builtResults.has(result) ? result : viaSdk(() => Promise.resolve(result), request, ctx);
    };
  }
}

function toolOf(f: FunctionRecord): Tool {
  return {
    name: f.name,
    ...(f.title ? { title: f.title } : {}),
    description: f.description,
    inputSchema: f.inputSchema as Tool['inputSchema'],
    ...(f.outputSchema ? { outputSchema: f.outputSchema as Tool['outputSchema'] } : {}),
    ...(f.annotations ? { annotations: f.annotations } : {}),
  };
}

function errorResult(text: string): CallToolResult {
  return built({ ...toolErrorResult(text) });
}

function describeFailure(name: string, result: Extract<RunResult, { ok: false }>): string {
  const { code, message, details } = result.error;
  return describeToolFailure(name, { code, message, problem: typeof details?.problem === 'string' ? details.problem : undefined });
}
