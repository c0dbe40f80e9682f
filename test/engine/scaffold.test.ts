import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { Engine, ScaffoldSource } from '../../src-main/engine/index.ts';
import { REPO } from '../support/callable.ts';
import { testEngine } from '../support/engine.ts';
import { petShelter } from '../support/petShelter.ts';
import { vendorServer, type SeenRequest } from '../support/vendor.ts';

const CURL_DIR = join(REPO, 'test/fixtures/curl');
const OPENAPI_DIR = join(REPO, 'test/fixtures/openapi');
const HAR = join(REPO, 'test/fixtures/har/github_repos.har');
const CURL_FIXTURES = readdirSync(CURL_DIR).filter((f) => f.endsWith('.curl')).sort();

/** What each vendor-docs command must become: method, host, credential and where it goes, annotations. */
const EXPECTED: Record<string, { method: string; host: string; credential: string; placement: object; annotation?: string; args: string[] }> = {
  'anthropic_messages.curl': { method: 'POST', host: 'api.anthropic.com', credential: 'anthropic', placement: { kind: 'header', header: 'X-Api-Key', template: '{secret}' }, args: ['model', 'max_tokens', 'messages'] },
  'deepl_translate.curl': { method: 'POST', host: 'api-free.deepl.com', credential: 'deepl', placement: { kind: 'header', header: 'Authorization', template: 'DeepL-Auth-Key {secret}' }, args: ['text', 'target_lang'] },
  'github_create_issue.curl': { method: 'POST', host: 'api.github.com', credential: 'github', placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' }, args: ['title', 'body', 'assignees', 'milestone', 'labels'] },
  'github_graphql.curl': { method: 'POST', host: 'api.github.com', credential: 'github', placement: { kind: 'header', header: 'Authorization', template: 'bearer {secret}' }, args: ['query'] },
  'github_list_issues.curl': { method: 'GET', host: 'api.github.com', credential: 'github', placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' }, annotation: 'readOnlyHint', args: ['state', 'per_page'] },
  'github_star_repo.curl': { method: 'PUT', host: 'api.github.com', credential: 'github', placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' }, annotation: 'idempotentHint', args: [] },
  'mailgun_send_message.curl': { method: 'POST', host: 'api.mailgun.net', credential: 'mailgun', placement: { kind: 'header', header: 'Authorization', template: 'Basic {secret}' }, args: ['from', 'to', 'subject', 'text'] },
  'google_geocode.curl': { method: 'GET', host: 'maps.googleapis.com', credential: 'googleapis', placement: { kind: 'query', param: 'key' }, annotation: 'readOnlyHint', args: ['address'] },
  'mistral_chat.curl': { method: 'POST', host: 'api.mistral.ai', credential: 'mistral', placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' }, args: ['model', 'messages'] },
  'openai_chat_completions.curl': { method: 'POST', host: 'api.openai.com', credential: 'openai', placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' }, args: ['model', 'messages'] },
  'replicate_predictions.curl': { method: 'POST', host: 'api.replicate.com', credential: 'replicate', placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' }, args: ['input'] },
  'slack_conversations_history.curl': { method: 'GET', host: 'slack.com', credential: 'slack', placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' }, annotation: 'readOnlyHint', args: ['channel', 'limit', 'inclusive'] },
  'slack_post_message.curl': { method: 'POST', host: 'slack.com', credential: 'slack', placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' }, args: ['channel', 'text'] },
  'stripe_create_customer.curl': { method: 'POST', host: 'api.stripe.com', credential: 'stripe', placement: { kind: 'header', header: 'Authorization', template: 'Basic {secret}' }, args: ['name', 'email'] },
  'stripe_delete_customer.curl': { method: 'DELETE', host: 'api.stripe.com', credential: 'stripe', placement: { kind: 'header', header: 'Authorization', template: 'Basic {secret}' }, annotation: 'destructiveHint', args: [] },
  'stripe_list_charges.curl': { method: 'GET', host: 'api.stripe.com', credential: 'stripe', placement: { kind: 'header', header: 'Authorization', template: 'Basic {secret}' }, annotation: 'readOnlyHint', args: ['limit'] },
  'twilio_send_sms.curl': { method: 'POST', host: 'api.twilio.com', credential: 'twilio', placement: { kind: 'header', header: 'Authorization', template: 'Basic {secret}' }, args: ['To', 'From', 'Body'] },
};

function propertiesOf(record: { inputSchema: object }): Record<string, unknown> {
  return (record.inputSchema as { properties?: Record<string, unknown> }).properties ?? {};
}

function curlFixture(file: string): string {
  return readFileSync(join(CURL_DIR, file), 'utf8');
}

/** The fixture's vendor origin swapped for the local stand-in (http to a literal local address). */
function towardsVendor(command: string, port: number): string {
  return command.replace(/https:\/\/[a-z0-9.-]+\.[a-z]+/g, `http://127.0.0.1:${port}`);
}

/** The secret of a fixture as the credential stores it (basic auth: base64 of user:password). */
function secretOf(file: string): string {
  const command = curlFixture(file);
  const basic = /-u "([^"]+)"/.exec(command)?.[1];
  if (basic) return Buffer.from(basic).toString('base64');
  const key = /key=([A-Za-z0-9_-]{20,})/.exec(command)?.[1];
  if (key) return key;
  const header = /(?:Authorization: |x-api-key: )(?:\S+ )?([A-Za-z0-9_:.-]{16,})/i.exec(command)?.[1];
  return header!;
}

/** A multipart body's parts in order: name, file name, content type and value (the boundary differs from sender to sender). */
function multipartParts(req: SeenRequest): Array<{ name: string; filename?: string; type?: string; value: string }> {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(String(req.headers['content-type']))!;
  const delimiter = `--${boundary[1] ?? boundary[2]}`;
  const chunks = req.body.split(delimiter);
  expect(chunks.at(-1)!.startsWith('--'), 'the body ends with the closing delimiter').toBe(true);
  return chunks.slice(1, -1).map((chunk) => {
    const [head, ...rest] = chunk.slice(2).split('\r\n\r\n');
    const value = rest.join('\r\n\r\n').replace(/\r\n$/, '');
    const disposition = /^content-disposition: form-data; name="([^"]*)"(?:; filename="([^"]*)")?/im.exec(head!)!;
    const type = /^content-type: (.*)$/im.exec(head!)?.[1];
    return { name: disposition[1]!, ...(disposition[2] !== undefined ? { filename: disposition[2] } : {}), ...(type ? { type } : {}), value };
  });
}

/** A request's body as data: JSON parsed, a form as its pairs, multipart as its parts. */
function bodyData(req: SeenRequest): unknown {
  if (req.body === '') return undefined;
  if (String(req.headers['content-type']).startsWith('multipart/form-data')) return multipartParts(req);
  try {
    return JSON.parse(req.body);
  } catch {
    return [...new URLSearchParams(req.body)];
  }
}

function queryOf(url: string): Array<[string, string]> {
  return [...new URL(url, 'http://x').searchParams].sort();
}

/** Runs a generated function as a user would: its credential stored and granted, the vendor reachable. */
async function runGenerated(engine: Engine, name: string, args: unknown) {
  return engine.run(name, args, { caller: 'test' });
}

/** The engine the comparisons below share (each makes its own function and credential; a host start is slow). */
let comparing: Engine | undefined;
let compared = 0;

/**
 * Sends a command with the real curl to a stand-in vendor, then makes the function from it, stores
 * and grants the secret the command carried, and runs it with the command's values: what each sent.
 * Each stand-in has its own port, so a credential stored by an earlier comparison is never reused.
 */
async function sentByBoth(command: string, secret: string) {
  expect(existsSync('/usr/bin/curl'), 'the real curl, to compare with').toBe(true);
  const vendor = await vendorServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  });
  const local = towardsVendor(command, vendor.port);
  await promisify(execFile)('bash', ['-c', `${local.trim().replace(/^curl /, '/usr/bin/curl ')} -o /dev/null -s`]);
  const byCurl = vendor.seen.shift()!;
  const engine = (comparing ??= testEngine());
  const { record, scaffold } = await engine.createFromRequest(`same_request_${++compared}`, { kind: 'curl', command: local });
  await engine.credentials.set({ name: scaffold.credential!.name, hosts: scaffold.credential!.hosts, placement: scaffold.credential!.placement }, secret);
  engine.credentials.grant(scaffold.credential!.name, record.name);
  const result = await runGenerated(engine, record.name, scaffold.exampleArgs);
  expect(result, JSON.stringify(result)).toMatchObject({ ok: true, value: { ok: true } });
  return { byCurl, byFunction: vendor.seen.shift()!, scaffold, record };
}

describe('new functions from curl commands of vendor docs', () => {
  it('has at least ten fixtures, each a documented command of a real vendor', () => {
    expect(CURL_FIXTURES.length).toBeGreaterThanOrEqual(10);
    expect(Object.keys(EXPECTED).sort()).toEqual(CURL_FIXTURES);
  });

  // One engine for these: each fixture saves its own function, and none stores a credential.
  const engine = testEngine();
  for (const file of CURL_FIXTURES) {
    it(`${file}: saves through the engine with the host allowed, the secret as a credential reference and the values as arguments`, async () => {
      const expected = EXPECTED[file]!;
      const name = `from_${file.replace(/\.curl$/, '')}`;
      const { record, scaffold } = await engine.createFromRequest(name, { kind: 'curl', command: curlFixture(file) });
      expect(record.allowedHosts).toEqual([expected.host]);
      expect(record.credentials).toEqual([expected.credential]);
      expect(scaffold.credential?.placement).toEqual(expected.placement);
      expect(Object.keys(propertiesOf(record))).toEqual(expected.args);
      if (expected.annotation) expect(record.annotations?.[expected.annotation as 'readOnlyHint']).toBe(true);
      expect(record.source).toContain(`credential: "${expected.credential}"`);
      // The command's values pass the function's own inputSchema (checked before the sandbox runs),
      // and so does {} (they are the defaults). ctx.fetch is answered here: no network.
      const requests: string[] = [];
      const answer = async (request: { method: string; url: string }) => {
        requests.push(`${request.method} ${request.url}`);
        return { status: 200, statusText: 'OK', headers: [['content-type', 'application/json']] as Array<[string, string]>, url: request.url, redirected: false, body: new TextEncoder().encode('{"ok":true}') };
      };
      for (const args of [scaffold.exampleArgs, {}]) {
        const result = await engine.run(name, args, { caller: 'test', fetch: answer });
        expect(result, JSON.stringify(result)).toMatchObject({ ok: true, value: { ok: true } });
      }
      expect(requests[0]).toBe(requests[1]);
      expect(requests[0]).toMatch(new RegExp(`^${expected.method} https://${expected.host.replace(/\./g, '\\.')}/`));
      const wrong = await engine.run(name, { surprise: 1 }, { caller: 'test', fetch: answer });
      expect(wrong).toMatchObject({ ok: false, error: { code: 'bad_input' } });
      const secret = secretOf(file);
      expect(record.source).not.toContain(secret);
      expect(JSON.stringify(record)).not.toContain(secret);
    });
  }

  // The same command sent by the real curl and by the generated function to one stand-in vendor.
  const COMPARED = ['mailgun_send_message.curl', 'stripe_create_customer.curl', 'stripe_list_charges.curl', 'github_list_issues.curl', 'deepl_translate.curl', 'openai_chat_completions.curl', 'anthropic_messages.curl', 'slack_conversations_history.curl', 'slack_post_message.curl', 'google_geocode.curl', 'github_star_repo.curl', 'replicate_predictions.curl', 'stripe_delete_customer.curl', 'mistral_chat.curl'];
  for (const file of COMPARED) {
    it(`${file}: the function sends what curl sends (method, path, query, body, headers, the credential)`, async () => {
      const { byCurl, byFunction } = await sentByBoth(curlFixture(file), secretOf(file));
      expect(byFunction.method).toBe(byCurl.method);
      expect(new URL(byFunction.url, 'http://x').pathname).toBe(new URL(byCurl.url, 'http://x').pathname);
      expect(queryOf(byFunction.url)).toEqual(queryOf(byCurl.url));
      expect(bodyData(byFunction)).toEqual(bodyData(byCurl));
      for (const [name, value] of Object.entries(byCurl.headers)) {
        if (['host', 'user-agent', 'content-length', 'accept'].includes(name) && !(name === 'accept' && value !== '*/*')) continue;
        if (name === 'content-type') expect(String(byFunction.headers[name]).split(';')[0]).toBe(String(value).split(';')[0]);
        else expect(byFunction.headers[name], name).toBe(value);
      }
    });
  }

  it('twilio_send_sms.curl: the form goes as curl sends it, byte for byte, but for the "+" -d leaves unencoded, sent as the plus it means', async () => {
    const { byCurl, byFunction, scaffold, record } = await sentByBoth(curlFixture('twilio_send_sms.curl'), secretOf('twilio_send_sms.curl'));
    expect(byCurl.body).toBe('To=+15558675310&From=%2B15557122661&Body=Hi+there');
    expect(byFunction.body).toBe('To=%2B15558675310&From=%2B15557122661&Body=Hi+there');
    expect(scaffold.notes).toEqual(['To: curl -d sends "+15558675310" unencoded, which a form reads as " 15558675310"; the function sends the plus (%2B)']);
    expect(byFunction.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expect(byCurl.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(byFunction.headers.authorization).toBe(byCurl.headers.authorization);
    expect(propertiesOf(record).To).toEqual({ type: 'string', default: '+15558675310', examples: ['+15558675310'] });
    expect(record.source).not.toMatch(/^\s+json[,:]/m);
  });

  it('mailgun_send_message.curl: -F fields are a multipart body, a repeated field an array argument sent as repeated parts', async () => {
    const engine = testEngine();
    const { record } = await engine.createFromRequest('send_mail', { kind: 'curl', command: curlFixture('mailgun_send_message.curl') });
    expect(propertiesOf(record).to).toEqual({ type: 'array', items: { type: 'string' }, default: ['YOU@sandbox123.mailgun.org', 'bar@example.com'], examples: [['YOU@sandbox123.mailgun.org', 'bar@example.com']] });
    expect(record.source).toContain('multipart["to"] = (args["to"] ?? ["YOU@sandbox123.mailgun.org","bar@example.com"]);');
    expect(record.source).toMatch(/^\s+multipart,$/m);
    expect(record.source).not.toMatch(/^\s+json[,:]|content-type/im);
    // A part's own type and file name go with it, for each item of a repeated field.
    const typed = await engine.createFromRequest('typed_parts', { kind: 'curl', command: `curl -F 'meta={"kind":"note"};type=application/json' -F 'tag=a;type=text/plain' -F 'tag=b;type=text/plain' https://api.example.com/upload` });
    expect(typed.record.source).toContain('multipart["meta"] = { data: String((args["meta"] ?? "{\\"kind\\":\\"note\\"}")), contentType: "application/json" };');
    expect(typed.record.source).toContain('multipart["tag"] = (args["tag"] ?? ["a","b"]).map((item) => ({ data: String(item), contentType: "text/plain" }));');
    // A file name without ;type= gets the type curl guesses from its extension.
    const named = await engine.createFromRequest('named_part', { kind: 'curl', command: `curl -F 'page=hi there;filename=page.html' -F 'raw=x;filename=dump.bin' https://api.example.com/upload` });
    expect(named.record.source).toContain('multipart["page"] = { data: String((args["page"] ?? "hi there")), contentType: "text/html", filename: "page.html" };');
    expect(named.record.source).toContain('contentType: "application/octet-stream", filename: "dump.bin" };');
  });

  it('-F parts with their own type and file name: the function sends the parts curl sends (names, order, values, file names, content types)', async () => {
    const command = `curl -F 'meta={"kind":"note"};type=application/json' -F 'note=hello there;filename=note.txt' -F 'tag=a' -F 'tag=b' -u "api:key-FAKEparts0123456789" https://api.example.com/upload`;
    const { byCurl, byFunction } = await sentByBoth(command, Buffer.from('api:key-FAKEparts0123456789').toString('base64'));
    expect(multipartParts(byCurl)).toEqual([
      { name: 'meta', type: 'application/json', value: '{"kind":"note"}' },
      { name: 'note', filename: 'note.txt', type: 'text/plain', value: 'hello there' },
      { name: 'tag', value: 'a' },
      { name: 'tag', value: 'b' },
    ]);
    expect(multipartParts(byFunction)).toEqual(multipartParts(byCurl));
    expect(byFunction.headers.authorization).toBe(byCurl.headers.authorization);
  });

  it('github_create_issue.curl: curl -d sends the JSON as a form; the function sends it as JSON and says so', async () => {
    const engine = testEngine();
    const { scaffold } = await engine.createFromRequest('create_issue', { kind: 'curl', command: curlFixture('github_create_issue.curl') });
    expect(scaffold.notes).toContain('the body is JSON but curl -d would send it as a form (its default type): the function sends it as application/json');
    expect(scaffold.exampleArgs).toEqual({ title: 'Found a bug', body: "I'm having a problem with this.", assignees: ['octocat'], milestone: 1, labels: ['bug'] });
  });

  it('infers argument types from the values: numbers, booleans, arrays and objects, with the value as default and example', async () => {
    const engine = testEngine();
    const { record } = await engine.createFromRequest('history', { kind: 'curl', command: curlFixture('slack_conversations_history.curl') });
    expect(record.inputSchema).toEqual({
      type: 'object',
      properties: {
        channel: { type: 'string', default: 'C123ABC456', examples: ['C123ABC456'] },
        limit: { type: 'integer', default: 10, examples: [10] },
        inclusive: { type: 'boolean', default: true, examples: [true] },
      },
      additionalProperties: false,
    });
    const chat = await engine.createFromRequest('chat', { kind: 'curl', command: curlFixture('openai_chat_completions.curl') });
    expect(propertiesOf(chat.record).messages).toMatchObject({
      type: 'array',
      items: { type: 'object', properties: { role: { type: 'string' }, content: { type: 'string' } } },
    });
  });

  it('refuses what is not a usable curl command, in one line each', async () => {
    const engine = testEngine();
    const cases: Array<[string, RegExp]> = [
      ['curl "https://api.example.com/v1/things', /^the curl command could not be read: it is not valid shell syntax \(line 1\); check its quotes/],
      ['curl -X POST -H "Accept: application/json"', /^the curl command could not be read: no URL specified!$/],
      ['wget https://api.example.com/', /^the command must start with "curl" \(it starts with "wget"\)$/],
      ['curl -F file=@photo.png -F note=hi https://api.example.com/upload', /^the curl command uploads the file photo\.png \(-F file=@photo\.png\), which a function cannot read; leave that field out of the command, then add an argument holding the file's content as base64 and send it from the source as multipart: \{ "file": \{ data: bytes, filename: "photo\.png" \} \}$/],
      ["curl -F 'note=<notes.txt' https://api.example.com/upload", /^the curl command reads the field note from the file notes\.txt \(-F note=<notes\.txt\); put the text in the command instead \(-F note=TEXT\)$/],
      ["curl --data-urlencode 'text@message.txt' https://api.example.com/send", /reads its body from a file \(@message\.txt\)/],
      ['curl --digest -u me:pw https://api.example.com/', /uses digest authentication/],
      ['curl -d @body.json https://api.example.com/', /reads its body from a file \(@body.json\)/],
      ['curl ftp://files.example.com/a.txt', /ftp: URLs cannot be called/],
    ];
    for (const [command, message] of cases) {
      const error = await engine.createFromRequest('bad', { kind: 'curl', command }).then(
        () => undefined,
        (e: Error & { code?: string }) => e,
      );
      expect(error?.code, command).toBe('bad_input');
      expect(error?.message, command).toMatch(message);
      expect(error?.message.includes('\n'), command).toBe(false);
    }
    expect(engine.functions.find('bad')).toBeUndefined();
  });

  it('reuses a stored credential for the same host, and never takes over one kept for another host', async () => {
    const engine = testEngine();
    await engine.credentials.set({ name: 'stripe', hosts: ['api.stripe.com'], placement: { kind: 'header', header: 'Authorization', template: 'Basic {secret}' } }, 'c2s6');
    const same = await engine.createFromRequest('charges', { kind: 'curl', command: curlFixture('stripe_list_charges.curl') });
    expect(same.record.credentials).toEqual(['stripe']);
    await engine.credentials.set({ name: 'github', hosts: ['github.example-enterprise.com'], placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } }, 'x');
    const other = await engine.createFromRequest('issues', { kind: 'curl', command: curlFixture('github_list_issues.curl') });
    expect(other.record.credentials).toEqual(['github-2']);
  });
});

describe('a key sent in the query', () => {
  // Documented requests of vendors that take the key in the query, under the names they use.
  const KEYED: Array<[string, string, string, string, string[]]> = [
    ['OpenWeatherMap', 'curl "https://api.openweathermap.org/data/2.5/weather?q=London&appid=3f7a9c1e5b2d4f6a8c0e1b3d5f7a9c2e"', 'appid', 'it is a name vendors give API keys', ['q']],
    ['Alpha Vantage', 'curl "https://www.alphavantage.co/query?function=TIME_SERIES_DAILY&symbol=IBM&apikey=FAKE7Q2K9X4M1P8Z"', 'apikey', 'it is a name vendors give API keys', ['function', 'symbol']],
    ['ipinfo', 'curl "https://ipinfo.io/8.8.8.8?token=fake1a2b3c4d5e"', 'token', 'it is a name vendors give API keys', []],
    ['weatherstack', 'curl "https://api.weatherstack.com/current?access_key=FAKE0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c&query=New%20York"', 'access_key', 'it is a name vendors give API keys', ['query']],
    ['Mapbox', 'curl "https://api.mapbox.com/geocoding/v5/mapbox.places/Paris.json?access_token=pk.FAKEeyJ1IjoibWFwYm94In0.abc123"', 'access_token', 'it is a name vendors give API keys', []],
    ['Europeana', 'curl "https://api.europeana.eu/record/v2/search.json?query=Vermeer&rows=5&wskey=Jq8vX2mN4pL7rT9wY3zB6cF1hK5sD0gA"', 'wskey', 'its value looks like a key (32 random characters)', ['query', 'rows']],
    ['Edamam', 'curl "https://api.edamam.com/api/recipes/v2?type=public&q=chicken&app_id=fa1b2c3d&app_key=FAKEabcdef0123456789abcdef012345"', 'app_key', 'it is a name vendors give API keys', ['type', 'q', 'app_id']],
  ];
  for (const [vendor, command, param, why, args] of KEYED) {
    it(`${vendor}: ${param} becomes the credential, the note says why, and the key is kept nowhere`, async () => {
      const engine = testEngine();
      const key = new URL(/"([^"]+)"/.exec(command)![1]!).searchParams.get(param)!;
      const { record, scaffold } = await engine.createFromRequest('keyed', { kind: 'curl', command });
      expect(scaffold.credential?.placement).toEqual({ kind: 'query', param });
      expect(scaffold.notes).toContain(`the query parameter ${param} became the credential: ${why}`);
      expect(Object.keys(propertiesOf(record))).toEqual(args);
      expect(JSON.stringify({ record, exampleArgs: scaffold.exampleArgs, notes: scaffold.notes })).not.toContain(key);
    });
  }

  it('a paging cursor, a commit hash, a search, an id and a flag stay arguments, whatever they look like', async () => {
    const engine = testEngine();
    const { record, scaffold } = await engine.createFromRequest('plain', {
      kind: 'curl',
      command: 'curl "https://api.example.com/v1/items?cursor=dXNlcjpVMEc5V0ZYTlo%3D&sha=6dcb09b5b57875f334f61aebed695e2e4193db5e&q=TheQuickBrownFox2024&request_id=a1B2c3D4e5F6g7H8i9J0kLmN&auth=true"',
    });
    expect(scaffold.credential).toBeUndefined();
    expect(Object.keys(propertiesOf(record))).toEqual(['cursor', 'sha', 'q', 'request_id', 'auth']);
  });

  it('a second secret-looking parameter is left out (not kept as a default), with a note', async () => {
    const engine = testEngine();
    const { record, scaffold } = await engine.createFromRequest('two_keys', { kind: 'curl', command: 'curl -H "Authorization: Bearer FAKEtoken123" "https://api.example.com/v1/x?sig=FAKEsig0123456789&limit=5"' });
    expect(scaffold.credential?.placement).toMatchObject({ kind: 'header', header: 'Authorization' });
    expect(scaffold.notes).toContain('the query parameter sig was left out: it is a name vendors give API keys, and the Authorization header carries the credential; if the API needs it, add it in the source');
    expect(record.source).not.toContain('FAKEsig');
  });
});

describe('new functions from OpenAPI specs', () => {
  const specs: Array<[string, number]> = [
    ['petstore3.yaml', 19],
    ['uspto.json', 3],
    ['pet_shelter.yaml', 4],
  ];
  for (const [spec, count] of specs) {
    it(`${spec}: every operation generates a function that saves, with annotations from its method`, async () => {
      const engine = testEngine();
      const { listOperations, loadOpenApi } = await import('../../src-main/engine/index.ts');
      const ops = listOperations(await loadOpenApi(join(OPENAPI_DIR, spec)));
      expect(ops).toHaveLength(count);
      for (const [i, op] of ops.entries()) {
        const { record } = await engine.createFromRequest(`op_${i}`, { kind: 'openapi', file: join(OPENAPI_DIR, spec), operation: op.id });
        expect(record.inputSchema.type).toBe('object');
        if (op.method === 'GET') expect(record.annotations).toMatchObject({ readOnlyHint: true });
        if (op.method === 'DELETE') expect(record.annotations).toMatchObject({ destructiveHint: true });
        if (op.method === 'PUT') expect(record.annotations).toMatchObject({ idempotentHint: true });
        if (op.summary) expect(record.description.startsWith(op.summary.split('\n')[0]!.slice(0, 40))).toBe(true);
      }
    });
  }

  it('petstore3.yaml getPetById: path parameter, outputSchema from the 200 response, host from servers, credential from security', async () => {
    const engine = testEngine();
    const { record, scaffold } = await engine.createFromRequest('get_pet', { kind: 'openapi', file: join(OPENAPI_DIR, 'petstore3.yaml'), operation: 'getPetById' });
    expect(record.title).toBe('Find pet by ID');
    expect(record.allowedHosts).toEqual(['petstore3.swagger.io']);
    expect(record.inputSchema).toEqual({ type: 'object', properties: { petId: { type: 'integer', format: 'int64', description: 'ID of pet to return' } }, required: ['petId'], additionalProperties: false });
    expect(record.outputSchema).toMatchObject({ type: 'object', required: ['name', 'photoUrls'], properties: { name: { type: 'string', examples: ['doggie'] }, status: { enum: ['available', 'pending', 'sold'] } } });
    // OpenAPI-only keywords are gone (xml, x-swagger-router-model, example).
    expect(JSON.stringify(record.outputSchema)).not.toMatch(/"xml"|x-swagger|"example"/);
    // api_key (header "api_key") cannot be a credential header name; the oauth2 alternative is a bearer token.
    expect(scaffold.credential).toMatchObject({ name: 'swagger', hosts: ['petstore3.swagger.io'], placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } });
    expect(record.annotations).toEqual({ readOnlyHint: true, openWorldHint: true });
  });

  it('uspto.json: server variables at their defaults, a form body of the spec, a list response wrapped as { result }', async () => {
    const engine = testEngine();
    const { record } = await engine.createFromRequest('search', { kind: 'openapi', file: join(OPENAPI_DIR, 'uspto.json'), operation: 'perform-search' });
    expect(record.allowedHosts).toEqual(['developer.uspto.gov']);
    expect(record.credentials).toEqual([]);
    expect(record.source).toContain('"https://developer.uspto.gov/ds-api/"');
    expect(Object.keys(propertiesOf(record))).toEqual(['version', 'dataset', 'criteria', 'start', 'rows']);
    expect(record.outputSchema).toEqual({ type: 'object', properties: { result: { type: 'array', items: { type: 'object', additionalProperties: { type: 'object' } } } }, required: ['result'] });
  });

  it('a replayed call per spec against the stand-in vendor (--server): the request the spec describes, the result checked by the outputSchema', async () => {
    const vendor = await vendorServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url.startsWith('/api/v3/pet/')) res.end(JSON.stringify({ id: 10, name: 'doggie', photoUrls: [], status: 'available' }));
      else res.end(JSON.stringify([{ patentNumber: { value: 'US123' } }]));
    });
    const engine = testEngine();
    const pet = await engine.createFromRequest('get_pet', { kind: 'openapi', file: join(OPENAPI_DIR, 'petstore3.yaml'), operation: 'getPetById', server: `http://127.0.0.1:${vendor.port}/api/v3` });
    await engine.credentials.set({ name: pet.scaffold.credential!.name, hosts: pet.scaffold.credential!.hosts, placement: pet.scaffold.credential!.placement }, 'petstore-token-123');
    engine.credentials.grant(pet.scaffold.credential!.name, 'get_pet');
    const got = await engine.run('get_pet', { petId: 10 }, { caller: 'test' });
    expect(got).toMatchObject({ ok: true, value: { id: 10, name: 'doggie' } });
    expect(vendor.seen[0]).toMatchObject({ method: 'GET', url: '/api/v3/pet/10' });
    expect(vendor.seen[0]!.headers.authorization).toBe('Bearer petstore-token-123');

    await engine.createFromRequest('search', { kind: 'openapi', file: join(OPENAPI_DIR, 'uspto.json'), operation: 'perform-search', server: `http://127.0.0.1:${vendor.port}/ds-api` });
    const found = await engine.run('search', { dataset: 'oa_citations', version: 'v1', criteria: '*:*', start: 0, rows: 10 }, { caller: 'test' });
    expect(found).toMatchObject({ ok: true, value: { result: [{ patentNumber: { value: 'US123' } }] } });
    expect(vendor.seen[1]).toMatchObject({ method: 'POST', url: '/ds-api/oa_citations/v1/records' });
    expect(vendor.seen[1]!.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expect([...new URLSearchParams(vendor.seen[1]!.body)]).toEqual([['criteria', '*:*'], ['start', '0'], ['rows', '10']]);
  });

  it('pet_shelter.yaml addPet: readOnly fields are no arguments, writeOnly ones no output; the first call is the spec\'s example, and a strict stand-in accepts it', async () => {
    const shelter = await petShelter();
    const engine = testEngine();
    const { record, scaffold } = await engine.createFromRequest('add_pet', { kind: 'openapi', file: join(OPENAPI_DIR, 'pet_shelter.yaml'), operation: 'addPet', server: shelter.base });
    expect(Object.keys(propertiesOf(record))).toEqual(['name', 'species', 'tags', 'intakeCode']);
    expect((record.inputSchema as { required?: string[] }).required).toEqual(['name', 'species']);
    expect(scaffold.exampleArgs).toEqual({ name: 'Rex', species: 'dog', tags: ['friendly', 'vaccinated'], intakeCode: 'IN-2041' });
    // An object through allOf is an object: returned as it comes, without the writeOnly field.
    expect(scaffold.wrapsResult).toBe(false);
    expect(record.outputSchema).toMatchObject({ type: 'object', allOf: [{ type: 'object', required: ['id', 'name', 'species', 'status'] }, { properties: { createdAt: { type: 'string' } } }] });
    expect(JSON.stringify(record.outputSchema)).not.toContain('intakeCode');
    expect(record.description).toBe('Add a pet (Pet Shelter: POST /pets, operation addPet)\n\nRegisters a pet with the shelter. The shelter assigns its id and status; sending either is an error.');
    const created = await engine.run('add_pet', scaffold.exampleArgs, { caller: 'test' });
    expect(created, JSON.stringify(created)).toMatchObject({ ok: true, value: { id: 11, name: 'Rex', status: 'available', createdAt: '1970-01-01T00:00:00.000Z' } });
    expect(JSON.parse(shelter.seen.at(-1)!.body)).toEqual(scaffold.exampleArgs);
    // The stand-in is as strict as the API: the id the spec marks readOnly is refused.
    const direct = await fetch(`${shelter.base}/pets`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 10, ...scaffold.exampleArgs }) });
    expect(direct.status).toBe(400);
  });

  it('pet_shelter.yaml: an optional query argument given as null is left out, an empty 204 is null, a path parameter\'s example is the first call', async () => {
    const shelter = await petShelter();
    const engine = testEngine();
    const file = join(OPENAPI_DIR, 'pet_shelter.yaml');
    await engine.createFromRequest('list_pets', { kind: 'openapi', file, operation: 'listPets', server: shelter.base });
    const all = await engine.run('list_pets', { tag: null }, { caller: 'test' });
    expect(all, JSON.stringify(all)).toMatchObject({ ok: true, value: { result: [{ id: 10 }] } });
    expect(shelter.seen.at(-1)!.url).toBe('/v1/pets');
    const some = await engine.run('list_pets', { tag: 'friendly', limit: 5 }, { caller: 'test' });
    expect(some).toMatchObject({ ok: true, value: { result: [{ id: 10 }] } });
    expect(shelter.seen.at(-1)!.url).toBe('/v1/pets?tag=friendly&limit=5');
    const removal = await engine.createFromRequest('remove_pet', { kind: 'openapi', file, operation: 'deletePet', server: shelter.base });
    expect(removal.scaffold.exampleArgs).toEqual({ petId: 10 });
    const removed = await engine.run('remove_pet', removal.scaffold.exampleArgs, { caller: 'test' });
    expect(removed, JSON.stringify(removed)).toMatchObject({ ok: true, value: null });
    expect(shelter.seen.at(-1)).toMatchObject({ method: 'DELETE', url: '/v1/pets/10' });
  });

  it('refuses an unknown operation, a file that is not a spec, a truncated spec and a missing file, in one line each', async () => {
    const engine = testEngine();
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'callable-openapi-'));
    const truncated = join(dir, 'truncated.json');
    writeFileSync(truncated, readFileSync(join(OPENAPI_DIR, 'uspto.json'), 'utf8').slice(0, 2000));
    const plain = join(dir, 'notes.yaml');
    writeFileSync(plain, 'title: shopping list\nitems: [milk, eggs]\n');
    const cases: Array<[ScaffoldSource, RegExp]> = [
      [{ kind: 'openapi', file: join(OPENAPI_DIR, 'uspto.json'), operation: 'nope', shown: 'uspto.json' }, /^uspto.json has no operation "nope"; it has 3: list-data-sets, list-searchable-fields, perform-search$/],
      [{ kind: 'openapi', file: truncated, operation: 'x', shown: 'truncated.json' }, /^truncated.json could not be read as an OpenAPI spec \(JSON or YAML\): /],
      [{ kind: 'openapi', file: plain, operation: 'x', shown: 'notes.yaml' }, /^notes.yaml is not an OpenAPI 3 spec|^notes.yaml could not be read as an OpenAPI spec/],
      [{ kind: 'openapi', file: join(dir, 'missing.yaml'), operation: 'x', shown: 'missing.yaml' }, /^cannot read the OpenAPI spec missing.yaml: no such file$/],
    ];
    for (const [source, message] of cases) {
      const error = await engine.createFromRequest('bad', source).then(
        () => undefined,
        (e: Error & { code?: string }) => e,
      );
      expect(['bad_input', 'not_found'], String(error)).toContain(error?.code);
      expect(error?.message).toMatch(message);
      expect(error?.message.includes('\n')).toBe(false);
    }
  });
});

