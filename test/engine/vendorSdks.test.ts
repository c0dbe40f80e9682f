// The vendors' own SDKs, installed from the machine's npm registry and run unchanged in the sandbox
// against stand-in vendors on 127.0.0.1: each gets its key from ctx.secret, the vendor receives the
// real key from the keychain, and the function and its run's record never hold it.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.ts';
import { connect, type CallResult } from '../support/mcpClients.ts';
import { vendorServer, type SeenRequest, type VendorHandler } from '../support/vendor.ts';
import { machineRegistry } from '../support/registry.ts';
import * as standIns from '../support/vendors/standIns.ts';
import { KEPT_PACKAGES, pinnedSdk, sdkDependencies, type PinnedSdk } from '../support/vendors/sdkPins.ts';

/** One of the README's SDKs at its pinned version (the latest when the table was written). */
interface Sdk extends PinnedSdk {
  fn: string;
  handler: (key: string, port: number) => VendorHandler;
  /** The function's source; BASE is the stand-in's URL. */
  source: string;
}

const SDKS: Sdk[] = [
  {
    fn: 'openai_chat',
    ...pinnedSdk('openai'),
    handler: (key) => standIns.openAiLike(key, '/v1'),
    source: `import OpenAI from 'openai';
export default async ({ stream }, ctx) => {
  const apiKey = ctx.secret('openai_chat');
  const client = new OpenAI({ apiKey, baseURL: BASE + '/v1', maxRetries: 0 });
  const request = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] };
  if (!stream) {
    const completion = await client.chat.completions.create(request);
    return { placeholder: apiKey.startsWith('callable_secret_'), id: completion.id, text: completion.choices[0].message.content, tokens: completion.usage.total_tokens };
  }
  // The stand-in sends the rest once asked: only a function that got the first chunk can ask.
  const parts = [];
  for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
    if (parts.length === 0) await fetch(BASE + '/v1/release', { method: 'POST', headers: { authorization: 'Bearer ' + apiKey } });
    parts.push(chunk.choices[0]?.delta?.content ?? '');
  }
  return { placeholder: apiKey.startsWith('callable_secret_'), text: parts.join(''), chunks: parts.length };
};
`,
  },
  {
    fn: 'anthropic_messages',
    ...pinnedSdk('@anthropic-ai/sdk'),
    handler: (key) => standIns.anthropic(key),
    source: `import Anthropic from '@anthropic-ai/sdk';
export default async ({ stream }, ctx) => {
  const apiKey = ctx.secret('anthropic_messages');
  const client = new Anthropic({ apiKey, baseURL: BASE, maxRetries: 0 });
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Say hello' }] };
  if (!stream) {
    const message = await client.messages.create(request);
    return { placeholder: apiKey.startsWith('callable_secret_'), id: message.id, text: message.content[0].text, stop: message.stop_reason };
  }
  // The stand-in sends the rest once asked: only a function that got the first event can ask.
  let events = 0, release;
  const texts = [];
  const live = client.messages.stream(request).on('text', (text) => texts.push(text)).on('streamEvent', () => {
    if (events++ === 0) release = fetch(BASE + '/v1/release', { method: 'POST', headers: { authorization: 'Bearer ' + apiKey } });
  });
  const message = await live.finalMessage();
  await release;
  return { placeholder: apiKey.startsWith('callable_secret_'), text: message.content[0].text, chunks: texts.length, events, stop: message.stop_reason };
};
`,
  },
  {
    fn: 'stripe_customers',
    ...pinnedSdk('stripe'),
    handler: (key) => standIns.stripe(key),
    source: `import Stripe from 'stripe';
export default async (args, ctx) => {
  const { hostname, port, protocol } = new URL(BASE);
  const stripe = new Stripe(ctx.secret('stripe_customers'), { host: hostname, port: Number(port), protocol: protocol.slice(0, -1), maxNetworkRetries: 0 });
  const created = await stripe.customers.create({ email: 'ada@example.com', name: 'Ada Lovelace', metadata: { plan: 'pro' } });
  const listed = await stripe.customers.list({ limit: 2 }).autoPagingToArray({ limit: 10 });
  return { created: { id: created.id, email: created.email, plan: created.metadata.plan }, listed: listed.map((c) => c.id) };
};
`,
  },
  {
    fn: 'github_issues',
    ...pinnedSdk('@octokit/rest'),
    handler: (key, port) => standIns.github(key, port),
    source: `import { Octokit } from '@octokit/rest';
export default async (args, ctx) => {
  const octokit = new Octokit({ auth: ctx.secret('github_issues'), baseUrl: BASE });
  const issues = await octokit.paginate(octokit.rest.issues.listForRepo, { owner: 'acme', repo: 'widgets', state: 'open', per_page: 2 });
  return issues.map((i) => '#' + i.number + ' ' + i.title);
};
`,
  },
  {
    fn: 'resend_email',
    ...pinnedSdk('resend'),
    handler: (key) => standIns.resend(key),
    source: `import { Resend } from 'resend';
export default async (args, ctx) => {
  const resend = new Resend(ctx.secret('resend_email'), { baseUrl: BASE });
  return resend.emails.send({ from: 'Acme <onboarding@resend.dev>', to: ['delivered@resend.dev'], subject: 'Hello', html: '<p>It works</p>' });
};
`,
  },
  {
    fn: 'groq_chat',
    ...pinnedSdk('groq-sdk'),
    handler: (key) => standIns.openAiLike(key, '/openai/v1'),
    source: `import Groq from 'groq-sdk';
export default async (args, ctx) => {
  const groq = new Groq({ apiKey: ctx.secret('groq_chat'), baseURL: BASE, maxRetries: 0 });
  const completion = await groq.chat.completions.create({ model: 'llama-3.3-70b-versatile', messages: [{ role: 'user', content: 'Say hello' }] });
  return { id: completion.id, text: completion.choices[0].message.content };
};
`,
  },
  {
    fn: 'mistral_chat',
    ...pinnedSdk('@mistralai/mistralai'),
    handler: (key) => standIns.openAiLike(key, '/v1'),
    source: `import { Mistral } from '@mistralai/mistralai';
export default async (args, ctx) => {
  const mistral = new Mistral({ apiKey: ctx.secret('mistral_chat'), serverURL: BASE });
  const completion = await mistral.chat.complete({ model: 'mistral-small-latest', messages: [{ role: 'user', content: 'Say hello' }] });
  return { id: completion.id, text: completion.choices[0].message.content };
};
`,
  },
  {
    fn: 'notion_query',
    ...pinnedSdk('@notionhq/client'),
    handler: (key) => standIns.notion(key),
    source: `import { Client } from '@notionhq/client';
export default async (args, ctx) => {
  const notion = new Client({ auth: ctx.secret('notion_query'), baseUrl: BASE, retry: false });
  const { results } = await notion.dataSources.query({ data_source_id: 'ds_tasks', filter: { property: 'Done', checkbox: { equals: false } } });
  return results.map((page) => page.properties.Name.title[0].plain_text);
};
`,
  },
  {
    fn: 'gemini_generate',
    ...pinnedSdk('@google/genai'),
    handler: (key) => standIns.googleGenAi(key),
    source: `import { GoogleGenAI } from '@google/genai';
export default async (args, ctx) => {
  const ai = new GoogleGenAI({ apiKey: ctx.secret('gemini_generate'), httpOptions: { baseUrl: BASE } });
  const response = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Why is the sky blue?' });
  return { text: response.text, tokens: response.usageMetadata.totalTokenCount };
};
`,
  },
  {
    fn: 'linear_viewer',
    ...pinnedSdk('@linear/sdk'),
    handler: (key) => standIns.linear(key),
    source: `import { LinearClient } from '@linear/sdk';
export default async (args, ctx) => {
  const linear = new LinearClient({ apiKey: ctx.secret('linear_viewer'), apiUrl: BASE + '/graphql' });
  const me = await linear.viewer;
  return { id: me.id, name: me.name, email: me.email, created: me.createdAt.toISOString() };
};
`,
  },
];

