import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import * as oauth from 'oauth4webapi';
import { StudioError, type OAuthConnectInput, type OAuthGrant, type OAuthState } from '../model/index.ts';
import { bumpCounter } from '../store/catalog.ts';
import type { Db } from '../store/database.ts';
import { writeTransaction } from '../store/database.ts';
import type { FolderSecrets } from './folderSecrets.ts';

/** An access token this close to its expiry is refreshed before it is sent (one that lives less than twice this: at half its life). */
export const REFRESH_BEFORE_MS = 60_000;
/** What the sign-in request carries from connect itself; an extra parameter may not replace them. */
const RESERVED_AUTHORIZE_PARAMS = ['client_id', 'redirect_uri', 'response_type', 'code_challenge', 'code_challenge_method', 'state', 'scope'];
/** How long a process may hold the refresh lease; one that dies holding it is waited for this long at most. */
const LEASE_MS = 30_000;
/** One token endpoint request's bound. */
const TOKEN_REQUEST_MS = 20_000;
/** The default bound on waiting for the browser's redirect (or the device's approval). */
export const CONNECT_WAIT_MS = 5 * 60_000;

/** What the database keeps of an OAuth credential's server and client: nothing secret. */
interface OAuthConfig {
  issuer: string;
  authorizationEndpoint?: string | undefined;
  tokenEndpoint: string;
  revocationEndpoint?: string | undefined;
  deviceEndpoint?: string | undefined;
  clientId: string;
  /** Whether the client authenticates with a secret (kept in the keychain) or is public. */
  clientSecret: boolean;
  scopes: string[];
  grant: OAuthGrant;
  clientAuth?: 'basic' | 'post' | undefined;
  authorizeParams?: Record<string, string> | undefined;
  scopeDelimiter?: string | undefined;
  /** Why the last refresh failed (cleared by the next one that works, and by connecting). */
  lastRefreshError?: { message: string; at: string } | undefined;
}

interface Row {
  name: string;
  config: string;
  state: OAuthState;
  expires_at: number | null;
  refresh_at: number | null;
  scopes: string;
  account: string | null;
  generation: number;
  lease_owner: string | null;
  lease_until: number | null;
}

export interface OAuthStatus {
  state: OAuthState;
  expiresAt: string | null;
  scopes: string[];
  account: string | null;
  issuer: string;
  grant: OAuthGrant;
  clientId: string;
  /** The authorization endpoint the code grant's sign-in page is on, when there is one. */
  authorizationEndpoint: string | null;
  lastRefreshError: { message: string; at: string } | null;
}

/** What the database keeps of a credential defined but never connected: the connect input, less what connect asks for. */
interface PendingConfig {
  pending: true;
  issuer?: string | undefined;
  authorizeUrl?: string | undefined;
  tokenUrl?: string | undefined;
  deviceUrl?: string | undefined;
  scopes: string[];
  grant: OAuthGrant;
}

export interface ConnectHooks {
  /** The client secret (client credentials, or a confidential client's code/device grant). */
  clientSecret?: string | undefined;
  /** Called with the authorization URL (on `authorizationEndpoint`) once the loopback redirect listens. */
  onAuthorizeUrl?: (url: string, server: { authorizationEndpoint: string }) => void;
  /** Called with what the user must enter on another device. */
  onDeviceCode?: (info: { verificationUri: string; verificationUriComplete?: string | undefined; userCode: string }) => void;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface ConnectedTokens {
  accessToken: string;
  refreshToken?: string | undefined;
  expiresAt: number | null;
  /** When to refresh it: REFRESH_BEFORE_MS before it expires, or at half its life when that is shorter. */
  refreshAt: number | null;
  scopes: string[];
  account: string | null;
}

/**
 * The OAuth 2 side of credentials: connecting (the grants), keeping the access token fresh, and
 * revoking. The access token is the credential's keychain secret, so everything that reads or
 * redacts a credential's secret works unchanged; the refresh token and client secret have their own
 * keychain entries. Only this host process ever talks to the authorization server.
 */
export class OAuthCredentials {
  readonly #db: Db;
  readonly #secrets: FolderSecrets;
  /** Who holds a refresh lease: unique per engine, so two engines in one process do not share it. */
  readonly #me = randomUUID();

