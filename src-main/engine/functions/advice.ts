import { hostMatches, isHostPatternError, parseHostPattern, type Exchange, type FunctionRecord, type TestCase, type TestExpect } from '../model/index.ts';
import { inferSchema } from './scaffold/generate.ts';

/** What a function was seen doing: one recorded run or saved test case. */
export interface Observation {
  /** "run 3f2a…" or "test case hello". */
  source: string;
  requests: Array<{ method: string; url: string }>;
  /** The run's result when it succeeded. */
  result?: { value: unknown };
}

export type AdviceKind = 'unused_host' | 'read_only' | 'output_schema' | 'tool_name_length' | 'description_length' | 'timeout' | 'tool_count';

/** One piece of advice about a function (or the whole catalog), with the evidence it rests on. */
export interface Advice {
  /** The function, or undefined for advice about all of them. */
  function?: string;
  kind: AdviceKind;
  message: string;
  evidence: string;
  /** For output_schema: the schema inferred from the recorded results, to accept as is or edit. */
  suggestion?: unknown;
}

/** The server name the studio's copy-paste client configs use ("mcpServers": { "callable": … }). */
export const CLIENT_SERVER_NAME = 'callable';
/** Tool names longer than this are refused or cut by common clients (with their `mcp__<server>__` prefix). */
export const MAX_CLIENT_TOOL_NAME = 64;
/** Descriptions past this many characters are cut by some clients. */
export const MAX_CLIENT_DESCRIPTION = 1024;
/** Common clients load at most about this many tools (Cursor: 40). */
export const MAX_CLIENT_TOOLS = 40;
/** Common clients give up on a tool call after about this long. */
export const CLIENT_WAIT_MS = 60_000;

/**
 * Advice from what functions were seen doing (their recorded runs and saved test cases) and from
 * what common MCP clients accept. Pure: the caller gathers the observations.
 */
export function advise(functions: readonly FunctionRecord[], observed: (name: string) => Observation[], enabledCount: number): Advice[] {
  const out: Advice[] = [];
  for (const fn of functions) {
    const seen = observed(fn.name);
    const requests = seen.flatMap((o) => o.requests.map((r) => ({ ...r, source: o.source })));
    if (requests.length > 0) {
      for (const pattern of fn.allowedHosts) {
        const parsed = parseHostPattern(pattern);
        if (isHostPatternError(parsed)) continue;
        const used = requests.some((r) => {
          try {
            const url = new URL(r.url);
            return hostMatches(parsed, url.hostname, Number(url.port || (url.protocol === 'https:' ? 443 : 80)), url.protocol === 'https:' ? 443 : 80);
          } catch {
            return false;
          }
        });
        if (!used) {
          out.push({ function: fn.name, kind: 'unused_host', message: `${pattern} is on allowedHosts but no recorded run used it; remove it if the function does not need it`, evidence: `${requests.length} request(s) in ${seen.length} run(s) and test case(s), to ${hostsOf(requests).join(', ')}` });
        }
      }
      const methods = [...new Set(requests.map((r) => r.method.toUpperCase()))];
      if (methods.every((m) => m === 'GET' || m === 'HEAD') && fn.annotations?.readOnlyHint !== true) {
        out.push({ function: fn.name, kind: 'read_only', message: 'every recorded request was a GET: mark it "readOnlyHint": true in annotations, so clients can call it without asking', evidence: `${requests.length} request(s) in ${seen.length} run(s) and test case(s), methods: ${methods.join(', ')}` });
      }
    }
    const results = seen.filter((o) => o.result !== undefined);
    if (!fn.outputSchema && results.length > 0 && results.every((o) => isPlainObject(o.result!.value))) {
      out.push({
        function: fn.name,
        kind: 'output_schema',
        message: 'it has no outputSchema: this one, inferred from its recorded results, lets clients read its results as structured content',
        evidence: `${results.length} successful result(s): ${results.slice(0, 3).map((r) => r.source).join(', ')}${results.length > 3 ? ', …' : ''}`,
        suggestion: mergedSchema(results.map((r) => r.result!.value as Record<string, unknown>)),
      });
    }
    const prefixed = `mcp__${CLIENT_SERVER_NAME}__${fn.name}`;
    if (prefixed.length > MAX_CLIENT_TOOL_NAME) {
      out.push({ function: fn.name, kind: 'tool_name_length', message: `as a tool of the server "${CLIENT_SERVER_NAME}" its name is ${prefixed.length} characters, over the ${MAX_CLIENT_TOOL_NAME} common clients accept; shorten it to at most ${MAX_CLIENT_TOOL_NAME - prefixed.length + fn.name.length}`, evidence: prefixed });
    }
    if (fn.description.length > MAX_CLIENT_DESCRIPTION) {
      out.push({ function: fn.name, kind: 'description_length', message: `its description is ${fn.description.length} characters; some clients cut it at ${MAX_CLIENT_DESCRIPTION}: put what a model needs first, or shorten it`, evidence: `${fn.description.slice(0, 60)}…` });
    }
    if (fn.timeoutMs !== undefined && fn.timeoutMs > CLIENT_WAIT_MS) {
      out.push({ function: fn.name, kind: 'timeout', message: `timeoutMs is ${fn.timeoutMs}, above the ~${CLIENT_WAIT_MS / 1000} s common clients wait; report progress (ctx.progress) so they keep waiting, or lower it`, evidence: `"timeoutMs": ${fn.timeoutMs}` });
    }
  }
  if (enabledCount > MAX_CLIENT_TOOLS) {
    out.push({ kind: 'tool_count', message: `${enabledCount} functions are enabled, more than the ~${MAX_CLIENT_TOOLS} tools common clients load; serve subsets with profiles (callable mcp --profile P)`, evidence: `${enabledCount} enabled functions` });
  }
  return out;
}

function hostsOf(requests: Array<{ url: string }>): string[] {
  return [
    ...new Set(
      requests.map((r) => {
        try {
          return new URL(r.url).host;
        } catch {
          return r.url;
        }
      }),
    ),
  ];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A schema every recorded result matches: properties seen in all results are required. */
function mergedSchema(values: Array<Record<string, unknown>>): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const keys = [...new Set(values.flatMap((v) => Object.keys(v)))];
  for (const key of keys) {
    const schemas = values.filter((v) => key in v).map((v) => inferSchema(v[key]));
    const distinct = [...new Map(schemas.map((s) => [JSON.stringify(s), s])).values()];
    properties[key] = distinct.length === 1 ? distinct[0] : { anyOf: distinct };
  }
  const required = keys.filter((k) => values.every((v) => k in v));
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}) };
}

/** Observations from recorded runs (the JSON bodies of the run_recordings table) and saved test cases. */
export function observationsOf(recordings: readonly string[], cases: readonly TestCase[]): Observation[] {
  const runs = recordings.map((body) => {
    const r = JSON.parse(body) as { runId: string; expect: TestExpect; exchanges: Exchange[] };
    return { source: `run ${r.runId}`, requests: r.exchanges.map((e) => e.request), ...(r.expect.ok ? { result: { value: r.expect.value } } : {}) };
  });
  const saved = cases.map((c) => ({ source: `test case ${c.name}`, requests: c.exchanges.map((e) => e.request), ...(c.expect.ok ? { result: { value: c.expect.value } } : {}) }));
  return [...runs, ...saved];
}
