import { beforeAll, describe, expect, it } from 'vitest';
import { defineFunction, testEngine } from '../support/engine.ts';
import { vendorServer, type SeenRequest } from '../support/vendor.ts';

// ctx.fetch's form bodies, as the vendors document them (Twilio's SMS send is a urlencoded form,
// Mailgun's send is multipart), checked byte for byte on a real local server.
const engine = testEngine();
let port: number;
let seen: SeenRequest[];

beforeAll(async () => {
  const vendor = await vendorServer((_req, res) => res.end('sent'));
  port = vendor.port;
  seen = vendor.seen;
});

/** Saves a function whose body is `init` (JS source of the ctx.fetch options) and runs it; returns what the vendor received, or the error the function got. */
async function send(name: string, init: string, prelude = ''): Promise<{ request?: SeenRequest; error?: string }> {
  await defineFunction(
    engine,
    { name, allowedHosts: [`127.0.0.1:${port}`] },
    `export default async (a, ctx) => {
      ${prelude}
      try {
        const res = await ctx.fetch('http://127.0.0.1:${port}/send', ${init});
        return { status: res.status };
      } catch (e) {
        return { error: e.message };
      }
    }`,
  );
  const before = seen.length;
  const result = await engine.run(name, {}, { caller: 'test' });
  expect(result.ok, JSON.stringify(result)).toBe(true);
  const value = (result as { value: { status?: number; error?: string } }).value;
  if (value.error !== undefined) {
    expect(seen.length).toBe(before);
    return { error: value.error };
  }
  expect(value.status).toBe(200);
  return { request: seen.at(-1)! };
}

describe('form: a urlencoded body', () => {
  it("sends Twilio's SMS form exactly as URLSearchParams encodes it ('+' as %2B, space as '+')", async () => {
    const { request } = await send('twilio_sms', `{ form: { To: '+15551234567', From: '+15557654321', Body: "Hi & welcome: 100% + more ~!*'()", Count: 2, Urgent: true } }`);
    expect(request!.method).toBe('POST');
    expect(request!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request!.body).toBe('To=%2B15551234567&From=%2B15557654321&Body=Hi+%26+welcome%3A+100%25+%2B+more+%7E%21*%27%28%29&Count=2&Urgent=true');
    expect(request!.body).toBe(
      new URLSearchParams([['To', '+15551234567'], ['From', '+15557654321'], ['Body', "Hi & welcome: 100% + more ~!*'()"], ['Count', '2'], ['Urgent', 'true']]).toString(),
    );
  });

  it('repeats a field for each value of an array, in order, and encodes any text as WHATWG does', async () => {
    const { request } = await send('repeated', `{ method: 'PUT', form: { MediaUrl: ['https://a.example/1.png', 'https://a.example/2.png'], 'na me': 'é\\uD800x', empty: '' } }`);
    expect(request!.method).toBe('PUT');
    expect(request!.body).toBe('MediaUrl=https%3A%2F%2Fa.example%2F1.png&MediaUrl=https%3A%2F%2Fa.example%2F2.png&na+me=%C3%A9%EF%BF%BDx&empty=');
    expect(request!.body).toBe(new URLSearchParams([['MediaUrl', 'https://a.example/1.png'], ['MediaUrl', 'https://a.example/2.png'], ['na me', 'é\uD800x'], ['empty', '']]).toString());
  });

  it("keeps the function's own content-type", async () => {
    const { request } = await send('own_type', `{ form: { a: 'b' }, headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' } }`);
    expect(request!.headers['content-type']).toBe('application/x-www-form-urlencoded; charset=utf-8');
    expect(request!.body).toBe('a=b');
  });

  it("sends a URLSearchParams body with the same encoding and content type, whatever the function did to URLSearchParams' prototype", async () => {
    const { request } = await send(
      'params_body',
      `{ body: params }`,
      `const params = new URLSearchParams({ To: '+1 555', Body: 'a+b' }); params.append('To', '+2'); URLSearchParams.prototype.toString = () => 'hijacked=1';`,
    );
    expect(request!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request!.body).toBe('To=%2B1+555&Body=a%2Bb&To=%2B2');
  });
});