  constructor(db: Db, secrets: FolderSecrets) {
    this.#db = db;
    this.#secrets = secrets;
  }

  #row(name: string): Row | undefined {
    return this.#db.prepare('SELECT * FROM oauth_credentials WHERE name = ?').get(name) as Row | undefined;
  }

  isOAuth(name: string): boolean {
    return this.#row(name) !== undefined;
  }

  status(name: string): OAuthStatus | undefined {
    const row = this.#row(name);
    if (!row) return undefined;
    const config = JSON.parse(row.config) as OAuthConfig | PendingConfig;
    const pending = 'pending' in config;
    return {
      state: row.state,
      expiresAt: row.expires_at === null ? null : new Date(row.expires_at).toISOString(),
      scopes: pending ? config.scopes : row.scopes === '' ? [] : row.scopes.split(' '),
      account: row.account,
      issuer: config.issuer ?? (pending && config.tokenUrl ? new URL(config.tokenUrl).origin : ''),
      grant: config.grant,
      clientId: pending ? '' : config.clientId,
      authorizationEndpoint: (pending ? config.authorizeUrl : config.authorizationEndpoint) ?? null,
      lastRefreshError: pending ? null : (config.lastRefreshError ?? null),
    };
  }

  /**
   * What connect uses when its caller gives no server: the stored one, so that `connect NAME` (with
   * --client-id the first time) connects a defined credential, or again after a refusal.
   */
  storedInput(name: string): Partial<OAuthConnectInput> | undefined {
    const row = this.#row(name);
    if (!row) return undefined;
    const config = JSON.parse(row.config) as OAuthConfig | PendingConfig;
    if ('pending' in config) return { issuer: config.issuer, authorizeUrl: config.authorizeUrl, tokenUrl: config.tokenUrl, deviceUrl: config.deviceUrl, scopes: config.scopes, grant: config.grant };
    return {
      issuer: config.issuer,
      authorizeUrl: config.authorizationEndpoint,
      tokenUrl: config.tokenEndpoint,
      revocationUrl: config.revocationEndpoint,
      deviceUrl: config.deviceEndpoint,
      clientId: config.clientId,
      scopes: config.scopes,
      grant: config.grant,
      clientAuth: config.clientAuth,
      authorizeParams: config.authorizeParams,
      scopeDelimiter: config.scopeDelimiter,
    };
  }

  /** Writes the row of a credential defined and not connected yet (inside the caller's write transaction). */
  define(name: string, input: Omit<PendingConfig, 'pending'>): void {
    const config: PendingConfig = { pending: true, ...input };
    this.#db
      .prepare(`INSERT INTO oauth_credentials (name, config, state, scopes) VALUES (?, ?, 'not_connected', ?)`)
      .run(name, JSON.stringify(config), input.scopes.join(' '));
  }

  /** The server's endpoints: discovered from the issuer (OpenID first, then RFC 8414), or the explicit URLs. */
  async configFor(input: OAuthConnectInput, hasSecret: boolean, signal?: AbortSignal): Promise<OAuthConfig> {
    for (const key of Object.keys(input.authorizeParams ?? {})) {
      if (RESERVED_AUTHORIZE_PARAMS.includes(key)) throw new StudioError('bad_input', `--authorize-param cannot set ${key}: connect sets it${key === 'scope' ? ' (use --scope)' : ''}`);
    }
    const base = {
      clientId: input.clientId,
      clientSecret: hasSecret,
      scopes: input.scopes,
      grant: input.grant,
      clientAuth: input.clientAuth,
      authorizeParams: input.authorizeParams,
      scopeDelimiter: input.scopeDelimiter,
    };
    if (input.tokenUrl !== undefined) {
      const tokenEndpoint = checkedUrl(input.tokenUrl, '--token-url');
      if (input.grant === 'code' && input.authorizeUrl === undefined) throw new StudioError('bad_input', '--grant code needs --authorize-url beside --token-url (or --issuer alone, for discovery)');
      return {
        ...base,
        // The issuer as given (checked, not normalized): the "iss" the server sends back is compared to it exactly.
        issuer: input.issuer === undefined ? new URL(tokenEndpoint).origin : (checkedUrl(input.issuer, '--issuer'), input.issuer),
        tokenEndpoint,
        authorizationEndpoint: input.authorizeUrl === undefined ? undefined : checkedUrl(input.authorizeUrl, '--authorize-url'),
        revocationEndpoint: input.revocationUrl === undefined ? undefined : checkedUrl(input.revocationUrl, '--revocation-url'),
        deviceEndpoint: input.deviceUrl === undefined ? undefined : checkedUrl(input.deviceUrl, '--device-url'),
      };
    }
    if (input.issuer === undefined) throw new StudioError('bad_input', 'give --issuer URL (discovery), or --token-url (and --authorize-url for --grant code)');
    const issuer = new URL(checkedUrl(input.issuer, '--issuer'));
    const as = await discover(issuer, signal);
    if (!as.token_endpoint) throw new StudioError('bad_input', `${issuer.href} publishes no token endpoint; give --token-url`);
    return {
      ...base,
      issuer: as.issuer,
      tokenEndpoint: as.token_endpoint,
      authorizationEndpoint: as.authorization_endpoint,
      revocationEndpoint: input.revocationUrl === undefined ? as.revocation_endpoint : checkedUrl(input.revocationUrl, '--revocation-url'),
      deviceEndpoint: as.device_authorization_endpoint,
    };
  }

