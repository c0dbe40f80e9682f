// ctx.elicit and ctx.sample end to end: real `callable mcp` processes over stdio, real MCP clients
// that declare (or do not declare) elicitation and sampling and answer as a person or a model would.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, type ClientCapabilities, type CreateMessageRequest, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { CALLABLE_COMMAND } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { connect } from '../support/mcpClients.ts';

let dataDir: string;

const SIGN_UP = `export default async ({ question = 'Who are you?' }, ctx) => {
  try {
    const answer = await ctx.elicit(question, {
      type: 'object',
      properties: { username: { type: 'string', minLength: 2 }, email: { type: 'string' }, newsletter: { type: 'boolean', default: false } },
      required: ['username', 'email'],
    });
    return answer;
  } catch (e) {
    return { failed: e.message, code: e.code };
  }
}`;

const SUMMARIZE = `export default async ({ text, times = 1 }, ctx) => {
  const out = [];
  for (let i = 0; i < times; i++) {
    try { const r = await ctx.sample([{ role: 'user', content: 'Summarize: ' + text }], { maxTokens: 20 }); out.push(r.model + ': ' + r.content.text); }
    catch (e) { out.push('refused: ' + e.message); }
  }
  return out;
}`;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'callable-ask-'));
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  try {
    await engine.saveFunction({ spec: { name: 'sign_up', language: 'js', inputSchema: { type: 'object', properties: { question: { type: 'string' } } } }, source: SIGN_UP });
    await engine.saveFunction({ spec: { name: 'summarize', language: 'js', sampling: { maxCalls: 2 } }, source: SUMMARIZE });
    await engine.saveFunction({ spec: { name: 'summarize_off', language: 'js' }, source: SUMMARIZE });
  } finally {
    engine.close();
  }
});

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

interface Answers {
  elicit?: (request: ElicitRequest) => ElicitResult;
  sample?: (request: CreateMessageRequest) => { role: 'assistant'; content: { type: 'text'; text: string }; model: string; stopReason?: string };
}

/** A 2025-11-25 client (the v1 SDK) on `callable mcp` over stdio, declaring exactly the capabilities it answers. */
async function stdioClient(answers: Answers): Promise<{ client: Client; asked: { elicit: ElicitRequest[]; sample: CreateMessageRequest[] }; close: () => Promise<void> }> {
  const capabilities: ClientCapabilities = {};
  if (answers.elicit) capabilities.elicitation = {};
  if (answers.sample) capabilities.sampling = {};
  const client = new Client({ name: 'ask-test-client', version: '1.0.0' }, { capabilities });
  const asked = { elicit: [] as ElicitRequest[], sample: [] as CreateMessageRequest[] };
  if (answers.elicit) {
    const answer = answers.elicit;
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.elicit.push(request);
      return answer(request);
    });
  }
  if (answers.sample) {
    const answer = answers.sample;
    client.setRequestHandler(CreateMessageRequestSchema, (request) => {
      asked.sample.push(request);
      return answer(request);
    });
  }
  const transport = new StdioClientTransport({ command: CALLABLE_COMMAND.command, args: [...CALLABLE_COMMAND.args, 'mcp', '--data-dir', dataDir], stderr: 'pipe' });
  await client.connect(transport);
  return { client, asked, close: () => client.close() };
}

/** The client declaring neither capability, shared by the tests that see it refused (each new client starts a `callable mcp`). */
let bare: ReturnType<typeof stdioClient> | undefined;
const bareClient = (): ReturnType<typeof stdioClient> => (bare ??= stdioClient({}));
afterAll(async () => {
  await (await bare)?.close();
});

const textOf = (result: unknown): string => ((result as { content: Array<{ text?: string }> }).content[0]?.text ?? '') as string;
const valueOf = (result: unknown): unknown => JSON.parse(textOf(result));

