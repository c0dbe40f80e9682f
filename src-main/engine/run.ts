// One run, start to end: load once, decide enabled once, validate the arguments, run in the
// sandbox with the function's egress policy and credentials, check the output, redact secrets,
// record. The facade, the CLI, the studio and MCP all come through here.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { KeptRecording, RunLedger } from './audit/ledger.ts';
import type { CredentialService } from './credentials/credentials.ts';
import { PLACEHOLDER_PREFIX, placeholderRefusal, RunPlaceholders } from './credentials/placeholders.ts';
import { Redactor } from './credentials/redact.ts';
import type { FunctionRepository, LoadedFunction } from './functions/repository.ts';
import type { SchemaValidator } from './functions/schemas.ts';
import { effectiveLimits, StudioError, type ApprovalDecision, type Caller, type LogEntry, type RunRecord, type RunResult, type TraceEntry } from './model/index.ts';
import type { guardedFetch as GuardedFetch, Resolver } from './net/guardedFetch.ts';
import type { AskRequest, ProgressUpdate, SecretEntry } from './sandbox/protocol.ts';
import type { Sandbox } from './sandbox/sandbox.ts';
import { asker, type Askers } from './sandbox/asks.ts';
import { ExchangeRecorder, expectOf } from './savedTests/recorder.ts';
import type { IncomingResponse, OutgoingRequest } from './model/index.ts';
import type { RunRecording } from './savedTests/recordings.ts';

export interface RunOptions {
  caller: Caller;
  client?: { name?: string | undefined; version?: string | undefined } | undefined;
  transport?: string | undefined;
  profile?: string | undefined;
  signal?: AbortSignal | undefined;
  onLog?: ((entry: LogEntry) => void) | undefined;
  onProgress?: ((update: ProgressUpdate) => void) | undefined;
  /** MCP calls only run enabled functions; the console and CLI may run a disabled one. */
  requireEnabled?: boolean | undefined;
  /** Answers ctx.fetch instead of the network (a saved test's replay): no request leaves and no credential is read. */
  fetch?: ((request: OutgoingRequest, signal: AbortSignal) => Promise<IncomingResponse>) | undefined;
  /** How a person allowed this MCP call, when it needed approval (recorded with the run). */
  approval?: ApprovalDecision | undefined;
  /** Answers ctx.elicit (the MCP client's form, or the studio in its place); absent: ctx.elicit rejects. */
  elicit?: Askers['elicit'];
  /** Answers ctx.sample with the client's model; absent: ctx.sample rejects. */
  sample?: Askers['sample'];
  /**
   * The function as the caller loaded it (functions.load) for this call, in the same turn and with
   * no wait since (the MCP server's lookup): the run uses it instead of checking the catalog
   * version again. Left out, or another function's, the run loads it.
   */
  loaded?: LoadedFunction | undefined;
}

export interface RunDeps {
  functions: FunctionRepository;
  credentials: CredentialService;
  runs: RunLedger;
  schemas: SchemaValidator;
  /** The sandbox and the network stack, loaded on first use. */
  sandbox: () => Promise<{ sandbox: Sandbox; guardedFetch: typeof GuardedFetch; resolver: Resolver }>;
  /** Aborted when the process serving runs is stopping: the run is cancelled and recorded as `interrupted`. */
  interrupt?: AbortSignal | undefined;
  /** Keeps the run's ctx.fetch exchanges (and arguments and outcome), so it can become a saved test. */
  record?: ((recording: RunRecording) => KeptRecording) | undefined;
}