  /** Runs the grant and returns the first tokens; stores nothing (the caller stores them with the credential). */
  async obtain(config: OAuthConfig, hooks: ConnectHooks): Promise<ConnectedTokens> {
    const signal = hooks.signal;
    const { as, client, auth } = parts(config, hooks.clientSecret);
    const options = requestOptions(config, signal);
    const scope: Record<string, string> = config.scopes.length > 0 ? { scope: config.scopes.join(' ') } : {};
    let response: oauth.TokenEndpointResponse;
    if (config.grant === 'client_credentials') {
      if (!hooks.clientSecret) throw new StudioError('bad_input', '--grant client_credentials needs the client secret on standard input (--client-secret-stdin)');
      response = await tokenCall(config, () => oauth.clientCredentialsGrantRequest(as, client, auth, scope, options).then((r) => oauth.processClientCredentialsResponse(as, client, r)));
      return tokensOf(response, config, config.clientId);
    }
    if (config.grant === 'device') {
      response = await deviceGrant(config, as, client, auth, scope, hooks);
      return tokensOf(response, config, accountOf(response));
    }
    if (!config.authorizationEndpoint) throw new StudioError('bad_input', `${config.issuer} publishes no authorization endpoint; give --authorize-url`);
    const { callback, redirectUri } = await loopbackRedirect(hooks.timeoutMs ?? CONNECT_WAIT_MS, signal);
    try {
      const verifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const url = new URL(config.authorizationEndpoint);
      url.searchParams.set('client_id', config.clientId);
      url.searchParams.set('redirect_uri', redirectUri);
      url.searchParams.set('response_type', 'code');
      url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
      url.searchParams.set('code_challenge_method', 'S256');
      url.searchParams.set('state', state);
      if (config.scopes.length > 0) url.searchParams.set('scope', config.scopes.join(config.scopeDelimiter ?? ' '));
      for (const [key, value] of Object.entries(config.authorizeParams ?? {})) url.searchParams.set(key, value);
      hooks.onAuthorizeUrl?.(url.href, { authorizationEndpoint: config.authorizationEndpoint });
      const returned = await callback.url;
      let params: URLSearchParams;
      try {
        params = oauth.validateAuthResponse(as, client, returned, state);
      } catch (error) {
        callback.answer(false, `Not connected: ${describe(error)}`);
        throw new StudioError('credential_refused', `the authorization server did not authorize the connection: ${describe(error)}`);
      }
      callback.answer(true, 'Connected. You can close this tab.');
      response = await tokenCall(config, () =>
        oauth.authorizationCodeGrantRequest(as, client, auth, params, redirectUri, verifier, options).then((r) => oauth.processAuthorizationCodeResponse(as, client, r)),
      );
    } finally {
      callback.close();
    }
    return tokensOf(response, config, accountOf(response));
  }

