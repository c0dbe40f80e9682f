// ctx.elicit and ctx.sample at the engine: a real sandbox host, the engine's answerers as plain
// callbacks (the MCP side is test/mcp/ask.test.ts). What crosses, what is checked, what is traced.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ElicitAnswer, ElicitRequest, SampleAnswer, SampleRequest } from '../../src-main/engine/index.ts';
import { SchemaValidator } from '../../src-main/engine/functions/schemas.ts';
import { asker } from '../../src-main/engine/sandbox/asks.ts';
import { defineFunction, testEngine } from '../support/engine.ts';

const engine = testEngine();
const importer = testEngine();
const exportDir = mkdtempSync(join(tmpdir(), 'callable-ask-export-'));
afterAll(() => rmSync(exportDir, { recursive: true, force: true }));

const CONTACT = { type: 'object', properties: { username: { type: 'string' }, email: { type: 'string', format: 'email' } }, required: ['username', 'email'] };

/** Asks once and returns what it got, or the error it caught (so the run itself succeeds). */
const ASK_ONCE = `export default async ({ schema }, ctx) => {
  try { return { answer: await ctx.elicit('Who are you?', schema) }; }
  catch (e) { return { error: e.message, code: e.code }; }
}`;

const run = (name: string, args: unknown, answerers: { elicit?: (r: ElicitRequest, s: AbortSignal) => Promise<ElicitAnswer>; sample?: (r: SampleRequest, s: AbortSignal) => Promise<SampleAnswer> } = {}) =>
  engine.run(name, args, { caller: 'test', ...answerers });

describe('ctx.elicit', () => {
  it('asks with the message and schema, and the function gets accept/decline/cancel as answered', async () => {
    await defineFunction(engine, { name: 'ask_once', language: 'js' }, ASK_ONCE);
    const asked: ElicitRequest[] = [];
    const accept = await run('ask_once', { schema: CONTACT }, {
      elicit: async (request) => {
        asked.push(request);
        return { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } };
      },
    });
    expect(accept.ok && accept.value).toEqual({ answer: { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } } });
    expect(asked).toEqual([{ functionName: 'ask_once', message: 'Who are you?', requestedSchema: CONTACT, timeoutMs: 15_000 }]);
    expect(accept.trace).toEqual([expect.objectContaining({ kind: 'elicit', method: 'elicitation/create', url: 'mcp:client', action: 'accept' })]);

    for (const action of ['decline', 'cancel'] as const) {
      const result = await run('ask_once', { schema: CONTACT }, { elicit: async () => ({ action }) });
      expect(result.ok && result.value).toEqual({ answer: { action } });
      expect(result.trace[0]).toMatchObject({ kind: 'elicit', action });
    }
  });

  it('an accepted answer that does not match the schema is an error in the function that names the field', async () => {
    const result = await run('ask_once', { schema: CONTACT }, { elicit: async () => ({ action: 'accept', content: { username: 'ada', email: 42 } }) });
    expect(result.ok && result.value).toEqual({ error: 'ctx.elicit: the answer does not match the requested schema: content.email must be string', code: 'bad_input' });
    expect(result.trace[0]).toMatchObject({ kind: 'elicit', action: 'accept', error: 'the answer does not match the requested schema: content.email must be string' });
    const missing = await run('ask_once', { schema: CONTACT }, { elicit: async () => ({ action: 'accept', content: { username: 'ada' } }) });
    expect(missing.ok && missing.value).toMatchObject({ error: 'ctx.elicit: the answer does not match the requested schema: content.email is required' });
  });

  it('a schema that is not the flat MCP form schema is refused before anyone is asked', async () => {
    let asked = 0;
    const elicit = async (): Promise<ElicitAnswer> => {
      asked++;
      return { action: 'cancel' };
    };
    const nested = await run('ask_once', { schema: { type: 'object', properties: { address: { type: 'object', properties: {} } } } }, { elicit });
    expect(nested.ok && nested.value).toEqual({
      error:
        'ctx.elicit: the requested schema is not an MCP elicitation form schema: properties.address: type must be string, number, integer, boolean or array (only string, number, integer, boolean and arrays of enum strings are allowed (no nested objects))',
      code: 'bad_input',
    });
    const notObject = await run('ask_once', { schema: { type: 'string' } }, { elicit });
    expect(notObject.ok && notObject.value).toMatchObject({ error: 'ctx.elicit: the requested schema is not an MCP elicitation form schema: its "type" must be "object"' });
    expect(asked).toBe(0);
    expect(nested.trace[0]).toMatchObject({ kind: 'elicit', url: 'none:', refused: expect.stringContaining('properties.address') });
  });

  it('with nobody to ask (no client elicitation, no studio) the function gets a clear error', async () => {
    const result = await run('ask_once', { schema: CONTACT });
    expect(result.ok && result.value).toEqual({
      error:
        'ctx.elicit: this client cannot answer elicitation requests and the studio is not open: call the function from a client that supports elicitation (form mode), open Callable Studio, or take the value as an argument',
      code: 'ask_unavailable',
    });
    expect(result.trace).toEqual([expect.objectContaining({ kind: 'elicit', url: 'none:', refused: 'no client elicitation and no studio open' })]);
  });

  it('the run deadline covers the wait: an unanswered question ends at timeoutMs and the asker is told', async () => {
    await defineFunction(engine, { name: 'ask_slow', language: 'js', timeoutMs: 400 }, `export default async (a, ctx) => ctx.elicit('Still there?', { type: 'object', properties: {} })`);
    let aborted = false;
    const result = await run('ask_slow', {}, {
      elicit: (_request, signal) =>
        new Promise<ElicitAnswer>((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          });
        }),
    });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toMatchObject({ code: 'timeout', details: { limit: 'timeoutMs' } });
    expect(aborted).toBe(true);
  });

  it('what the function passes is copied: bad arguments get one line, not a crash', async () => {
    await defineFunction(
      engine,
      { name: 'ask_badly', language: 'js' },
      `export default async (a, ctx) => { const out = [];
        const huge = { type: 'object', properties: { a: { type: 'string', description: 'x'.repeat(262144) } } };
        for (const args of [[], ['hi', 5], ['x'.repeat(10001), {}], ['hi', huge]]) { try { await ctx.elicit(...args); } catch (e) { out.push(e.message); } }
        return out; }`,
    );
    const result = await run('ask_badly', {}, { elicit: async () => ({ action: 'cancel' }) });
    expect(result.ok && result.value).toEqual([
      'ctx.elicit: the message must be a non-empty string',
      'ctx.elicit: the requested schema is not an MCP elicitation form schema: it must be an object schema ({ type: "object", properties: { … } })',
      'ctx.elicit: the message is over 10000 characters',
      'ctx.elicit: the requested schema is over 262144 characters as JSON',
    ]);
  });
});

