import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeychainSecretStore } from '../../src-main/engine/index.ts';
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


  it('hex (lower and upper case)', async () => {
    routes.set('/hex', (res) => res.end(`${Buffer.from(SECRET).toString('hex')} ${Buffer.from(TOKEN).toString('hex').toUpperCase()}`));
    expectNoSecret(await seenBy('/hex'));
  });
});

describe('a vendor echoing a stored secret outside the body', () => {

  it('in a header value as UTF-8 bytes (which the host reads as latin1)', async () => {
    routes.set('/header-utf8', (res) => {
      res.setHeader('x-echo', ACCENT);
      res.end('ok');
    });
    expectNoSecret(await seenBy('/header-utf8'));
  });





});
