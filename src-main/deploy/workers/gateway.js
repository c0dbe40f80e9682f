// @ts-check
// The gateway Worker: Streamable HTTP MCP (both protocol eras, through the MCP SDK's web-standard
// handler, stateless) in front of the functions. Each call loads the function into an isolate of
// its own with workerd's Worker Loader; that isolate's global fetch goes to the Outbound
// entrypoint below, which counts it and hands it to the egress Worker, and its ctx.log and
// ctx.progress reach the Reporter entrypoint, which sends them to the client as notifications of
// the tools/call request (before its result). Bundled by `callable deploy`.
import { WorkerEntrypoint } from 'cloudflare:workers';
import { CLIENT_INFO_META_KEY, createMcpHandler, hostHeaderValidationResponse, localhostAllowedHostnames, ProtocolError, ProtocolErrorCode, Server } from '@modelcontextprotocol/server';
import { originAllowed } from '../../mcp/httpOrigin.ts';
import { keepWireArguments } from '../../mcp/wireArguments.ts';
import { formatAjvErrors } from '../../engine/functions/schemas.ts';
import { describeToolFailure, fetchLimitMessage, resultTooLargeMessage, timeoutMessage, toolErrorResult } from '../../engine/model/toolResults.ts';
import { placeholderRefusal, RunPlaceholders } from '../../engine/credentials/placeholders.ts';
import { CATALOG, SETTINGS, RUNTIME } from 'callable:catalog';
import { VALIDATORS } from 'callable:validators';

/**
 * The gateway's bindings: the egress Worker, the Worker Loader, and the token clients present.
 * @typedef {{ EGRESS: Fetcher, LOADER: WorkerLoader, MCP_TOKEN?: unknown }} GatewayEnv
 * @typedef {{ log: (level: LoggingLevel, message: string) => void, progress: ((update: ProgressUpdate) => void) | undefined }} CallReport
 * @typedef {{ fn: CatalogEntry, fetches: number, trace: TraceEntry[], logBytes: number, report: CallReport, placeholders: RunPlaceholders, leaked?: RunFailure }} Call
 * @typedef {import('@modelcontextprotocol/server').CallToolResult} CallToolResult
 * @typedef {import('@modelcontextprotocol/server').LoggingLevel} LoggingLevel
 * @typedef {import('@modelcontextprotocol/server').Tool} Tool
 * @typedef {ExecutionContext<unknown, { Reporter: (options: { props: { callId: string } }) => ReporterStub, Outbound: (options: { props: { callId: string } }) => Fetcher }>} GatewayContext
 */

const SERVER_INFO = { name: 'callable-studio', title: 'Callable Studio', version: '0.1.0' };
/**
 * The function's log levels as MCP names them (as the local server maps them, src-main/mcp/server.ts).
 * @type {Map<string, LoggingLevel>}
 */
const MCP_LEVEL = new Map([
  ['debug', 'debug'],
  ['info', 'info'],
  ['warn', 'warning'],
  ['error', 'error'],
]);
/** The longest progress message passed on, as in the local sandbox. */
const PROGRESS_MESSAGE_CHARS = 1000;
/** How long a result waits behind a progress notice sent just before it (as the local server). */
const PROGRESS_GAP_MS = 20;
/** The log lines and progress updates one call sends to the Reporter; each is a subrequest of its isolate. */
const REPORTS_PER_CALL = 1000;
/** What workerd's RPC carries in one message (the isolate's outcome comes back as one). */
const RPC_BYTES = 32 * 1024 * 1024;
const byName = new Map(CATALOG.map((f) => [f.name, f]));
/** Calls in flight in this isolate, by id: what their Outbound requests and reports are counted against. */
/** @type {Map<string, Call>} */
const calls = new Map();
let nextCall = 0;

/**
 * The one way out of a function's isolate: counted per call, then handed to the egress Worker.
 * @extends {WorkerEntrypoint<GatewayEnv, { callId: string }>}
 */
