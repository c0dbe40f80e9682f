// Approval before destructive calls: an MCP call to a function whose annotations say
// `destructiveHint: true`, or whose settings say "ask before every call", runs only once a person
// allowed it. By elicitation in the client when it can; else by a prompt in the studio when one is
// open (in any process: see prompts.ts); else it is refused, saying how to allow it. Every decision
// is recorded: an allowed call's run carries it, a call that did not run is recorded as a run that
// failed with `denied`, `approval_required`, `approval_timeout` or `cancelled`.
import { randomUUID } from 'node:crypto';
import type { RunLedger } from '../audit/ledger.ts';
import { effectiveLimits, StudioError, type ApprovalDecision, type ErrorCode, type FunctionRecord } from '../model/index.ts';
import type { AskOutcome, PromptAnswer, PromptDesk } from './prompts.ts';

/** What the form asks, in the client (elicitation) and in the studio alike. */
export const APPROVAL_CHOICES = ['allow_once', 'allow_session', 'deny'] as const;
export type ApprovalChoice = (typeof APPROVAL_CHOICES)[number];

export interface ApprovalRequest {
  fn: FunctionRecord;
  args: unknown;
  client?: { name?: string | undefined; version?: string | undefined } | undefined;
  transport: string;
  profile?: string | undefined;
  /**
   * What "allow for this session" is remembered on: the MCP connection (stdio) or session (2025-era
   * HTTP). Undefined for a sessionless (2026-era HTTP) request: there, "allow for this session" is
   * not offered and every call asks.
   */
  session?: object | undefined;
  /**
   * Asks the client by elicitation (form mode) and answers its result; undefined when the client
   * cannot. A rejection (the client refused the request) falls back to the studio.
   */
  elicit?: ((params: { message: string; requestedSchema: Record<string, unknown> }, signal: AbortSignal) => Promise<PromptAnswer>) | undefined;
  /** The call's own signal: the client cancelled it, or the connection closed. */
  signal?: AbortSignal | undefined;
}

export type ApprovalOutcome =
  | { allowed: true; decision?: ApprovalDecision | undefined }
  | { allowed: false; decision: ApprovalDecision; message: string };

/** Whether a call to `fn` from an MCP client needs a person's approval. */
export function needsApproval(fn: Pick<FunctionRecord, 'annotations' | 'askBeforeCall'>): boolean {
  return fn.annotations?.destructiveHint === true || fn.askBeforeCall === true;
}

/** The form the person fills in: one required choice. */
export function approvalSchema(sessionScoped: boolean): Record<string, unknown> {
  const choices = sessionScoped ? APPROVAL_CHOICES : APPROVAL_CHOICES.filter((c) => c !== 'allow_session');
  const names: Record<ApprovalChoice, string> = { allow_once: 'Allow once', allow_session: 'Allow for this session', deny: 'Deny' };
  return {
    type: 'object',
    properties: {
      decision: { type: 'string', title: 'Decision', oneOf: choices.map((c) => ({ const: c, title: names[c] })) },
    },
    required: ['decision'],
  };
}

/** The choice an answer makes: anything but an accepted allow is a denial. */
export function choiceOf(answer: PromptAnswer, sessionScoped: boolean): ApprovalChoice {
  if (answer.action !== 'accept') return 'deny';
  const decision = answer.content?.decision;
  if (decision === 'allow_once') return 'allow_once';
  if (decision === 'allow_session') return sessionScoped ? 'allow_session' : 'allow_once';
  return 'deny';
}

export class Approvals {
  readonly #desk: PromptDesk;
  readonly #runs: RunLedger;
  /** Functions allowed for the rest of a session, per session. */
  readonly #sessions = new WeakMap<object, Set<string>>();

  constructor(desk: PromptDesk, runs: RunLedger) {
    this.#desk = desk;
    this.#runs = runs;
  }