  /** Stores the tokens of a new connection: the keychain first, then this row (in the caller's transaction). */
  async storeSecrets(name: string, tokens: ConnectedTokens, clientSecret: string | undefined): Promise<void> {
    if (clientSecret !== undefined) await this.#secrets.set({ kind: 'oauth-client', name }, clientSecret);
    else await this.#secrets.delete({ kind: 'oauth-client', name });
    if (tokens.refreshToken !== undefined) await this.#secrets.set({ kind: 'oauth-refresh', name }, tokens.refreshToken);
    else await this.#secrets.delete({ kind: 'oauth-refresh', name });
  }

  /** Writes the row of a connection just made (inside a write transaction). */
  writeRow(name: string, config: OAuthConfig, tokens: ConnectedTokens): void {
    this.#db
      .prepare(
        `INSERT INTO oauth_credentials (name, config, state, expires_at, refresh_at, scopes, account, generation, lease_owner, lease_until)
         VALUES (?, ?, 'connected', ?, ?, ?, ?, 0, NULL, NULL)
         ON CONFLICT(name) DO UPDATE SET config = excluded.config, state = 'connected', expires_at = excluded.expires_at, refresh_at = excluded.refresh_at,
           scopes = excluded.scopes, account = excluded.account, generation = generation + 1, lease_owner = NULL, lease_until = NULL`,
      )
      .run(name, JSON.stringify(config), tokens.expiresAt, tokens.refreshAt, tokens.scopes.join(' '), tokens.account);
  }

  /** The secrets beside the access token, for redaction. */
  async extraSecrets(name: string): Promise<string[]> {
    const out: string[] = [];
    for (const kind of ['oauth-refresh', 'oauth-client'] as const) {
      const value = await this.#secrets.get({ kind, name });
      if (value !== undefined) out.push(value);
    }
    return out;
  }

  /**
   * Makes sure the stored access token of `name` is not within REFRESH_BEFORE_MS of its expiry
   * (refreshing it if so) and returns its generation. Throws the reconnect message when the grant
   * was refused. Not an OAuth credential: undefined.
   */
  async fresh(name: string, signal?: AbortSignal): Promise<number | undefined> {
    const row = this.#row(name);
    if (!row) return undefined;
    if (row.state === 'needs_reconnect') throw reconnectError(name);
    if (row.state === 'not_connected') throw notConnectedError(name, !('pending' in (JSON.parse(row.config) as object)));
    if (row.refresh_at === null || Date.now() < row.refresh_at) return row.generation;
    return this.newerThan(name, row.generation, signal);
  }

  /**
   * Returns once the access token is newer than `generation`: refreshed by this process, or by
   * another one holding the lease (which this waits for, so the server sees one token request).
   */
  async newerThan(name: string, generation: number, signal?: AbortSignal): Promise<number> {
    const waitUntil = Date.now() + LEASE_MS + TOKEN_REQUEST_MS;
    for (;;) {
      const claim = writeTransaction(this.#db, () => {
        const row = this.#row(name);
        if (!row) throw new StudioError('credential_refused', `credential "${name}" was removed`);
        if (row.state === 'needs_reconnect') throw reconnectError(name);
        if (row.generation !== generation) return { done: row.generation };
        if (row.lease_owner !== null && row.lease_owner !== this.#me && (row.lease_until ?? 0) > Date.now()) return { wait: true };
        this.#db.prepare('UPDATE oauth_credentials SET lease_owner = ?, lease_until = ? WHERE name = ?').run(this.#me, Date.now() + LEASE_MS, name);
        return { config: JSON.parse(row.config) as OAuthConfig };
      });
      if ('done' in claim) return claim.done!;
      if ('wait' in claim) {
        // Another process holds the lease: read (no write lock) until it lets go or its lease runs out.
        for (;;) {
          if (Date.now() > waitUntil) throw new StudioError('credential_refused', `the token of credential "${name}" is being refreshed by another process that does not finish; try again`);
          await sleep(50, undefined, signal ? { signal } : {});
          const row = this.#row(name);
          if (!row || row.generation !== generation || row.state !== 'connected' || row.lease_owner === null || (row.lease_until ?? 0) <= Date.now()) break;
        }
        continue;
      }
      return this.#refresh(name, claim.config, signal);
    }
  }