export class Outbound extends WorkerEntrypoint {
  /** @param {Request} request */
  async fetch(request) {
    const call = calls.get(this.ctx.props.callId);
    if (!call) return refusal('cancelled', 'the run has ended');
    if (call.fetches >= call.fn.limits.fetchCount) {
      return refusal('fetch_limit', fetchLimitMessage(call.fn.limits.fetchCount));
    }
    call.fetches++;
    const headers = new Headers(request.headers);
    for (const name of [...headers.keys()]) if (name.startsWith('x-callable-function') || name.startsWith('x-callable-placeholders')) headers.delete(name);
    headers.set('x-callable-function', call.fn.name);
    // This call's ctx.secret placeholders, for the egress Worker to swap (the function's own header of that name is dropped above).
    const pairs = call.placeholders.pairs();
    if (pairs.length > 0) headers.set('x-callable-placeholders', JSON.stringify(pairs));
    const response = await this.env.EGRESS.fetch(new Request(request, { headers }));
    const trace = response.headers.get('x-callable-trace');
    if (trace) for (const entry of JSON.parse(trace)) call.trace.push(entry);
    const out = new Headers(response.headers);
    out.delete('x-callable-trace');
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers: out });
  }
}

/**
 * What a function's isolate reports while it runs: its log lines (within limits.logBytes) and its
 * progress. Checked here too, since the function's own code can reach this binding; a report for a
 * call that has ended is ignored.
 * @extends {WorkerEntrypoint<GatewayEnv, { callId: string }>}
 */
export class Reporter extends WorkerEntrypoint {
  /** @param {string} level @param {unknown} message */
  log(level, message) {
    const call = calls.get(this.ctx.props.callId);
    const mcpLevel = MCP_LEVEL.get(level);
    if (!call || mcpLevel === undefined) return;
    const text = String(message);
    if (leaked(call, text, 'a log line')) return;
    call.logBytes += text.length;
    if (call.logBytes > call.fn.limits.logBytes) return;
    call.report.log(mcpLevel, text);
  }

  /** @param {unknown} update */
  progress(update) {
    const call = calls.get(this.ctx.props.callId);
    if (!call || !call.report.progress || update === null || typeof update !== 'object') return;
    const { progress, total, message } = /** @type {{ progress?: unknown, total?: unknown, message?: unknown }} */ (update);
    if (typeof progress !== 'number' || !Number.isFinite(progress)) return;
    if (leaked(call, JSON.stringify(update), 'a progress update')) return;
    call.report.progress({
      progress,
      ...(typeof total === 'number' && Number.isFinite(total) ? { total } : {}),
      ...(typeof message === 'string' ? { message: message.slice(0, PROGRESS_MESSAGE_CHARS) } : {}),
    });
  }
}

/**
 * Whether `text` holds one of the call's placeholders: then it goes nowhere, and the call ends
 * refused (the first place found is the one named).
 * @param {Call} call @param {string} text @param {string} place
 */
function leaked(call, text, place) {
  const found = call.placeholders.find(text);
  if (!found || !('minted' in found)) return false;
  const error = placeholderRefusal(found, place, 'the run was stopped and what it held is not kept');
  call.leaked ??= { code: error.code, message: error.message };
  return true;
}

/** @param {string} code @param {string} message */
function refusal(code, message) {
  return new Response(message, { status: 502, headers: { 'x-callable-error': code } });
}

/** @param {CatalogEntry} f */
function toolOf(f) {
  // The catalog's schemas were checked when the functions were saved.
  return /** @type {Tool} */ ({
    name: f.name,
    ...(f.title ? { title: f.title } : {}),
    description: f.description,
    inputSchema: f.inputSchema,
    ...(f.outputSchema ? { outputSchema: f.outputSchema } : {}),
    ...(f.annotations ? { annotations: f.annotations } : {}),
  });
}

/** @param {Record<string, unknown>} line */
function audit(line) {
  // In workerd the console is the process's log: one JSON line per call.
  // eslint-disable-next-line no-console
  console.log(JSON.stringify({ audit: 'call', ...line }));
}

/**
 * One call: checked arguments, a fresh isolate, the deadline, the result checked and sized.
 * `report` gets the call's log lines and progress updates while it runs.
 * @param {GatewayEnv} env @param {GatewayContext} ctx @param {CatalogEntry} fn @param {unknown} args @param {string} caller @param {CallReport} report
 * @returns {Promise<RunOutcome>}
 */