describe('ctx.sample', () => {
  const SAMPLE_TWICE = `export default async ({ n = 1 }, ctx) => {
    const out = [];
    for (let i = 0; i < n; i++) out.push((await ctx.sample('Say ' + i, { maxTokens: 50, systemPrompt: 'Be brief' })).content.text);
    return out;
  }`;
  const answer = async (request: SampleRequest): Promise<SampleAnswer> => ({ role: 'assistant', content: { type: 'text', text: `ok: ${request.messages[0]!.content.text}` }, model: 'test-model', stopReason: 'endTurn' });

  it('is refused for a function whose settings do not allow it, before the client is asked', async () => {
    await defineFunction(engine, { name: 'sampler_off', language: 'js' }, `export default async (a, ctx) => { try { await ctx.sample('hi'); } catch (e) { return [e.code, e.message]; } }`);
    let asked = 0;
    const result = await run('sampler_off', {}, { sample: async (r) => (asked++, answer(r)) });
    expect(result.ok && result.value).toEqual([
      'forbidden',
      'ctx.sample: "sampler_off" may not ask the client\'s model; allow it in the function\'s settings with "sampling": { "maxCalls": N } (N at most 20)',
    ]);
    expect(asked).toBe(0);
    expect(result.trace).toEqual([expect.objectContaining({ kind: 'sample', method: 'sampling/createMessage', refused: 'sampling is not allowed for this function' })]);
  });

  it('asks the client with the messages and options, up to sampling.maxCalls per run; one more ends the run naming the limit', async () => {
    await defineFunction(engine, { name: 'sampler', language: 'js', sampling: { maxCalls: 2 } }, SAMPLE_TWICE);
    const asked: SampleRequest[] = [];
    const ok = await run('sampler', { n: 2 }, { sample: async (r) => (asked.push(r), answer(r)) });
    expect(ok.ok && ok.value).toEqual(['ok: Say 0', 'ok: Say 1']);
    expect(asked[0]).toEqual({ functionName: 'sampler', messages: [{ role: 'user', content: { type: 'text', text: 'Say 0' } }], maxTokens: 50, systemPrompt: 'Be brief', timeoutMs: 15_000 });
    expect(ok.trace.map((t) => [t.kind, t.url])).toEqual([
      ['sample', 'mcp:client'],
      ['sample', 'mcp:client'],
    ]);

    const over = await run('sampler', { n: 3 }, { sample: answer });
    expect(over.ok).toBe(false);
    expect(!over.ok && over.error).toEqual({
      code: 'sample_limit',
      message: 'the function asked for more than 2 completions (sampling.maxCalls); ask for fewer or raise sampling.maxCalls (at most 20)',
      details: { limit: 'sampling.maxCalls' },
    });
    expect(over.trace.at(-1)).toMatchObject({ kind: 'sample', refused: 'over sampling.maxCalls (2)' });
  });

  it('an answer over 1 MiB is refused, not handed to the function', async () => {
    const big = 'x'.repeat(1024 * 1024);
    const sampled = await run('sampler', { n: 1 }, { sample: async () => ({ role: 'assistant', content: { type: 'text', text: big }, model: 'm' }) });
    expect(!sampled.ok && sampled.error.message).toBe('Error: ctx.sample: the completion is over 1048576 bytes as JSON; ask for fewer tokens');
    const elicited = await run('ask_once', { schema: CONTACT }, { elicit: async () => ({ action: 'accept', content: { username: big, email: 'e' } }) });
    expect(elicited.ok && elicited.value).toEqual({ error: 'ctx.elicit: the answer is over 1048576 bytes as JSON; ask for less', code: 'bad_input' });
  });

  it('"sampling": {} allows the default of 3 completions per run', async () => {
    await defineFunction(engine, { name: 'sampler_default', language: 'js', sampling: {} }, SAMPLE_TWICE);
    expect((await run('sampler_default', { n: 3 }, { sample: answer })).ok).toBe(true);
    const over = await run('sampler_default', { n: 4 }, { sample: answer });
    expect(!over.ok && over.error.message).toBe('the function asked for more than 3 completions (sampling.maxCalls); ask for fewer or raise sampling.maxCalls (at most 20)');
  });

  it('a caught limit error does not let the function go on asking', async () => {
    await defineFunction(
      engine,
      { name: 'sampler_greedy', language: 'js', sampling: { maxCalls: 1 } },
      `export default async (a, ctx) => { for (let i = 0; i < 5; i++) { try { await ctx.sample('x'); } catch {} } return 'went on'; }`,
    );
    let asked = 0;
    const result = await run('sampler_greedy', {}, { sample: async (r) => (asked++, answer(r)) });
    expect(!result.ok && result.error.code).toBe('sample_limit');
    expect(asked).toBe(1);
  });

  it('without a client that samples, and with bad messages, the function gets one clear line', async () => {
    await defineFunction(
      engine,
      { name: 'sampler_checks', language: 'js', sampling: { maxCalls: 10 } },
      `export default async (a, ctx) => { const out = [];
        const many = Array.from({ length: 51 }, () => ({ role: 'user', content: 'x' }));
        for (const args of [['hi'], [[]], [[{ role: 'system', content: 'x' }]], ['hi', { top_k: 3 }], [many], ['x'.repeat(100001)], ['hi', { maxTokens: 0 }]]) { try { await ctx.sample(...args); } catch (e) { out.push(e.message); } }
        return out; }`,
    );
    const result = await run('sampler_checks', {});
    expect(result.ok && result.value).toEqual([
      'ctx.sample: this client cannot answer sampling requests (it did not declare the sampling capability); call the function from a client that lends its model',
      'ctx.sample: messages must be a string or a non-empty array of { role, content }',
      'ctx.sample: messages[0].role must be "user" or "assistant"',
      'ctx.sample: unknown option "top_k" (known: maxTokens, systemPrompt, temperature, stopSequences, modelPreferences)',
      'ctx.sample: at most 50 messages',
      'ctx.sample: the messages are over 100000 characters',
      'ctx.sample: maxTokens must be a whole number from 1 to 100000',
    ]);
  });
});

