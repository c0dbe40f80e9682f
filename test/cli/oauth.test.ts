import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { createEngine, KeychainSecretStore, MemorySecretStore } from '../../src-main/engine/index.ts';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { cli } from '../support/cli.ts';
import { APP, CONFIDENTIAL, MACHINE, oauthProvider, refreshAtOf, signIn, untilRefreshDue, type OAuthProvider } from '../support/oauthProvider.ts';
import { CALLABLE_COMMAND } from '../support/callable.ts';
import { callableProcess } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { vendorServer } from '../support/vendor.ts';
import { until } from '../support/wait.ts';

// A real oidc-provider on loopback with 2-second access tokens; the real keychain of test/setup/keychain.ts.
let op: OAuthProvider;
beforeAll(async () => {
  op = await oauthProvider({ accessTokenTtl: 2 });
});

/** A $BROWSER that writes the URL it is asked to open to a file, as a browser would receive it. */
function fakeBrowser(): { env: NodeJS.ProcessEnv; opened: string } {
  const dir = tempDir();
  const opened = join(dir, 'opened.txt');
  const script = join(dir, 'browser.sh');
  writeFileSync(script, `#!/bin/sh\nprintf '%s' "$1" > '${opened}'\n`);
  chmodSync(script, 0o755);
  return { env: { ...process.env, BROWSER: script }, opened };
}

/** Saves `fn` in the data folder (granted `credential`), with `source`. */
async function withFunction(data: string, fn: string, credential: string, hosts: string[], source: string): Promise<void> {
  const engine = createEngine({ dataDir: data, secrets: new MemorySecretStore() });
  try {
    await engine.saveFunction({ spec: { name: fn, allowedHosts: hosts, credentials: [credential], timeoutMs: 20_000 }, source });
    engine.credentials.grant(credential, fn);
  } finally {
    engine.close();
  }
}

