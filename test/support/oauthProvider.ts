import Database from 'better-sqlite3';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Provider from 'oidc-provider';
import { afterAll } from 'vitest';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { vendorServer, type SeenRequest } from './vendor.ts';

export const MACHINE = { id: 'machine', secret: 'machine-secret-0123456789' };
/** A client credentials client whose access tokens live 5 minutes, whatever `accessTokenTtl` says: one that does not expire during a test. */
export const LONG_LIVED = { id: 'long-lived', secret: 'long-lived-secret-0123456789' };
/** A public native client: code with PKCE through a loopback redirect, refresh, device. */
export const APP = { id: 'desktop-app' };
/** The same grants for a confidential client, which authenticates with its secret. */
export const CONFIDENTIAL = { id: 'confidential-app', secret: 'confidential-secret-0123456789' };
const RESOURCE = { id: 'resource', secret: 'resource-secret-0123456789' };

export interface OAuthProvider {
  issuer: string;
  provider: Provider;
  /** Every request to the token endpoint, in order (grant type and time). */
  tokenRequests: Array<{ grantType: string; at: number }>;
  /** A resource server on 127.0.0.1 that answers only a bearer token the provider's introspection calls active. */
  resource: { port: number; origin: string; accepted: number; rejected: number; seen: SeenRequest[] };
}

/**
 * A real OpenID provider (oidc-provider, certified) on 127.0.0.1 with access tokens that live
 * `accessTokenTtl` seconds, refresh-token rotation, client credentials, device flow, revocation and
 * introspection, and its development login and consent pages. In-memory storage.
 */
export async function oauthProvider(options: { accessTokenTtl?: number } = {}): Promise<OAuthProvider> {
  const ttl = options.accessTokenTtl ?? 2;
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      { client_id: MACHINE.id, client_secret: MACHINE.secret, grant_types: ['client_credentials'], redirect_uris: [], response_types: [], scope: 'read' },
      { client_id: LONG_LIVED.id, client_secret: LONG_LIVED.secret, grant_types: ['client_credentials'], redirect_uris: [], response_types: [], scope: 'read' },
      {
        client_id: APP.id,
        application_type: 'native',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
        redirect_uris: ['http://127.0.0.1/callback'],
        response_types: ['code'],
      },
      {
        client_id: CONFIDENTIAL.id,
        client_secret: CONFIDENTIAL.secret,
        application_type: 'native',
        grant_types: ['authorization_code', 'refresh_token'],
        redirect_uris: ['http://127.0.0.1/callback'],
        response_types: ['code'],
      },
      { client_id: RESOURCE.id, client_secret: RESOURCE.secret, grant_types: [], redirect_uris: [], response_types: [] },
    ],
    scopes: ['openid', 'offline_access', 'email', 'read'],
    claims: { openid: ['sub'], email: ['email'] },
    findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub, email: `${sub}@example.test` }) }),
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      deviceFlow: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
    },
    ttl: { AccessToken: ttl, ClientCredentials: (_ctx: unknown, _token: unknown, client: { clientId: string }) => (client.clientId === LONG_LIVED.id ? 300 : ttl), RefreshToken: 3600, DeviceCode: 120, Interaction: 300, Session: 3600, Grant: 3600 },
    issueRefreshToken: () => true,
    rotateRefreshToken: true,
    cookies: { keys: ['oauth-test-cookie-key'] },
  });
  const tokenRequests: OAuthProvider['tokenRequests'] = [];
  const callback = provider.callback();
  server.on('request', (req, res) => {
    if (req.method === 'POST' && req.url === '/token') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => tokenRequests.push({ grantType: new URLSearchParams(body).get('grant_type') ?? '', at: Date.now() }));
    }
    if (req.method === 'POST' && req.url === '/device/auth') announceInterval(res, 1);
    void callback(req, res);
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const resource: OAuthProvider['resource'] = { port: 0, origin: '', accepted: 0, rejected: 0, seen: [] };
  const vendor = await vendorServer((req, res) => {
    const token = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    void introspect(issuer, token).then((active) => {
      if (!active) {
        resource.rejected++;
        res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end('invalid token');
        return;
      }
      resource.accepted++;
      // /echo answers with the Authorization header it got, as a careless vendor's debug endpoint would.
      const echo = req.url === '/echo' ? { authorization: req.headers.authorization } : {};
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, path: req.url, client: active.client_id, sub: active.sub ?? null, ...echo }));
    });
  });
  resource.port = vendor.port;
  resource.seen = vendor.seen;
  resource.origin = `http://127.0.0.1:${vendor.port}`;
  return { issuer, provider, tokenRequests, resource };
}

