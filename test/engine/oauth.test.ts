import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { KeychainSecretStore } from '../../src-main/engine/index.ts';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { defineFunction, testEngine } from '../support/engine.ts';
import { privateKeyring, type PrivateKeyring } from '../support/keyring.ts';
import { until } from '../support/wait.ts';
import { APP, bearersSeen, LONG_LIVED, MACHINE, oauthProvider, signIn, untilRefreshDue, type OAuthProvider } from '../support/oauthProvider.ts';

// The real Secret Service started by test/setup/keychain.ts, and a real oidc-provider whose access
// tokens live 2 seconds, so every test below crosses at least one refresh.
const keychain = () => new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!);
const engine = testEngine({ secrets: keychain() });
let op: OAuthProvider;

/** A function that calls the resource server `times` times (or its argument `times`), `gapMs` apart, through credential `name`. */
async function caller(fn: string, name: string, times: number, gapMs: number): Promise<void> {
  await defineFunction(
    engine,
    { name: fn, allowedHosts: [`127.0.0.1:${op.resource.port}`], credentials: [name], timeoutMs: 30_000 },
    `export default async (a, ctx) => {
      const seen = [];
      for (let i = 0; i < (a?.times ?? ${times}); i++) {
        const r = await ctx.fetch('${op.resource.origin}/items/' + i, { credential: '${name}' });
        seen.push(r.status);
        if (!r.ok) return { seen, text: await r.text() };
        await new Promise((f) => setTimeout(f, ${gapMs}));
      }
      return { seen };
    }`,
  );
}

/** The keychain entry of the OAuth secret `kind` of `name` in this data folder. */
function storedSecret(kind: 'credential' | 'oauth-refresh' | 'oauth-client', name: string, of = { engine, store: keychain() }): Promise<string | undefined> {
  const db = new Database(join(of.engine.dataDir, DATABASE_FILE), { readonly: true });
  const installId = (db.prepare("SELECT value FROM settings WHERE key = 'install_id'").get() as { value: string }).value;
  db.close();
  return of.store.get(`${installId}:${kind}:${name}`);
}

function filesUnder(dir: string): Array<{ path: string; text: string }> {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile())
    .map((path) => ({ path, text: readFileSync(path).toString('latin1') }));
}

beforeAll(async () => {
  op = await oauthProvider({ accessTokenTtl: 2 });
});

