import { join } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, KeychainSecretStore } from '../../src-main/engine/index.ts';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { defineFunction, testEngine } from '../support/engine.ts';
import { vendorServer } from '../support/vendor.ts';

// Adversarial: a vendor (a real server on 127.0.0.1) echoes the data folder's stored secrets in
// encodings real servers use. The function tries to decode whatever it gets and returns each
// attempt reversed (so the run's own exit redaction cannot hide a leak); no attempt may hold a secret.
const rand = () => Math.random().toString(36).slice(2, 10);
/** Has the characters URL, form and base64 encodings change. */
const SECRET = `sk/live+${rand()}=key!`;
/** Lowercase letters and digits only: it can be a header name, or a host name label. */
const TOKEN = `tok${rand()}${rand()}`;
/** Has the characters Go's encoding/json writes as \u0026, \u003c, \u003e. */
const HTML = `k&e<y>${rand()}`;
/** Non-ASCII: Python's json.dumps writes it as \u00e9; an HTTP header carries its UTF-8 bytes. */
const ACCENT = `clé-${rand()}`;
const SECRETS = { vendor: SECRET, token: TOKEN, html: HTML, accent: ACCENT };
const reversed = (s: string) => [...s].reverse().join('');

/** Base64 wrapped at 76 columns with CRLF, as MIME (and PEM at 64) write it. */
const mime = (bytes: Buffer) => bytes.toString('base64').replace(/.{76}(?=.)/g, '$&\r\n');

const engine = testEngine({ secrets: new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!) });
let port: number;
const routes = new Map<string, (res: import('node:http').ServerResponse) => void>();

beforeAll(async () => {
  const vendor = await vendorServer((req, res) => {
    const route = routes.get(`/${req.url.split(/[/?]/)[1]}`);
    if (route) route(res);
    else res.writeHead(404).end();
  });
  port = vendor.port;
  const header = { kind: 'header', header: 'X-Api-Key', template: '{secret}' } as const;
  for (const [name, secret] of Object.entries(SECRETS)) await engine.credentials.set({ name, hosts: [`api.${name}.example`], placement: header }, secret);
});

afterAll(async () => {
  for (const name of Object.keys(SECRETS)) await engine.credentials.remove(name).catch(() => {});
});

/**
 * Runs a function that fetches `path` (with `init`) and tries every decoding a function could: URL,
 * JSON, base64 without white space, hex, latin1 bytes as UTF-8; over the body, every header name and
 * value, the URL and the status text, or the error message.
 */
async function seenBy(path: string, init = '{}'): Promise<string> {
  const name = `attack_${path.replace(/\W/g, '_')}`;
  await defineFunction(
    engine,
    { name, allowedHosts: [`127.0.0.1:${port}`], timeoutMs: 20_000 },
    `const attempt = (f) => { try { return String(f()); } catch (e) { return ''; } };
    const decodings = (s) => [
      s,
      attempt(() => decodeURIComponent(s)),
      attempt(() => decodeURIComponent(decodeURIComponent(s))),
      attempt(() => JSON.stringify(JSON.parse(s))),
      attempt(() => JSON.parse('"' + s + '"')),
      attempt(() => atob(s.replace(/\\s+/g, ''))),
      attempt(() => new TextDecoder().decode(Uint8Array.from(atob(s.replace(/\\s+/g, '')), (c) => c.charCodeAt(0)))),
      attempt(() => new TextDecoder().decode(Uint8Array.from(s.match(/../g), (h) => parseInt(h, 16)))),
      attempt(() => s.split(/[.\\s]+/).map((p) => new TextDecoder().decode(Uint8Array.from(atob(p.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0)))).join('.')),
      attempt(() => new TextDecoder().decode(Uint8Array.from(s, (c) => c.charCodeAt(0)))),
    ];
    export default async (a, ctx) => {
      let seen;
      try {
        const res = await ctx.fetch('http://127.0.0.1:${port}${path}', ${init});
        const text = await res.text();
        seen = [text, ...text.split(/\\r\\n\\r\\n/), res.url, res.statusText, ...[...res.headers].flat()];
      } catch (e) {
        seen = [e.message];
      }
      return { seen, tried: seen.flatMap(decodings).map((s) => [...s].reverse().join('')) };
    };`,
  );
  const result = await engine.run(name, {}, { caller: 'test' });
  expect(result.ok, JSON.stringify(result)).toBe(true);
  return JSON.stringify(result);
}

