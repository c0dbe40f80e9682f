import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineProcess } from '../../src-main/app/engineProcess.ts';
import { createEngine, KeychainSecretStore, type Engine } from '../../src-main/engine/index.ts';
import type { CredentialView } from '../../src-preload/contract.ts';
import { REPO } from '../support/callable.ts';
import { until } from '../support/wait.ts';
import { APP, MACHINE, oauthProvider, signIn, type OAuthProvider } from '../support/oauthProvider.ts';

// The studio's Connect, Reconnect and Disconnect as the window's bridge calls reach them: through the
// relay Electron main uses, to a real engine process, against a real oidc-provider whose access tokens
// live 2 seconds. The relay's `openExternal` stands in for the system browser: it gets only what the
// relay's check lets through, and signs in on the provider's own pages.
let op: OAuthProvider;
let relay: EngineProcess;
/** This process's engine on the same data folder and keychain: what the CLI or the OpenAPI scaffold would have stored. */
let local: Engine;
const dataDir = mkdtempSync(join(tmpdir(), 'callable-oauth-studio-'));
const opened: string[] = [];
const diagnostics: string[] = [];
/** What the "browser" does with the next page it is asked to open. */
let browser: (url: string) => void | Promise<void> = () => {};

beforeAll(async () => {
  op = await oauthProvider({ accessTokenTtl: 2 });
  relay = new EngineProcess({
    node: { ok: true, path: process.execPath, version: process.versions.node },
    entry: join(REPO, 'src-main/engineProcess/main.ts'),
    args: ['--data-dir', dataDir, '--mcp-port', '0'],
    diagnostic: (message) => diagnostics.push(message),
    openExternal: (url) => {
      opened.push(url);
      return browser(url);
    },
  });
  await relay.start();
  local = createEngine({ dataDir, secrets: new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!) });
}, 60_000);
afterAll(async () => {
  await relay?.close();
  local?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function call(method: string, request: unknown): Promise<unknown> {
  const envelope = await relay.invoke(method, request);
  if (!envelope.ok) throw Object.assign(new Error(envelope.error.message), envelope.error);
  return envelope.value;
}

async function listed(name: string): Promise<CredentialView> {
  const { credentials } = (await call('credentials:list', {})) as { credentials: CredentialView[] };
  return credentials.find((c) => c.name === name)!;
}

/** A function of the studio's catalog that calls the resource server once through `credential`, granted it. */
async function caller(fn: string, credential: string): Promise<void> {
  await call('functions:save', {
    spec: { name: fn, allowedHosts: [`127.0.0.1:${op.resource.port}`], credentials: [credential] },
    source: `export default async (a, ctx) => { const r = await ctx.fetch('${op.resource.origin}/me', { credential: '${credential}' }); return r.ok ? r.json() : r.status; }`,
  });
  await call('credentials:grant', { name: credential, function: fn });
}

const run = (fn: string) => relay.invoke('runs:start', { name: fn, args: {}, token: `${fn}-${Math.random()}` });

describe("the studio's Connect, through the engine process", () => {
  it('opens the sign-in page on the authorization endpoint in the browser, answers connected once signed in, and a function calls through it', async () => {
    local.credentials.defineOAuth({ name: 'account', hosts: [`127.0.0.1:${op.resource.port}`], issuer: op.issuer, scopes: ['openid', 'email', 'offline_access', 'read'], grant: 'code' });
    expect(await listed('account')).toMatchObject({ kind: 'oauth', state: 'not_connected', clientId: '' });
    // The first Connect needs the client id; the server comes from the definition.
    browser = (url) => void signIn(url, 'ada');
    const connected = await call('credentials:connect', { name: 'account', clientId: APP.id });
    expect(connected).toMatchObject({ name: 'account', kind: 'oauth', state: 'connected', account: 'ada', clientId: APP.id, lastRefreshError: null });
    expect(opened).toHaveLength(1);
    const page = new URL(opened[0]!);
    expect(`${page.origin}${page.pathname}`).toBe((connected as CredentialView).authorizationEndpoint);
    expect(page.origin).toBe(op.issuer);
    expect(page.searchParams.get('code_challenge_method')).toBe('S256');
    expect(Date.parse((connected as CredentialView).expiresAt!)).toBeGreaterThan(Date.now());

    await caller('whoami', 'account');
    expect(await run('whoami')).toMatchObject({ ok: true, value: { ok: true, value: { ok: true, sub: 'ada' } } });
  });

  it('a refused refresh shows as needs_reconnect with its reason, and Reconnect asks for nothing but the sign-in', async () => {
    const before = await listed('account');
    // The user revokes the grant at the provider; the token the engine holds reaches its refresh time.
    await (await heldRefreshToken())!.model!.destroy();
    await untilPast(before.expiresAt!, -1000);
    const failed = await run('whoami');
    expect(failed).toMatchObject({ ok: true, value: { ok: false, error: { message: expect.stringMatching(/needs to be connected again .*: callable credentials connect account$/) } } });
    const shown = await listed('account');
    expect(shown).toMatchObject({ state: 'needs_reconnect', lastRefreshError: { message: `invalid_grant: grant request is invalid (from ${op.issuer}/token)`, at: expect.any(String) } });

    browser = (url) => void signIn(url, 'ada');
    expect(await call('credentials:connect', { name: 'account' })).toMatchObject({ state: 'connected', lastRefreshError: null, grantedTo: ['whoami'] });
    expect(await run('whoami')).toMatchObject({ ok: true, value: { ok: true, value: { sub: 'ada' } } });
  });

  it('Disconnect revokes the grant at the server and forgets the tokens; the credential stays, and Connect brings it back', async () => {
    const refresh = await heldRefreshToken();
    expect(refresh?.model).toBeTruthy();
    expect(await call('credentials:disconnect', { name: 'account' })).toEqual({ note: 'revoked at the server' });
    expect(await op.provider.RefreshToken.find(refresh!.value)).toBeUndefined();
    expect(await heldRefreshToken()).toBeUndefined();
    expect(await listed('account')).toMatchObject({ kind: 'oauth', state: 'not_connected', clientId: APP.id, hasSecret: false, account: null, grantedTo: ['whoami'] });
    const requests = op.tokenRequests.length;
    expect(await run('whoami')).toMatchObject({ ok: true, value: { ok: false, error: { message: expect.stringMatching(/credential "account" is not connected; nothing was sent: callable credentials connect account$/) } } });
    expect(op.tokenRequests.length).toBe(requests);

    browser = (url) => void signIn(url, 'ada');
    expect(await call('credentials:connect', { name: 'account' })).toMatchObject({ state: 'connected', account: 'ada' });
  });

  it('Cancel stops waiting for the sign-in; a second Connect while one waits is refused', async () => {
    browser = () => {};
    const pages = opened.length;
    const waiting = relay.invoke('credentials:connect', { name: 'account' });
    await until(() => opened.length === pages + 1, 'the sign-in page to be opened', 10_000);
    expect(await relay.invoke('credentials:connect', { name: 'account' })).toMatchObject({ ok: false, error: { code: 'conflict', message: '"account" is already waiting for its sign-in; finish it in the browser, or cancel it' } });
    expect(await call('credentials:cancelConnect', { name: 'account' })).toEqual({ cancelled: true });
    expect(await waiting).toEqual({ ok: false, error: { code: 'cancelled', message: 'connect was cancelled' } });
    // Still connected as before.
    expect(await listed('account')).toMatchObject({ state: 'connected' });
    expect(await call('credentials:cancelConnect', { name: 'account' })).toEqual({ cancelled: false });
  });

  it('a browser that cannot open the sign-in page ends the connect at once with the reason, and Connect works again after', async () => {
    const pages = opened.length;
    browser = () => Promise.reject(new Error('no default browser is set'));
    expect(await relay.invoke('credentials:connect', { name: 'account' })).toEqual({
      ok: false,
      error: { code: 'cancelled', message: 'the browser could not open the sign-in page: no default browser is set' },
    });
    // (The connect's own wait for the browser is minutes: this answer came from the failure, within the test's time.)
    expect(opened.length).toBe(pages + 1);
    expect(diagnostics).toContainEqual(expect.stringContaining('the browser could not open the sign-in page: no default browser is set (credential "account")'));
    // A browser that throws instead of rejecting is answered the same way, however long its message.
    browser = () => {
      throw new Error(`xdg-open: not found ${'x'.repeat(5000)}`);
    };
    const long = await relay.invoke('credentials:connect', { name: 'account' });
    expect(long).toMatchObject({ ok: false, error: { code: 'cancelled', message: expect.stringMatching(/^the browser could not open the sign-in page: xdg-open: not found x+$/) } });
    expect((long as { error: { message: string } }).error.message).toHaveLength(1000);
    expect(await listed('account')).toMatchObject({ state: 'connected' });
    browser = (url) => void signIn(url, 'ada');
    expect(await call('credentials:connect', { name: 'account' })).toMatchObject({ state: 'connected', account: 'ada' });
  });

  it('Reconnect of a client-credentials credential uses its stored client secret and opens no page', async () => {
    await local.credentials.connect(
      { name: 'machine', hosts: [`127.0.0.1:${op.resource.port}`], issuer: op.issuer, clientId: MACHINE.id, scopes: ['read'], grant: 'client_credentials' },
      { clientSecret: MACHINE.secret },
    );
    const pages = opened.length;
    const requests = op.tokenRequests.length;
    expect(await call('credentials:connect', { name: 'machine' })).toMatchObject({ state: 'connected', account: MACHINE.id, scopes: ['read'] });
    expect(op.tokenRequests.slice(requests).map((r) => r.grantType)).toEqual(['client_credentials']);
    expect(opened.length).toBe(pages);
  });

  it('connects a new account from its issuer, client and grant: client credentials with the secret given, and a sign-in through the browser', async () => {
    const host = `127.0.0.1:${op.resource.port}`;
    const pages = opened.length;
    expect(await call('credentials:connect', { name: 'fresh-machine', issuer: op.issuer, clientId: MACHINE.id, clientSecret: MACHINE.secret, hosts: [host], scopes: ['read'], grant: 'client_credentials' })).toMatchObject({
      name: 'fresh-machine',
      kind: 'oauth',
      state: 'connected',
      account: MACHINE.id,
      hosts: [host],
      scopes: ['read'],
      grant: 'client_credentials',
    });
    expect(opened.length).toBe(pages);
    browser = (url) => void signIn(url, 'kai');
    expect(await call('credentials:connect', { name: 'fresh-user', issuer: op.issuer, clientId: APP.id, hosts: [host], scopes: ['openid', 'read'] })).toMatchObject({ state: 'connected', account: 'kai', grant: 'code' });
    expect(new URL(opened.at(-1)!).origin).toBe(op.issuer);
    const { oauthPresets } = (await call('credentials:list', {})) as { oauthPresets: string[] };
    expect(oauthPresets).toEqual(['github', 'google', 'microsoft', 'slack', 'notion', 'hubspot', 'atlassian', 'linear', 'dropbox', 'spotify']);
    expect(await relay.invoke('credentials:connect', { name: 'nowhere', clientId: APP.id, hosts: [host] })).toMatchObject({
      ok: false,
      error: { code: 'bad_input', message: 'give the authorization server (its issuer URL) or a provider to connect "nowhere"' },
    });
  });

  it('the device grant: the window hears the code to enter on another device, and Connect answers once it is approved there', async () => {
    local.credentials.defineOAuth({ name: 'tv', hosts: [`127.0.0.1:${op.resource.port}`], issuer: op.issuer, scopes: ['openid', 'read'], grant: 'device' });
    const codes: Array<{ name: string; verificationUri: string; verificationUriComplete?: string; userCode: string }> = [];
    const stop = relay.subscribe('credentials:deviceCode', (info) => {
      codes.push(info);
      void signIn(info.verificationUriComplete!, 'tia');
    });
    const pages = opened.length;
    try {
      expect(await call('credentials:connect', { name: 'tv', clientId: APP.id })).toMatchObject({ state: 'connected', account: 'tia', grant: 'device' });
    } finally {
      stop();
    }
    expect(codes).toEqual([{ name: 'tv', verificationUri: `${op.issuer}/device`, verificationUriComplete: expect.stringContaining('user_code='), userCode: expect.stringMatching(/^[A-Z]{4}-[A-Z]{4}$/) }]);
    expect(opened.length).toBe(pages);
  });

  it('refuses Connect for a credential that is not OAuth', async () => {
    const said = diagnostics.length;
    await call('credentials:set', { spec: { name: 'plain', hosts: ['api.example.com'], placement: { kind: 'header', header: 'X-Key', template: '{secret}' } }, secret: 's' });
    expect(await relay.invoke('credentials:connect', { name: 'plain' })).toMatchObject({ ok: false, error: { code: 'bad_input', message: 'credential "plain" is not an OAuth credential; only OAuth credentials connect' } });
    expect(diagnostics.slice(said)).toEqual([]);
  });
});

/** The refresh token the keychain holds for `account`, as the provider knows it (undefined once revoked). */
async function heldRefreshToken(): Promise<{ value: string; model: Awaited<ReturnType<OAuthProvider['provider']['RefreshToken']['find']>> } | undefined> {
  const value = await new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!).get(`${local.installId}:oauth-refresh:account`);
  return value === undefined ? undefined : { value, model: await op.provider.RefreshToken.find(value) };
}

/** Waits, by the clock, until `iso` plus `offsetMs` has passed (a token's refresh time). */
async function untilPast(iso: string, offsetMs: number): Promise<void> {
  const ms = Date.parse(iso) + offsetMs - Date.now();
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms + 20));
}
