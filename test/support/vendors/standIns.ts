// Stand-ins for vendor APIs, answering as each vendor documents: the JSON bodies, the server-sent
// events of a streamed answer, the pagination (Link headers, has_more). A request whose key is not
// the expected one gets the vendor's 401; one for a route not here gets a 404.
import type { ServerResponse } from 'node:http';
import type { SeenRequest, VendorHandler } from '../vendor.ts';

type Route = (req: SeenRequest, res: ServerResponse, url: URL) => void | Promise<void>;

function json(res: ServerResponse, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/**
 * A streamed answer's gate: after its first event the stand-in holds the rest until the function
 * asks for it (POST …/release) or `HOLD_MS` pass. The rest then says which: " there" when released,
 * " late" when not, so a function that only gets the first event once the whole body is in says "late".
 */
const HOLD_MS = 8000;
function gate() {
  let open = (): void => {};
  return {
    hold: () => new Promise<boolean>((resolve) => {
      open = () => resolve(true);
      setTimeout(() => resolve(false), HOLD_MS);
    }),
    release: (_req: SeenRequest, res: ServerResponse) => {
      open();
      json(res, { released: true });
    },
  };
}

/** Sends server-sent events: the first, then the rest once `rest` resolves (with whether the gate was opened). */
async function sse(res: ServerResponse, first: { event?: string; data: unknown }, rest: (released: boolean) => Array<{ event?: string; data: unknown }>, hold: () => Promise<boolean>): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const write = (e: { event?: string; data: unknown }) => res.write(`${e.event ? `event: ${e.event}\n` : ''}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`);
  write(first);
  for (const e of rest(await hold())) write(e);
  res.end();
}

/** A handler that checks the key with `authorized`, then dispatches on "METHOD /path". */
function standIn(authorized: (req: SeenRequest) => boolean, unauthorized: unknown, routes: Record<string, Route>): VendorHandler {
  return (req, res) => {
    const url = new URL(req.url, 'http://stand-in');
    if (!authorized(req)) return void res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify(unauthorized));
    const route = routes[`${req.method} ${url.pathname}`];
    if (!route) return void res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `no route ${req.method} ${url.pathname}` }));
    void route(req, res, url);
  };
}

const chatCompletion = (model: string, content: string) => ({
  id: 'chatcmpl-stand-in',
  object: 'chat.completion',
  created: 1_764_633_600,
  model,
  choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 },
});

const chatChunk = (model: string, delta: Record<string, string>, finish: string | null = null) => ({
  data: { id: 'chatcmpl-stand-in', object: 'chat.completion.chunk', created: 1_764_633_600, model, choices: [{ index: 0, delta, finish_reason: finish }] },
});

/** OpenAI's chat completions (and Groq's, which is the same API under /openai/v1). */
export function openAiLike(key: string, prefix: string): VendorHandler {
  const { hold, release } = gate();
  return standIn((req) => req.headers.authorization === `Bearer ${key}`, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }, {
    [`POST ${prefix}/chat/completions`]: (req, res) => {
      const { model, stream } = JSON.parse(req.body) as { model: string; stream?: boolean };
      if (!stream) return json(res, chatCompletion(model, 'Hello there'));
      return sse(
        res,
        chatChunk(model, { role: 'assistant', content: 'Hel' }),
        (released) => [chatChunk(model, { content: 'lo' }), chatChunk(model, { content: released ? ' there' : ' late' }), chatChunk(model, {}, 'stop'), { data: '[DONE]' }],
        hold,
      );
    },
    [`POST ${prefix}/release`]: release,
  });
}

/** Anthropic's Messages API, and its event stream; the key in x-api-key or as a bearer token (as SDK 1.x sends it). */
export function anthropic(key: string): VendorHandler {
  const message = (model: string, text: string) => ({
    id: 'msg_stand_in',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 3 },
  });
  const { hold, release } = gate();
  return standIn((req) => req.headers['x-api-key'] === key || req.headers.authorization === `Bearer ${key}`, { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }, {
    'POST /v1/messages': (req, res) => {
      const { model, stream } = JSON.parse(req.body) as { model: string; stream?: boolean };
      if (!stream) return json(res, message(model, 'Hello there'));
      const start = { ...message(model, ''), content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } };
      return sse(
        res,
        { event: 'message_start', data: { type: 'message_start', message: start } },
        (released) => [
          { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
          { event: 'ping', data: { type: 'ping' } },
          ...['Hel', 'lo', released ? ' there' : ' late'].map((text) => ({ event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } } })),
          { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
          { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } } },
          { event: 'message_stop', data: { type: 'message_stop' } },
        ],
        hold,
      );
    },
    'POST /v1/release': release,
  });
}