describe('ctx.elicit through an MCP client with elicitation', () => {
  it('the client is asked with the function\'s message and schema; accept, decline and cancel reach the function', async () => {
    const replies: ElicitResult[] = [{ action: 'accept', content: { username: 'ada', email: 'ada@example.com', newsletter: true } }, { action: 'decline' }, { action: 'cancel' }];
    const { client, asked, close } = await stdioClient({ elicit: () => replies.shift()! });
    try {
      expect(valueOf(await client.callTool({ name: 'sign_up', arguments: { question: 'Sign up?' } }))).toEqual({
        action: 'accept',
        content: { username: 'ada', email: 'ada@example.com', newsletter: true },
      });
      expect(asked.elicit[0]?.params).toMatchObject({
        message: 'Sign up?',
        requestedSchema: { type: 'object', properties: { username: { type: 'string', minLength: 2 } }, required: ['username', 'email'] },
      });
      expect(valueOf(await client.callTool({ name: 'sign_up', arguments: {} }))).toEqual({ action: 'decline' });
      expect(valueOf(await client.callTool({ name: 'sign_up', arguments: {} }))).toEqual({ action: 'cancel' });
    } finally {
      await close();
    }
  });

  it('an answer that breaks the schema is an error in the function naming the field', async () => {
    const { client, close } = await stdioClient({ elicit: () => ({ action: 'accept', content: { username: 'a', email: 'x@example.com' } }) });
    try {
      expect(valueOf(await client.callTool({ name: 'sign_up', arguments: {} }))).toEqual({
        failed: 'ctx.elicit: the answer does not match the requested schema: content.username must NOT have fewer than 2 characters',
        code: 'bad_input',
      });
    } finally {
      await close();
    }
  });

  it('cancelling the call while the user is being asked withdraws the question from the client', async () => {
    let withdrawn!: () => void;
    const wasWithdrawn = new Promise<void>((resolve) => (withdrawn = resolve));
    let asked!: () => void;
    const wasAsked = new Promise<void>((resolve) => (asked = resolve));
    const client = new Client({ name: 'ask-test-client', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    // The v1 client ignores a cancellation of request id 0 (`if (!requestId) return` in its
    // Protocol), so the first question is answered and the second one is the one withdrawn.
    let questions = 0;
    client.setRequestHandler(ElicitRequestSchema, (_request, extra) => {
      if (questions++ === 0) return { action: 'decline' };
      asked();
      return new Promise<ElicitResult>((resolve) => {
        extra.signal.addEventListener('abort', () => {
          withdrawn();
          resolve({ action: 'cancel' });
        });
      });
    });
    await client.connect(new StdioClientTransport({ command: CALLABLE_COMMAND.command, args: [...CALLABLE_COMMAND.args, 'mcp', '--data-dir', dataDir], stderr: 'pipe' }));
    try {
      expect(valueOf(await client.callTool({ name: 'sign_up', arguments: {} }))).toEqual({ action: 'decline' });
      const controller = new AbortController();
      const call = client.callTool({ name: 'sign_up', arguments: { question: 'never answered' } }, undefined, { signal: controller.signal });
      await wasAsked;
      controller.abort();
      await expect(call).rejects.toThrow();
      await wasWithdrawn;
      const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
      try {
        await expect.poll(() => engine.runs.list({ functionName: 'sign_up' }).find((r) => r.args && (r.args as { question?: string }).question === 'never answered')?.errorCode, { timeout: 10_000 }).toBe('cancelled');
      } finally {
        engine.close();
      }
    } finally {
      await client.close();
    }
  });

  it('a client without elicitation (and no studio) gets the function\'s clear rejection', async () => {
    const { client } = await bareClient();
    // The engine's studio hook (askInStudio) is asked in the client's place; with no studio open it refuses.
    expect(valueOf(await client.callTool({ name: 'sign_up', arguments: {} }))).toEqual({
      failed: expect.stringMatching(/^ctx\.elicit: .*does not support elicitation.*Callable Studio is not open/),
      code: 'ask_unavailable',
    });
  });

  it('a 2026-07-28 client (no server-to-client requests in that revision) gets the same rejection', async () => {
    const client = await connect('2026-07-28', { transport: 'stdio', stdioArgs: ['--data-dir', dataDir] });
    try {
      expect(JSON.parse((await client.callTool('sign_up', {})).content[0]!.text!)).toMatchObject({ code: 'ask_unavailable' });
    } finally {
      await client.close();
    }
  });
});

describe('ctx.sample through an MCP client with sampling', () => {
  const model = (request: CreateMessageRequest) => ({
    role: 'assistant' as const,
    content: { type: 'text' as const, text: `short(${(request.params.messages[0]!.content as { text: string }).text.length})` },
    model: 'test-model',
    stopReason: 'endTurn',
  });

  // One sampling client for the tests below; each counts the requests it was asked from where it started.
  let sampling: Awaited<ReturnType<typeof stdioClient>>;
  beforeAll(async () => {
    sampling = await stdioClient({ sample: model });
  });
  afterAll(() => sampling.close());

  it('asks the client\'s model for a function whose settings allow it', async () => {
    const { client, asked } = sampling;
    const before = asked.sample.length;
    expect(valueOf(await client.callTool({ name: 'summarize', arguments: { text: 'abc' } }))).toEqual(['test-model: short(14)']);
    expect(asked.sample.slice(before)).toHaveLength(1);
    expect(asked.sample[before]?.params).toMatchObject({ messages: [{ role: 'user', content: { type: 'text', text: 'Summarize: abc' } }], maxTokens: 20 });
  });

  it('refuses a function without the setting, and never asks the client', async () => {
    const { client, asked } = sampling;
    const before = asked.sample.length;
    expect(valueOf(await client.callTool({ name: 'summarize_off', arguments: { text: 'abc' } }))).toEqual([
      'refused: ctx.sample: "summarize_off" may not ask the client\'s model; allow it in the function\'s settings with "sampling": { "maxCalls": N } (N at most 20)',
    ]);
    expect(asked.sample.slice(before)).toEqual([]);
  });

  it('one completion over sampling.maxCalls ends the call with an error naming the limit', async () => {
    const { client, asked } = sampling;
    const before = asked.sample.length;
    const result = await client.callTool({ name: 'summarize', arguments: { text: 'abc', times: 3 } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      'summarize stopped at a sandbox limit (sample_limit): the function asked for more than 2 completions (sampling.maxCalls); ask for fewer or raise sampling.maxCalls (at most 20)',
    );
    expect(asked.sample.slice(before)).toHaveLength(2);
  });

  it('a client without sampling gets a clear rejection', async () => {
    const { client } = await bareClient();
    expect(valueOf(await client.callTool({ name: 'summarize', arguments: { text: 'abc' } }))).toEqual([
      'refused: ctx.sample: this client cannot answer sampling requests (it did not declare the sampling capability); call the function from a client that lends its model',
    ]);
  });
});

describe('questions in the run record', () => {
  it('MCP runs that asked are in the history with their outcome', () => {
    const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
    try {
      const runs = engine.runs.list({ functionName: 'summarize' });
      expect(runs.some((r) => r.caller === 'mcp' && r.ok === false && r.errorCode === 'sample_limit' && r.clientName === 'ask-test-client')).toBe(true);
      expect(engine.runs.list({ functionName: 'sign_up' }).filter((r) => r.caller === 'mcp' && r.ok).length).toBeGreaterThanOrEqual(5);
    } finally {
      engine.close();
    }
  });

  it('`callable run --json` shows each question in the trace beside requests; the terminal output lists it', async () => {
    const json = await cli(['run', 'sign_up', '--args', '{}', '--json', '--data-dir', dataDir]);
    expect(json.code, json.stderr).toBe(0);
    const result = JSON.parse(json.stdout) as { trace: unknown[] };
    expect(result.trace).toEqual([
      expect.objectContaining({ kind: 'elicit', method: 'elicitation/create', url: 'none:', refused: 'no client elicitation and no studio open' }),
    ]);
    const human = await cli(['run', 'summarize', '--args', '{"text":"abc"}', '--data-dir', dataDir]);
    expect(human.code).toBe(0);
    expect(human.stderr).toContain('→ sampling/createMessage none:  REFUSED: the client has no sampling');
  });
});
