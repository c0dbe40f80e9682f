import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, KeychainSecretStore } from '../../src-main/engine/index.ts';
import { defineFunction, testEngine } from '../support/engine.ts';
import { privateKeyring, type PrivateKeyring } from '../support/keyring.ts';
import { vendorServer } from '../support/vendor.ts';

// The real Secret Service started by test/setup/keychain.ts. The secrets have characters that the
// URL, form and JSON encodings change ('/', '+', '=', '!').
const SECRET = `sk/live+${Math.random().toString(36).slice(2)}=key!`;
const OTHER = `other/${Math.random().toString(36).slice(2)}+secret`;
const ROTATED = `rotated-${Math.random().toString(36).slice(2)}`;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const reversed = (s: string) => [...s].reverse().join('');
const codes = (s: string) => Array.from(s, (c) => c.charCodeAt(0)).join(',');
/** What a function could make of the secret: none of it may be found anywhere the run leaves. */
const RECOVERED = [SECRET, reversed(SECRET), b64(SECRET), codes(SECRET), encodeURIComponent(SECRET), OTHER, reversed(OTHER), b64(OTHER), ROTATED, reversed(ROTATED)];

function expectNoSecret(text: string, where: string): void {
  for (const form of RECOVERED) expect(text.includes(form), `${where} holds ${form}`).toBe(false);
}

/** Every file below `dir`, read whole. */
function filesUnder(dir: string): Array<{ path: string; bytes: Buffer }> {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile())
    .map((path) => ({ path, bytes: readFileSync(path) }));
}

const engine = testEngine({ secrets: new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!) });
let port: number;
/** What the vendor's /keys lists. */
let listed = [OTHER];

beforeAll(async () => {
  const vendor = await vendorServer((req, res) => {
    const key = String(req.headers['x-api-key'] ?? '');
    if (req.url === '/echo') {
      // The key as vendors echo it: in the JSON body, in headers, base64'd (also after a prefix, as in a Basic header), URL- and form-encoded.
      res.writeHead(200, { 'content-type': 'application/json', 'x-echo-key': key, 'x-echo-b64': b64(key), 'x-echo-auth': `Basic ${b64(`user:${key}`)}` });
      res.end(JSON.stringify({ key, b64: b64(key), basic: b64(`user:${key}`), shifted: b64(`ab${key}`), url: encodeURIComponent(key), form: new URLSearchParams({ key }).toString() }));
    } else if (req.url === '/split') {
      // The key split across two chunks of a large body, the second sent after a pause.
      res.writeHead(200, { 'content-type': 'text/plain' });
      const half = key.length >> 1;
      res.write(`${'x'.repeat(70_000)}${key.slice(0, half)}`);
      setTimeout(() => res.end(`${key.slice(half)}${'y'.repeat(10)}`), 50);
    } else if (req.url === '/gzip') {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/json' });
      res.end(gzipSync(JSON.stringify({ key })));
    } else if (req.url === '/compress') {
      res.writeHead(200, { 'content-encoding': 'compress' });
      res.end(key);
    } else if (req.url === '/keys') {
      // A vendor that lists another stored secret, to a request that carries none.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: listed }));
    } else if (req.url === '/away') {
      res.writeHead(302, { location: `https://not-allowed.example/back?k=${key}` }).end();
    } else res.writeHead(404).end();
  });
  port = vendor.port;
  const header = { kind: 'header', header: 'X-Api-Key', template: '{secret}' } as const;
  await engine.credentials.set({ name: 'vendor', hosts: [`127.0.0.1:${port}`], placement: header }, SECRET);
  await engine.credentials.set({ name: 'other', hosts: ['api.other.example'], placement: header }, OTHER);
});

afterAll(async () => {
  await engine.credentials.remove('vendor');
  await engine.credentials.remove('other');
});