/** Runs a function once (see Engine.run). Throws only for a function that does not exist or is disabled when required. */
export async function runFunction(deps: RunDeps, name: string, args: unknown, options: RunOptions): Promise<RunResult> {
  // A run's duration is from here to its result being ready (before its record is written).
  const started = performance.now();
  // A run that could only be recorded in a schema another version replaced does not start.
  deps.runs.ready();
  const { record, compiled } = options.loaded?.record.name === name ? options.loaded : deps.functions.load(name);
  if (options.requireEnabled && !record.enabled) throw new StudioError('disabled', `function "${name}" is disabled; enable it to call it`);
  const runId = runUuid();
  const startedAt = new Date().toISOString();
  const trace: TraceEntry[] = [];
  const redactor = new Redactor();
  let result: RunResult;
  /** The run's requests and result, written beside its record (so it can become a test case). */
  let kept: KeptRecording | undefined;

  const argsJson = JSON.stringify(args ?? {});
  // Arguments may carry another run's placeholder (a client replaying one): it is not kept either.
  const keptArgs = <T>(value: T): T => (argsJson.includes(PLACEHOLDER_PREFIX) ? new RunPlaceholders().maskJson(value) : value);

  const argProblem = deps.schemas.checkStored(record.inputSchema, args, `${name}'s inputSchema`, 'args');
  if (argProblem !== undefined) {
    result = {
      ok: false,
      runId,
      error: { code: 'bad_input', message: `invalid arguments: ${argProblem}`, details: { problem: argProblem } },
      logs: [],
      trace,
      metrics: { durationMs: elapsed(started), resultBytes: 0 },
    };
  } else {
    const limits = effectiveLimits(record);
    const { sandbox, guardedFetch, resolver } = await deps.sandbox();
    const recorder = deps.record ? new ExchangeRecorder() : undefined;
    const track = (request: OutgoingRequest, response: Promise<IncomingResponse>): Promise<IncomingResponse> => (recorder ? recorder.track(request, response) : response);
    // ctx.secret's placeholders, for this run only; a placeholder where it may not go stops the run.
    const placeholders = new RunPlaceholders();
    const secrets = mintSecrets(deps.credentials, record, placeholders);
    const watch = secrets.some((s) => s.placeholder !== undefined);
    const stop = new AbortController();
    let leaked: StudioError | undefined;
    const leak = (text: string, place: string): boolean => {
      const found = watch ? placeholders.find(text) : undefined;
      if (!found || !('minted' in found)) return false;
      leaked ??= placeholderRefusal(found, place, 'the run was stopped and what it held is not kept');
      stop.abort();
      return true;
    };
    // The caller's and the process's aborts are passed on to `stop` (a composite AbortSignal.any cost more per run, and per listener).
    const signal = stop.signal;
    const passOn = (): void => stop.abort(options.signal?.aborted ? options.signal.reason : deps.interrupt?.reason);
    // What the recorder keeps and a replay compares: the request with its placeholders as labels (they change every run).
    const seen = (request: OutgoingRequest): OutgoingRequest => (watch ? maskedRequest(placeholders, request) : request);
    const ask = asker({ record, timeoutMs: limits.timeoutMs, schemas: deps.schemas, trace: (entry) => trace.push(entry), askers: { elicit: options.elicit, sample: options.sample } });
    // Every stored secret of the data folder, asked for as each response arrives (kept by the
    // credential service until a credential changes, in any process): a vendor may echo any of
    // them, and what the sandbox is given must hold none.
    let added: unknown;
    const redaction = (): Promise<Redactor> =>
      deps.credentials.storedSecrets().then(
        (secrets) => {
          if (secrets !== added) for (const { name: credentialName, secret } of secrets) redactor.add(credentialName, secret);
          added = secrets;
          return redactor;
        },
        (error: unknown) => {
          const info = error instanceof StudioError ? error : new StudioError('internal', String(error));
          throw new StudioError(info.code, `the response was not given to the function: the stored secrets could not be read to remove them from it (${info.message})`, info.details);
        },
      );
    // An error's message may quote a vendor's redirect: it reaches the function only redacted.
    const redactedError = (error: unknown): never => {
      if (error instanceof StudioError && redactor.active) throw new StudioError(error.code, redactor.text(error.message), error.details);
      throw error;
    };
    const outcome = await runUntilEnd(sandbox, [options.signal, deps.interrupt], passOn, {
      functionName: name,
      compiled,
      limits,
      argsJson,
      runId,
      measureHeap: options.caller !== 'mcp',
      signal,
      secrets,
      onLog: (entry) => {
        const shown = leak(entry.message, 'a log line') ? { ...entry, message: placeholders.mask(entry.message) } : entry;
        options.onLog?.(redactor.active ? { ...shown, message: redactor.text(shown.message) } : shown);
      },
      onProgress: (update) => {
        if (!(watch && leak(JSON.stringify(update), 'a progress update'))) options.onProgress?.(redactor.json(update));
      },
      fetch: (request, signal, stream) =>
        track(seen(request), options.fetch ? options.fetch(seen(request), signal) : guardedFetch(request, {
          redaction,
          allowedHosts: record.allowedHosts,
          maxResponseBytes: limits.responseBytes,
          credential: async (credentialName) => {
            // Listed and granted, or refused before the keychain is asked; the keychain read ends with the run.
            deps.credentials.authorize(credentialName, record);
            const injection = await deps.credentials.injection(credentialName, record.credentials, signal);
            redactor.add(credentialName, injection.secret);
            if (injection.header) redactor.add(credentialName, injection.header[1]);
            return injection;
          },
          resolver,
          signal,
          trace: (entry) => trace.push(entry),
          placeholders,
          stream,
        }).catch(redactedError)),
      ask: (request: AskRequest, askSignal: AbortSignal) => {
        const found = watch ? placeholders.find(JSON.stringify(request.payload)) : undefined;
        if (found) return Promise.reject(placeholderRefusal(found, `the ctx.${request.kind} ${request.kind === 'elicit' ? 'question' : 'request'}`, 'nobody was asked'));
        return ask(request, askSignal);
      },
    });
    // Checked here too: the logs and the outcome come from the sandbox host, which is not trusted
    // (only a run holding placeholders has any to find: the result is not turned into text for nothing).
    if (watch) {
      for (const entry of outcome.logs) leak(entry.message, 'a log line');
      if (outcome.ok) leak(JSON.stringify([outcome.value, outcome.content]), 'the result');
      else leak(outcome.error.message, "the function's error");
    }
    // durationMs is the whole run's, set once the result is ready.
    const metrics = { durationMs: 0, resultBytes: outcome.resultBytes, ...(outcome.heapBytes === undefined ? {} : { heapBytes: outcome.heapBytes }) };
    if (leaked) {
      result = { ok: false, runId, error: { code: leaked.code, message: leaked.message, details: leaked.details }, logs: outcome.logs, trace, metrics };
    } else if (outcome.ok) {
      const outputProblem =
        record.outputSchema && outcome.content === undefined ? deps.schemas.checkStored(record.outputSchema, outcome.value, `${name}'s outputSchema`, 'result') : undefined;
      result =
        outputProblem === undefined
          ? { ok: true, runId, value: outcome.value, ...(outcome.content ? { content: outcome.content } : {}), logs: outcome.logs, trace, metrics }
          : { ok: false, runId, error: { code: 'output_invalid', message: `the result does not match the outputSchema: ${outputProblem}` }, logs: outcome.logs, trace, metrics };
    } else if (deps.interrupt?.aborted) {
      const error = { code: 'interrupted' as const, message: 'the run was interrupted: the process serving it was stopped (Ctrl-C or a signal)' };
      result = { ok: false, runId, error, logs: outcome.logs, trace, metrics };
    } else {
      result = { ok: false, runId, error: outcome.error, logs: outcome.logs, trace, metrics };
    }
    if (watch) result = placeholders.maskJson(result);
    result = redactor.json(result);
    result.metrics.durationMs = elapsed(started);
    if (recorder) {
      kept = deps.record?.({ runId, functionName: name, recordedAt: startedAt, args: keptArgs(redactor.json(args ?? {})), expect: expectOf(result), exchanges: redactor.json(recorder.exchanges), truncated: recorder.truncated });
    }
  }

  const audit: RunRecord = {
    id: runId,
    functionName: name,
    caller: options.caller,
    clientName: options.client?.name,
    clientVersion: options.client?.version,
    transport: options.transport,
    profile: options.profile,
    args: keptArgs(redactor.json(args)),
    startedAt,
    durationMs: result.metrics.durationMs,
    ok: result.ok,
    errorCode: result.ok ? undefined : result.error.code,
    errorMessage: result.ok ? undefined : result.error.message.slice(0, 2000),
    bytesOut: result.metrics.resultBytes,
    ...(options.approval ? { approval: options.approval } : {}),
  };
  deps.runs.record(audit, kept);
  return result;
}