describe('multipart: a multipart/form-data body', () => {
  const MAILGUN = `{ multipart: {
    from: 'Excited User <mailgun@example.com>',
    to: ['bar@example.com', 'baz@example.com'],
    subject: 'Hello "there"',
    text: 'Testing\\nsome Mailgun awesomeness!',
    'o:tag': 42,
    attachment: [
      { data: new Uint8Array([0, 1, 2, 255, 13, 10, 45, 45]), filename: 'data.bin', contentType: 'application/octet-stream' },
      { data: new TextEncoder().encode('héllo').buffer, filename: 'a "quoted"\\nname.txt', contentType: 'text/plain; charset=utf-8' },
    ],
    inline: { data: 'inline text', filename: 'note.txt' },
  } }`;

  /** The same parts encoded by Node's own FormData (undici), with `boundary`. */
  async function nodeEncoding(boundary: string): Promise<Buffer> {
    const form = new FormData();
    form.append('from', 'Excited User <mailgun@example.com>');
    form.append('to', 'bar@example.com');
    form.append('to', 'baz@example.com');
    form.append('subject', 'Hello "there"');
    form.append('text', 'Testing\nsome Mailgun awesomeness!');
    form.append('o:tag', '42');
    form.append('attachment', new Blob([new Uint8Array([0, 1, 2, 255, 13, 10, 45, 45])], { type: 'application/octet-stream' }), 'data.bin');
    form.append('attachment', new Blob([new TextEncoder().encode('héllo')], { type: 'text/plain; charset=utf-8' }), 'a "quoted"\nname.txt');
    form.append('inline', new Blob(['inline text']), 'note.txt');
    const response = new Response(form);
    const theirs = /boundary=(.+)$/.exec(response.headers.get('content-type')!)![1]!;
    return Buffer.from(Buffer.from(await response.arrayBuffer()).toString('latin1').split(theirs).join(boundary), 'latin1');
  }

  it("sends Mailgun's message with repeated fields and file parts, byte for byte as Node's FormData encodes it", async () => {
    const { request } = await send('mailgun_send', MAILGUN);
    expect(request!.method).toBe('POST');
    const boundary = /^multipart\/form-data; boundary=(\S+)$/.exec(String(request!.headers['content-type']))?.[1];
    expect(boundary, String(request!.headers['content-type'])).toBeDefined();
    expect(request!.bytes.equals(await nodeEncoding(boundary!))).toBe(true);
    // The file part as the vendor reads it: its filename, its type, its exact bytes.
    const head = `Content-Disposition: form-data; name="attachment"; filename="data.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`;
    const at = request!.bytes.indexOf(head) + head.length;
    expect([...request!.bytes.subarray(at, at + 8)]).toEqual([0, 1, 2, 255, 13, 10, 45, 45]);
    expect(request!.body).toContain('name="attachment"; filename="a %22quoted%22%0Aname.txt"\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nhéllo\r\n');
  });

  it('gives the same bytes for the same parts, so a saved test of it replays', async () => {
    const first = (await send('mailgun_again', MAILGUN)).request!;
    const run = await engine.run('mailgun_again', {}, { caller: 'test' });
    expect(seen.at(-1)!.bytes.equals(first.bytes)).toBe(true);
    await engine.tests.fromRun(run.runId, 'sent');
    expect(await engine.tests.run('mailgun_again', 'sent')).toMatchObject([{ status: 'pass' }]);
  });
});

describe('refused bodies: one line, nothing sent', () => {
  const cases: Array<[string, string, string]> = [
    ['two bodies', `{ json: { a: 1 }, form: { a: 1 } }`, 'ctx.fetch: give one of json, body, form or multipart, not json and form'],
    ['form and multipart', `{ form: { a: 1 }, multipart: { a: 'b' } }`, 'ctx.fetch: give one of json, body, form or multipart, not form and multipart'],
    ['a form that is text', `{ form: 'a=1' }`, 'ctx.fetch: form must be an object of name: value (or [values]), not string'],
    ['a form field that is an object', `{ form: { a: { b: 1 } } }`, 'ctx.fetch: form field "a" must be a string, number or boolean (or an array of them), not object'],
    ['a null in a form array', `{ form: { a: ['x', null] } }`, 'ctx.fetch: form field "a[1]" must be a string, number or boolean (or an array of them), not null'],
    ['a part without data', `{ multipart: { file: { filename: 'a.txt' } } }`, 'ctx.fetch: multipart part "file" needs data: a string, Uint8Array or ArrayBuffer, not undefined'],
    ['a part that is null', `{ multipart: { file: [null] } }`, 'ctx.fetch: multipart part "file[0]" must be a string, number, boolean or { data, filename?, contentType? }, not null'],
    ['a filename that is not text', `{ multipart: { file: { data: 'x', filename: 7 } } }`, 'ctx.fetch: multipart part "file": filename must be a string, not number'],
    ['a content type with a line break', `{ multipart: { file: { data: 'x', contentType: 'text/plain\\r\\nX-Evil: 1' } } }`, 'ctx.fetch: multipart part "file": contentType must be a one-line string such as "image/png"'],
    ['multipart with its own content-type', `{ multipart: { a: 'b' }, headers: { 'content-type': 'multipart/form-data' } }`, 'ctx.fetch: multipart sets its own content-type (with the boundary); remove the content-type header'],
  ];
  for (const [label, init, message] of cases) {
    it(`refuses ${label}`, async () => {
      const { error } = await send(`refused_${label.replace(/\W+/g, '_')}`, init);
      expect(error).toBe(message);
    });
  }
});