async function runCall(env, ctx, fn, args, caller, report) {
  const started = Date.now();
  const callId = `${SETTINGS.instance}-${++nextCall}`;
  // ctx.secret's placeholders, minted here for this call only: the function's isolate cannot make one the egress Worker swaps.
  const placeholders = new RunPlaceholders();
  const secrets = fn.secrets.map((s) => (s.hosts ? { name: s.name, placeholder: placeholders.mint(s.name, s.hosts) } : { name: s.name, refused: s.refused }));
  /** @type {Call} */
  const call = { fn, fetches: 0, trace: [], logBytes: 0, report, placeholders };
  /** @type {RunOutcome} */
  let outcome;
  // Every function in the catalog has its validators.
  const validate = /** @type {(typeof VALIDATORS)[string]} */ (VALIDATORS[fn.name]);
  if (!validate.input(args)) {
    const problem = formatAjvErrors(validate.input.errors ?? [], 'args');
    outcome = { ok: false, error: { code: 'bad_input', message: `invalid arguments: ${problem}`, problem } };
  } else {
    calls.set(callId, call);
    /** @type {number | undefined} */
    let timer;
    try {
      const limits = { cpuMs: fn.limits.timeoutMs, subRequests: fn.limits.fetchCount + REPORTS_PER_CALL };
      const worker = env.LOADER.get(null, () => ({
        compatibilityDate: SETTINGS.compatibilityDate,
        compatibilityFlags: [],
        mainModule: 'runtime.js',
        modules: { 'runtime.js': RUNTIME, 'function.js': `export default ${fn.code};` },
        env: { REPORTER: ctx.exports.Reporter({ props: { callId } }) },
        globalOutbound: ctx.exports.Outbound({ props: { callId } }),
        // Cloudflare ends an isolate past these (workerd does not: there the supervisor of --serve does).
        limits,
      }));
      const entry = /** @type {RuntimeEntrypoint} */ (worker.getEntrypoint(undefined, { limits }));
      /** @type {Promise<RunOutcome>} */
      const deadline = new Promise((resolve) => {
        timer = setTimeout(
          () => resolve({ ok: false, error: { code: 'timeout', message: timeoutMessage(fn.limits.timeoutMs) }, logs: [] }),
          fn.limits.timeoutMs,
        );
      });
      outcome = await Promise.race([
        entry.run(args, { name: fn.name, runId: callId, deadline: started + fn.limits.timeoutMs, logBytes: fn.limits.logBytes, resultBytes: fn.limits.resultBytes, reports: REPORTS_PER_CALL, secrets }),
        deadline,
      ]);
    } catch (error) {
      const message = /** @type {Error | undefined} */ (error)?.message ?? String(error);
      // An outcome too large for one RPC message (the isolate sizes the result first; this is its code bypassing that).
      const size = /limited to 32MiB, but the size of this value was: (\d+) bytes/.exec(message);
      outcome = size
        ? { ok: false, error: { code: 'result_too_large', message: resultTooLargeMessage(Number(size[1]), RPC_BYTES, 'the most one workerd RPC message carries') } }
        : { ok: false, error: { code: 'sandbox_crashed', message: `the isolate failed: ${message}; call again` } };
    } finally {
      clearTimeout(timer);
      calls.delete(callId);
    }
    if (outcome.ok) leaked(call, JSON.stringify([outcome.json, outcome.content]), 'the result');
    else leaked(call, outcome.error.message, "the function's error");
    if (call.leaked) outcome = { ok: false, error: call.leaked };
  }
  if (outcome.ok && outcome.json !== undefined) {
    const bytes = new TextEncoder().encode(outcome.json).byteLength;
    if (bytes > fn.limits.resultBytes) {
      outcome = { ok: false, error: { code: 'result_too_large', message: resultTooLargeMessage(bytes, fn.limits.resultBytes) } };
    } else {
      outcome.value = JSON.parse(outcome.json);
      // A function with an outputSchema has its output validator.
      const output = /** @type {CompiledValidator} */ (validate.output);
      if (fn.outputSchema && !output(outcome.value)) {
        outcome = { ok: false, error: { code: 'output_invalid', message: `the result does not match the outputSchema: ${formatAjvErrors(output.errors ?? [], 'result')}` } };
      }
    }
  }
  audit({
    function: fn.name,
    caller,
    durationMs: Date.now() - started,
    outcome: outcome.ok ? 'ok' : outcome.error.code,
    fetches: call.trace.length,
    trace: call.trace,
  });
  return outcome;
}

