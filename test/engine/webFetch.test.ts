import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { defineFunction, testEngine } from '../support/engine.ts';
import { heldVendor } from '../support/rawHttp.ts';
import { vendorServer, type SeenRequest } from '../support/vendor.ts';
import { until } from '../support/wait.ts';

// The web fetch (fetch, Request, Response) and Blob, File and FormData inside the sandbox: run by
// the real engine against a real local vendor, on the same guarded host fetch as ctx.fetch.
const engine = testEngine();
let port: number;
let base: string;
let seen: SeenRequest[];

/** A large body that is not all valid UTF-8: a BOM, text in several scripts, then truncated and stray sequences. */
const MIXED_UTF8 = Buffer.concat([
  Buffer.from([0xef, 0xbb, 0xbf]),
  Buffer.from('{"name":"naïve café – 日本語 😀"}\n'.repeat(200)),
  Buffer.from([0xc3, 0x28, 0xe2, 0x82, 0xf0, 0x9f, 0x98, 0xed, 0xa0, 0x80, 0xff, 0x41, 0xc0, 0xaf, 0xf4, 0x90, 0x80, 0x80]),
  Buffer.from('tail'),
]);

/** Bodies over 1 MiB with a sequence (whole, cut short, or stray) at the byte where 1 MiB ends. */
const MIB = 1024 * 1024;
const ACROSS = [[0xf0, 0x9f, 0x98, 0x80], [0xf0, 0x9f, 0x98], [0xe2, 0x82, 0xac], [0x80, 0x80, 0x80, 0x80], [0xed, 0xa0, 0x80], [0xc3, 0xa9]].flatMap((seq) =>
  [1, 2, 3].map((before) => Buffer.concat([Buffer.from('a'.repeat(MIB - before)), Buffer.from(seq), Buffer.from('b'.repeat(MIB / 2)), Buffer.from(seq)])),
);

/** What a decoded ACROSS body is checked by (the rest is a's and b's): its length, the text around 1 MiB, its end. */
const around = (text: string) => [text.length, text.slice(1048576 - 8, 1048576 + 8), text.slice(-8)];

beforeAll(async () => {
  const vendor = await vendorServer((req, res) => {
    if (req.url === '/json') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ hello: 'world', n: 1 }));
    } else if (req.url === '/redirect') {
      res.statusCode = 302;
      res.setHeader('location', '/json');
      res.end('moved');
    } else if (req.url === '/big') {
      res.end('x'.repeat(5000));
    } else if (req.url === '/large') {
      res.end('y'.repeat(200_000));
    } else if (req.url === '/mixed') {
      res.end(MIXED_UTF8);
    } else if (req.url?.startsWith('/across/')) {
      res.end(ACROSS[Number(req.url.slice('/across/'.length))]);
    } else if (req.url === '/empty') {
      res.statusCode = 204;
      res.end();
    } else res.end('ok');
  });
  port = vendor.port;
  base = `http://127.0.0.1:${port}`;
  seen = vendor.seen;
});

/** Runs `body` (the async handler's body; `base` is the vendor's origin) in the sandbox and returns the run's result. */
async function run(name: string, body: string, spec: Record<string, unknown> = {}) {
  await defineFunction(engine, { name, allowedHosts: [`127.0.0.1:${port}`], ...spec }, `export default async (args, ctx) => { const base = ${JSON.stringify(base)}; ${body} }`);
  return engine.run(name, {}, { caller: 'test' });
}
/** Runs `body` and returns its value (the run must succeed). */
async function value(name: string, body: string, spec: Record<string, unknown> = {}): Promise<any> {
  const result = await run(name, body, spec);
  expect(result.ok, JSON.stringify(result)).toBe(true);
  return (result as { value: unknown }).value;
}
/** What `snippet` (an async function body returning JSON data) gives in Node, the reference (undici, Node's own Blob and FormData). */
async function inNode(snippet: string): Promise<unknown> {
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => () => Promise<unknown>;
  return JSON.parse(JSON.stringify(await new AsyncFunction(snippet)()));
}
/** `snippet` gives the same JSON data in the sandbox as in Node. */
async function sameAsNode(name: string, snippet: string): Promise<void> {
  expect(await value(name, snippet)).toEqual(await inNode(snippet));
}