// Reverses, base64s and char-codes every field it got, and tries to decode what looks encoded.
const SOURCE = (port: number) => `
  const attempt = (f) => { try { return f(); } catch (e) { return 'threw: ' + e.message; } };
  const spread = (s) => [s, [...s].reverse().join(''), attempt(() => btoa(s)), Array.from(s, (c) => c.charCodeAt(0)).join(','), attempt(() => atob(s)), attempt(() => decodeURIComponent(s))];
  export default async (a, ctx) => {
    const base = 'http://127.0.0.1:${port}';
    const echo = await ctx.fetch(base + '/echo', { credential: 'vendor' });
    const body = await echo.json();
    const fields = [...Object.values(body), new URLSearchParams(body.form).get('key'), ...[...echo.headers.values()]];
    const split = await (await ctx.fetch(base + '/split', { credential: 'vendor' })).text();
    const gzip = await (await ctx.fetch(base + '/gzip', { credential: 'vendor' })).json();
    const keys = await (await ctx.fetch(base + '/keys')).json();
    const away = await ctx.fetch(base + '/away', { credential: 'vendor' }).then(() => 'followed', (e) => e.message);
    const bytes = Array.from(new Uint8Array(await (await ctx.fetch(base + '/echo', { credential: 'vendor' })).arrayBuffer()));
    return {
      key: body.key,
      header: echo.headers.get('x-echo-key'),
      splitTail: split.slice(70_000),
      gzip: gzip.key,
      keys: keys.keys,
      away,
      spread: [...fields, split.slice(70_000), gzip.key, ...keys.keys, away].map(spread),
      bytes: String.fromCharCode(...bytes).split('').reverse().join(''),
    };
  };`;