/** @param {GatewayEnv} env @param {GatewayContext} ctx @param {Request} request */
function buildServer(env, ctx, request) {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false }, logging: {} },
    instructions: 'Tools are functions written in Callable Studio; each runs in an isolate of its own with its own network allow-list.',
  });
  server.setRequestHandler('tools/list', () => ({ tools: CATALOG.map(toolOf) }));
  // The call's arguments as they came off the wire (an argument named "__proto__" kept), as the local server takes them.
  const takeWireArguments = keepWireArguments(server);
  server.setRequestHandler('tools/call', async (req, mcp) => {
    const wire = takeWireArguments(mcp.mcpReq.id);
    const args = (wire && typeof wire === 'object' ? wire : req.params.arguments) ?? {};
    const fn = byName.get(req.params.name);
    if (!fn) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
    // 2026-07-28 clients name themselves in each request's envelope; 2025-11-25 ones only at initialize.
    const envelope = /** @type {{ envelope?: Record<string, { name?: string } | undefined> }} */ (mcp.mcpReq).envelope;
    const client = envelope?.[CLIENT_INFO_META_KEY] ?? server.getClientVersion();
    const caller = client?.name ?? request.headers.get('user-agent') ?? 'unknown';
    // The function's log lines and progress go out as notifications of this request (progress only
    // when the client asked for it with a progressToken), all before the result, as locally.
    const progressToken = mcp.mcpReq._meta?.progressToken;
    /** @type {Promise<unknown>[]} */
    const sent = [];
    let lastProgressAt = -Infinity;
    /** @type {CallReport} */
    const report = {
      log: (level, message) => sent.push(mcp.mcpReq.log(level, message, 'function').catch(() => {})),
      progress:
        progressToken === undefined
          ? undefined
          : (update) => {
              lastProgressAt = Date.now();
              sent.push(mcp.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, ...update } }).catch(() => {}));
            },
    };
    const outcome = await runCall(env, ctx, fn, args, caller, report);
    await Promise.all(sent);
    // Clients on the v1 SDK drop a progress notice that arrives in the same read as the result.
    const sinceProgress = Date.now() - lastProgressAt;
    if (sinceProgress < PROGRESS_GAP_MS) await new Promise((resolve) => setTimeout(resolve, PROGRESS_GAP_MS - sinceProgress));
    if (!outcome.ok) return /** @type {CallToolResult} */ (toolErrorResult(describeToolFailure(fn.name, outcome.error)));
    if (outcome.content) return { content: outcome.content };
    const value = outcome.value;
    const text = typeof value === 'string' && !fn.outputSchema ? value : JSON.stringify(value);
    /** @type {CallToolResult} */
    const base = { content: [{ type: 'text', text }] };
    return fn.outputSchema ? { ...base, structuredContent: value } : base;
  });
  return server;
}

/** @param {string} a @param {string} b */
function timingSafeEqual(a, b) {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  if (x.byteLength !== y.byteLength) return false;
  return crypto.subtle.timingSafeEqual(x, y);
}

/** @param {number} status @param {string} message @param {Record<string, string>} [extra] */
function plain(status, message, extra = {}) {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json', ...extra },
  });
}

export default {
  /** @param {Request} request @param {GatewayEnv} env @param {GatewayContext} ctx */
  async fetch(request, env, ctx) {

    const url = new URL(request.url);
    if (url.pathname !== '/mcp' && url.pathname !== '/healthz') return plain(404, `Not found: MCP is served at /mcp`);
    if (SETTINGS.checkHost) {
      const refused = hostHeaderValidationResponse(request, localhostAllowedHostnames());
      if (refused) return refused;
    }
    // What `callable deploy --serve` watches to see that the process still answers; it tells nothing.
    if (url.pathname === '/healthz' && request.method === 'GET') return new Response('ok');
    const origins = request.headers.get('origin');
    const origin = originAllowed(origins === null ? undefined : [origins], new Set(SETTINGS.allowedOrigins));
    if (!origin.ok) return plain(403, origin.message);
    const expected = env.MCP_TOKEN;
    if (typeof expected !== 'string' || expected === '') return plain(500, 'the gateway has no token: set CALLABLE_MCP_TOKEN in its environment');
    const presented = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
    if (presented === undefined || !timingSafeEqual(presented, expected)) {
      return plain(401, 'Unauthorized: send "Authorization: Bearer <token>"', { 'www-authenticate': 'Bearer' });
    }
    const handler = createMcpHandler(() => buildServer(env, ctx, request), { legacy: 'stateless' });
    return handler.fetch(request);
  },
};