describe('fetch against a vendor', () => {
  it('GETs JSON with a Request object: status, headers, body read once', async () => {
    const before = seen.length;
    const got = await value(
      'get_json',
      `const request = new Request(base + '/json', { headers: { 'X-Trace': 'abc' } });
      const res = await fetch(request);
      const first = res.bodyUsed;
      const data = await res.json();
      let again;
      try { await res.text(); } catch (e) { again = e.constructor.name; }
      let frozen; try { res.headers.set('x-mine', '1'); } catch (e) { frozen = e.constructor.name; }
      const copy = new Headers(res.headers); copy.set('x-mine', '1');
      return { status: res.status, ok: res.ok, type: res.type, url: res.url, redirected: res.redirected, ct: res.headers.get('content-type'), data, first, used: res.bodyUsed, again, isResponse: res instanceof Response, frozen, copy: copy.get('x-mine'), cloneFrozen: (() => { try { res.clone(); } catch { return 'used'; } })() };`,
    );
    expect(got).toEqual({ status: 200, ok: true, type: 'basic', url: `${base}/json`, redirected: false, ct: 'application/json', data: { hello: 'world', n: 1 }, first: false, used: true, again: 'TypeError', isResponse: true, frozen: 'TypeError', copy: '1', cloneFrozen: 'used' });
    expect(seen.length).toBe(before + 1);
    expect(seen.at(-1)).toMatchObject({ method: 'GET', url: '/json', headers: { 'x-trace': 'abc' } });
  });

  it("reads a response's body as a ReadableStream", async () => {
    const got = await value(
      'body_stream',
      `const res = await fetch(base + '/big');
      const reader = res.body.getReader();
      let total = 0, chunks = 0;
      for (;;) { const { done, value } = await reader.read(); if (done) break; total += value.length; chunks++; }
      return { total, chunks: chunks > 0, used: res.bodyUsed, empty: (await fetch(base + '/empty')).body };`,
    );
    expect(got).toEqual({ total: 5000, chunks: true, used: true, empty: null });
  });

  // Each standard body kind, with the content type it implies; Node (undici) says what they are.
  const bodies: Array<[string, string]> = [
    ['a string', `'héllo wörld'`],
    ['URLSearchParams', `new URLSearchParams([['a', '1 2'], ['b', 'x&y=+']])`],
    ['a Blob with a type', `new Blob(['{"a":', new TextEncoder().encode('1}')], { type: 'Application/JSON' })`],
    ['an ArrayBuffer', `new Uint8Array([0, 1, 2, 255]).buffer`],
    ['a view of part of a buffer', `new Uint8Array([9, 9, 1, 2, 3, 9]).subarray(2, 5)`],
    ['a DataView', `new DataView(new Uint8Array([7, 8, 9]).buffer, 1)`],
  ];
  for (const [label, body] of bodies) {
    it(`POSTs ${label}: the vendor gets the bytes and content type Node's fetch would send`, async () => {
      await value(`post_${label.replace(/\W+/g, '_').toLowerCase()}`, `const res = await fetch(base + '/post', { method: 'POST', body: ${body} }); return res.status;`);
      const got = seen.at(-1)!;
      const reference = new Request('http://x/', { method: 'POST', body: new Function(`return ${body}`)() as BodyInit });
      expect(got.method).toBe('POST');
      expect(got.headers['content-type']).toBe(reference.headers.get('content-type') ?? undefined);
      expect([...got.bytes]).toEqual([...new Uint8Array(await reference.arrayBuffer())]);
    });
  }

  it("ctx.fetch sends a DataView body's bytes, as it does a typed array's", async () => {
    await value('ctx_dataview', `const res = await ctx.fetch(base + '/post', { method: 'POST', body: new DataView(new Uint8Array([7, 8, 9, 10]).buffer, 1, 2) }); return res.status;`);
    expect([...seen.at(-1)!.bytes]).toEqual([8, 9]);
  });

  it('POSTs a ReadableStream body (read in full, then sent) and refuses one without duplex', async () => {
    const got = await value(
      'post_stream',
      `const stream = (parts = ['chunk one, ', 'chunk two']) => new ReadableStream({ pull(c) { const p = parts.shift(); if (p === undefined) c.close(); else c.enqueue(new TextEncoder().encode(p)); } });
      let refused;
      try { new Request(base + '/post', { method: 'POST', body: stream() }); } catch (e) { refused = e.constructor.name + ': ' + e.message; }
      const res = await fetch(base + '/post', { method: 'PUT', body: stream(), duplex: 'half' });
      return { status: res.status, refused };`,
    );
    expect(got).toEqual({ status: 200, refused: "TypeError: Request: a ReadableStream body needs duplex: 'half'" });
    expect(seen.at(-1)).toMatchObject({ method: 'PUT', body: 'chunk one, chunk two' });
    expect(seen.at(-1)!.headers['content-type']).toBeUndefined();
  });

  it('POSTs FormData with a File and a Blob as multipart/form-data that the vendor parses', async () => {
    await value(
      'post_form',
      `const form = new FormData();
      form.append('to', 'bar@example.com');
      form.append('to', 'baz@example.com');
      form.append('attachment', new File([new Uint8Array([0, 1, 2, 255, 13, 10])], 'data.bin', { type: 'application/octet-stream' }));
      form.append('note', new Blob(['some text'], { type: 'text/plain' }));
      form.append('renamed', new Blob(['abc']), 'a "quoted" name.txt');
      const res = await fetch(base + '/post', { method: 'POST', body: form });
      return res.status;`,
    );
    const got = seen.at(-1)!;
    expect(got.headers['content-type']).toMatch(/^multipart\/form-data; boundary=\S+$/);
    const parsed = await new Response(new Uint8Array(got.bytes), { headers: { 'content-type': String(got.headers['content-type']) } }).formData();
    const entries = await Promise.all(
      [...parsed].map(async ([name, v]) => (typeof v === 'string' ? [name, v] : [name, v.name, v.type, [...new Uint8Array(await v.arrayBuffer())]])),
    );
    expect(entries).toEqual([
      ['to', 'bar@example.com'],
      ['to', 'baz@example.com'],
      ['attachment', 'data.bin', 'application/octet-stream', [0, 1, 2, 255, 13, 10]],
      ['note', 'blob', 'text/plain', [...Buffer.from('some text')]],
      ['renamed', 'a "quoted" name.txt', 'application/octet-stream', [...Buffer.from('abc')]],
    ]);
  });

  it('is recorded like ctx.fetch: a saved test of it replays (a FormData body gives the same bytes each run)', async () => {
    await value(
      'saved_web_fetch',
      `const form = new FormData(); form.append('a', '1'); form.append('f', new File(['x'], 'x.txt'));
      const res = await fetch(base + '/json', { method: 'POST', body: form });
      return (await res.json()).hello;`,
    );
    const run = await engine.run('saved_web_fetch', {}, { caller: 'test' });
    expect(run).toMatchObject({ ok: true, value: 'world' });
    await engine.tests.fromRun(run.runId, 'posted');
    const before = seen.length;
    expect(await engine.tests.run('saved_web_fetch', 'posted')).toMatchObject([{ status: 'pass' }]);
    expect(seen.length).toBe(before);
  });

  it('follows, returns or refuses a redirect as redirect: says', async () => {
    const got = await value(
      'redirects',
      `const follow = await fetch(base + '/redirect');
      const manual = await fetch(base + '/redirect', { redirect: 'manual' });
      let error;
      try { await fetch(new Request(base + '/redirect', { redirect: 'error' })); } catch (e) { error = e.constructor.name + ': ' + e.message; }
      return {
        follow: [follow.status, follow.redirected, follow.url, (await follow.json()).hello],
        manual: [manual.status, manual.redirected, manual.headers.get('location'), await manual.text()],
        error,
      };`,
    );
    expect(got.follow).toEqual([200, true, `${base}/json`, 'world']);
    // As workerd does: the 3xx response itself, not the opaque-redirect filtered response a browser gives.
    expect(got.manual).toEqual([302, false, '/json', 'moved']);
    expect(got.error).toBe(`TypeError: GET ${base}/redirect redirected to /json and the request said redirect: "error"`);
  });

  it('decodes a large body that is not all valid UTF-8 as Node does: U+FFFD for bad bytes, the BOM kept by ctx.fetch and dropped by fetch()', async () => {
    const got = await value(
      'mixed_utf8',
      `const a = await (await ctx.fetch(base + '/mixed')).text();
       const b = await (await fetch(base + '/mixed')).text();
       return { a, b };`,
    );
    const node = new TextDecoder('utf-8', { ignoreBOM: true }).decode(MIXED_UTF8);
    expect(node.length).toBeGreaterThan(2048);
    expect(got.a).toBe(node);
    expect(got.b).toBe(node.slice(1));
    expect(got.b).toBe(await (await fetch(`${base}/mixed`)).text());
    const across = await value(
      'across_utf8',
      `const out = []; for (let i = 0; i < ${ACROSS.length}; i++) out.push(around(await (await ctx.fetch(base + '/across/' + i)).text())); return out;`.replace('const out', `const around = ${around.toString()}; const out`),
      { limits: { responseBytes: 4 * MIB } },
    );
    expect(across).toEqual(ACROSS.map((b) => around(new TextDecoder('utf-8', { ignoreBOM: true }).decode(b))));
    // The same bodies streamed to fetch() in frames of their own (each large enough to be moved into the isolate, not copied).
    const streamed = await value(
      'across_utf8_streamed',
      `const out = []; for (let i = 0; i < ${ACROSS.length}; i++) out.push(around(await (await fetch(base + '/across/' + i)).text())); return out;`.replace('const out', `const around = ${around.toString()}; const out`),
      { limits: { responseBytes: 4 * MIB } },
    );
    expect(streamed).toEqual(across);
  });

  it("refuses a host the function may not reach with ctx.fetch's message, as a TypeError", async () => {
    const before = seen.length;
    const got = await value(
      'not_allowed',
      `const url = 'https://not-allowed.example.org/x';
      const web = await fetch(url).then(() => 'sent', (e) => [e.constructor.name, e.message, e.code]);
      const ctxFetch = await ctx.fetch(url).then(() => 'sent', (e) => [e.message, e.code]);
      return { web, ctxFetch };`,
    );
    expect(got.web).toEqual(['TypeError', got.ctxFetch[0], 'egress_refused']);
    expect(got.ctxFetch[0]).toContain('not-allowed.example.org');
    expect(seen.length).toBe(before);
  });

  it('counts fetch() against fetchCount and ends the run past it', async () => {
    const result = await run('web_fetchy', `for (let i = 0; i < 10; i++) { try { await fetch(base + '/n' + i); } catch {} } return 'done';`, { limits: { fetchCount: 2 } });
    expect(result).toMatchObject({ ok: false, error: { code: 'fetch_limit' } });
    expect((result as { error: { message: string } }).error.message).toContain('fetchCount');
  });

  it('ends the run when a response crosses responseBytes', async () => {
    const result = await run('web_big', `const res = await fetch(base + '/big'); return (await res.text()).length;`, { limits: { responseBytes: 1024 } });
    expect(result).toMatchObject({ ok: false, error: { code: 'response_too_large' } });
    expect((result as { error: { message: string } }).error.message).toContain('responseBytes');
  });

  it("refuses what a server cannot honour (credentials: 'include') in one line, before sending", async () => {
    const before = seen.length;
    const got = await value(
      'unhonoured',
      `const tries = [{ credentials: 'include' }, { mode: 'navigate' }, { cache: 'only-if-cached' }];
      const out = [];
      for (const init of tries) out.push(await fetch(base + '/x', init).then(() => 'sent', (e) => e.constructor.name + ': ' + e.message));
      const ignored = await fetch(base + '/x', { mode: 'no-cors', credentials: 'omit', cache: 'no-store', keepalive: true, referrer: '', referrerPolicy: 'no-referrer', priority: 'low' });
      return { out, ignored: ignored.status };`,
    );
    expect(got.out).toEqual([
      "TypeError: fetch: credentials \"include\" cannot be honoured: the sandbox keeps no cookies; send a Cookie or Authorization header yourself, or use ctx.fetch with a credential",
      'TypeError: Request: mode "navigate" is for browsers; leave mode out',
      'TypeError: Request: cache "only-if-cached" needs mode "same-origin"',
    ]);
    expect(got.ignored).toBe(200);
    expect(seen.length).toBe(before + 1);
  });
});