describe('callable credentials connect', () => {
  it('--grant client_credentials reads the secret from stdin, and list --json shows kind, state, expiry, scopes and account, never a token', async () => {
    const data = tempDir();
    const host = `127.0.0.1:${op.resource.port}`;
    const connected = await cli(
      ['credentials', 'connect', 'machine', '--issuer', op.issuer, '--client-id', MACHINE.id, '--host', host, '--scope', 'read', '--grant', 'client_credentials', '--client-secret-stdin', '--data-dir', data],
      { stdin: MACHINE.secret },
    );
    expect(connected, connected.stderr).toMatchObject({ code: 0, stdout: 'connected machine as machine (scopes: read)\n' });
    const listed = await cli(['credentials', 'list', '--json', '--data-dir', data]);
    const [entry] = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
    expect(entry).toMatchObject({ name: 'machine', kind: 'oauth', state: 'connected', scopes: ['read'], account: MACHINE.id, hosts: [host], hasSecret: true });
    expect(Date.parse(entry!.expiresAt as string)).toBeGreaterThan(Date.now() - 5000);
    expect(listed.stdout).not.toMatch(/access_token|refresh_token|Bearer [A-Za-z0-9_-]{20,}/);
    const text = await cli(['credentials', 'list', '--data-dir', data]);
    expect(text.stdout).toContain(`machine  ${host}  oauth ${op.issuer}  connected as machine  scopes: read  expires `);
    // A pasted secret cannot replace the token the engine refreshes.
    const set = await cli(['credentials', 'set', 'machine', '--host', host, '--data-dir', data], { stdin: 'pasted-token' });
    expect(set).toMatchObject({ code: 2 });
    expect(set.stderr).toContain('credential "machine" is an OAuth credential; connect it again with "callable credentials connect machine", or remove it first; nothing was saved');
  });

  it('callable deploy leaves out a function that uses an OAuth credential a person signs in to, saying why, and writes one with a client credentials grant', async () => {
    const data = tempDir();
    const host = `127.0.0.1:${op.resource.port}`;
    const connected = await cli(['credentials', 'connect', 'machine', '--issuer', op.issuer, '--client-id', MACHINE.id, '--host', host, '--grant', 'client_credentials', '--data-dir', data], { stdin: MACHINE.secret });
    expect(connected.code, connected.stderr).toBe(0);
    const engine = createEngine({ dataDir: data, secrets: new MemorySecretStore() });
    engine.credentials.defineOAuth({ name: 'person', hosts: [host], issuer: op.issuer, scopes: ['openid'], grant: 'code' });
    engine.close();
    await withFunction(data, 'uses_person', 'person', [host], `export default async (a, ctx) => (await ctx.fetch('${op.resource.origin}/', { credential: 'person' })).status`);
    const personOnly = await cli(['deploy', '--target', 'workerd', '--out', join(tempDir(), 'out'), '--data-dir', data]);
    expect(personOnly).toMatchObject({ code: 2 });
    expect(personOnly.stderr).toContain(
      'no function can be deployed: uses_person: it uses OAuth credential "person" (grant code: a person signs in, and a deployed gateway does not carry the refresh token); only client_credentials OAuth credentials deploy',
    );
    await withFunction(data, 'uses_machine', 'machine', [host], `export default async (a, ctx) => (await ctx.fetch('${op.resource.origin}/', { credential: 'machine' })).status`);
    const out = join(tempDir(), 'out');
    const both = await cli(['deploy', '--target', 'workerd', '--out', out, '--data-dir', data]);
    expect(both, both.stderr).toMatchObject({ code: 0 });
    expect(both.stdout).toContain(`wrote 1 function(s) (uses_machine) to ${out} for workerd`);
    expect(both.stdout).toContain('CALLABLE_SECRET_MACHINE=<secret>');
    expect(readFileSync(join(out, 'README.md'), 'utf8')).toContain('CALLABLE_SECRET_MACHINE=<the OAuth client secret of credential machine>');
    const cf = join(tempDir(), 'cf');
    const cloudflare = await cli(['deploy', '--target', 'cloudflare', '--out', cf, '--data-dir', data]);
    expect(cloudflare, cloudflare.stderr).toMatchObject({ code: 0 });
    expect(cloudflare.stdout).toContain('wrangler secret put SECRET_MACHINE --name callable-egress');
    expect(readFileSync(join(cf, 'DEPLOY.md'), 'utf8')).toContain('For SECRET_MACHINE (OAuth client credentials) give the client secret: the egress Worker asks for the access tokens.');

    // A client credentials account defined but never connected is left out, saying to connect it.
    const defining = createEngine({ dataDir: data, secrets: new MemorySecretStore() });
    defining.credentials.defineOAuth({ name: 'unconnected', hosts: [host], issuer: op.issuer, scopes: [], grant: 'client_credentials' });
    defining.close();
    await withFunction(data, 'uses_unconnected', 'unconnected', [host], `export default async (a, ctx) => (await ctx.fetch('${op.resource.origin}/', { credential: 'unconnected' })).status`);
    const withUnconnected = await cli(['deploy', '--target', 'workerd', '--out', join(tempDir(), 'out'), '--data-dir', data]);
    expect(withUnconnected, withUnconnected.stderr).toMatchObject({ code: 0 });
    expect(withUnconnected.stderr).toContain(
      'callable deploy: not deployed: uses_unconnected: it uses OAuth credential "unconnected", which is not connected with a client secret yet: connect it first ("callable credentials connect unconnected --grant client_credentials --client-secret-stdin")',
    );

    // --serve where the client secret cannot be read (env mode without its variable): one line, before workerd starts.
    const served = await cli(['deploy', '--target', 'workerd', '--serve', '--port', '1', '--out', join(tempDir(), 'out'), '--data-dir', data], {
      env: { CALLABLE_SECRETS: 'env', CALLABLE_MCP_TOKEN: 'x'.repeat(43) },
    });
    expect(served.code, served.stderr).toBe(2);
    expect(served.stderr.trim().split('\n').at(-1)).toBe(
      'callable deploy: the keychain holds no client secret for OAuth credential "machine": connect it again with "callable credentials connect machine --grant client_credentials --client-secret-stdin"',
    );
  });

  it('--grant code opens $BROWSER on the sign-in URL (also printed on its own stderr line) and exits 0 once the loopback redirect brings the code', async () => {
    const data = tempDir();
    const browser = fakeBrowser();
    const run = cli(
      ['credentials', 'connect', 'ada', '--issuer', op.issuer, '--client-id', APP.id, '--host', `127.0.0.1:${op.resource.port}`, '--scope', 'openid offline_access read', '--data-dir', data],
      { env: browser.env },
    );
    await until(() => existsSync(browser.opened) && readFileSync(browser.opened, 'utf8').length > 0, 'the browser to be opened');
    const url = readFileSync(browser.opened, 'utf8');
    expect(url).toMatch(new RegExp(`^${op.issuer}/auth\\?`));
    const page = await signIn(url, 'ada');
    expect(page).toMatchObject({ status: 200, text: 'Connected. You can close this tab.\n' });
    const done = await run;
    expect(done, done.stderr).toMatchObject({ code: 0, stdout: 'connected ada as ada (scopes: openid read)\n' });
    expect(done.stderr.split('\n')).toContain(url);

    // A second callback to the same port finds nobody listening: the loopback server is gone.
    const replay = await fetch(page.callback).then(() => 'answered', () => 'refused');
    expect(replay).toBe('refused');

    // rm revokes the grant at the server (RFC 7009): its refresh token stops working there.
    const refresh = await new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!).get(`${installIdOf(data)}:oauth-refresh:ada`);
    expect(await op.provider.RefreshToken.find(refresh!)).toBeTruthy();
    const removed = await cli(['credentials', 'rm', 'ada', '--data-dir', data]);
    expect(removed).toMatchObject({ code: 0, stdout: 'credential ada: revoked at the server\ndeleted credential ada\n' });
    expect(await op.provider.RefreshToken.find(refresh!)).toBeUndefined();
  });

  it('--client-secret-stdin gives a confidential client its secret for the code grant; a wrong one is refused by the server, exit 1, nothing saved', async () => {
    const data = tempDir();
    for (const [secret, name] of [['wrong-secret', 'bad'], [CONFIDENTIAL.secret, 'good']] as const) {
      const browser = fakeBrowser();
      const run = cli(
        ['credentials', 'connect', name, '--issuer', op.issuer, '--client-id', CONFIDENTIAL.id, '--host', `127.0.0.1:${op.resource.port}`, '--client-secret-stdin', '--scope', 'read', '--data-dir', data],
        { env: browser.env, stdin: secret },
      );
      await until(() => existsSync(browser.opened) && readFileSync(browser.opened, 'utf8').length > 0, 'the browser to be opened');
      await signIn(readFileSync(browser.opened, 'utf8'), 'kim');
      const done = await run;
      if (name === 'bad') {
        expect(done.code).toBe(1);
        expect(done.stderr).toMatch(/\ncallable credentials: invalid_client: client authentication failed \(from http:\/\/127\.0\.0\.1:\d+\/token\)\n$/);
      } else expect(done, done.stderr).toMatchObject({ code: 0, stdout: 'connected good (scopes: read)\n' });
    }
    expect((JSON.parse((await cli(['credentials', 'list', '--json', '--data-dir', data])).stdout) as Array<{ name: string }>).map((c) => c.name)).toEqual(['good']);
  });

  it('--authorize-url and --token-url work without discovery; --revocation-url is what rm revokes at, and --authorize-param adds to the sign-in request', async () => {
    const data = tempDir();
    const browser = fakeBrowser();
    const run = cli(
      [
        ...['credentials', 'connect', 'manual', '--authorize-url', `${op.issuer}/auth`, '--token-url', `${op.issuer}/token`, '--revocation-url', `${op.issuer}/token/revocation`],
        ...['--authorize-param', 'audience=https://api.example.test/', '--authorize-param', 'prompt=consent', '--authorize-param', 'access_type=offline'],
        ...['--client-id', APP.id, '--host', `127.0.0.1:${op.resource.port}`, '--scope', 'read offline_access', '--data-dir', data],
      ],
      { env: browser.env },
    );
    await until(() => existsSync(browser.opened) && readFileSync(browser.opened, 'utf8').length > 0, 'the browser to be opened');
    const url = new URL(readFileSync(browser.opened, 'utf8'));
    expect([url.searchParams.get('audience'), url.searchParams.get('prompt'), url.searchParams.get('access_type')]).toEqual(['https://api.example.test/', 'consent', 'offline']);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    await signIn(url.href, 'grace');
    const done = await run;
    expect(done, done.stderr).toMatchObject({ code: 0, stdout: 'connected manual (scopes: read offline_access)\n' });

    const refresh = await new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!).get(`${installIdOf(data)}:oauth-refresh:manual`);
    expect(await op.provider.RefreshToken.find(refresh!)).toBeTruthy();
    expect(await cli(['credentials', 'rm', 'manual', '--data-dir', data])).toMatchObject({ code: 0, stdout: 'credential manual: revoked at the server\ndeleted credential manual\n' });
    expect(await op.provider.RefreshToken.find(refresh!)).toBeUndefined();
  });

  it('--authorize-param refuses a parameter connect sets itself, or one that is not KEY=VALUE: one line, exit 2', async () => {
    const data = tempDir();
    const base = ['credentials', 'connect', 'x', '--issuer', op.issuer, '--client-id', APP.id, '--host', 'a.example', '--no-browser', '--data-dir', data];
    const reserved = await cli([...base, '--authorize-param', 'redirect_uri=https://evil.example/']);
    expect(reserved).toMatchObject({ code: 2, stdout: '', stderr: 'callable credentials: --authorize-param cannot set redirect_uri: connect sets it\n' });
    const scope = await cli([...base, '--authorize-param', 'scope=admin']);
    expect(scope).toMatchObject({ code: 2, stderr: 'callable credentials: --authorize-param cannot set scope: connect sets it (use --scope)\n' });
    const bare = await cli([...base, '--authorize-param', 'prompt']);
    expect(bare).toMatchObject({ code: 2, stderr: expect.stringContaining('--authorize-param must be KEY=VALUE (e.g. prompt=consent), not "prompt"') });
    expect((await cli(['credentials', 'list', '--json', '--data-dir', data])).stdout.trim()).toBe('[]');
  });

  it('--preset fills the API hosts and authorize parameters; --authorize-url and --token-url override its server, end to end', async () => {
    const data = tempDir();
    const browser = fakeBrowser();
    const run = cli(['credentials', 'connect', 'box', '--preset', 'dropbox', '--authorize-url', `${op.issuer}/auth`, '--token-url', `${op.issuer}/token`, '--client-id', APP.id, '--scope', 'read', '--data-dir', data], {
      env: browser.env,
    });
    await until(() => existsSync(browser.opened) && readFileSync(browser.opened, 'utf8').length > 0, 'the browser to be opened');
    const url = new URL(readFileSync(browser.opened, 'utf8'));
    expect(url.origin + url.pathname).toBe(`${op.issuer}/auth`);
    expect(url.searchParams.get('token_access_type')).toBe('offline');
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    await signIn(url.href, 'dee');
    const done = await run;
    expect(done, done.stderr).toMatchObject({ code: 0, stdout: 'connected box (scopes: read)\n' });
    const [entry] = JSON.parse((await cli(['credentials', 'list', '--json', '--data-dir', data])).stdout) as Array<Record<string, unknown>>;
    expect(entry).toMatchObject({ name: 'box', kind: 'oauth', state: 'connected', hosts: ['api.dropboxapi.com', 'content.dropboxapi.com'], issuer: op.issuer });
  });

  it('--preset refuses a grant its provider lacks, a missing client secret and an unknown name: one line, exit 2, nothing saved', async () => {
    const data = tempDir();
    const device = await cli(['credentials', 'connect', 'box', '--preset', 'dropbox', '--grant', 'device', '--client-id', 'c', '--data-dir', data]);
    expect(device).toMatchObject({ code: 2, stdout: '' });
    expect(device.stderr).toBe('callable credentials: the dropbox preset does not support --grant device (it supports code)\n');
    const noSecret = await cli(['credentials', 'connect', 'gh', '--preset', 'github', '--client-id', 'c', '--no-browser', '--data-dir', data]);
    expect(noSecret).toMatchObject({ code: 2 });
    expect(noSecret.stderr).toBe('callable credentials: github needs the client secret for --grant code: pass it on standard input with --client-secret-stdin\n');
    const unknown = await cli(['credentials', 'connect', 'x', '--preset', 'gitlab', '--client-id', 'c', '--data-dir', data]);
    expect(unknown).toMatchObject({ code: 2 });
    expect(unknown.stderr).toContain('no preset "gitlab"; the presets are github, google, microsoft, slack, notion, hubspot, atlassian, linear, dropbox, spotify');
    expect((await cli(['credentials', 'list', '--json', '--data-dir', data])).stdout.trim()).toBe('[]');
  });

  it('--grant device prints the verification URL and user code, polls while the user approves elsewhere, and exits 0 connected', async () => {
    const data = tempDir();
    const child = spawn(CALLABLE_COMMAND.command, [
      ...CALLABLE_COMMAND.args,
      ...['credentials', 'connect', 'tv', '--issuer', op.issuer, '--client-id', APP.id, '--host', `127.0.0.1:${op.resource.port}`, '--grant', 'device', '--scope', 'openid read', '--data-dir', data],
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    await until(() => /\n\S*user_code=/.test(stderr), 'the device code to be printed');
    expect(stderr).toMatch(new RegExp(`^On any device, open ${op.issuer}/device and enter the code [A-Z-]+\n`));
    const complete = stderr.split('\n')[1]!;
    const page = await signIn(complete, 'lin');
    expect(page.status).toBe(200);
    expect(await exited, stderr).toBe(0);
    expect(stdout).toBe('connected tv as lin (scopes: openid read)\n');
  }, 40_000);

  it('--grant device denied by the user exits 1 with the server\'s reason, and saves nothing', async () => {
    const data = tempDir();
    const child = deviceConnect(data, 'denied');
    await until(() => /\n\S*user_code=/.test(child.stderr()), 'the device code to be printed');
    await signIn(child.stderr().split('\n')[1]!, 'lin', { deny: true });
    expect(await child.exited).toBe(1);
    expect(child.stderr()).toMatch(/\ncallable credentials: the device was not authorized: access_denied: End-User aborted interaction\n$/);
    expect((await cli(['credentials', 'list', '--json', '--data-dir', data])).stdout.trim()).toBe('[]');
  }, 40_000);

  it('--no-browser opens nothing and --timeout bounds the wait: one line, exit 1, nothing saved', async () => {
    const data = tempDir();
    const browser = fakeBrowser();
    const started = Date.now();
    const run = await cli(
      ['credentials', 'connect', 'late', '--issuer', op.issuer, '--client-id', APP.id, '--host', `127.0.0.1:${op.resource.port}`, '--no-browser', '--timeout', '1', '--data-dir', data],
      { env: browser.env },
    );
    expect(Date.now() - started).toBeLessThan(8000);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^Sign in to connect, at:\nhttp:\/\/127\.0\.0\.1:\d+\/auth\?\S+\n.*no answer from the browser within 1 s; run connect again\n$/);
    expect(existsSync(browser.opened)).toBe(false);
    expect((await cli(['credentials', 'list', '--json', '--data-dir', data])).stdout.trim()).toBe('[]');
  });

  it('refuses bad input with one line and exit 2', async () => {
    const data = tempDir();
    const noHost = await cli(['credentials', 'connect', 'x', '--issuer', op.issuer, '--client-id', 'c', '--data-dir', data]);
    expect(noHost).toMatchObject({ code: 2 });
    expect(noHost.stderr).toContain('give at least one --host the tokens may be sent to');
    const badGrant = await cli(['credentials', 'connect', 'x', '--issuer', op.issuer, '--client-id', 'c', '--host', 'a.example', '--grant', 'implicit', '--data-dir', data]);
    expect(badGrant.stderr).toContain('--grant must be code, device or client_credentials, not "implicit"');
    const plainHttp = await cli(['credentials', 'connect', 'x', '--issuer', 'http://auth.example', '--client-id', 'c', '--host', 'a.example', '--grant', 'client_credentials', '--data-dir', data], { stdin: 's' });
    expect(plainHttp).toMatchObject({ code: 2 });
    expect(plainHttp.stderr).toContain('--issuer must be an https:// URL (http:// only for 127.0.0.1, [::1] or localhost)');
    const envMode = await cli(['credentials', 'connect', 'x', '--issuer', op.issuer, '--client-id', MACHINE.id, '--host', 'a.example', '--grant', 'client_credentials', '--data-dir', data], {
      stdin: MACHINE.secret,
      env: { ...process.env, CALLABLE_SECRETS: 'env' },
    });
    expect(envMode).toMatchObject({ code: 2 });
    expect(envMode.stderr).toContain('OAuth credentials keep refreshed tokens in the OS keychain, and CALLABLE_SECRETS=env stores no secrets; connect without it');
  });
});