describe('OpenAPI 3.0 schemas as JSON Schema 2020-12', () => {
  it('converts nullable, example, boolean exclusive bounds, and drops xml, discriminator and x- keys', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'callable-openapi-'));
    const spec = {
      openapi: '3.0.3',
      info: { title: 'Quirks', version: '1' },
      servers: [{ url: 'http://api.quirks.example/v1' }],
      paths: {
        '/items/{id}': {
          get: {
            operationId: 'getItem',
            summary: 'One item',
            parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 0, exclusiveMinimum: true, example: 7 } }],
            responses: {
              '200': {
                description: 'ok',
                content: {
                  'application/json': {
                    schema: {
                      type: 'object',
                      discriminator: { propertyName: 'kind' },
                      xml: { name: 'item' },
                      'x-internal': true,
                      properties: { kind: { type: 'string', enum: ['a', 'b'], nullable: true }, note: { type: 'string', nullable: true, example: 'hi' }, size: { type: 'number', maximum: 10, exclusiveMaximum: true } },
                    },
                  },
                },
              },
            },
          },
        },
      },
    };
    const security: Array<[string, object, object]> = [
      ['header_key', { type: 'apiKey', in: 'header', name: 'X-API-Key' }, { kind: 'header', header: 'X-API-Key', template: '{secret}' }],
      ['query_key', { type: 'apiKey', in: 'query', name: 'api_key' }, { kind: 'query', param: 'api_key' }],
      ['bearer', { type: 'http', scheme: 'bearer' }, { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' }],
      ['basic', { type: 'http', scheme: 'basic' }, { kind: 'header', header: 'Authorization', template: 'Basic {secret}' }],
      ['oauth', { type: 'oauth2', flows: { clientCredentials: { tokenUrl: 'https://api.quirks.example/token', scopes: {} } } }, { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' }],
    ];
    Object.assign(spec, { components: { securitySchemes: Object.fromEntries(security.map(([name, scheme]) => [name, scheme])) } });
    for (const [name] of security) {
      Object.assign(spec.paths, { [`/secured/${name}`]: { get: { operationId: `secured_${name}`, security: [{ [name]: [] }], responses: { '204': { description: 'done' } } } } });
    }
    writeFileSync(join(dir, 'quirks.json'), JSON.stringify(spec));
    const engine = testEngine();
    const { record, scaffold } = await engine.createFromRequest('get_item', { kind: 'openapi', file: join(dir, 'quirks.json'), operation: 'GET /items/{id}' });
    expect(propertiesOf(record).id).toEqual({ type: 'integer', exclusiveMinimum: 0, examples: [7] });
    expect(record.outputSchema).toEqual({
      type: 'object',
      properties: { kind: { type: ['string', 'null'], enum: ['a', 'b', null] }, note: { type: ['string', 'null'], examples: ['hi'] }, size: { type: 'number', exclusiveMaximum: 10 } },
    });
    // http to a vendor becomes https: ctx.fetch speaks https except to local addresses.
    expect(record.source).toContain('"https://api.quirks.example/v1/items/"');
    expect(scaffold.notes).toContain('the URL was changed to https (ctx.fetch calls hosts other than local addresses over https only): https://api.quirks.example');
    const wrong = await engine.run('get_item', { id: 0 }, { caller: 'test', fetch: async () => ({ status: 200, statusText: 'OK', headers: [], url: 'https://api.quirks.example/v1/items/0', redirected: false, body: new TextEncoder().encode('{}') }) });
    expect(wrong).toMatchObject({ ok: false, error: { code: 'bad_input' } });

    for (const [name, , placement] of security) {
      const secured = await engine.createFromRequest(`secured_${name}`, { kind: 'openapi', file: join(dir, 'quirks.json'), operation: `secured_${name}` });
      expect(secured.scaffold.credential, name).toMatchObject({ name: 'quirks', hosts: ['api.quirks.example'], placement });
      expect(secured.record.credentials).toEqual(['quirks']);
    }

    // A $ref to a URL is not fetched: the spec is refused, and nothing reaches the server it names.
    const server = await vendorServer((_req, res) => res.end('{"type":"object"}'));
    const remote = { ...spec, paths: { '/x': { get: { operationId: 'x', responses: { '200': { description: 'ok', content: { 'application/json': { schema: { $ref: `http://127.0.0.1:${server.port}/schema.json` } } } } } } } } };
    writeFileSync(join(dir, 'remote.json'), JSON.stringify(remote));
    await expect(engine.createFromRequest('remote', { kind: 'openapi', file: join(dir, 'remote.json'), operation: 'x', shown: 'remote.json' })).rejects.toMatchObject({ code: 'bad_input', message: expect.stringMatching(/^remote\.json could not be read as an OpenAPI spec/) });
    expect(server.seen).toEqual([]);

    writeFileSync(join(dir, 'swagger.json'), JSON.stringify({ swagger: '2.0', info: { title: 'Old', version: '1' }, host: 'api.old.example', paths: {} }));
    await expect(engine.createFromRequest('old', { kind: 'openapi', file: join(dir, 'swagger.json'), operation: 'x', shown: 'swagger.json' })).rejects.toMatchObject({
      code: 'bad_input',
      message: 'swagger.json is Swagger 2.0; only OpenAPI 3 specs are read (convert it first, e.g. with swagger2openapi)',
    });
  });
});