describe('the sampling setting', () => {
  it('is checked against its hard maximum, and survives export and import', async () => {
    await expect(defineFunction(engine, { name: 'too_greedy', sampling: { maxCalls: 21 } }, 'export default () => 1')).rejects.toThrow(
      'sampling.maxCalls may be at most 20 (the hard maximum for completions per run)',
    );
    engine.exportFunctions(exportDir, ['sampler']);
    expect(JSON.parse(readFileSync(join(exportDir, 'sampler', 'function.json'), 'utf8'))).toMatchObject({ sampling: { maxCalls: 2 } });
    const [imported] = await importer.importFunctions(exportDir);
    expect(imported?.sampling).toEqual({ maxCalls: 2 });
  });
});

describe('the engine does not trust the host with a question', () => {
  it('re-checks what a (compromised) host forwards before anyone is asked', async () => {
    const record = engine.functions.load('ask_once').record;
    let asked = 0;
    const trace: unknown[] = [];
    const ask = asker({ record, timeoutMs: 1000, schemas: new SchemaValidator(), trace: (e) => trace.push(e), askers: { elicit: async () => (asked++, { action: 'cancel' }) } });
    const signal = new AbortController().signal;
    await expect(ask({ kind: 'elicit', payload: { message: 'x'.repeat(10_001), requestedSchema: CONTACT } }, signal)).rejects.toThrow('ctx.elicit: the message must be a string of 1 to 10000 characters');
    await expect(ask({ kind: 'elicit', payload: { message: { toString: 'no' }, requestedSchema: CONTACT } }, signal)).rejects.toThrow('ctx.elicit: the message must be a string');
    await expect(ask({ kind: 'sample', payload: { messages: 'hi' } }, signal)).rejects.toThrow('may not ask the client\'s model');
    expect(asked).toBe(0);
    expect(trace).toHaveLength(3);
  });
});