function expectNoSecret(text: string): void {
  for (const [name, secret] of Object.entries(SECRETS)) expect(text.includes(reversed(secret)), `the function recovered the secret of "${name}"`).toBe(false);
}

describe('a vendor echoing a stored secret in an encoding other servers use', () => {
  it('percent-encoding with lowercase hex (as .NET HttpUtility.UrlEncode writes it)', async () => {
    routes.set('/lower-percent', (res) => res.end(encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())));
    expectNoSecret(await seenBy('/lower-percent'));
  });

  it('JSON with <, > and & as \\u escapes (as Go encoding/json writes them)', async () => {
    routes.set('/go-json', (res) => res.end(JSON.stringify({ key: HTML }).replace(/[<>&]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)));
    expectNoSecret(await seenBy('/go-json'));
  });

  it('JSON with non-ASCII as \\u escapes (as Python json.dumps writes it)', async () => {
    routes.set('/python-json', (res) => res.end(JSON.stringify({ key: ACCENT }).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)));
    expectNoSecret(await seenBy('/python-json'));
  });

  it('JSON with +, <, >, &, \', ", ` and non-ASCII as uppercase \\u escapes (as .NET System.Text.Json writes them)', async () => {
    const dotnet = (text: string) => JSON.stringify(text).replace(/[+<>&'`\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`);
    routes.set('/dotnet-json', (res) => res.end(`{"a":${dotnet(SECRET)},"b":${dotnet(HTML)},"c":${dotnet(ACCENT)}}`));
    expectNoSecret(await seenBy('/dotnet-json'));
  });

  it('base64 wrapped in lines (MIME), with the break inside the secret at every alignment', async () => {
    // A MIME body whose 76-column line break falls inside the secret's base64, for each of the three alignments.
    routes.set('/mime', (res) => res.end([54, 55, 56].map((n) => mime(Buffer.from(`${'m'.repeat(n)}${SECRET}${'n'.repeat(30)}`))).join('\r\n\r\n')));
    expectNoSecret(await seenBy('/mime'));
  });

  it('base64url without padding, inside a JWT-like token at each alignment', async () => {
    const jwt = (lead: string) => ['{"alg":"none"}', `{"${lead}":"${SECRET}","t":"${TOKEN}"}`, ''].map((part) => Buffer.from(part).toString('base64url')).join('.');
    routes.set('/jwt', (res) => res.end([jwt('a'), jwt('ab'), jwt('abc')].join('\r\n\r\n')));
    expectNoSecret(await seenBy('/jwt'));
  });

  it('hex (lower and upper case)', async () => {
    routes.set('/hex', (res) => res.end(`${Buffer.from(SECRET).toString('hex')} ${Buffer.from(TOKEN).toString('hex').toUpperCase()}`));
    expectNoSecret(await seenBy('/hex'));
  });
});