describe('integrity', () => {
  it('checks the body against the strongest algorithm named and rejects a mismatch with a TypeError', async () => {
    const body = JSON.stringify({ hello: 'world', n: 1 });
    const digest = (alg: string) => createHash(alg).update(body).digest('base64');
    const sha256 = `sha256-${digest('sha256')}`;
    const wrong256 = `sha256-${createHash('sha256').update('something else').digest('base64')}`;
    const sha512url = `sha512-${digest('sha512').replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')}`;
    const got = await value(
      'integrity',
      `const tries = ${JSON.stringify([sha256, wrong256, `${wrong256} ${sha512url}`, `${sha256} sha512-AAAA`, 'md5-abc'])};
      const out = [];
      for (const integrity of tries) out.push(await fetch(base + '/json', { integrity }).then((r) => r.status, (e) => e.constructor.name + ': ' + e.message));
      return out;`,
    );
    const mismatch = `TypeError: fetch: the response from ${base}/json does not match the request's integrity`;
    expect(got).toEqual([200, mismatch, 200, mismatch, 200]);
  });
});

describe('ctx.fetch takes these types too', () => {
  it('sends a FormData body and a Blob body, and a File as a multipart part, as fetch() would', async () => {
    await value(
      'ctx_form_types',
      `const form = new FormData(); form.append('a', '1'); form.append('f', new File(['x'], 'x.txt', { type: 'text/plain' }));
      await ctx.fetch(base + '/form', { body: form });
      await ctx.fetch(base + '/blob', { body: new Blob(['{}'], { type: 'application/json' }) });
      await ctx.fetch(base + '/part', { multipart: { doc: { data: new File(['pdf bytes'], 'doc.pdf', { type: 'application/pdf' }) } } });
      const refused = await ctx.fetch(base + '/form', { body: form, headers: { 'content-type': 'text/plain' } }).catch((e) => e.message);
      return refused;`,
    ).then((refused) => expect(refused).toBe('ctx.fetch: a FormData body sets its own content-type (with the boundary); remove the content-type header'));
    const [form, blob, part] = seen.slice(-3);
    const parsed = await new Response(new Uint8Array(form!.bytes), { headers: { 'content-type': String(form!.headers['content-type']) } }).formData();
    expect([parsed.get('a'), (parsed.get('f') as File).name, (parsed.get('f') as File).type]).toEqual(['1', 'x.txt', 'text/plain']);
    expect(blob).toMatchObject({ method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(part!.body).toContain('Content-Disposition: form-data; name="doc"; filename="doc.pdf"\r\nContent-Type: application/pdf\r\n\r\npdf bytes\r\n');
  });
});

describe('abort', () => {
  it("rejects with the signal's reason, sending nothing, when aborted before", async () => {
    const before = seen.length;
    const got = await value(
      'abort_before',
      `const c = new AbortController(); c.abort(new Error('changed my mind'));
      const plain = AbortSignal.abort();
      return [await fetch(base + '/x', { signal: c.signal }).catch((e) => e.message), await fetch(base + '/x', { signal: plain }).catch((e) => e.name)];`,
    );
    expect(got).toEqual(['changed my mind', 'AbortError']);
    expect(seen.length).toBe(before);
  });

  it('closes the vendor connection when aborted during the request', async () => {
    const vendor = await heldVendor();
    // /held answers once the held vendor has the request (the function aborts only then); /closed once
    // the vendor saw its connection close (so it closed while the run went on, not when it ended).
    const gate = await vendorServer((req, res) => {
      const condition = req.url === '/held' ? () => vendor.seen() === 1 : () => vendor.closed() === 1;
      until(condition, req.url, 8000).then(() => res.end('go'), () => res.end('timed out'));
    });
    try {
      await defineFunction(
        engine,
        { name: 'abort_during', allowedHosts: [`127.0.0.1:${vendor.port}`, `127.0.0.1:${gate.port}`], timeoutMs: 30_000 },
        `export default async () => {
          const c = new AbortController();
          const pending = fetch('http://127.0.0.1:${vendor.port}/slow', { signal: c.signal });
          await (await fetch('http://127.0.0.1:${gate.port}/held')).text();
          c.abort();
          const outcome = await pending.then(() => 'answered', (e) => e.name);
          return [outcome, await (await fetch('http://127.0.0.1:${gate.port}/closed')).text()];
        }`,
      );
      const result = await engine.run('abort_during', {}, { caller: 'test' });
      expect(result).toMatchObject({ ok: true, value: ['AbortError', 'go'] });
      expect(result.trace.find((entry) => entry.url === `http://127.0.0.1:${vendor.port}/slow`)).toMatchObject({ error: 'the function aborted the request' });
    } finally {
      vendor.release();
    }
  });

  it("errors a body not yet read in full with the signal's reason when aborted after the response arrived", async () => {
    const got = await value(
      'abort_after',
      `const c = new AbortController();
      const whole = await fetch(base + '/json', { signal: c.signal });
      const read = await fetch(base + '/json', { signal: c.signal }); const text = await read.text();
      const partly = await fetch(base + '/large', { signal: c.signal });
      const reader = partly.body.getReader(); const first = await reader.read();
      c.abort(new Error('too late'));
      return {
        whole: await whole.text().catch((e) => e.message), again: await whole.json().catch((e) => e.message),
        read: text.length, partly: [first.value.length > 0 && first.value.length < 200_000, await reader.read().then(() => 'more', (e) => e.message)],
      };`,
    );
    expect(got).toEqual({ whole: 'too late', again: 'too late', read: 23, partly: [true, 'too late'] });
  });

  it("says in the trace that the run ended, not the function, when a fetch is in flight at the deadline", async () => {
    const vendor = await heldVendor();
    try {
      await defineFunction(engine, { name: 'fetch_at_deadline', allowedHosts: [`127.0.0.1:${vendor.port}`], timeoutMs: 1000 }, `export default async () => (await fetch('http://127.0.0.1:${vendor.port}/slow')).text()`);
      const result = await engine.run('fetch_at_deadline', {}, { caller: 'test' });
      expect(result).toMatchObject({ ok: false, error: { code: 'timeout' } });
      expect(result.trace).toEqual([expect.objectContaining({ url: `http://127.0.0.1:${vendor.port}/slow`, error: 'the run ended before the response arrived' })]);
    } finally {
      vendor.release();
    }
  });
});

describe('Request, Response, Headers, FormData, Blob and File as Node has them', () => {
  it('Blob: parts, type, size, slice, text decoding, bytes, stream', async () => {
    await sameAsNode(
      'blob_semantics',
      `const b = new Blob(['a\\uD800b', new Uint8Array([0xef, 0xbb, 0xbf, 0xe2, 0x82]), new Blob(['€']).slice(1), new DataView(new Uint8Array([0x41, 0x42, 0x43]).buffer, 1)], { type: 'Text/Plain' });
      const bom = new Blob([new Uint8Array([0xef, 0xbb, 0xbf]), 'x']);
      const r = b.stream().getReader(); let streamed = 0; for (;;) { const { done, value } = await r.read(); if (done) break; streamed += value.length; }
      return {
        size: b.size, type: b.type, text: await b.text(), bom: await bom.text(), bytes: [...await b.bytes()],
        sliced: [await b.slice(-4, -1).text(), b.slice(2, 1).size, b.slice(1, 3, 'X/Y').type, b.slice(0, 100).size],
        badType: new Blob([], { type: 'a\\u00e9' }).type, buffer: (await b.arrayBuffer()).byteLength, streamed,
        tag: Object.prototype.toString.call(b), refused: (() => { try { new Blob('abc'); } catch (e) { return e.constructor.name; } })(),
      };`,
    );
  });

  it('File: name, lastModified, type, a Blob', async () => {
    await sameAsNode(
      'file_semantics',
      `const f = new File(['hello'], 'a/b.txt', { type: 'text/plain', lastModified: 42 });
      const now = new File([], 'n').lastModified;
      return { name: f.name, lm: f.lastModified, type: f.type, size: f.size, isBlob: f instanceof Blob, text: await f.text(), recent: Math.abs(now - Date.now()) < 5000, tag: String(f) };`,
    );
  });

  it('FormData: append, set, get, getAll, has, delete, iteration order, Blob values as File "blob"', async () => {
    await sameAsNode(
      'formdata_semantics',
      `const f = new FormData();
      f.append('a', '1'); f.append('b', '2'); f.append('a', '3'); f.append('blob', new Blob(['x'], { type: 'text/x' }));
      f.append('file', new File(['y'], 'y.txt'), 'renamed.txt');
      const before = { all: f.getAll('a'), has: f.has('a'), get: f.get('b'), missing: f.get('zz') };
      f.set('a', '9'); f.delete('b');
      const blob = f.get('blob');
      const seen = []; f.forEach((v, k) => seen.push(k));
      let wrongArgs; try { f.append('x', 'y', 'z.txt'); } catch (e) { wrongArgs = e.constructor.name; }
      return { before, keys: [...f.keys()], entries: [...f].map(([k, v]) => [k, typeof v === 'string' ? v : [v.name, v.type]]), blob: [blob.name, blob.type, blob instanceof File], seen, wrongArgs };`,
    );
  });

  it('Response: constructor, statics, bodyUsed, clone, body kinds, formData round trips', async () => {
    await sameAsNode(
      'response_semantics',
      `const r = new Response('hi there', { status: 201, statusText: 'Made', headers: { 'X-A': '1' } });
      const c = r.clone();
      const t1 = await r.text();
      let twice; try { await r.text(); } catch (e) { twice = e.constructor.name; }
      let cloneUsed; try { r.clone(); } catch (e) { cloneUsed = e.constructor.name; }
      const j = Response.json({ a: [1] }, { status: 202 });
      const err = Response.error();
      const red = Response.redirect('https://example.com/next', 301);
      const form = new FormData(); form.append('k', 'v'); form.append('f', new File(['data'], 'f.bin', { type: 'application/x-thing' }));
      const back = await new Response(form).formData();
      const url = await new Response(new URLSearchParams('a=1&b=%20')).formData();
      const fromBlob = await new Response(new Blob(['blob body'], { type: 'text/csv' })).blob();
      const ranges = [];
      for (const s of [199, 600]) { try { new Response('', { status: s }); } catch (e) { ranges.push(e.constructor.name); } }
      let nullBody; try { new Response('x', { status: 204 }); } catch (e) { nullBody = e.constructor.name; }
      return {
        r: [r.status, r.statusText, r.ok, r.type, r.url, r.headers.get('x-a'), r.headers.get('content-type'), t1, r.bodyUsed, twice, cloneUsed],
        c: [c.bodyUsed, await c.text(), c.status],
        j: [j.status, j.headers.get('content-type'), await j.json()],
        err: [err.type, err.status, err.ok, err.body, (() => { try { err.headers.append('a', 'b'); return 'changed'; } catch (e) { return e.constructor.name; } })()],
        redGuard: (() => { try { red.headers.set('location', 'x'); return 'changed'; } catch (e) { return e.constructor.name; } })(),
        jGuard: (() => { j.headers.set('x-j', '1'); return j.headers.get('x-j'); })(),
        red: [red.status, red.headers.get('location'), red.body],
        back: [back.get('k'), back.get('f').name, back.get('f').type, await back.get('f').text()],
        url: [...url], fromBlob: [fromBlob.type, await fromBlob.text()],
        ranges, nullBody, empty: [new Response().body, await new Response().text(), new Response(null).bodyUsed],
        arrayBuffer: [...new Uint8Array(await new Response(new Uint8Array([1, 2])).arrayBuffer())],
        bytes: [...await new Response('ab').bytes()],
        tag: Object.prototype.toString.call(r),
      };`,
    );
  });

  it('Response.clone and Request.clone give each branch its own chunks: changing a chunk read from one never changes the other (a view keeps its kind, offset and length)', async () => {
    const got = await value(
      'clone_chunks',
      `const first = async (body) => (await body.getReader().read()).value;
       const fresh = () => new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]).buffer;
       const streamOf = (...chunks) => new ReadableStream({ start(c) { for (const chunk of chunks) c.enqueue(chunk); c.close(); } });
       const out = {};
       for (const [name, chunk] of [['Uint8Array', new Uint8Array(fresh(), 4, 4)], ['Int16Array', new Int16Array(fresh(), 2, 2)], ['DataView', new DataView(fresh(), 2, 8)], ['ArrayBuffer', fresh()]]) {
         const original = new Response(streamOf(chunk));
         const clone = original.clone();
         const mine = await first(original.body);
         const theirs = await first(clone.body);
         new Uint8Array(mine.buffer ?? mine).fill(0);
         const view = new Uint8Array(theirs.buffer ?? theirs);
         out[name] = { same: mine === chunk, kind: Object.getPrototypeOf(theirs) === Object.getPrototypeOf(chunk), offset: theirs.byteOffset ?? 0, length: theirs.byteLength, bytes: [...view] };
       }
       const request = new Request('https://x.example/', { method: 'POST', body: streamOf(new Uint8Array([104, 105])), duplex: 'half' });
       const requestClone = request.clone();
       (await first(request.body)).fill(0);
       const fetched = await fetch(base + '/json');
       const fetchedClone = fetched.clone();
       (await first(fetched.body)).fill(0);
       return { out, request: await requestClone.text(), fetched: await fetchedClone.json() };`,
    );
    const all = Array.from({ length: 16 }, (_, i) => i + 1);
    expect(got.out).toEqual({
      Uint8Array: { same: true, kind: true, offset: 4, length: 4, bytes: all },
      Int16Array: { same: true, kind: true, offset: 2, length: 4, bytes: all },
      DataView: { same: true, kind: true, offset: 2, length: 8, bytes: all },
      ArrayBuffer: { same: true, kind: true, offset: 0, length: 16, bytes: all },
    });
    expect(got.request).toBe('hi');
    expect(got.fetched).toEqual({ hello: 'world', n: 1 });
  });

  it('Request: method, URL, defaults, headers, bodies, clone, refusals', async () => {
    await sameAsNode(
      'request_semantics',
      `const q = new Request('https://api.example.com/a?b=1#frag', { method: 'post', body: 'x=1', headers: { 'X-Q': 'q' } });
      const copy = new Request(q, { headers: { 'X-Other': 'o' } });
      const refusals = [];
      for (const [input, init] of [['https://x.example/', { method: 'GET', body: 'no' }], ['https://x.example/', { method: 'TRACE' }], ['relative/path', {}], ['https://u:p@x.example/', {}], ['https://x.example/', { redirect: 'sideways' }]]) {
        try { new Request(input, init); refusals.push('ok'); } catch (e) { refusals.push(e.constructor.name); }
      }
      const withBody = new Request('https://x.example/', { method: 'PUT', body: 'abc' });
      const cl = withBody.clone();
      return {
        q: [q.method, q.url, q.headers.get('x-q'), q.headers.get('content-type'), q.redirect, q.mode, q.credentials, q.cache, q.referrer, q.integrity, q.keepalive, q.destination, q.signal.aborted, q.bodyUsed],
        copy: [copy.method, copy.url, copy.headers.get('x-q'), copy.headers.get('x-other'), await copy.text(), q.bodyUsed],
        patch: new Request('https://x.example/', { method: 'patch' }).method, del: new Request('https://x.example/', { method: 'delete' }).method,
        refusals, clone: [await cl.text(), await withBody.text()], get: new Request('https://x.example/').body,
        tag: Object.prototype.toString.call(q),
      };`,
    );
  });
});