describe('callable credentials list (text)', () => {
  it('shows account, scopes, expiry and state (connected, then needs reconnect after a revoked grant), never a token', async () => {
    const data = tempDir();
    const host = `127.0.0.1:${op.resource.port}`;
    const browser = fakeBrowser();
    const run = cli(['credentials', 'connect', 'ada', '--issuer', op.issuer, '--client-id', APP.id, '--host', host, '--scope', 'openid offline_access read', '--data-dir', data], { env: browser.env });
    await until(() => existsSync(browser.opened) && readFileSync(browser.opened, 'utf8').length > 0, 'the browser to be opened');
    await signIn(readFileSync(browser.opened, 'utf8'), 'ada');
    expect((await run).code).toBe(0);
    const keychain = new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!);
    const access = await keychain.get(`${installIdOf(data)}:credential:ada`);
    const refresh = await keychain.get(`${installIdOf(data)}:oauth-refresh:ada`);
    expect(access && refresh).toBeTruthy();

    const listed = await cli(['credentials', 'list', '--data-dir', data]);
    expect(listed.stdout).toMatch(new RegExp(`^ada  ${host}  oauth ${op.issuer}  connected as ada  scopes: openid read  expires \\d{4}-\\d\\d-\\d\\dT\\S+Z  granted to no function\n$`));
    for (const token of [access!, refresh!]) expect(listed.stdout).not.toContain(token);

    // The grant is revoked at the provider; the next call's refresh is refused.
    await withFunction(data, 'ada_calls', 'ada', [host], `export default async (a, ctx) => (await ctx.fetch('${op.resource.origin}/', { credential: 'ada' })).status`);
    await (await op.provider.RefreshToken.find(refresh!))!.destroy();
    await untilRefreshDue(data, 'ada');
    const failed = await cli(['run', 'ada_calls', '--data-dir', data]);
    expect(failed.code).toBe(1);
    const after = await cli(['credentials', 'list', '--data-dir', data]);
    expect(after.stdout).toMatch(
      new RegExp(`^ada  ${host}  oauth ${op.issuer}  NEEDS RECONNECT: callable credentials connect ada  scopes: openid read  expires \\S+  granted to ada_calls  last refresh failed: invalid_grant: grant request is invalid \\(from ${op.issuer}/token\\)\n$`),
    );
    for (const token of [access!, refresh!]) expect(after.stdout).not.toContain(token);

    // disconnect forgets the tokens and keeps the credential, its client and its grants: connect needs no --client-id then.
    const disconnected = await cli(['credentials', 'disconnect', 'ada', '--data-dir', data]);
    expect(disconnected).toMatchObject({ code: 0, stdout: 'credential ada: revoked at the server\ndisconnected ada: its tokens are forgotten; connect it again: callable credentials connect ada\n' });
    expect(await keychain.get(`${installIdOf(data)}:credential:ada`)).toBeUndefined();
    expect(await keychain.get(`${installIdOf(data)}:oauth-refresh:ada`)).toBeUndefined();
    expect((await cli(['credentials', 'list', '--data-dir', data])).stdout).toBe(`ada  ${host}  oauth ${op.issuer}  NOT CONNECTED: callable credentials connect ada  scopes: openid read  expires never  granted to ada_calls\n`);
    const plain = await cli(['credentials', 'set', 'plain', '--host', host, '--data-dir', data], { stdin: 'k' });
    expect(plain.code).toBe(0);
    expect(await cli(['credentials', 'disconnect', 'plain', '--data-dir', data])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('no OAuth credential named "plain" (only OAuth credentials disconnect); "callable credentials list" shows them'),
    });
  });
});