const customer = (n: number, email = `user${n}@example.com`) => ({ id: `cus_${n}`, object: 'customer', email, name: `User ${n}`, metadata: {}, created: 1_764_633_600 + n, livemode: false });

/** Stripe: form-encoded customers.create, and customers.list in pages of two (has_more, starting_after). */
export function stripe(key: string): VendorHandler {
  return standIn((req) => req.headers.authorization === `Bearer ${key}`, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } }, {
    'POST /v1/customers': (req, res) => {
      const form = new URLSearchParams(req.body);
      json(res, { ...customer(100, form.get('email') ?? ''), name: form.get('name'), metadata: { plan: form.get('metadata[plan]') } });
    },
    'GET /v1/customers': (_req, res, url) => {
      const after = url.searchParams.get('starting_after');
      const all = [1, 2, 3].map((n) => customer(n));
      const from = after ? all.findIndex((c) => c.id === after) + 1 : 0;
      const page = all.slice(from, from + Number(url.searchParams.get('limit') ?? 10));
      json(res, { object: 'list', url: '/v1/customers', has_more: from + page.length < all.length, data: page });
    },
  });
}

/** Notion: a data source's query (Notion-Version 2025-09-03 and on), one page of two tasks. */
export function notion(key: string): VendorHandler {
  const task = (n: number, name: string) => ({ object: 'page', id: `page-${n}`, properties: { Name: { id: 'title', type: 'title', title: [{ type: 'text', plain_text: name, text: { content: name } }] } } });
  return standIn((req) => req.headers.authorization === `Bearer ${key}`, { object: 'error', status: 401, code: 'unauthorized', message: 'API token is invalid.' }, {
    'POST /v1/data_sources/ds_tasks/query': (_req, res) => {
      json(res, { object: 'list', type: 'page_or_data_source', results: [task(1, 'Write docs'), task(2, 'Ship it')], next_cursor: null, has_more: false });
    },
  });
}

/** GitHub's REST API: an issues list in pages of two, linked by a Link header. */
export function github(key: string, port: number): VendorHandler {
  const issues = [1, 2, 3].map((n) => ({ id: 1000 + n, number: n, title: `Issue ${n}`, state: 'open', user: { login: 'octocat' }, labels: [] }));
  return standIn((req) => req.headers.authorization === `token ${key}`, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' }, {
    'GET /repos/acme/widgets/issues': (_req, res, url) => {
      const page = Number(url.searchParams.get('page') ?? 1);
      const link = (p: number) => `<http://127.0.0.1:${port}/repos/acme/widgets/issues?state=open&per_page=2&page=${p}>`;
      json(res, issues.slice((page - 1) * 2, page * 2), page === 1 ? { link: `${link(2)}; rel="next", ${link(2)}; rel="last"` } : { link: `${link(1)}; rel="prev", ${link(1)}; rel="first"` });
    },
  });
}

/** Resend: emails.send. */
export function resend(key: string): VendorHandler {
  return standIn((req) => req.headers.authorization === `Bearer ${key}`, { statusCode: 401, name: 'validation_error', message: 'API key is invalid' }, {
    'POST /emails': (_req, res) => json(res, { id: '49a3999c-0ce1-4ea6-ab68-afcd6dc2e794' }),
  });
}

/** Google's Gemini API: models.generateContent. */
export function googleGenAi(key: string): VendorHandler {
  return standIn((req) => req.headers['x-goog-api-key'] === key, { error: { code: 401, message: 'API key not valid.', status: 'UNAUTHENTICATED' } }, {
    'POST /v1/models/gemini-2.5-flash:generateContent': (_req, res) =>
      json(res, {
        candidates: [{ content: { parts: [{ text: 'Rayleigh scattering.' }], role: 'model' }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 6, candidatesTokenCount: 3, totalTokenCount: 9 },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'stand-in',
      }),
  });
}

/** Linear's GraphQL API: the viewer query, with the API key as the whole Authorization header. */
export function linear(key: string): VendorHandler {
  return standIn((req) => req.headers.authorization === key, { errors: [{ message: 'Authentication required, not authenticated', extensions: { code: 'AUTHENTICATION_ERROR' } }] }, {
    'POST /graphql': (req, res) => {
      const { query } = JSON.parse(req.body) as { query: string };
      if (!/^\s*query viewer\b/.test(query)) return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ errors: [{ message: `unexpected query: ${query.slice(0, 60)}` }] }));
      json(res, { data: { viewer: { __typename: 'User', id: 'user-ada', name: 'Ada Lovelace', displayName: 'ada', email: 'ada@example.com', active: true, admin: true, createdAt: '2025-01-01T00:00:00.000Z', updatedAt: '2025-06-01T00:00:00.000Z' } } });
    },
  });
}