describe('a vendor echoing a stored secret outside the body', () => {
  it('in a header name', async () => {
    routes.set('/header-name', (res) => res.writeHead(200, { [`x-${TOKEN}`]: '1', [`X-Echo-${TOKEN.toUpperCase()}`]: '2' }).end('ok'));
    expectNoSecret(await seenBy('/header-name'));
  });

  it('in a header value as UTF-8 bytes (which the host reads as latin1)', async () => {
    routes.set('/header-utf8', (res) => {
      res.setHeader('x-echo', ACCENT);
      res.end('ok');
    });
    expectNoSecret(await seenBy('/header-utf8'));
  });

  it('in a Set-Cookie, several times', async () => {
    routes.set('/cookie', (res) => res.writeHead(200, [['Set-Cookie', `session=${SECRET}; HttpOnly`], ['Set-Cookie', `b=${encodeURIComponent(SECRET)}`]]).end('ok'));
    expectNoSecret(await seenBy('/cookie'));
  });

  it('in a redirect Location the function reads (redirect: "manual")', async () => {
    routes.set('/manual', (res) => res.writeHead(302, { location: `/next?k=${encodeURIComponent(SECRET)}&t=${TOKEN}` }).end());
    expectNoSecret(await seenBy('/manual', `{ redirect: 'manual' }`));
  });

  it('in a redirect Location that ends the fetch (redirect: "error")', async () => {
    routes.set('/error', (res) => res.writeHead(302, { location: `/next?k=${SECRET}` }).end());
    expectNoSecret(await seenBy('/error', `{ redirect: 'error' }`));
  });

  it('in the final URL after a redirect, with the secret in the path and the query', async () => {
    routes.set('/follow', (res) => res.writeHead(302, { location: `/landed/${encodeURIComponent(SECRET)}?k=${TOKEN}` }).end());
    routes.set('/landed', (res) => res.end('ok'));
    expectNoSecret(await seenBy('/follow'));
  });

  it('in a redirect Location whose characters the URL parser percent-encodes on the way (<, >, non-ASCII), in the final URL and in a refusal', async () => {
    routes.set('/parsed', (res) => res.writeHead(302, { location: `/landed/${HTML}/${ACCENT}?k=${HTML}&a=${ACCENT}` }).end());
    expectNoSecret(await seenBy('/parsed'));
    routes.set('/parsed-away', (res) => res.writeHead(302, { location: `https://not-allowed.example/${HTML}/${ACCENT}?k=${HTML}&a=${ACCENT}` }).end());
    expectNoSecret(await seenBy('/parsed-away'));
  });

  it('in the status text and in a content coding the host cannot decode (the refusal quotes it)', async () => {
    routes.set('/status', (res) => res.writeHead(200, `OK ${SECRET}`).end('ok'));
    expectNoSecret(await seenBy('/status'));
    routes.set('/coding', (res) => res.writeHead(200, { 'content-encoding': `x-${TOKEN}` }).end('ok'));
    expectNoSecret(await seenBy('/coding'));
  });
});

describe('a vendor splitting or wrapping the body', () => {
  it('a secret straddling three chunks sent apart', async () => {
    routes.set('/chunks', (res) => {
      const third = Math.ceil(SECRET.length / 3);
      res.write(`a${SECRET.slice(0, third)}`);
      setTimeout(() => res.write(SECRET.slice(third, 2 * third)), 30);
      setTimeout(() => res.end(`${SECRET.slice(2 * third)}z`), 60);
    });
    expectNoSecret(await seenBy('/chunks'));
  });

  it('stacked content codings (gzip, then br)', async () => {
    routes.set('/stacked', (res) => res.writeHead(200, { 'content-encoding': 'gzip, br' }).end(brotliCompressSync(gzipSync(JSON.stringify({ SECRET, TOKEN })))));
    expectNoSecret(await seenBy('/stacked'));
  });
});

describe('a vendor stacking content codings to make the host work', () => {
  /** A gzip stream of `blocks` empty stored blocks: 5 bytes each on the wire, nothing when decoded. */
  const emptyGzip = (blocks: number) =>
    Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]), Buffer.alloc(5 * blocks, Buffer.from([0, 0, 0, 0xff, 0xff])), Buffer.from([1, 0, 0, 0xff, 0xff]), Buffer.alloc(8)]);

  /** The run of a function that fetches `path` under a 1 MB response limit. */
  async function fetched(name: string, path: string) {
    await defineFunction(
      engine,
      { name, allowedHosts: [`127.0.0.1:${port}`], limits: { responseBytes: 1_048_576 }, timeoutMs: 20_000 },
      `export default async (a, ctx) => ctx.fetch('http://127.0.0.1:${port}${path}').then(async (r) => ({ length: (await r.text()).length }), (e) => ({ code: e.code, message: e.message }))`,
    );
    return engine.run(name, {}, { caller: 'test' });
  }

  it('a layer that decodes past the response limit is stopped there, though the last layer decodes to nothing', async () => {
    // 2 MB of empty gzip blocks inside gzip: a few KB on the wire, an empty body at the end.
    const inner = emptyGzip(400_000);
    routes.set('/expanding', (res) => res.writeHead(200, { 'content-encoding': 'gzip, gzip' }).end(gzipSync(inner)));
    expect(await fetched('expanding_layers', '/expanding')).toMatchObject({ ok: false, error: { code: 'response_too_large' } });
    // The same stack under the limit is decoded as usual.
    routes.set('/small-layers', (res) => res.writeHead(200, { 'content-encoding': 'gzip, gzip' }).end(gzipSync(emptyGzip(1_000))));
    expect(await fetched('small_layers', '/small-layers')).toMatchObject({ ok: true, value: { length: 0 } });
  });

  it('more than five stacked codings are refused in one line', async () => {
    let body = Buffer.from('deep');
    for (let i = 0; i < 6; i++) body = gzipSync(body);
    routes.set('/six', (res) => res.writeHead(200, { 'content-encoding': Array(6).fill('gzip').join(', ') }).end(body));
    expect(await fetched('six_codings', '/six')).toMatchObject({
      ok: true,
      value: { code: 'fetch_failed', message: `GET http://127.0.0.1:${port}/six: the response has 6 content codings stacked; the host decodes at most 5` },
    });
  });
});