describe('callable new --from-openapi with an OAuth 2 security scheme', () => {
  /** A spec whose operation needs `scheme`, served by the resource stand-in of the provider. */
  function spec(scheme: Record<string, unknown>, scopes: string[]): string {
    const file = join(tempDir(), 'api.json');
    writeFileSync(
      file,
      JSON.stringify({
        openapi: '3.1.0',
        info: { title: 'Resource', version: '1' },
        servers: [{ url: op.resource.origin }],
        components: { securitySchemes: { login: scheme } },
        paths: { '/me': { get: { operationId: 'me', security: [{ login: scopes }], responses: { '200': { description: 'ok' } } } } },
      }),
    );
    return file;
  }

  it('defines the credential as not connected with its URLs, scopes and hosts; the next: line connects it, end to end', async () => {
    const data = tempDir();
    const host = `127.0.0.1:${op.resource.port}`;
    const file = spec({ type: 'oauth2', flows: { authorizationCode: { authorizationUrl: `${op.issuer}/auth`, tokenUrl: `${op.issuer}/token`, scopes: { read: 'read', email: 'e-mail' } } } }, ['read']);
    const made = await cli(['new', 'me', '--from-openapi', file, '--operation', 'me', '--data-dir', data]);
    expect(made, made.stderr).toMatchObject({ code: 0 });
    const name = credentialName(made.stdout);
    expect(made.stdout.trim().split('\n').at(-1)).toBe(`next: callable credentials connect ${name} --client-id <your client id> --data-dir ${data}`);
    const [entry] = JSON.parse((await cli(['credentials', 'list', '--json', '--data-dir', data])).stdout) as Array<Record<string, unknown>>;
    expect(entry).toMatchObject({ name, kind: 'oauth', state: 'not_connected', scopes: ['read'], hosts: [host], grant: 'code', hasSecret: false, issuer: op.issuer });
    expect((await cli(['credentials', 'list', '--data-dir', data])).stdout).toContain(`NOT CONNECTED: callable credentials connect ${name} --client-id <your client id>`);

    // Before connecting, a call sends nothing and says what to run.
    expect((await cli(['credentials', 'grant', name, 'me', '--data-dir', data])).code).toBe(0);
    const early = await cli(['run', 'me', '--data-dir', data]);
    expect(early.code).toBe(1);
    expect(early.stderr).toContain(`credential "${name}" is not connected yet; nothing was sent: callable credentials connect ${name} --client-id <your client id>`);
    const seen = op.resource.seen.length;

    // The next: line, with the client id filled in, is the whole connect.
    const browser = fakeBrowser();
    const run = cli(['credentials', 'connect', name, '--client-id', APP.id, '--data-dir', data], { env: browser.env });
    await until(() => existsSync(browser.opened) && readFileSync(browser.opened, 'utf8').length > 0, 'the browser to be opened');
    const url = new URL(readFileSync(browser.opened, 'utf8'));
    expect(url.origin + url.pathname).toBe(`${op.issuer}/auth`);
    expect(url.searchParams.get('scope')).toBe('read');
    await signIn(url.href, 'ola');
    const done = await run;
    expect(done, done.stderr).toMatchObject({ code: 0, stdout: `connected ${name} (scopes: read)\n` });
    expect(op.resource.seen.length).toBe(seen);
    const called = await cli(['run', 'me', '--data-dir', data]);
    expect(called.code, called.stderr).toBe(0);
    expect(op.resource.accepted).toBeGreaterThan(0);

    // Connecting again needs no flag: the stored server, scopes, hosts and client id are used.
    const again = fakeBrowser();
    const rerun = cli(['credentials', 'connect', name, '--data-dir', data], { env: again.env });
    await until(() => existsSync(again.opened) && readFileSync(again.opened, 'utf8').length > 0, 'the browser to be opened again');
    const url2 = new URL(readFileSync(again.opened, 'utf8'));
    expect([url2.origin + url2.pathname, url2.searchParams.get('client_id'), url2.searchParams.get('scope')]).toEqual([`${op.issuer}/auth`, APP.id, 'read']);
    await signIn(url2.href, 'ola');
    const redone = await rerun;
    expect(redone, redone.stderr).toMatchObject({ code: 0, stdout: `connected ${name} (scopes: read)\n` });
  });

  it('a client credentials flow becomes a client_credentials credential (its relative token URL against the server); an openIdConnect scheme keeps its issuer', async () => {
    const data = tempDir();
    const machine = spec({ type: 'oauth2', flows: { clientCredentials: { tokenUrl: '/token', scopes: { read: 'read' } } } }, []);
    // The token URL is relative to the API's server: point the server at the provider.
    const made = await cli(['new', 'svc', '--from-openapi', machine, '--operation', 'me', '--server', op.issuer, '--data-dir', data]);
    expect(made, made.stderr).toMatchObject({ code: 0 });
    const name = credentialName(made.stdout);
    const connected = await cli(['credentials', 'connect', name, '--client-id', MACHINE.id, '--data-dir', data], { stdin: MACHINE.secret });
    expect(connected, connected.stderr).toMatchObject({ code: 0, stdout: `connected ${name} as ${MACHINE.id} (scopes: read)\n` });

    const oidc = spec({ type: 'openIdConnect', openIdConnectUrl: `${op.issuer}/.well-known/openid-configuration` }, ['openid', 'read']);
    const other = tempDir();
    expect((await cli(['new', 'who', '--from-openapi', oidc, '--operation', 'me', '--data-dir', other])).code).toBe(0);
    const [entry] = JSON.parse((await cli(['credentials', 'list', '--json', '--data-dir', other])).stdout) as Array<Record<string, unknown>>;
    expect(entry).toMatchObject({ kind: 'oauth', state: 'not_connected', issuer: op.issuer, scopes: ['openid', 'read'], grant: 'code' });
  });
});