describe('argument validation of generated functions', () => {
  it('an argument that fails every branch of an anyOf in the same way says each problem once', async () => {
    const engine = testEngine();
    const recipient = (extra: object) => ({ type: 'object', required: ['email'], properties: { email: { type: 'string' }, ...extra } });
    await engine.saveFunction({
      spec: { name: 'notify', inputSchema: { type: 'object', properties: { to: { anyOf: [recipient({ name: { type: 'string' } }), recipient({ phone: { type: 'string' } })] } }, required: ['to'] } },
      source: 'export default () => 1',
    });
    const run = await engine.run('notify', { to: {} }, { caller: 'test' });
    expect(run).toMatchObject({ ok: false, error: { code: 'bad_input' } });
    const message = (run as { error: { message: string } }).error.message;
    expect(message.split('args.to.email is required').length - 1, message).toBe(1);
  });
});

describe('new functions from a HAR entry', () => {
  it('makes the function from the chosen entry and saves its response as the first test case, which replays green offline', async () => {
    const engine = testEngine();
    const text = readFileSync(HAR, 'utf8');
    const { record, scaffold, testCase } = await engine.createFromRequest('my_repos', { kind: 'har', text, file: 'github_repos.har', entry: 2 });
    expect(record.allowedHosts).toEqual(['api.github.com']);
    expect(record.credentials).toEqual(['github']);
    expect(scaffold.credential?.placement).toEqual({ kind: 'header', header: 'Authorization', template: 'token {secret}' });
    // Browser noise is gone; the API's own headers stay.
    expect(record.source).toContain('"x-github-api-version": "2022-11-28"');
    expect(record.source).not.toMatch(/user-agent|sec-ch-ua|referer|"origin"|:authority|cookie|gho_FAKE/i);
    expect(scaffold.exampleArgs).toEqual({ per_page: 2, sort: 'updated' });
    expect(testCase).toBe('har');
    const saved = engine.tests.get('my_repos', 'har');
    expect(saved).toMatchObject({ source: 'har', args: { per_page: 2, sort: 'updated' }, expect: { ok: true, value: [{ name: 'Hello-World' }, { name: 'Spoon-Knife' }] } });
    expect(saved.exchanges[0]!.request).toMatchObject({ method: 'GET', url: 'https://api.github.com/users/octocat/repos?per_page=2&sort=updated' });
    const [result] = await engine.tests.run('my_repos');
    expect(result, JSON.stringify(result)).toMatchObject({ status: 'pass' });
  });

  it('a response holding a stored secret is not saved as a case: the function is made and the note says why', async () => {
    const engine = testEngine();
    // The function's own credential (reused: same name, same host) holds a value its response shows.
    await engine.credentials.set({ name: 'github', hosts: ['api.github.com'], placement: { kind: 'header', header: 'Authorization', template: 'token {secret}' } }, 'octocat/Spoon-Knife');
    const { record, scaffold, testCase } = await engine.createFromRequest('leaky_repos', { kind: 'har', text: readFileSync(HAR, 'utf8'), file: 'github_repos.har', entry: 2 });
    expect(record.name).toBe('leaky_repos');
    expect(record.credentials).toEqual(['github']);
    expect(testCase).toBeUndefined();
    expect(scaffold.notes.find((n) => n.startsWith("the entry's response was not saved as a test case: "))).toMatch(/github/);
    expect(engine.tests.list('leaky_repos')).toEqual([]);
  });

  it('a page entry: its cookie and the set-cookie of its response are not kept, its HTML is the expected text', async () => {
    const engine = testEngine();
    const { record, scaffold } = await engine.createFromRequest('profile_page', { kind: 'har', text: readFileSync(HAR, 'utf8'), file: 'github_repos.har', entry: 1 });
    expect(record.credentials).toEqual([]);
    expect(scaffold.notes).toContain('the Cookie header was left out: cookies are session secrets and are not saved; a function that needs one should use a credential');
    const saved = engine.tests.get('profile_page', 'har');
    expect(saved.exchanges[0]).toMatchObject({ response: { headers: [['content-type', 'text/html; charset=utf-8']] } });
    expect(JSON.stringify(saved) + record.source).not.toContain('FAKESESSION');
    expect(saved.expect).toEqual({ ok: true, value: '<!DOCTYPE html><html><head><title>octocat</title></head></html>' });
  });

  it('a POST entry with a base64 response: the body fields become arguments and the case expects the decoded text', async () => {
    const engine = testEngine();
    const { record } = await engine.createFromRequest('render_md', { kind: 'har', text: readFileSync(HAR, 'utf8'), file: 'github_repos.har', entry: 3 });
    expect(Object.keys(propertiesOf(record))).toEqual(['text', 'mode']);
    expect(engine.tests.get('render_md', 'har').expect).toEqual({ ok: true, value: '<p>Hello <strong>world</strong></p>\n' });
    const [result] = await engine.tests.run('render_md');
    expect(result, JSON.stringify(result)).toMatchObject({ status: 'pass' });
  });

  it('needs --entry when the file has several, and refuses an entry that is not there or a file that is not HAR', async () => {
    const engine = testEngine();
    const text = readFileSync(HAR, 'utf8');
    const cases: Array<[ScaffoldSource, string | RegExp]> = [
      [{ kind: 'har', text, file: 'github_repos.har' }, 'github_repos.har has 3 entries; choose one with --entry N (1-3)'],
      [{ kind: 'har', text, file: 'github_repos.har', entry: 4 }, '--entry 4: github_repos.har has 3 entries (1-3)'],
      [{ kind: 'har', text: text.slice(0, 500), file: 'cut.har' }, /^cut\.har is not a HAR file: it is not valid JSON \(.*position 500.*\)$/],
      [{ kind: 'har', text: '{"log":{"entries":[]}}', file: 'empty.har' }, 'empty.har has no requests (log.entries is empty)'],
      [{ kind: 'har', text: '{"openapi":"3.0.0"}', file: 'spec.json' }, `spec.json is not a HAR file: it has no log.entries list (save one from the browser's network panel: "Save all as HAR")`],
    ];
    for (const [source, message] of cases) {
      await expect(engine.createFromRequest('bad', source)).rejects.toMatchObject({ code: 'bad_input', message: typeof message === 'string' ? message : expect.stringMatching(message) });
    }
    expect(engine.functions.find('bad')).toBeUndefined();
  });
});