describe('a secret changed by another process while a run is going', () => {
  it('is redacted from the responses the run gets after the change', async () => {
    const LATER = `later-${rand()}`;
    let listed = 'none';
    routes.set('/later', (res) => res.end(listed));
    routes.set('/rotate', (res) => {
      // Another process on the same data folder stores a new secret, then the vendor lists it.
      const elsewhere = createEngine({ dataDir: engine.dataDir, secrets: new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!) });
      elsewhere.credentials
        .set({ name: 'later', hosts: ['api.later.example'], placement: { kind: 'header', header: 'X-Api-Key', template: '{secret}' } }, LATER)
        .finally(() => elsewhere.close())
        .then(() => {
          listed = LATER;
          res.end('rotated');
        }, (error: Error) => res.writeHead(500).end(error.message));
    });
    await defineFunction(
      engine,
      { name: 'during_rotation', allowedHosts: [`127.0.0.1:${port}`], timeoutMs: 20_000 },
      `export default async (a, ctx) => {
        const base = 'http://127.0.0.1:${port}';
        const before = await (await ctx.fetch(base + '/later')).text();
        const rotated = await (await ctx.fetch(base + '/rotate')).text();
        const after = await (await ctx.fetch(base + '/later')).text();
        return [before, rotated, [...after].reverse().join('')];
      };`,
    );
    try {
      const result = await engine.run('during_rotation', {}, { caller: 'test' });
      expect(result).toMatchObject({ ok: true, value: ['none', 'rotated', reversed('[redacted:later]')] });
    } finally {
      await engine.credentials.remove('later').catch(() => {});
    }
  });
});

describe('when the version of the stored secrets cannot be read', () => {
  it('the response is refused in one line, not thrown from the response handler (which would take the engine down)', async () => {
    const damaged = testEngine();
    await damaged.credentials.set({ name: 'vendor', hosts: ['api.vendor.example'], placement: { kind: 'header', header: 'X-Api-Key', template: '{secret}' } }, SECRET);
    routes.set('/plain', (res) => res.end(`echo ${SECRET}`));
    await defineFunction(
      damaged,
      { name: 'reads_plain', allowedHosts: [`127.0.0.1:${port}`] },
      `export default async (a, ctx) => ctx.fetch('http://127.0.0.1:${port}/plain').then((r) => r.text(), (e) => ({ code: e.code, message: e.message }))`,
    );
    // Another connection makes reading credentials_version fail, as a damaged page would (SQLite's own error).
    const other = new Database(join(damaged.dataDir, DATABASE_FILE));
    other.exec(`ALTER TABLE settings RENAME TO settings_kept;
      CREATE VIEW settings AS SELECT key, CASE key WHEN 'credentials_version' THEN json('{damaged') ELSE value END AS value FROM settings_kept;`);
    other.close();
    const result = await damaged.run('reads_plain', {}, { caller: 'test' });
    expect(result).toMatchObject({ ok: true, value: { code: 'internal' } });
    const message = (result as { value: { message: string } }).value.message;
    expect(message).toMatch(/^the response was not given to the function: the stored secrets could not be read to remove them from it \(/);
    expect(message.split('\n')).toHaveLength(1);
  });
});