describe('client credentials', () => {
  it('connects with the client secret, and a call lasting past two token lifetimes never fails: the host refreshes before the token expires', async () => {
    const info = await engine.credentials.connect(
      { name: 'machine', hosts: [`127.0.0.1:${op.resource.port}`], issuer: op.issuer, clientId: MACHINE.id, scopes: ['read'], grant: 'client_credentials' },
      { clientSecret: MACHINE.secret },
    );
    expect(info).toMatchObject({ name: 'machine', kind: 'oauth', state: 'connected', scopes: ['read'], account: MACHINE.id, issuer: op.issuer, hasSecret: true });
    expect(Date.parse(info.expiresAt!) - Date.now()).toBeLessThanOrEqual(2000);
    const before = op.tokenRequests.length;
    await caller('machine_calls', 'machine', 10, 500);
    const result = await engine.run('machine_calls', {}, { caller: 'test' });
    expect(result).toMatchObject({ ok: true, value: { seen: Array(10).fill(200) } });
    // 5 s of calls with 2 s tokens refreshed at half their life: a new token about every second, not one per call.
    const refreshes = op.tokenRequests.length - before;
    expect(refreshes).toBeGreaterThanOrEqual(2);
    expect(refreshes).toBeLessThan(10);
  });

  it('a database that refuses the save leaves no token or client secret of a new credential in the keychain', async () => {
    const blocker = new Database(join(engine.dataDir, DATABASE_FILE));
    blocker.exec('BEGIN IMMEDIATE');
    try {
      await expect(
        engine.credentials.connect(
          { name: 'blocked', hosts: [`127.0.0.1:${op.resource.port}`], issuer: op.issuer, clientId: MACHINE.id, scopes: [], grant: 'client_credentials' },
          { clientSecret: MACHINE.secret },
        ),
      ).rejects.toThrow(/is busy: another Callable Studio process is writing/);
    } finally {
      blocker.exec('ROLLBACK');
      blocker.close();
    }
    expect(engine.credentials.find('blocked')).toBeUndefined();
    expect(await storedSecret('credential', 'blocked')).toBeUndefined();
    expect(await storedSecret('oauth-client', 'blocked')).toBeUndefined();
  });

  it('ctx.secret gives a placeholder the host swaps for a fresh access token, across refreshes', async () => {
    await defineFunction(
      engine,
      { name: 'sdk_style', allowedHosts: [`127.0.0.1:${op.resource.port}`], credentials: ['machine'], timeoutMs: 20_000 },
      `export default async (a, ctx) => {
        const headers = { authorization: 'Bearer ' + ctx.secret('machine') };
        const seen = [];
        for (let i = 0; i < 4; i++) {
          seen.push((await ctx.fetch('${op.resource.origin}/sdk/' + i, { headers })).status);
          await new Promise((f) => setTimeout(f, 700));
        }
        return seen;
      }`,
    );
    const before = op.tokenRequests.length;
    expect(await engine.run('sdk_style', {}, { caller: 'test' })).toMatchObject({ ok: true, value: [200, 200, 200, 200] });
    expect(op.tokenRequests.length).toBeGreaterThan(before);
  });

  it('keeps none of the tokens a refresh brings back after the credential was disconnected while it was out', async () => {
    // A token endpoint in front of the provider's that holds requests while told to.
    let holding = false;
    const held: Array<() => void> = [];
    const proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const forward = async () => {
          const answer = await fetch(`${op.issuer}/token`, {
            method: 'POST',
            headers: { 'content-type': req.headers['content-type'] ?? '', ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) },
            body: Buffer.concat(chunks),
          });
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await answer.arrayBuffer()));
        };
        if (holding) held.push(() => void forward());
        else void forward();
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const tokenUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/token`;
      await engine.credentials.connect(
        { name: 'raced', hosts: [`127.0.0.1:${op.resource.port}`], issuer: op.issuer, tokenUrl, clientId: LONG_LIVED.id, scopes: [], grant: 'client_credentials' },
        { clientSecret: LONG_LIVED.secret },
      );
      const first = await storedSecret('credential', 'raced');
      expect(first).toBeDefined();
      holding = true;
      const generation = (await engine.credentials.oauth.fresh('raced'))!;
      const refreshing = engine.credentials.oauth.newerThan('raced', generation);
      await until(() => held.length === 1, 'the refresh to reach the token endpoint');
      await engine.credentials.oauth.disconnect('raced');
      held[0]!();
      await expect(refreshing).rejects.toThrow('credential "raced" is not connected; nothing was sent: callable credentials connect raced');
      expect(await storedSecret('credential', 'raced')).toBeUndefined();
      expect(engine.credentials.oauth.status('raced')).toMatchObject({ state: 'not_connected', expiresAt: null });
    } finally {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  it('answers a 401 to a token the server dropped early with one refresh and one retry of the request', async () => {
    // A 5-minute token: no refresh is due during the test, so the only one is the 401's.
    await engine.credentials.connect(
      { name: 'slow', hosts: [`127.0.0.1:${op.resource.port}`], issuer: op.issuer, clientId: LONG_LIVED.id, scopes: [], grant: 'client_credentials' },
      { clientSecret: LONG_LIVED.secret },
    );
    await defineFunction(
      engine,
      { name: 'slow_call', allowedHosts: [`127.0.0.1:${op.resource.port}`], credentials: ['slow'] },
      `export default async (a, ctx) => (await ctx.fetch('${op.resource.origin}/x', { credential: 'slow' })).status`,
    );
    expect(await engine.run('slow_call', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 200 });
    const token = bearersSeen(op.resource).at(-1);
    await (await op.provider.ClientCredentials.find(token!))!.destroy();
    const requests = op.tokenRequests.length;
    const rejected = op.resource.rejected;
    const run = await engine.run('slow_call', {}, { caller: 'test' });
    expect(run).toMatchObject({ ok: true, value: 200 });
    expect(op.tokenRequests.length).toBe(requests + 1);
    expect(op.resource.rejected).toBe(rejected + 1);
    expect(run.trace?.map((t) => t.status)).toEqual([401, 200]);
  });
});

describe('authorization code with PKCE', () => {
  it('signs in through the provider pages via the loopback redirect, rotates the refresh token as the access token expires, and marks a revoked grant needs_reconnect without looping', async () => {
    const info = await engine.credentials.connect(
      { name: 'user', hosts: [`127.0.0.1:${op.resource.port}`], issuer: op.issuer, clientId: APP.id, scopes: ['openid', 'email', 'offline_access', 'read'], grant: 'code' },
      {
        onAuthorizeUrl: (url) => {
          const u = new URL(url);
          expect(u.searchParams.get('code_challenge_method')).toBe('S256');
          expect(u.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
          void signIn(url, 'ada');
        },
      },
    );
    expect(info).toMatchObject({ kind: 'oauth', state: 'connected', account: 'ada' });
    expect(info.scopes).toEqual(expect.arrayContaining(['openid', 'read']));

    const firstRefresh = await storedSecret('oauth-refresh', 'user');
    expect(firstRefresh).toBeTruthy();
    await caller('user_calls', 'user', 6, 500);
    expect(await engine.run('user_calls', {}, { caller: 'test' })).toMatchObject({ ok: true, value: { seen: Array(6).fill(200) } });
    expect(op.tokenRequests.filter((r) => r.grantType === 'refresh_token').length).toBeGreaterThanOrEqual(1);
    // Rotation: a new refresh token is stored, and the first one is spent at the server.
    const rotated = await storedSecret('oauth-refresh', 'user');
    expect(rotated).not.toBe(firstRefresh);
    expect(await op.provider.RefreshToken.find(firstRefresh!)).toMatchObject({ consumed: expect.anything() });

    // The user revokes the grant at the provider: the next refresh is refused (invalid_grant).
    await (await op.provider.RefreshToken.find(rotated!))!.destroy();
    await untilRefreshDue(engine.dataDir, 'user');
    const failed = await engine.run('user_calls', {}, { caller: 'test' });
    expect(failed.ok).toBe(false);
    expect(!failed.ok && failed.error.message).toMatch(/credential "user" needs to be connected again .*: callable credentials connect user$/);
    expect((await engine.credentials.list()).find((c) => c.name === 'user')).toMatchObject({ state: 'needs_reconnect' });
    const requests = op.tokenRequests.length;
    const again = await engine.run('user_calls', {}, { caller: 'test' });
    expect(!again.ok && again.error.message).toMatch(/needs to be connected again/);
    expect(op.tokenRequests.length).toBe(requests);

    // Connecting again (as the message says) makes it work again, with its grant to the function kept.
    await engine.credentials.connect(
      { name: 'user', hosts: [`127.0.0.1:${op.resource.port}`], issuer: op.issuer, clientId: APP.id, scopes: ['openid', 'read'], grant: 'code' },
      { onAuthorizeUrl: (url) => void signIn(url, 'ada') },
    );
    expect((await engine.credentials.list()).find((c) => c.name === 'user')).toMatchObject({ state: 'connected', grantedTo: ['user_calls'] });
    expect(await engine.run('user_calls', { times: 1 }, { caller: 'test' })).toMatchObject({ ok: true, value: { seen: [200] } });
  });
});

describe('a keychain locked when the token needs refreshing', () => {
  let keyring: PrivateKeyring;
  afterAll(() => keyring?.stop());

  it("fails the call with the keychain's reason before asking the server, so the grant is neither spent nor lost", async () => {
    keyring = await privateKeyring();
    const store = () => new KeychainSecretStore('Callable Studio OAuth Lock', { env: keyring.env });
    const locked = testEngine({ secrets: store() });
    await locked.credentials.connect(
      { name: 'user', hosts: [`127.0.0.1:${op.resource.port}`], issuer: op.issuer, clientId: APP.id, scopes: ['openid', 'read'], grant: 'code' },
      { onAuthorizeUrl: (url) => void signIn(url, 'lee') },
    );
    const refresh = await storedSecret('oauth-refresh', 'user', { engine: locked, store: store() });
    await defineFunction(
      locked,
      { name: 'later', allowedHosts: [`127.0.0.1:${op.resource.port}`], credentials: ['user'] },
      `export default async (a, ctx) => (await ctx.fetch('${op.resource.origin}/later', { credential: 'user' })).status`,
    );
    keyring.lock();
    await untilRefreshDue(locked.dataDir, 'user');
    const requests = op.tokenRequests.length;
    const run = await locked.run('later', {}, { caller: 'test' });
    expect(!run.ok && run.error.message).toMatch(/the keychain is locked \(unlock it and retry\)/);
    expect(op.tokenRequests.length).toBe(requests);
    expect((await op.provider.RefreshToken.find(refresh!))?.consumed).toBeUndefined();
    expect((await locked.credentials.list())[0]).toMatchObject({ name: 'user', state: 'connected' });
  });
});

describe('what is kept', () => {
  it('a token the resource server echoes reaches the function and a saved test only as [redacted:NAME]', async () => {
    await defineFunction(
      engine,
      { name: 'echo_token', allowedHosts: [`127.0.0.1:${op.resource.port}`], credentials: ['machine'] },
      `export default async (a, ctx) => (await ctx.fetch('${op.resource.origin}/echo', { credential: 'machine' })).json()`,
    );
    const result = await engine.run('echo_token', {}, { caller: 'test' });
    expect(result).toMatchObject({ ok: true, value: { ok: true, authorization: expect.stringContaining('[redacted:machine]') } });
    const kept = await engine.tests.fromRun(result.runId, 'echoed');
    expect(JSON.stringify(kept)).toContain('[redacted:machine]');
    for (const token of bearersSeen(op.resource)) expect(JSON.stringify([result, kept]).includes(token)).toBe(false);
  });

  it('no access or refresh token in the database file, the run history, a saved test or an export', async () => {
    const tokens = [...bearersSeen(op.resource)];
    for (const name of ['machine', 'user']) {
      const refresh = await storedSecret('oauth-refresh', name);
      if (refresh) tokens.push(refresh);
    }
    expect(tokens.length).toBeGreaterThan(5);
    engine.runs.flush();
    const history = ['user_calls', 'machine_calls', 'echo_token'].map((functionName) => JSON.stringify(engine.runs.list({ functionName }))).join('');
    const out = mkdtempSync(join(tmpdir(), 'callable-export-'));
    engine.exportFunctions(out, ['user_calls', 'machine_calls', 'echo_token']);
    const listed = JSON.stringify(await engine.credentials.list());
    for (const token of tokens) {
      expect(history.includes(token)).toBe(false);
      expect(listed.includes(token)).toBe(false);
      for (const { path, text } of [...filesUnder(engine.dataDir), ...filesUnder(out)]) expect(text.includes(token), `${path} holds a token`).toBe(false);
    }
  });
});