/** `sandbox.run(job)` with `passOn` listening to the long-lived `sources` only while it runs. */
async function runUntilEnd(sandbox: Sandbox, sources: Array<AbortSignal | undefined>, passOn: () => void, job: Parameters<Sandbox['run']>[0]): ReturnType<Sandbox['run']> {
  for (const source of sources) {
    if (source?.aborted) passOn();
    else source?.addEventListener('abort', passOn, { once: true });
  }
  try {
    return await sandbox.run(job);
  } finally {
    for (const source of sources) source?.removeEventListener('abort', passOn);
  }
}

/** ctx.secret's answer for each credential `fn` lists: a placeholder when it may use it, else why not. */
function mintSecrets(credentials: CredentialService, fn: { name: string; credentials: readonly string[] }, placeholders: RunPlaceholders): SecretEntry[] {
  return fn.credentials.map((name) => {
    try {
      return { name, placeholder: placeholders.mint(name, credentials.usable(name, fn).hosts) };
    } catch (error) {
      return { name, refused: error instanceof StudioError ? error.message : String(error) };
    }
  });
}

/** `request` with every placeholder in its URL, headers and body as its label. */
function maskedRequest(placeholders: RunPlaceholders, request: OutgoingRequest): OutgoingRequest {
  const body = request.body && placeholders.find(request.body) ? new Uint8Array(Buffer.from(placeholders.mask(Buffer.from(request.body).toString('latin1')), 'latin1')) : request.body;
  return { ...request, url: placeholders.mask(request.url), headers: request.headers.map(([k, v]) => [placeholders.mask(k), placeholders.mask(v)]), body };
}

/**
 * A run's id: a UUID of version 7 (RFC 9562), the time in milliseconds first, then 74 random bits (taken
 * from randomUUID's). Ids that grow with time are written at the end of the runs' and recordings' id
 * indexes, a page or two per batch of runs, where random ones touched a page of each index per run.
 */
function runUuid(): string {
  const random = randomUUID();
  const ms = Date.now().toString(16).padStart(12, '0');
  return `${ms.slice(0, 8)}-${ms.slice(8, 12)}-7${random.slice(15, 18)}-${random.slice(19)}`;
}

function elapsed(since: number): number {
  return Math.round((performance.now() - since) * 100) / 100;
}