/** The credential name `callable new` chose, from its output. */
function credentialName(stdout: string): string {
  return /the credential (\S+) is defined/.exec(stdout)![1]!;
}

describe('three processes on one data folder', () => {
  it('refreshing an expiring token at the same moment make one token request', async () => {
    const data = tempDir();
    const host = `127.0.0.1:${op.resource.port}`;
    const connected = await cli(
      ['credentials', 'connect', 'shared', '--issuer', op.issuer, '--client-id', MACHINE.id, '--host', host, '--grant', 'client_credentials', '--data-dir', data],
      { stdin: MACHINE.secret },
    );
    expect(connected.code, connected.stderr).toBe(0);
    const refreshAt = refreshAtOf(data, 'shared');
    // Each run first waits at this barrier; all three are let through together once the token is past its refresh time.
    const held: ServerResponse[] = [];
    const barrier = await vendorServer((_req, res) => {
      held.push(res);
      if (held.length === 3) setTimeout(() => held.forEach((r) => r.end('go')), Math.max(0, refreshAt + 5 - Date.now()));
    });
    await withFunction(
      data,
      'shared_call',
      'shared',
      [host, `127.0.0.1:${barrier.port}`],
      `export default async (a, ctx) => { await (await ctx.fetch('http://127.0.0.1:${barrier.port}/wait')).text(); return (await ctx.fetch('${op.resource.origin}/shared', { credential: 'shared' })).status; }`,
    );
    const before = op.tokenRequests.length;
    const runs = await Promise.all([1, 2, 3].map(() => callableProcess(['run', 'shared_call', '--data-dir', data], { timeoutMs: 30_000 })));
    for (const run of runs) expect(run, run.stderr).toMatchObject({ code: 0, stdout: '200\n' });
    expect(op.tokenRequests.slice(before)).toEqual([expect.objectContaining({ grantType: 'client_credentials' })]);
  });
});

/** `callable credentials connect NAME --grant device` as its own process, its stderr readable as it comes. */
function deviceConnect(data: string, name: string): { exited: Promise<number | null>; stderr: () => string } {
  const child = spawn(
    CALLABLE_COMMAND.command,
    [...CALLABLE_COMMAND.args, 'credentials', 'connect', name, '--issuer', op.issuer, '--client-id', APP.id, '--host', `127.0.0.1:${op.resource.port}`, '--grant', 'device', '--data-dir', data],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return { exited: new Promise((resolve) => child.on('close', resolve)), stderr: () => stderr };
}

function installIdOf(data: string): string {
  const db = new Database(join(data, DATABASE_FILE), { readonly: true });
  try {
    return (db.prepare("SELECT value FROM settings WHERE key = 'install_id'").get() as { value: string }).value;
  } finally {
    db.close();
  }
}