  async #refresh(name: string, config: OAuthConfig, signal?: AbortSignal): Promise<number> {
    let tokens: ConnectedTokens;
    try {
      const clientSecret = config.clientSecret ? await this.#secrets.get({ kind: 'oauth-client', name }, signal) : undefined;
      const { as, client, auth } = parts(config, clientSecret);
      const options = requestOptions(config, signal);
      if (config.grant === 'client_credentials') {
        const scope: Record<string, string> = config.scopes.length > 0 ? { scope: config.scopes.join(' ') } : {};
        const response = await tokenCall(config, () => oauth.clientCredentialsGrantRequest(as, client, auth, scope, options).then((r) => oauth.processClientCredentialsResponse(as, client, r)));
        tokens = tokensOf(response, config, config.clientId);
      } else {
        const refreshToken = await this.#secrets.get({ kind: 'oauth-refresh', name }, signal);
        if (refreshToken === undefined) throw new StudioError('credential_refused', 'invalid_grant: no refresh token is stored');
        const response = await tokenCall(config, () => oauth.refreshTokenGrantRequest(as, client, auth, refreshToken, options).then((r) => oauth.processRefreshTokenResponse(as, client, r)));
        tokens = tokensOf(response, config, null);
      }
      // A rotated refresh token is kept before the new access token is used: the old one is dead now.
      if (tokens.refreshToken !== undefined) await this.#secrets.set({ kind: 'oauth-refresh', name }, tokens.refreshToken);
      await this.#secrets.set({ kind: 'credential', name }, tokens.accessToken);
    } catch (error) {
      const refused = error instanceof StudioError && error.message.startsWith('invalid_grant');
      const why = JSON.stringify({ message: error instanceof Error ? error.message : String(error), at: new Date().toISOString() });
      writeTransaction(this.#db, () => {
        this.#db
          .prepare(
            `UPDATE oauth_credentials SET lease_owner = NULL, lease_until = NULL, config = json_set(config, '$.lastRefreshError', json(?))${refused ? ", state = 'needs_reconnect'" : ''} WHERE name = ? AND lease_owner = ?`,
          )
          .run(why, name, this.#me);
        // The studio shows why: it hears of it as of any change to credentials.
        bump(this.#db);
      });
      if (refused) throw reconnectError(name);
      if (error instanceof StudioError) throw new StudioError(error.code, `cannot refresh the token of credential "${name}": ${error.message}`, error.details);
      throw error;
    }
    const generation = writeTransaction(this.#db, () => {
      const { changes } = this.#db
        .prepare(
          `UPDATE oauth_credentials SET expires_at = ?, refresh_at = ?, scopes = CASE WHEN ? = '' THEN scopes ELSE ? END, generation = generation + 1, lease_owner = NULL, lease_until = NULL,
             config = json_remove(config, '$.lastRefreshError') WHERE name = ? AND state <> 'not_connected'`,
        )
        .run(tokens.expiresAt, tokens.refreshAt, tokens.scopes.join(' '), tokens.scopes.join(' '), name);
      // The stored secrets changed: redaction reads them again.
      bump(this.#db);
      return changes === 0 ? undefined : this.#row(name)!.generation;
    });
    if (generation === undefined) {
      // Disconnected (or removed) while the token request was out: the tokens it brought are not kept.
      await this.#secrets.delete({ kind: 'oauth-refresh', name });
      await this.#secrets.delete({ kind: 'credential', name });
      throw notConnectedError(name, true);
    }
    return generation;
  }