describe('a secret the vendor echoes back never enters the sandbox', () => {
  it('reaches the function only as [redacted:NAME], so no transformation recovers it from the result, the run history, a saved test or the export', async () => {
    await defineFunction(engine, { name: 'echo_key', allowedHosts: [`127.0.0.1:${port}`], credentials: ['vendor'], timeoutMs: 20_000 }, SOURCE(port));
    const result = await engine.run('echo_key', {}, { caller: 'console' });
    expect(result.ok, JSON.stringify(result)).toBe(true);
    if (!result.ok) return;
    // The function saw the redacted text in every place the key came back.
    expect(result.value).toMatchObject({
      key: '[redacted:vendor]',
      header: '[redacted:vendor]',
      splitTail: '[redacted:vendor]yyyyyyyyyy',
      gzip: '[redacted:vendor]',
      keys: ['[redacted:other]'],
    });
    expect((result.value as { away: string }).away).toBe(
      `GET https://not-allowed.example/back?k=[redacted:vendor] refused: not-allowed.example is not an allowed host: allowedHosts is 127.0.0.1:${port}; add it to the function's allowedHosts`,
    );
    expectNoSecret(JSON.stringify(result), 'the result');

    const kept = await engine.tests.fromRun(result.runId, 'echoed');
    expectNoSecret(JSON.stringify(kept), 'the saved test');
    expectNoSecret(JSON.stringify(engine.runs.list({ functionName: 'echo_key' })), 'the run history');

    engine.runs.flush();
    for (const { path, bytes } of filesUnder(engine.dataDir)) expectNoSecret(bytes.toString('latin1'), path);
    const out = mkdtempSync(join(tmpdir(), 'callable-export-'));
    try {
      engine.exportFunctions(out, ['echo_key']);
      const files = filesUnder(out);
      expect(files.some((f) => f.path.endsWith(join('tests', 'echoed.json')))).toBe(true);
      for (const { path, bytes } of files) expectNoSecret(bytes.toString('latin1'), path);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('knows a secret changed since, also by another process on the same data folder', async () => {
    await defineFunction(engine, { name: 'lists_keys', allowedHosts: [`127.0.0.1:${port}`] }, `export default async (a, ctx) => (await ctx.fetch('http://127.0.0.1:${port}/keys')).json()`);
    expect(await engine.run('lists_keys', {}, { caller: 'test' })).toMatchObject({ ok: true, value: { keys: ['[redacted:other]'] } });
    const elsewhere = createEngine({ dataDir: engine.dataDir, secrets: new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!) });
    try {
      await elsewhere.credentials.set({ name: 'other', hosts: ['api.other.example'], placement: { kind: 'header', header: 'X-Api-Key', template: '{secret}' } }, ROTATED);
    } finally {
      elsewhere.close();
    }
    listed = [ROTATED, OTHER];
    const result = await engine.run('lists_keys', {}, { caller: 'test' });
    // The old value is no longer a stored secret: only the new one is replaced.
    expect(result).toMatchObject({ ok: true, value: { keys: ['[redacted:other]', OTHER] } });
    listed = [OTHER];
  });

  it('refuses a response in a content coding the host cannot decode, since it could not be searched', async () => {
    await defineFunction(
      engine,
      { name: 'compressed', allowedHosts: [`127.0.0.1:${port}`], credentials: ['vendor'] },
      `export default async (a, ctx) => ctx.fetch('http://127.0.0.1:${port}/compress', { credential: 'vendor', headers: { 'accept-encoding': 'compress' } }).then((r) => r.text(), (e) => e.code + ': ' + e.message)`,
    );
    const result = await engine.run('compressed', {}, { caller: 'test' });
    expect(result).toMatchObject({
      ok: true,
      value: `fetch_failed: GET http://127.0.0.1:${port}/compress: the response is encoded as "compress", which the host cannot decode to check it for secrets; send accept-encoding: gzip, deflate, br (or none)`,
    });
  });
});

describe('when the stored secrets cannot be read', () => {
  // A private gnome-keyring (test/support/keyring.ts), locked over D-Bus as a screen lock would.
  let keyring: PrivateKeyring;
  let locked: ReturnType<typeof testEngine>;
  beforeAll(async () => {
    keyring = await privateKeyring();
    locked = testEngine({ secrets: new KeychainSecretStore('Callable Studio Echo Lock', { env: keyring.env }) });
    await locked.credentials.set({ name: 'other', hosts: ['api.other.example'], placement: { kind: 'header', header: 'X-Api-Key', template: '{secret}' } }, OTHER);
    keyring.lock();
  });
  afterAll(() => keyring.stop());

  it("a response is not given to the function, which is told the keychain's reason in one line", async () => {
    await defineFunction(locked, { name: 'lists_keys', allowedHosts: [`127.0.0.1:${port}`] }, `export default async (a, ctx) => ctx.fetch('http://127.0.0.1:${port}/keys').then((r) => r.text(), (e) => ({ code: e.code, message: e.message }))`);
    const result = await locked.run('lists_keys', {}, { caller: 'test' });
    expect(result).toMatchObject({ ok: true, value: { code: 'keychain_locked' } });
    const message = (result as { value: { message: string } }).value.message;
    expect(message).toMatch(/^the response was not given to the function: the stored secrets could not be read to remove them from it \(the keychain is locked \(unlock it and retry\)/);
    expect(message.split('\n')).toHaveLength(1);
    expectNoSecret(JSON.stringify(result), 'the result');
  });
});

describe('a data folder without credentials', () => {
  // Its keychain is on a bus that does not exist: any read would fail with keychain_unavailable.
  const bare = testEngine({ secrets: new KeychainSecretStore('Callable Studio Echo None', { env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus' } }) });

  it('gives responses without asking the keychain', async () => {
    await defineFunction(bare, { name: 'lists_keys', allowedHosts: [`127.0.0.1:${port}`] }, `export default async (a, ctx) => (await ctx.fetch('http://127.0.0.1:${port}/keys')).json()`);
    expect(await bare.run('lists_keys', {}, { caller: 'test' })).toMatchObject({ ok: true, value: { keys: listed } });
  });
});