/**
 * oidc-provider leaves `interval` out of its device authorization answer, so clients poll every 5 s
 * (RFC 8628's default); this one asks for every second, so a device test waits 1 s for its answer, not 5.
 */
function announceInterval(res: ServerResponse, seconds: number): void {
  const end = res.end.bind(res) as (chunk?: unknown, ...rest: unknown[]) => ServerResponse;
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    if ((typeof chunk === 'string' || Buffer.isBuffer(chunk)) && !res.headersSent) {
      const body = JSON.parse(chunk.toString()) as Record<string, unknown>;
      if (typeof body.device_code === 'string') {
        const text = JSON.stringify({ ...body, interval: seconds });
        res.setHeader('content-length', Buffer.byteLength(text));
        return end(text, ...rest);
      }
    }
    return end(chunk, ...rest);
  }) as typeof res.end;
}

async function introspect(issuer: string, token: string | undefined): Promise<{ client_id: string; sub?: string } | undefined> {
  if (!token) return undefined;
  const response = await fetch(`${issuer}/token/introspection`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${RESOURCE.id}:${RESOURCE.secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }),
  });
  const body = (await response.json()) as { active: boolean; client_id: string; sub?: string };
  return body.active ? body : undefined;
}

/**
 * Signs in through the provider's own login and consent pages as a browser would (cookies, forms,
 * redirects), starting at `authorizeUrl` (or a device verification URL), and stops at the first
 * redirect to the loopback callback, which it requests, or at a page without a form. Returns what
 * that answered.
 */
/** When the engine of `dataDir` will next refresh the access token of OAuth credential `name` (ms since the epoch), from its database. */
export function refreshAtOf(dataDir: string, name: string): number {
  const db = new Database(join(dataDir, DATABASE_FILE), { readonly: true });
  try {
    return (db.prepare('SELECT refresh_at FROM oauth_credentials WHERE name = ?').get(name) as { refresh_at: number }).refresh_at;
  } finally {
    db.close();
  }
}

/** Resolves once the access token of `name` is due for refresh: only the clock says so, so this waits exactly that long. */
export async function untilRefreshDue(dataDir: string, name: string): Promise<void> {
  const ms = refreshAtOf(dataDir, name) - Date.now();
  if (ms >= 0) await sleep(ms + 5);
}

/** Every bearer token the resource server was sent. */
export function bearersSeen(resource: OAuthProvider['resource']): string[] {
  return [...new Set(resource.seen.map((r) => /^Bearer (.+)$/.exec(String(r.headers.authorization ?? ''))?.[1]).filter((t): t is string => t !== undefined))];
}

export async function signIn(authorizeUrl: string, login = 'ada', options: { deny?: boolean } = {}): Promise<{ status: number; text: string; callback: string }> {
  const cookies = new Map<string, string>();
  let url = authorizeUrl;
  let method = 'GET';
  let body: URLSearchParams | undefined;
  for (let step = 0; step < 20; step++) {
    if (/^http:\/\/127\.0\.0\.1:\d+\/callback\?/.test(url)) {
      const answer = await fetch(url);
      return { status: answer.status, text: await answer.text(), callback: url };
    }
    const response = await fetch(url, {
      method,
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      ...(body ? { body } : {}),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    const location = response.headers.get('location');
    if (location) {
      url = new URL(location, url).href;
      method = 'GET';
      body = undefined;
      continue;
    }
    const html = await response.text();
    const found = /<form([^>]*method="post"[^>]*)>([\s\S]*?)<\/form>/i.exec(html);
    const form = found && [found[0], /action="([^"]+)"/.exec(found[1]!)![1]!, found[2]!];
    // The device flow ends on the provider's own page: success, or what it says after a refusal.
    if ((!form && response.status === 200) || body?.has('abort')) return { status: response.status, text: html, callback: url };
    if (!form) throw new Error(`no form on ${url} (${response.status}): ${html.slice(0, 300)}`);
    const fields = new URLSearchParams();
    for (const input of form[2]!.matchAll(/<input[^>]*>/g)) {
      const name = /name="([^"]+)"/.exec(input[0])?.[1];
      if (!name) continue;
      // The device confirmation page's "Cancel" posts abort instead of confirm.
      if (name === 'confirm' && options.deny) {
        fields.set('abort', 'yes');
        continue;
      }
      fields.set(name, name === 'login' ? login : name === 'password' ? 'any-password' : (/value="([^"]*)"/.exec(input[0])?.[1] ?? ''));
    }
    url = new URL(form[1]!.replace(/&amp;/g, '&'), url).href;
    method = 'POST';
    body = fields;
  }
  throw new Error('sign-in did not reach the callback in 20 steps');
}