  /**
   * Tells the server to revoke the grant (RFC 7009) when it has a revocation endpoint: the refresh
   * token (which ends the grant) or else the access token. Returns what happened, in words.
   */
  async revoke(name: string): Promise<string | undefined> {
    const row = this.#row(name);
    if (!row || row.state === 'not_connected') return undefined;
    const config = JSON.parse(row.config) as OAuthConfig;
    if (!config.revocationEndpoint) return 'the server has no revocation endpoint: revoke the grant in its settings';
    const refreshToken = await this.#secrets.get({ kind: 'oauth-refresh', name });
    const token = refreshToken ?? (await this.#secrets.get({ kind: 'credential', name }));
    if (token === undefined) return undefined;
    const clientSecret = config.clientSecret ? await this.#secrets.get({ kind: 'oauth-client', name }) : undefined;
    const { as, client, auth } = parts(config, clientSecret);
    try {
      const response = await oauth.revocationRequest(as, client, auth, token, {
        ...requestOptions(config, AbortSignal.timeout(TOKEN_REQUEST_MS)),
        additionalParameters: { token_type_hint: refreshToken !== undefined ? 'refresh_token' : 'access_token' },
      });
      await oauth.processRevocationResponse(response);
      return 'revoked at the server';
    } catch (error) {
      return `the server did not revoke it (${describe(error)}): revoke the grant in its settings`;
    }
  }

  /**
   * What a deployed egress Worker needs to obtain the tokens of a client credentials grant itself
   * (with the client secret it is given): nothing secret. Undefined for any other grant.
   */
  deployable(name: string): { tokenUrl: string; clientId: string; scopes: string[]; clientAuth: 'basic' | 'post' } | undefined {
    const row = this.#row(name);
    if (!row) return undefined;
    const config = JSON.parse(row.config) as OAuthConfig | PendingConfig;
    if ('pending' in config || config.grant !== 'client_credentials' || !config.clientSecret) return undefined;
    return { tokenUrl: config.tokenEndpoint, clientId: config.clientId, scopes: config.scopes, clientAuth: config.clientAuth ?? 'basic' };
  }

  /** The stored client secret of a confidential client, so that connecting again does not ask for it. */
  async storedClientSecret(name: string, signal?: AbortSignal): Promise<string | undefined> {
    const row = this.#row(name);
    if (!row || 'pending' in (JSON.parse(row.config) as object) || !(JSON.parse(row.config) as OAuthConfig).clientSecret) return undefined;
    return this.#secrets.get({ kind: 'oauth-client', name }, signal);
  }

  /**
   * Disconnects `name` and keeps its definition: revokes the grant at the server where it can (the
   * note says how that went), forgets the access and refresh tokens, and leaves it `not_connected`
   * with its server, client, scopes and hosts, so that connecting again is one step.
   */
  async disconnect(name: string): Promise<string | undefined> {
    const row = this.#row(name);
    if (!row) throw new StudioError('not_found', `no OAuth credential named "${name}" (only OAuth credentials disconnect); "callable credentials list" shows them`);
    const note = await this.revoke(name);
    await this.#secrets.delete({ kind: 'oauth-refresh', name });
    await this.#secrets.delete({ kind: 'credential', name });
    writeTransaction(this.#db, () => {
      this.#db
        .prepare(
          `UPDATE oauth_credentials SET state = 'not_connected', expires_at = NULL, refresh_at = NULL, account = NULL, generation = generation + 1, lease_owner = NULL, lease_until = NULL,
             config = json_remove(config, '$.lastRefreshError') WHERE name = ?`,
        )
        .run(name);
      bump(this.#db);
    });
    return note;
  }

  /** Forgets the OAuth secrets and row of `name` (inside the caller's removal). */
  async forgetSecrets(name: string): Promise<void> {
    await this.#secrets.delete({ kind: 'oauth-refresh', name });
    await this.#secrets.delete({ kind: 'oauth-client', name });
  }

  deleteRow(name: string): void {
    this.#db.prepare('DELETE FROM oauth_credentials WHERE name = ?').run(name);
  }
}

function bump(db: Db): void {
  bumpCounter(db, 'credentials_version');
}

export function reconnectError(name: string): StudioError {
  return new StudioError(
    'credential_refused',
    `credential "${name}" needs to be connected again (the authorization server refused its grant); nothing was sent: callable credentials connect ${name}`,
    { credential: name, state: 'needs_reconnect' },
  );
}

/** `knowsClient`: it was connected before (and disconnected), so connect needs no client id. */
export function notConnectedError(name: string, knowsClient = false): StudioError {
  const command = `callable credentials connect ${name}${knowsClient ? '' : ' --client-id <your client id>'}`;
  return new StudioError('credential_refused', `credential "${name}" is not connected${knowsClient ? '' : ' yet'}; nothing was sent: ${command}`, {
    credential: name,
    state: 'not_connected',
  });
}

/** http:// only to a loopback server (a local development server); anything else must be https. */
function checkedUrl(value: string, flag: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new StudioError('bad_input', `${flag} "${value}" is not a URL`);
  }
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.hostname))) return url.href;
  throw new StudioError('bad_input', `${flag} must be an https:// URL (http:// only for 127.0.0.1, [::1] or localhost), not "${value}"`);
}