  /** Decides whether the call may run; a call that may not is recorded here as a failed run. */
  async check(request: ApprovalRequest): Promise<ApprovalOutcome> {
    const { fn } = request;
    if (!needsApproval(fn)) return { allowed: true };
    if (request.session && this.#sessions.get(request.session)?.has(fn.name)) return { allowed: true, decision: 'session' };
    const started = Date.now();
    const sessionScoped = request.session !== undefined;
    const waitMs = effectiveLimits(fn).timeoutMs;
    const why = fn.annotations?.destructiveHint === true ? 'it is marked destructive' : 'its settings say "ask before every call"';
    const client = clientLabel(request.client);
    const message = `${client ?? 'An MCP client'} wants to run ${fn.name}, which needs your approval (${why}). Arguments: ${preview(request.args)}`;
    const schema = approvalSchema(sessionScoped);

    let via: 'client' | 'studio' | undefined;
    let answer: PromptAnswer | undefined;
    let ended: 'timeout' | 'cancelled' | undefined;

    if (request.elicit) {
      const timeout = AbortSignal.timeout(waitMs);
      const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
      try {
        answer = await request.elicit({ message, requestedSchema: schema }, signal);
        via = 'client';
      } catch {
        if (request.signal?.aborted) ended = 'cancelled';
        else if (timeout.aborted) ended = 'timeout';
        // Otherwise the client refused the request: the studio may still ask.
      }
    }
    if (!via && !ended && this.#desk.studioOpen()) {
      const remaining = Math.max(1, waitMs - (Date.now() - started));
      let outcome: AskOutcome;
      try {
        outcome = await this.#desk.ask({ kind: 'approval', functionName: fn.name, client, args: request.args, message, schema, sessionScoped, waitMs: remaining, signal: request.signal });
      } catch (error) {
        // The prompt could not be written (another process holding the lock, a full disk, a read-only file).
        if (!(error instanceof StudioError)) throw error;
        return this.#refuse(request, started, 'no_way_to_ask', error.code, `${fn.name} was not run: it needs a person's approval and the question could not be put to Callable Studio: ${error.message}`);
      }
      if (outcome.state === 'answered') {
        via = 'studio';
        answer = outcome.answer;
      } else {
        ended = outcome.state === 'expired' ? 'timeout' : 'cancelled';
      }
    }

    if (via && answer) {
      const choice = choiceOf(answer, sessionScoped);
      const decision = `${via}:${choice}` as ApprovalDecision;
      if (choice === 'deny') {
        const where = via === 'client' ? 'in the client' : 'in Callable Studio';
        return this.#refuse(request, started, decision, 'denied', `${fn.name} was not run: a person denied this call ${where}. Do not call it again unless the user asks you to.`);
      }
      if (choice === 'allow_session' && request.session) {
        let allowed = this.#sessions.get(request.session);
        if (!allowed) this.#sessions.set(request.session, (allowed = new Set()));
        allowed.add(fn.name);
      }
      return { allowed: true, decision };
    }
    if (ended === 'timeout') {
      return this.#refuse(
        request,
        started,
        'timeout',
        'approval_timeout',
        `${fn.name} was not run: it needs a person's approval and nobody answered within ${Math.round(waitMs / 1000)} s (the function's timeout). Ask the user to watch for the prompt, then call again.`,
      );
    }
    if (ended === 'cancelled') return this.#refuse(request, started, 'cancelled', 'cancelled', `${fn.name} was not run: the call was cancelled while it waited for approval.`);
    return this.#refuse(
      request,
      started,
      'no_way_to_ask',
      'approval_required',
      `${fn.name} was not run: it needs a person's approval before every call (${why}), and there is no way to ask: this client does not support elicitation and Callable Studio is not open. ` +
        `Open Callable Studio and call again, use a client that supports elicitation, or (if the user agrees) turn off "Ask before every call" and the destructive hint in ${fn.name}'s settings.`,
    );
  }

  #refuse(request: ApprovalRequest, started: number, decision: ApprovalDecision, code: ErrorCode, message: string): ApprovalOutcome {
    this.#runs.record({
      id: randomUUID(),
      functionName: request.fn.name,
      caller: 'mcp',
      ...(request.client?.name === undefined ? {} : { clientName: request.client.name }),
      ...(request.client?.version === undefined ? {} : { clientVersion: request.client.version }),
      transport: request.transport,
      ...(request.profile === undefined ? {} : { profile: request.profile }),
      args: request.args,
      startedAt: new Date(started).toISOString(),
      durationMs: Date.now() - started,
      ok: false,
      errorCode: code,
      errorMessage: message,
      bytesOut: 0,
      approval: decision,
    });
    return { allowed: false, decision, message };
  }
}

function clientLabel(client: ApprovalRequest['client']): string | undefined {
  if (!client?.name) return undefined;
  return client.version ? `${client.name} ${client.version}` : client.name;
}

function preview(args: unknown): string {
  const text = JSON.stringify(args ?? {});
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