describe("the studio's New function dialog, through the bridge (functions:createFromRequest)", () => {
  it('creates from a pasted curl command and answers the credential to store, never the secret', async () => {
    const engine = testEngine();
    const { createStudioApi } = await import('../../src-main/engineProcess/studioApi.ts');
    const { McpHttpHost } = await import('../../src-main/mcp/httpHost.ts');
    const api = createStudioApi({ engine, mcp: new McpHttpHost(engine, { port: 0 }), resourcesDir: join(REPO, 'resources'), callableCommand: 'callable', diagnostic: () => {} });
    try {
      const answer = await api.dispatch('functions:createFromRequest', { name: 'translate', from: { kind: 'curl', command: curlFixture('deepl_translate.curl') } });
      expect(answer).toMatchObject({
        ok: true,
        value: {
          record: { name: 'translate', allowedHosts: ['api-free.deepl.com'], credentials: ['deepl'] },
          credential: { name: 'deepl', hosts: ['api-free.deepl.com'], placement: { kind: 'header', header: 'Authorization', template: 'DeepL-Auth-Key {secret}' }, exists: false, command: "callable credentials set deepl --host api-free.deepl.com --header Authorization --template 'DeepL-Auth-Key {secret}'" },
          notes: [],
        },
      });
      expect(JSON.stringify(answer)).not.toContain('0c3ad6a5-fake');
      const fromSpec = await api.dispatch('functions:createFromRequest', { name: 'list_sets', from: { kind: 'openapi', file: join(OPENAPI_DIR, 'uspto.json'), operation: 'list-data-sets' } });
      expect(fromSpec).toMatchObject({ ok: true, value: { record: { name: 'list_sets', annotations: { readOnlyHint: true } } } });
      expect(await api.dispatch('functions:createFromRequest', { name: 'x', from: { kind: 'curl', command: 'curl' } })).toEqual({ ok: false, error: { code: 'bad_input', message: 'the curl command could not be read: no URL specified!' } });
      expect(await api.dispatch('functions:createFromRequest', { name: 'x', from: { kind: 'har', file: '/etc/passwd' } })).toMatchObject({ ok: false, error: { code: 'bad_input' } });
    } finally {
      api.close();
    }
  });
});