function isLoopback(hostname: string): boolean {
  return hostname === '127.0.0.1' || hostname === '[::1]' || hostname === 'localhost';
}

function requestOptions(config: { issuer: string; tokenEndpoint: string }, signal?: AbortSignal): { signal: AbortSignal; [oauth.allowInsecureRequests]?: boolean } {
  const bounded = AbortSignal.timeout(TOKEN_REQUEST_MS);
  return {
    signal: signal ? AbortSignal.any([signal, bounded]) : bounded,
    ...(new URL(config.tokenEndpoint).protocol === 'http:' ? { [oauth.allowInsecureRequests]: true } : {}),
  };
}

async function discover(issuer: URL, signal?: AbortSignal): Promise<oauth.AuthorizationServer> {
  const options = { signal: AbortSignal.any([AbortSignal.timeout(TOKEN_REQUEST_MS), ...(signal ? [signal] : [])]), ...(issuer.protocol === 'http:' ? { [oauth.allowInsecureRequests]: true } : {}) };
  let firstProblem: unknown;
  for (const algorithm of ['oidc', 'oauth2'] as const) {
    try {
      return await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...options, algorithm }));
    } catch (error) {
      firstProblem ??= error;
    }
  }
  throw new StudioError('bad_input', `no OAuth discovery document at ${issuer.href} (${describe(firstProblem)}); give --authorize-url and --token-url`);
}

function parts(config: OAuthConfig, clientSecret: string | undefined): { as: oauth.AuthorizationServer; client: oauth.Client; auth: oauth.ClientAuth } {
  const as: oauth.AuthorizationServer = {
    issuer: config.issuer,
    token_endpoint: config.tokenEndpoint,
    ...(config.authorizationEndpoint ? { authorization_endpoint: config.authorizationEndpoint } : {}),
    ...(config.revocationEndpoint ? { revocation_endpoint: config.revocationEndpoint } : {}),
    ...(config.deviceEndpoint ? { device_authorization_endpoint: config.deviceEndpoint } : {}),
  };
  return { as, client: { client_id: config.clientId }, auth: !clientSecret ? oauth.None() : config.clientAuth === 'post' ? oauth.ClientSecretPost(clientSecret) : oauth.ClientSecretBasic(clientSecret) };
}

/** Runs a token endpoint exchange; the server's refusal becomes one line that starts with its error code. */
async function tokenCall<T>(config: OAuthConfig, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) {
      throw new StudioError('credential_refused', `${error.error}${error.error_description ? `: ${error.error_description}` : ''} (from ${config.tokenEndpoint})`);
    }
    if (error instanceof oauth.WWWAuthenticateChallengeError) {
      // A 401 (the client's authentication failed): its body says why, as a token error does.
      const body = (await error.response.json().catch(() => ({}))) as { error?: unknown; error_description?: unknown };
      const code = typeof body.error === 'string' ? body.error : (error.cause[0]?.parameters.error ?? `HTTP ${error.status}`);
      const description = typeof body.error_description === 'string' ? `: ${body.error_description}` : '';
      throw new StudioError('credential_refused', `${code}${description} (from ${config.tokenEndpoint})`);
    }
    if (error instanceof StudioError) throw error;
    throw new StudioError('fetch_failed', `the token request to ${config.tokenEndpoint} failed: ${describe(error)}`);
  }
}

function tokensOf(response: oauth.TokenEndpointResponse, config: OAuthConfig, account: string | null): ConnectedTokens {
  const lifetime = typeof response.expires_in === 'number' ? response.expires_in * 1000 : null;
  return {
    accessToken: response.access_token,
    refreshToken: response.refresh_token,
    expiresAt: lifetime === null ? null : Date.now() + lifetime,
    refreshAt: lifetime === null ? null : Date.now() + Math.max(lifetime - REFRESH_BEFORE_MS, lifetime / 2),
    scopes: typeof response.scope === 'string' && response.scope !== '' ? response.scope.split(' ') : config.scopes,
    account,
  };
}

