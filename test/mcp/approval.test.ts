// Approval before destructive calls, end to end: a real `callable mcp` process, real MCP clients
// (with and without elicitation), a real vendor socket, and the studio's side driven through the
// engine API the studio's engine process uses (presence, watch, answer) on the same database file.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore, type Engine, type PromptView, type RunRecord } from '../../src-main/engine/index.ts';
import { CALLABLE_COMMAND, startServe } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { defineFunction } from '../support/engine.ts';
import { connect } from '../support/mcpClients.ts';
import { vendorServer } from '../support/vendor.ts';
import { until } from '../support/wait.ts';

let dataDir: string;
let engine: Engine;
let vendor: Awaited<ReturnType<typeof vendorServer>>;

interface CallResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
}

/** A 2025-era client (the v1 SDK) over stdio to `callable mcp`; with `onElicit`, it declares elicitation and answers with it. */
async function stdioClient(name: string, onElicit?: (request: ElicitRequest['params']) => ElicitResult | Promise<ElicitResult>) {
  const client = new Client({ name, version: '1.0.0' }, onElicit ? { capabilities: { elicitation: {} } } : {});
  if (onElicit) client.setRequestHandler(ElicitRequestSchema, (request) => onElicit(request.params));
  const transport = new StdioClientTransport({ command: CALLABLE_COMMAND.command, args: [...CALLABLE_COMMAND.args, 'mcp', '--data-dir', dataDir], stderr: 'pipe', env: process.env as Record<string, string> });
  await client.connect(transport);
  return {
    call: async (tool: string, args: Record<string, unknown>, signal?: AbortSignal) =>
      (await client.callTool({ name: tool, arguments: args }, undefined, { timeout: 60_000, ...(signal ? { signal } : {}) })) as CallResult,
    close: () => client.close(),
  };
}

/** A client without elicitation, shared by the tests that need no fresh connection (each new one starts a `callable mcp`). */
let plain: ReturnType<typeof stdioClient> | undefined;
const plainClient = (): ReturnType<typeof stdioClient> => (plain ??= stdioClient('plain-agent'));

const textOf = (result: CallResult): string => result.content.map((c) => c.text ?? '').join('');
const deletes = (id: string): number => vendor.seen.filter((r) => r.method === 'DELETE' && r.url === `/customers/${id}`).length;
/** The run recorded for the call with these arguments (from any process). */
const runFor = (id: string): RunRecord | undefined => engine.runs.list({ limit: 200 }).find((r) => (r.args as { id?: string } | null)?.id === id);
const runsFor = (id: string): RunRecord[] => engine.runs.list({ limit: 200 }).filter((r) => (r.args as { id?: string } | null)?.id === id);

/** The studio's side: its presence, and the prompts it is shown, as the desktop engine process has them. */
function openStudio(): { shown: PromptView[][]; next: (functionName: string) => Promise<PromptView>; close: () => void } {
  engine.prompts.openStudio();
  const shown: PromptView[][] = [];
  const stop = engine.prompts.watch((pending) => shown.push(pending));
  return {
    shown,
    next: async (functionName) => {
      let found: PromptView | undefined;
      await until(() => (found = engine.prompts.pending().find((p) => p.functionName === functionName)) !== undefined, `a prompt for ${functionName} in the studio`);
      return found!;
    },
    close: () => {
      stop();
      engine.prompts.closeStudio();
    },
  };
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'callable-approval-'));
  engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  vendor = await vendorServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"deleted":true}'));
  const source = `export default async ({ id }, ctx) => (await ctx.fetch('http://127.0.0.1:${vendor.port}/customers/' + id, { method: 'DELETE' })).json()`;
  const common = { inputSchema: { type: 'object' as const, properties: { id: { type: 'string' } }, required: ['id'] }, allowedHosts: [`127.0.0.1:${vendor.port}`] };
  await defineFunction(engine, { name: 'delete_customer', description: 'Deletes a customer', annotations: { destructiveHint: true }, ...common }, source);
  await defineFunction(engine, { name: 'refund', description: 'Refunds an order', askBeforeCall: true, ...common }, source);
  await defineFunction(engine, { name: 'quick_delete', description: 'Deletes fast', annotations: { destructiveHint: true }, timeoutMs: 1500, ...common }, source);
  await defineFunction(engine, { name: 'lookup', description: 'Reads a customer', annotations: { readOnlyHint: true }, ...common }, source.replace("method: 'DELETE'", "method: 'GET'"));
});

afterEach(() => engine.prompts.closeStudio());