const registry = await machineRegistry();

interface Installed {
  seen: SeenRequest[];
  key: string;
  /** The version `callable show` says is locked. */
  version: string | undefined;
  saved: { code: number; stderr: string };
}

// The data folder's `packages` is a link to the one kept between runs on this machine (KEPT_PACKAGES):
// the first run has npm download and unpack each SDK; later runs take the install made then for the
// same exact versions, as a data folder does for a second function asking for them.

// The calls run side by side (below), so each may wait on the others for CPU.
describe.skipIf(!registry.reachable)(`vendor SDKs from the machine's npm registry (${registry.url}; skipped when it cannot be reached from here)`, { timeout: 120_000 }, () => {
  // One data folder for all of them.
  let data = '';
  const installed = new Map<string, Installed>();
  /** What `callable run` returned, by function and arguments: the MCP calls must answer the same. */
  const ran = new Map<string, unknown>();
  // rm removes the link to the kept packages, never what it points to.
  afterAll(() => rmSync(data, { recursive: true, force: true }));

  beforeAll(async () => {
    data = mkdtempSync(join(tmpdir(), 'callable-sdks-'));
    mkdirSync(KEPT_PACKAGES, { recursive: true });
    symlinkSync(KEPT_PACKAGES, join(data, 'packages'), 'dir');
    // The saves run side by side: each mostly waits on the registry.
    const save = async (sdk: Sdk): Promise<void> => {
      const key = `sk-${sdk.fn}-${Math.random().toString(36).slice(2)}`;
      let handler: VendorHandler = () => {};
      const vendor = await vendorServer((req, res) => handler(req, res));
      const port = vendor.port;
      handler = sdk.handler(key, port);
      const src = mkdtempSync(join(tmpdir(), 'callable-sdk-src-'));
      const dir = join(src, sdk.fn);
      mkdirSync(dir);
      const spec = {
        name: sdk.fn,
        description: `${sdk.pkg} against a stand-in`,
        inputSchema: { type: 'object', properties: { stream: { type: 'boolean' }, plain: { type: 'boolean' } } },
        allowedHosts: [`127.0.0.1:${port}`],
        credentials: [sdk.fn],
        timeoutMs: 20_000,
      };
      writeFileSync(join(dir, 'function.json'), JSON.stringify(spec));
      writeFileSync(join(dir, 'index.js'), `const BASE = 'http://127.0.0.1:${port}';\n${sdk.source}`);
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ dependencies: sdkDependencies(sdk) }));
      // One save: npm installs the pinned version into the data folder's shared cache, esbuild bundles.
      const started = performance.now();
      const saved = await cli(['import', dir, '--data-dir', data]);
      const saveMs = performance.now() - started;
      rmSync(src, { recursive: true, force: true });
      let bundleBytes = 0;
      let version: string | undefined;
      if (saved.code === 0) {
        const shown = JSON.parse((await cli(['show', sdk.fn, '--json', '--data-dir', data])).stdout) as { packages: { versions: Record<string, string>; bundleBytes: number } };
        bundleBytes = shown.packages.bundleBytes;
        version = shown.packages.versions[sdk.pkg];
        const set = await cli(['credentials', 'set', sdk.fn, '--host', `127.0.0.1:${port}`, '--grant', sdk.fn, '--data-dir', data], { stdin: key });
        expect(set.code, set.stderr).toBe(0);
      }
      installed.set(sdk.fn, { seen: vendor.seen, key, version, saved });
      console.log(`${sdk.pkg}@${version ?? '?'}: saved in ${Math.round(saveMs)} ms (exit ${saved.code}), bundle ${(bundleBytes / 1024).toFixed(1)} kB`);
    };
    await Promise.all(SDKS.map(save));
  }, 300_000);

  /** Runs the function with `callable run --json`; its value, and the whole output checked for the key. */
  async function run(fn: string, args: Record<string, unknown> = {}): Promise<unknown> {
    const sdk = installed.get(fn)!;
    expect(sdk.saved.code, sdk.saved.stderr).toBe(0);
    expect(sdk.version).toBe(SDKS.find((s) => s.fn === fn)!.version);
    const out = await cli(['run', fn, '--args', JSON.stringify(args), '--json', '--data-dir', data]);
    expect(out.stdout + out.stderr).not.toContain(sdk.key);
    const result = JSON.parse(out.stdout) as { ok: boolean; value: unknown; error?: unknown };
    expect(out.code, JSON.stringify(result.error ?? out.stderr)).toBe(0);
    ran.set(`${fn} ${JSON.stringify(args)}`, result.value);
    return result.value;
  }

  const lastSeen = (fn: string) => installed.get(fn)!.seen.at(-1)!;

  // Each SDK has its own function and stand-in, so their calls run side by side; the MCP test after them alone.

  it.concurrent('openai: chat.completions.create, and with stream: true read chunk by chunk as the vendor sends it', async () => {
    expect(await run('openai_chat')).toEqual({ placeholder: true, id: 'chatcmpl-stand-in', text: 'Hello there', tokens: 12 });
    const seen = lastSeen('openai_chat');
    expect([seen.method, seen.url, seen.headers.authorization]).toEqual(['POST', '/v1/chat/completions', `Bearer ${installed.get('openai_chat')!.key}`]);
    expect(JSON.parse(seen.body)).toEqual({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] });

    // " there", not " late": the first chunk reached the function before the stand-in sent the rest.
    expect(await run('openai_chat', { stream: true })).toEqual({ placeholder: true, text: 'Hello there', chunks: 4 });
    const [stream, release] = installed.get('openai_chat')!.seen.slice(-2);
    expect(JSON.parse(stream!.body)).toMatchObject({ stream: true });
    expect(release!.url).toBe('/v1/release');
  });

  it.concurrent('@anthropic-ai/sdk: messages.create, and messages.stream read event by event', async () => {
    expect(await run('anthropic_messages')).toEqual({ placeholder: true, id: 'msg_stand_in', text: 'Hello there', stop: 'end_turn' });
    const seen = lastSeen('anthropic_messages');
    expect([seen.method, seen.url, seen.headers.authorization]).toEqual(['POST', '/v1/messages', `Bearer ${installed.get('anthropic_messages')!.key}`]);
    expect(seen.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(JSON.parse(seen.body)).toEqual({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Say hello' }] });

    expect(await run('anthropic_messages', { stream: true })).toEqual({ placeholder: true, text: 'Hello there', chunks: 3, events: 8, stop: 'end_turn' });
    const [stream, release] = installed.get('anthropic_messages')!.seen.slice(-2);
    expect(JSON.parse(stream!.body)).toMatchObject({ stream: true });
    expect(release!.url).toBe('/v1/release');
  });

  it.concurrent('stripe: customers.create sends a form (with the exact Content-Length it sets), customers.list auto-paginates over two pages', async () => {
    expect(await run('stripe_customers')).toEqual({ created: { id: 'cus_100', email: 'ada@example.com', plan: 'pro' }, listed: ['cus_1', 'cus_2', 'cus_3'] });
    const [create, page1, page2] = installed.get('stripe_customers')!.seen.slice(-3);
    expect([create!.method, create!.url, create!.headers['content-type'], create!.headers.authorization]).toEqual([
      'POST',
      '/v1/customers',
      'application/x-www-form-urlencoded',
      `Bearer ${installed.get('stripe_customers')!.key}`,
    ]);
    expect(Object.fromEntries(new URLSearchParams(create!.body))).toEqual({ email: 'ada@example.com', name: 'Ada Lovelace', 'metadata[plan]': 'pro' });
    expect(create!.headers['content-length']).toBe(String(Buffer.byteLength(create!.body)));
    expect([page1!.method, page1!.url, page2!.url]).toEqual(['GET', '/v1/customers?limit=2', '/v1/customers?limit=2&starting_after=cus_2']);
  });

  it.concurrent('@octokit/rest: issues.listForRepo, following the Link header to the second page', async () => {
    expect(await run('github_issues')).toEqual(['#1 Issue 1', '#2 Issue 2', '#3 Issue 3']);
    const [page1, page2] = installed.get('github_issues')!.seen.slice(-2);
    expect([page1!.method, page1!.url, page1!.headers.authorization]).toEqual(['GET', '/repos/acme/widgets/issues?state=open&per_page=2', `token ${installed.get('github_issues')!.key}`]);
    expect(page2!.url).toBe('/repos/acme/widgets/issues?state=open&per_page=2&page=2');
  });

  it.concurrent('resend: emails.send', async () => {
    expect(await run('resend_email')).toMatchObject({ data: { id: '49a3999c-0ce1-4ea6-ab68-afcd6dc2e794' }, error: null });
    const seen = lastSeen('resend_email');
    expect([seen.method, seen.url, seen.headers.authorization]).toEqual(['POST', '/emails', `Bearer ${installed.get('resend_email')!.key}`]);
    expect(JSON.parse(seen.body)).toMatchObject({ from: 'Acme <onboarding@resend.dev>', to: ['delivered@resend.dev'], subject: 'Hello', html: '<p>It works</p>' });
  });

  it.concurrent('groq-sdk: chat.completions.create', async () => {
    expect(await run('groq_chat')).toEqual({ id: 'chatcmpl-stand-in', text: 'Hello there' });
    const seen = lastSeen('groq_chat');
    expect([seen.method, seen.url, seen.headers.authorization]).toEqual(['POST', '/openai/v1/chat/completions', `Bearer ${installed.get('groq_chat')!.key}`]);
    expect(JSON.parse(seen.body)).toEqual({ model: 'llama-3.3-70b-versatile', messages: [{ role: 'user', content: 'Say hello' }] });
  });

  it.concurrent('@mistralai/mistralai (with @opentelemetry/api beside it): chat.complete', async () => {
    expect(await run('mistral_chat')).toEqual({ id: 'chatcmpl-stand-in', text: 'Hello there' });
    const seen = lastSeen('mistral_chat');
    expect([seen.method, seen.url, seen.headers.authorization]).toEqual(['POST', '/v1/chat/completions', `Bearer ${installed.get('mistral_chat')!.key}`]);
    expect(JSON.parse(seen.body)).toMatchObject({ model: 'mistral-small-latest', messages: [{ role: 'user', content: 'Say hello' }] });
  });

  it.concurrent('@google/genai: models.generateContent', async () => {
    expect(await run('gemini_generate')).toEqual({ text: 'Rayleigh scattering.', tokens: 9 });
    const seen = lastSeen('gemini_generate');
    expect([seen.method, seen.url, seen.headers['x-goog-api-key']]).toEqual(['POST', '/v1/models/gemini-2.5-flash:generateContent', installed.get('gemini_generate')!.key]);
    expect(JSON.parse(seen.body)).toMatchObject({ contents: [{ role: 'user', parts: [{ text: 'Why is the sky blue?' }] }] });
  });

  it.concurrent('@notionhq/client: dataSources.query, with the Notion-Version header (its webhooks.js requires Node\'s crypto, which the sandbox provides)', async () => {
    expect(await run('notion_query')).toEqual(['Write docs', 'Ship it']);
    const seen = lastSeen('notion_query');
    expect([seen.method, seen.url, seen.headers.authorization, seen.headers['notion-version']]).toEqual(['POST', '/v1/data_sources/ds_tasks/query', `Bearer ${installed.get('notion_query')!.key}`, '2025-09-03']);
    expect(JSON.parse(seen.body)).toEqual({ filter: { property: 'Done', checkbox: { equals: false } } });
  });

  it.concurrent('@linear/sdk: the viewer query over GraphQL (its webhooks module imports Node\'s crypto, which the sandbox provides)', async () => {
    expect(await run('linear_viewer')).toEqual({ id: 'user-ada', name: 'Ada Lovelace', email: 'ada@example.com', created: '2025-01-01T00:00:00.000Z' });
    const seen = lastSeen('linear_viewer');
    expect([seen.method, seen.url, seen.headers.authorization, seen.headers['content-type']]).toEqual(['POST', '/graphql', installed.get('linear_viewer')!.key, 'application/json']);
    expect(JSON.parse(seen.body)).toMatchObject({ query: expect.stringMatching(/^\s*query viewer \{\s*viewer \{/) });
  });

  it('every SDK answers over MCP (stdio) as from callable run, openai and @anthropic-ai/sdk streams included', async () => {
    const client = await connect('2025-11-25', { transport: 'stdio', stdioArgs: ['--data-dir', data] });
    try {
      const value = (r: CallResult) => {
        expect(r.isError, r.content[0]?.text).toBeFalsy();
        return r.structuredContent ?? JSON.parse(r.content[0]!.text!);
      };
      expect(value(await client.callTool('openai_chat', {}))).toEqual({ placeholder: true, id: 'chatcmpl-stand-in', text: 'Hello there', tokens: 12 });
      expect(value(await client.callTool('openai_chat', { stream: true }))).toEqual({ placeholder: true, text: 'Hello there', chunks: 4 });
      expect(value(await client.callTool('anthropic_messages', {}))).toEqual({ placeholder: true, id: 'msg_stand_in', text: 'Hello there', stop: 'end_turn' });
      expect(value(await client.callTool('anthropic_messages', { stream: true }))).toEqual({ placeholder: true, text: 'Hello there', chunks: 3, events: 8, stop: 'end_turn' });
      for (const fn of ['openai_chat', 'anthropic_messages']) expect(lastSeen(fn).headers.authorization).toBe(`Bearer ${installed.get(fn)!.key}`);
      // The others, side by side on the one connection; each vendor received its real key again.
      // resend returns the vendor's response headers, whose Date is each answer's own.
      const withoutDate = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (k, x: unknown) => (k === 'date' ? undefined : x)));
      const others = SDKS.filter((s) => !['openai_chat', 'anthropic_messages'].includes(s.fn));
      const seenBefore = others.map((s) => installed.get(s.fn)!.seen.length);
      const answers = await Promise.all(others.map((s) => client.callTool(s.fn, {})));
      others.forEach((s, i) => {
        expect(ran.has(`${s.fn} {}`), `${s.fn} ran from callable run first`).toBe(true);
        expect(withoutDate(value(answers[i]!))).toEqual(withoutDate(ran.get(`${s.fn} {}`)));
        expect(installed.get(s.fn)!.seen.length).toBeGreaterThan(seenBefore[i]!);
        expect(JSON.stringify(lastSeen(s.fn).headers)).toContain(installed.get(s.fn)!.key);
      });
    } finally {
      await client.close();
    }
  });
});