function accountOf(response: oauth.TokenEndpointResponse): string | null {
  const claims = oauth.getValidatedIdTokenClaims(response);
  if (!claims) return null;
  const label = claims.email ?? claims.preferred_username ?? claims.sub;
  return typeof label === 'string' ? label : null;
}

function describe(error: unknown): string {
  if (error instanceof oauth.AuthorizationResponseError) return `${error.error}${error.error_description ? `: ${error.error_description}` : ''}`;
  if (error instanceof oauth.ResponseBodyError) return `${error.error}${error.error_description ? `: ${error.error_description}` : ''}`;
  if (error instanceof Error) return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
  return String(error);
}

async function deviceGrant(
  config: OAuthConfig,
  as: oauth.AuthorizationServer,
  client: oauth.Client,
  auth: oauth.ClientAuth,
  scope: Record<string, string>,
  hooks: ConnectHooks,
): Promise<oauth.TokenEndpointResponse> {
  if (!config.deviceEndpoint) throw new StudioError('bad_input', `${config.issuer} publishes no device authorization endpoint; use --grant code`);
  const options = requestOptions(config, hooks.signal);
  const device = await tokenCall(config, () => oauth.deviceAuthorizationRequest(as, client, auth, scope, options).then((r) => oauth.processDeviceAuthorizationResponse(as, client, r)));
  hooks.onDeviceCode?.({ verificationUri: device.verification_uri, verificationUriComplete: device.verification_uri_complete, userCode: device.user_code });
  let interval = (device.interval ?? 5) * 1000;
  const until = Date.now() + Math.min(device.expires_in * 1000, hooks.timeoutMs ?? CONNECT_WAIT_MS);
  for (;;) {
    if (Date.now() > until) throw new StudioError('timeout', 'the device code expired before it was approved; run connect again');
    await sleep(interval, undefined, hooks.signal ? { signal: hooks.signal } : {});
    try {
      const response = await oauth.deviceCodeGrantRequest(as, client, auth, device.device_code, requestOptions(config, hooks.signal));
      return await oauth.processDeviceCodeResponse(as, client, response);
    } catch (error) {
      if (error instanceof oauth.ResponseBodyError && error.error === 'authorization_pending') continue;
      if (error instanceof oauth.ResponseBodyError && error.error === 'slow_down') {
        interval += 5000;
        continue;
      }
      if (error instanceof oauth.ResponseBodyError) throw new StudioError('credential_refused', `the device was not authorized: ${describe(error)}`);
      throw new StudioError('fetch_failed', `the token request to ${config.tokenEndpoint} failed: ${describe(error)}`);
    }
  }
}

/**
 * The loopback redirect of RFC 8252: a server on 127.0.0.1 on a port the system picks, that takes
 * one request to /callback. Bounded by `timeoutMs` and the signal.
 */
async function loopbackRedirect(
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<{ redirectUri: string; callback: { url: Promise<URL>; answer: (ok: boolean, text: string) => void; close: () => void } }> {
  let deliver!: (url: URL) => void;
  let fail!: (error: unknown) => void;
  const url = new Promise<URL>((resolve, reject) => {
    deliver = resolve;
    fail = reject;
  });
  url.catch(() => {});
  let pending: import('node:http').ServerResponse | undefined;
  // Not an ES import: node:http's module namespace reads its lazy exports, loading undici (~100 ms of every CLI start).
  const server: Server = process.getBuiltinModule('node:http').createServer((req, res) => {
    const here = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (here.pathname !== '/callback' || pending) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
      return;
    }
    pending = res;
    deliver(new URL(here.href.replace('http://127.0.0.1', `http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = (server.address() as AddressInfo).port;
  const timer = setTimeout(() => fail(new StudioError('timeout', `no answer from the browser within ${Math.round(timeoutMs / 1000)} s; run connect again`)), timeoutMs);
  // A reason given with the cancel (the app could not open the sign-in page) is the answer's message.
  const onAbort = () => fail(signal?.reason instanceof StudioError ? signal.reason : new StudioError('cancelled', 'connect was cancelled'));
  signal?.addEventListener('abort', onAbort, { once: true });
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    callback: {
      url,
      answer: (ok, text) => pending?.writeHead(ok ? 200 : 400, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' }).end(`${text}\n`),
      close: () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        server.closeAllConnections();
        server.close();
      },
    },
  };
}