describe('attacks on form bodies from inside the sandbox', () => {
  /** The parts a real multipart parser (undici's, as a vendor on Node would use) reads from `request`. */
  async function partsOf(request: SeenRequest): Promise<Array<[string, string, string | undefined]>> {
    const form = await new Response(new Uint8Array(request.bytes), { headers: { 'content-type': String(request.headers['content-type']) } }).formData();
    return [...form].map(([name, value]) => (typeof value === 'string' ? [name, value, undefined] : [name, value.name, value.type]));
  }

  it('a getter that gives a line break on its second read cannot inject a part header (check and copy read once)', async () => {
    const { request } = await send(
      'toctou_getter',
      `{ multipart: { file: part } }`,
      `const reads = { type: 0, name: 0 };
      const part = { data: 'x', get contentType() { return reads.type++ === 0 ? 'text/plain' : 'text/plain\\r\\nX-Injected: 1'; }, get filename() { return reads.name++ === 0 ? 'ok.txt' : 'evil"\\r\\nX-Injected: 1'; } };`,
    );
    expect(request!.body).not.toContain('X-Injected');
    expect(await partsOf(request!)).toEqual([['file', 'ok.txt', 'text/plain']]);
  });

  it('a Proxy as the form, as a repeated field and as a part is read once per value', async () => {
    const { request } = await send(
      'proxy_form',
      `{ multipart: new Proxy({ a: 'x', list: new Proxy(['1', '2'], counting), file: new Proxy({ data: 'bytes', filename: 'p.txt' }, counting) }, counting) }`,
      `let n = 0; const counting = { get(t, k, r) { const v = Reflect.get(t, k, r); return typeof v === 'string' && n++ > 50 ? 'changed' : v; } };`,
    );
    expect(await partsOf(request!)).toEqual([
      ['a', 'x', undefined],
      ['list', '1', undefined],
      ['list', '2', undefined],
      ['file', 'p.txt', 'application/octet-stream'],
    ]);
  });

  it("a polluted Object.prototype and Array.prototype (push, a setter on index 0) do not change the multipart parts or the form's fields", async () => {
    const pollute = `Object.defineProperty(Object.prototype, 'text', { get() { return 'injected'; }, configurable: true });
      Object.prototype.contentType = 'text/html'; Object.prototype.filename = 'evil.html'; Array.prototype.push = function () { return 0; };`;
    // A setter on index 0 would swallow the first element the prelude adds (which body, which part).
    const setter = `Object.defineProperty(Array.prototype, '0', { set() {}, configurable: true });`;
    const polluted = await send('polluted_multipart', `{ multipart: { a: 'x', list: ['1', '2'], file: { data: 'd', filename: 'f.txt', contentType: 'text/plain' } } }`, pollute + setter);
    expect(polluted.error).toBeUndefined();
    expect(await partsOf(polluted.request!)).toEqual([
      ['a', 'x', undefined],
      ['list', '1', undefined],
      ['list', '2', undefined],
      ['file', 'f.txt', 'text/plain'],
    ]);
    const form = (await send('polluted_form', `{ form: { a: 'x', list: ['1', '2'] } }`, pollute)).request!;
    expect(form.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(form.body).toBe('a=x&list=1&list=2');
  });

  it("sends the function's headers and body whatever it did to Map.prototype.forEach, Array.prototype.sort or Array.prototype's index 0", async () => {
    const tamper = `Map.prototype.forEach = function () {}; Array.prototype.sort = function () { return []; };
      Object.defineProperty(Array.prototype, '0', { set() {}, configurable: true });`;
    const { request } = await send('tampered_headers', `{ headers: { 'X-B': 'two', 'X-A': 'one' }, json: { a: 1 } }`, tamper);
    expect(request!.headers['x-a']).toBe('one');
    expect(request!.headers['x-b']).toBe('two');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.body).toBe('{"a":1}');
  });

  it('a field name or filename with CR/LF and quotes cannot add a header or a part', async () => {
    const evil = `'a"; filename="x.html"\\r\\nContent-Type: text/html\\r\\n\\r\\n<script>'`;
    const { request } = await send('crlf_names', `{ multipart: { [${evil}]: 'v', file: { data: 'd', filename: ${evil} } } }`);
    const parts = await partsOf(request!);
    expect(parts).toHaveLength(2);
    expect(request!.body).not.toMatch(/\r\nContent-Type: text\/html/);
    expect(request!.body).toContain('name="a%22; filename=%22x.html%22%0D%0AContent-Type: text/html%0D%0A%0D%0A<script>"\r\n\r\nv\r\n');
    expect(request!.body).toContain('name="file"; filename="a%22; filename=%22x.html%22%0D%0AContent-Type: text/html%0D%0A%0D%0A<script>"\r\nContent-Type: application/octet-stream\r\n');
  });

  it('more parts than the limit are refused in one line, nothing sent', async () => {
    const { error } = await send('many_parts', `{ multipart: { f: Array.from({ length: 10_001 }, (_, i) => String(i)) } }`);
    expect(error).toBe('ctx.fetch: multipart must be at most 10000 parts');
  });
});