afterAll(async () => {
  await (await plain)?.close();
  engine.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('approval before destructive calls', () => {
  it('asks a client with elicitation: accepted runs the call, declined does not reach the vendor; both audited', async () => {
    const asked: Array<ElicitRequest['params']> = [];
    let reply: ElicitResult = { action: 'accept', content: { decision: 'allow_once' } };
    const client = await stdioClient('eliciting-agent', (params) => {
      asked.push(params);
      return reply;
    });
    try {
      const allowed = await client.call('delete_customer', { id: 'c-allowed' });
      expect(allowed.isError).toBeFalsy();
      expect(JSON.parse(textOf(allowed))).toEqual({ deleted: true });
      expect(deletes('c-allowed')).toBe(1);
      expect(asked[0]!.message).toMatch(/delete_customer.*marked destructive.*c-allowed/s);
      expect(JSON.stringify(asked[0])).toContain('"const":"allow_session"');

      reply = { action: 'accept', content: { decision: 'deny' } };
      const denied = await client.call('delete_customer', { id: 'c-denied' });
      expect(denied.isError).toBe(true);
      expect(textOf(denied)).toMatch(/was not run: a person denied this call in the client/);
      reply = { action: 'decline' };
      const declined = await client.call('delete_customer', { id: 'c-declined' });
      expect(textOf(declined)).toMatch(/denied/);
      expect(deletes('c-denied') + deletes('c-declined')).toBe(0);

      // A function that needs no approval is not asked about, nor is a call its arguments would refuse.
      const before = asked.length;
      expect((await client.call('lookup', { id: 'c-read' })).isError).toBeFalsy();
      const invalid = await client.call('delete_customer', { id: 42 });
      expect(textOf(invalid)).toMatch(/^Invalid arguments for delete_customer/);
      expect(asked.length).toBe(before);
    } finally {
      await client.close();
    }
    await expect.poll(() => runFor('c-allowed')).toMatchObject({ ok: true, approval: 'client:allow_once', clientName: 'eliciting-agent' });
    expect(runFor('c-denied')).toMatchObject({ ok: false, errorCode: 'denied', approval: 'client:deny', clientName: 'eliciting-agent', transport: 'stdio' });
    expect(runFor('c-declined')).toMatchObject({ ok: false, errorCode: 'denied', approval: 'client:deny' });
    expect(runFor('c-read')?.approval).toBeUndefined();
    // The decisions as the history command shows them.
    const history = await cli(['runs', '--json', '--function', 'delete_customer', '--data-dir', dataDir], { env: { ...process.env, CALLABLE_SECRETS: 'env' } });
    expect(history.code).toBe(0);
    const listed = JSON.parse(history.stdout) as RunRecord[];
    expect(listed.find((r) => (r.args as { id?: string }).id === 'c-allowed')).toMatchObject({ ok: true, approval: 'client:allow_once' });
    expect(listed.find((r) => (r.args as { id?: string }).id === 'c-denied')).toMatchObject({ ok: false, errorCode: 'denied', approval: 'client:deny' });
    const text = await cli(['runs', '--function', 'delete_customer', '--data-dir', dataDir], { env: { ...process.env, CALLABLE_SECRETS: 'env' } });
    expect(text.stdout).toMatch(/delete_customer {2}ok .* {2}approval: client:allow_once$/m);
    expect(text.stdout).toMatch(/delete_customer {2}failed: denied .* {2}approval: client:deny$/m);
  });

  it('a client that fails the elicitation request falls back to the studio; one that never answers runs into the deadline', async () => {
    const failing = await stdioClient('failing-agent', () => {
      throw new Error('no UI to show this form');
    });
    const studio = openStudio();
    try {
      const call = failing.call('delete_customer', { id: 'c-fallback' });
      engine.prompts.answer((await studio.next('delete_customer')).id, { action: 'accept', content: { decision: 'allow_once' } });
      expect((await call).isError).toBeFalsy();
    } finally {
      await failing.close();
      studio.close();
    }
    await expect.poll(() => runFor('c-fallback')).toMatchObject({ ok: true, approval: 'studio:allow_once', clientName: 'failing-agent' });

    const silent = await stdioClient('silent-agent', () => new Promise<ElicitResult>(() => {}));
    try {
      const result = await silent.call('quick_delete', { id: 'c-silent' });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^quick_delete was not run: it needs a person's approval and nobody answered within 2 s/);
    } finally {
      await silent.close();
    }
    expect(deletes('c-silent')).toBe(0);
    await expect.poll(() => runFor('c-silent')).toMatchObject({ ok: false, errorCode: 'approval_timeout', approval: 'timeout' });
  });

  it('refuses with a how-to line when the client has no elicitation and no studio is open, and audits it', async () => {
    expect(engine.prompts.studioOpen()).toBe(false);
    // A 2026-07-28 client: that revision has no server-to-client elicitation request.
    const client = await connect('2026-07-28', { transport: 'stdio', stdioArgs: ['--data-dir', dataDir] });
    try {
      const refused = await client.callTool('refund', { id: 'c-refused' });
      expect(refused.isError).toBe(true);
      expect(refused.content[0]!.text).toBe(
        `refund was not run: it needs a person's approval before every call (its settings say "ask before every call"), and there is no way to ask: this client does not support elicitation and Callable Studio is not open. ` +
          `Open Callable Studio and call again, use a client that supports elicitation, or (if the user agrees) turn off "Ask before every call" and the destructive hint in refund's settings.`,
      );
    } finally {
      await client.close();
    }
    expect(deletes('c-refused')).toBe(0);
    await expect.poll(() => runFor('c-refused')).toMatchObject({ ok: false, errorCode: 'approval_required', approval: 'no_way_to_ask', clientName: 'contract-client-v2' });
  });

  it('asks in the studio when it is open: allow once runs the call, and the prompt shows function, client and arguments', async () => {
    const studio = openStudio();
    const client = await plainClient();
    try {
      const call = client.call('delete_customer', { id: 'c-studio' });
      const prompt = await studio.next('delete_customer');
      expect(prompt).toMatchObject({ kind: 'approval', functionName: 'delete_customer', client: 'plain-agent 1.0.0', args: { id: 'c-studio' }, sessionScoped: true });
      await until(() => studio.shown.some((list) => list.some((p) => p.id === prompt.id)), 'the watcher to show the prompt');
      expect(deletes('c-studio')).toBe(0);
      engine.prompts.answer(prompt.id, { action: 'accept', content: { decision: 'allow_once' } });
      const result = await call;
      expect(result.isError).toBeFalsy();
      expect(deletes('c-studio')).toBe(1);
      // Answered prompts leave the studio's list; a second answer is refused.
      await until(() => studio.shown.at(-1)?.every((p) => p.id !== prompt.id) === true, 'the prompt to leave the studio');
      expect(() => engine.prompts.answer(prompt.id, { action: 'accept', content: { decision: 'deny' } })).toThrow(/already answered/);
      expect(engine.prompts.get(prompt.id)).toMatchObject({ state: 'answered', answer: { action: 'accept', content: { decision: 'allow_once' } } });
    } finally {
      studio.close();
    }
    await expect.poll(() => runFor('c-studio')).toMatchObject({ ok: true, approval: 'studio:allow_once', clientName: 'plain-agent' });
  });

  it('a studio denial does not reach the vendor and is audited', async () => {
    const studio = openStudio();
    const client = await plainClient();
    try {
      const call = client.call('refund', { id: 'c-studio-deny' });
      engine.prompts.answer((await studio.next('refund')).id, { action: 'accept', content: { decision: 'deny' } });
      const result = await call;
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/a person denied this call in Callable Studio/);
    } finally {
      studio.close();
    }
    expect(deletes('c-studio-deny')).toBe(0);
    await expect.poll(() => runFor('c-studio-deny')).toMatchObject({ ok: false, errorCode: 'denied', approval: 'studio:deny' });
  });

  it('allow for this session is not asked again on the same connection, but is on a new one', async () => {
    const studio = openStudio();
    const first = await stdioClient('session-agent');
    try {
      const call = first.call('delete_customer', { id: 's-1' });
      engine.prompts.answer((await studio.next('delete_customer')).id, { action: 'accept', content: { decision: 'allow_session' } });
      expect((await call).isError).toBeFalsy();
      const promptsBefore = engine.prompts.recent(500).length;
      expect((await first.call('delete_customer', { id: 's-2' })).isError).toBeFalsy();
      expect(engine.prompts.recent(500).length).toBe(promptsBefore);
      // Remembered for that function only.
      const other = first.call('refund', { id: 's-other' });
      engine.prompts.answer((await studio.next('refund')).id, { action: 'accept', content: { decision: 'allow_once' } });
      expect((await other).isError).toBeFalsy();
    } finally {
      await first.close();
    }
    const second = await stdioClient('session-agent');
    try {
      const call = second.call('delete_customer', { id: 's-3' });
      const prompt = await studio.next('delete_customer');
      expect(prompt.args).toEqual({ id: 's-3' });
      engine.prompts.answer(prompt.id, { action: 'accept', content: { decision: 'allow_once' } });
      expect((await call).isError).toBeFalsy();
    } finally {
      await second.close();
      studio.close();
    }
    expect(deletes('s-1') + deletes('s-2') + deletes('s-3')).toBe(3);
    await expect.poll(() => runFor('s-3')).toMatchObject({ ok: true, approval: 'studio:allow_once' });
    expect(runFor('s-1')).toMatchObject({ approval: 'studio:allow_session' });
    expect(runFor('s-2')).toMatchObject({ approval: 'session' });
  });

  it('over HTTP: a 2025-era session remembers "allow for this session"; a sessionless 2026-era request is not offered it and asks every time', async () => {
    const studio = openStudio();
    const serve = await startServe(dataDir, ['--no-auth']);
    try {
      const legacy = await connect('2025-11-25', { transport: 'http', url: serve.url });
      try {
        const call = legacy.callTool('delete_customer', { id: 'h-1' });
        const prompt = await studio.next('delete_customer');
        expect(prompt).toMatchObject({ sessionScoped: true, client: 'contract-client-v1 1.32.2' });
        engine.prompts.answer(prompt.id, { action: 'accept', content: { decision: 'allow_session' } });
        expect((await call).isError).toBeFalsy();
        expect((await legacy.callTool('delete_customer', { id: 'h-2' })).isError).toBeFalsy();
      } finally {
        await legacy.close();
      }

      const modern = await connect('2026-07-28', { transport: 'http', url: serve.url });
      try {
        const call = modern.callTool('delete_customer', { id: 'h-3' });
        const prompt = await studio.next('delete_customer');
        expect(prompt.sessionScoped).toBe(false);
        expect(JSON.stringify(prompt.schema)).not.toContain('allow_session');
        // An answer that asks for more than was offered counts as once.
        engine.prompts.answer(prompt.id, { action: 'accept', content: { decision: 'allow_session' } });
        expect((await call).isError).toBeFalsy();
        const again = modern.callTool('delete_customer', { id: 'h-4' });
        engine.prompts.answer((await studio.next('delete_customer')).id, { action: 'accept', content: { decision: 'allow_once' } });
        expect((await again).isError).toBeFalsy();
      } finally {
        await modern.close();
      }
    } finally {
      await serve.stop();
      studio.close();
    }
    await expect.poll(() => runFor('h-4')).toMatchObject({ ok: true, approval: 'studio:allow_once', transport: 'http' });
    expect(runFor('h-1')).toMatchObject({ approval: 'studio:allow_session' });
    expect(runFor('h-2')).toMatchObject({ approval: 'session' });
    expect(runFor('h-3')).toMatchObject({ approval: 'studio:allow_once' });
  });

  it('a prompt nobody answers ends at the function deadline, expired and recorded', async () => {
    const studio = openStudio();
    const client = await plainClient();
    try {
      const call = client.call('quick_delete', { id: 'c-unanswered' });
      const prompt = await studio.next('quick_delete');
      const result = await call;
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^quick_delete was not run: it needs a person's approval and nobody answered within 2 s/);
      expect(engine.prompts.get(prompt.id)?.state).toBe('expired');
      expect(engine.prompts.pending().map((p) => p.id)).not.toContain(prompt.id);
      expect(() => engine.prompts.answer(prompt.id, { action: 'accept', content: { decision: 'allow_once' } })).toThrow(/can no longer be answered/);
    } finally {
      studio.close();
    }
    expect(deletes('c-unanswered')).toBe(0);
    await expect.poll(() => runFor('c-unanswered')).toMatchObject({ ok: false, errorCode: 'approval_timeout', approval: 'timeout' });
  });

  it('the caller cancelling withdraws the prompt from the studio, and it is recorded', async () => {
    const studio = openStudio();
    const client = await plainClient();
    try {
      const controller = new AbortController();
      const call = client.call('delete_customer', { id: 'c-cancelled' }, controller.signal);
      const prompt = await studio.next('delete_customer');
      await until(() => studio.shown.some((list) => list.some((p) => p.id === prompt.id)), 'the watcher to show the prompt');
      controller.abort();
      await expect(call).rejects.toThrow();
      await until(() => engine.prompts.get(prompt.id)?.state === 'cancelled', 'the prompt to be withdrawn');
      await until(() => studio.shown.at(-1)?.every((p) => p.id !== prompt.id) === true, 'the prompt to leave the studio');
      expect(() => engine.prompts.answer(prompt.id, { action: 'accept', content: { decision: 'allow_once' } })).toThrow(/the caller stopped waiting/);
    } finally {
      studio.close();
    }
    expect(deletes('c-cancelled')).toBe(0);
    await expect.poll(() => runsFor('c-cancelled')).toEqual([expect.objectContaining({ ok: false, errorCode: 'cancelled', approval: 'cancelled' })]);
  });
});
