import type Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { bumpCounter, readCounter } from '../store/catalog.ts';
import type { Db } from '../store/database.ts';
import { nowIso, writeTransaction } from '../store/database.ts';
import {
  CredentialSpecSchema,
  formatZodError,
  isHostPatternError,
  parseHostPattern,
  StudioError,
  type CredentialInfo,
  type CredentialSpec,
  type HostPattern,
  type OAuthConnectInput,
  type OAuthGrant,
} from '../model/index.ts';
import { credentialNotListedMessage } from '../model/toolResults.ts';
import type { CredentialInjection } from '../net/guardedFetch.ts';
import { FolderSecrets } from './folderSecrets.ts';
import { OAuthCredentials, type ConnectHooks } from './oauth.ts';
import { withPreset } from './oauthPresets.ts';
import type { SecretStore } from './secretStore.ts';

interface Row {
  name: string;
  hosts: string;
  placement: string;
  created_at: string;
  updated_at: string;
}

/**
 * `credentials_version` changes whenever any process changes credentials or grants (in the same
 * transaction), so a studio open on this data folder can show another process's changes.
 */
export function bumpCredentials(db: Db): void {
  bumpCounter(db, 'credentials_version');
}

export function credentialsVersion(db: Db): number {
  return readCounter(db, 'credentials_version');
}

/** Moves on each regeneration of the MCP token, in every process on this data folder. */
function mcpTokenVersion(db: Db): string {
  return (db.prepare("SELECT value FROM settings WHERE key = 'mcp_token_version'").get() as { value: string } | undefined)?.value ?? '0';
}

/**
 * Credential metadata in SQLite, secrets in this data folder's secrets. The secret is write-only
 * from the outside: nothing here returns it except `injection`, which the guarded fetch uses host-side.
 */
export class CredentialService {
  readonly #db: Db;
  readonly #secrets: FolderSecrets;
  #stored: { version: number; secrets: Promise<Array<{ name: string; secret: string }>> } | undefined;
  #mcpTokenSeen: { version: string; token: string } | undefined;
  // Prepared on first use, once: each run of a function that lists credentials reads both per credential.
  #grantedRead: Database.Statement | undefined;
  #findRead: Database.Statement | undefined;
  /** OAuth 2 credentials: their access token is their secret, kept fresh by this. */
  readonly oauth: OAuthCredentials;

  constructor(db: Db, secrets: FolderSecrets) {
    this.#db = db;
    this.#secrets = secrets;
    this.oauth = new OAuthCredentials(db, secrets);
  }

  get storeKind(): SecretStore['kind'] {
    return this.#secrets.kind;
  }

  async list(): Promise<CredentialInfo[]> {
    const rows = this.#db.prepare('SELECT * FROM credentials ORDER BY name').all() as Row[];
    return Promise.all(
      rows.map(async (row): Promise<CredentialInfo> => {
        const status = this.oauth.status(row.name);
        const base = { ...toSpec(row), grantedTo: this.grantees(row.name), createdAt: row.created_at, updatedAt: row.updated_at, ...(status ? { kind: 'oauth' as const, ...status } : {}) };
        try {
          return { ...base, hasSecret: (await this.#secrets.get({ kind: 'credential', name: row.name })) !== undefined };
        } catch (error) {
          const problem = error instanceof StudioError ? { code: error.code, message: error.message } : { code: 'keychain_unavailable' as const, message: String(error) };
          return { ...base, hasSecret: 'unknown', secretProblem: problem };
        }
      }),
    );
  }

  find(name: string): CredentialSpec | undefined {
    this.#findRead ??= this.#db.prepare('SELECT * FROM credentials WHERE name = ?');
    const row = this.#findRead.get(name) as Row | undefined;
    return row ? toSpec(row) : undefined;
  }

  /**
   * Creates or replaces a credential. With `secret` undefined only the metadata changes (in env
   * mode always: a secret given there is refused, it belongs in the environment).
   * The secret is stored first, so a dead keychain leaves the database untouched.
   */
  async set(input: unknown, secret: string | undefined): Promise<CredentialSpec> {
    const parsed = CredentialSpecSchema.safeParse(input);
    if (!parsed.success) throw new StudioError('bad_input', `credential: ${formatZodError(parsed.error)}`);
    const spec = parsed.data;
    if (this.oauth.isOAuth(spec.name)) {
      throw new StudioError('bad_input', `credential "${spec.name}" is an OAuth credential; connect it again with "callable credentials connect ${spec.name}", or remove it first; nothing was saved`);
    }
    if (secret !== undefined && this.#secrets.kind === 'env') {
      throw new StudioError(
        'bad_input',
        `CALLABLE_SECRETS=env stores no secrets, and nothing was saved: put the secret in ${FolderSecrets.variableFor({ kind: 'credential', name: spec.name })} and give no secret here (e.g. stdin from /dev/null) to save the metadata`,
      );
    }
    const key = { kind: 'credential' as const, name: spec.name };
    /** What the keychain held before this save: put back if the database refuses the save (undefined: nothing). */
    let previous: string | undefined;
    if (secret !== undefined) {
      if (secret.length === 0) throw new StudioError('bad_input', 'the secret is empty; pass the secret on standard input');
      if (/[\r\n]/.test(secret)) throw new StudioError('bad_input', 'the secret contains a line break; secrets are single-line values');
      try {
        if (this.find(spec.name)) previous = await this.#secrets.get(key);
        await this.#secrets.set(key, secret);
      } catch (error) {
        if (error instanceof StudioError) throw new StudioError(error.code, `${error.message}; nothing was saved`, error.details);
        throw error;
      }
    } else if (!this.find(spec.name) && this.#secrets.kind === 'keychain') {
      throw new StudioError('bad_input', `credential "${spec.name}" is new: give its secret`);
    }
    try {
      writeTransaction(this.#db, () => {
        this.#writeSpec(spec);
        bumpCredentials(this.#db);
      });
    } catch (error) {
      // The database refused the save (a full disk, a lock, a read-only file): no secret stays behind.
      if (secret === undefined) throw error;
      await (previous === undefined ? this.#secrets.delete(key) : this.#secrets.set(key, previous)).catch(() => {});
      if (error instanceof StudioError) throw new StudioError(error.code, `${error.message}; the secret was not kept`, error.details);
      throw error;
    }
    return spec;
  }

  /** Creates or updates the credential's row (inside a write transaction). */
  #writeSpec(spec: CredentialSpec): void {
    const now = nowIso();
    this.#db
      .prepare(
        `INSERT INTO credentials (name, hosts, placement, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(name) DO UPDATE SET hosts = excluded.hosts, placement = excluded.placement, updated_at = excluded.updated_at`,
      )
      .run(spec.name, JSON.stringify(spec.hosts), JSON.stringify(spec.placement), now, now);
  }

  /**
   * Connects an OAuth 2 credential: runs the grant, then stores the tokens in the keychain and the
   * rest in the database. Connecting again replaces the tokens and keeps the grants to functions.
   */
  async connect(given: OAuthConnectInput, hooks: ConnectHooks = {}): Promise<CredentialInfo> {
    const input = withPreset(this.#withStored(given), hooks.clientSecret !== undefined);
    if (input.clientId === '') throw new StudioError('bad_input', `give --client-id ID (the client registered with the authorization server) to connect "${input.name}"`);
    const parsed = CredentialSpecSchema.safeParse({ name: input.name, hosts: input.hosts, placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } });
    if (!parsed.success) throw new StudioError('bad_input', `credential: ${formatZodError(parsed.error)}`);
    const spec = parsed.data;
    if (this.#secrets.kind === 'env') throw new StudioError('bad_input', 'OAuth credentials keep refreshed tokens in the OS keychain, and CALLABLE_SECRETS=env stores no secrets; connect without it');
    if (this.find(spec.name) && !this.oauth.isOAuth(spec.name)) {
      throw new StudioError('bad_input', `credential "${spec.name}" exists and is not an OAuth credential; remove it first (callable credentials rm ${spec.name}) or pick another name`);
    }
    const existed = this.find(spec.name) !== undefined;
    const config = await this.oauth.configFor(input, hooks.clientSecret !== undefined, hooks.signal);
    const tokens = await this.oauth.obtain(config, hooks);
    await this.oauth.storeSecrets(spec.name, tokens, hooks.clientSecret);
    await this.#secrets.set({ kind: 'credential', name: spec.name }, tokens.accessToken);
    try {
      writeTransaction(this.#db, () => {
        this.#writeSpec(spec);
        this.oauth.writeRow(spec.name, config, tokens);
        bumpCredentials(this.#db);
      });
    } catch (error) {
      // The database refused the save: a new credential leaves no tokens behind.
      if (!existed) await Promise.all([this.oauth.forgetSecrets(spec.name), this.#secrets.delete({ kind: 'credential', name: spec.name })]).catch(() => {});
      throw error;
    }
    return (await this.list()).find((c) => c.name === spec.name)!;
  }

  /** Fills what `given` leaves out from the stored credential of that name: its server, hosts, scopes, client and grant. */
  #withStored(given: OAuthConnectInput): OAuthConnectInput {
    const stored = this.oauth.storedInput(given.name);
    if (!stored) return given;
    const ownServer = given.preset !== undefined || given.issuer !== undefined || given.authorizeUrl !== undefined || given.tokenUrl !== undefined;
    // Flags not given are undefined here, and must not hide what is stored.
    const givenOnly = Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined)) as unknown as OAuthConnectInput;
    return {
      ...(ownServer ? {} : stored),
      ...givenOnly,
      hosts: given.hosts.length > 0 ? given.hosts : (this.find(given.name)?.hosts ?? []),
      scopes: given.scopes.length > 0 ? given.scopes : (stored.scopes ?? []),
      clientId: given.clientId !== '' ? given.clientId : (stored.clientId ?? ''),
    };
  }

  /**
   * Defines an OAuth credential without connecting it (from an OpenAPI security scheme): its server,
   * scopes and hosts are kept, its state is `not_connected`, and `connect NAME --client-id ID`
   * connects it. A credential of that name already there is left as it is.
   */
  defineOAuth(input: { name: string; hosts: string[]; issuer?: string; authorizeUrl?: string; tokenUrl?: string; deviceUrl?: string; scopes: string[]; grant: OAuthGrant }): boolean {
    const parsed = CredentialSpecSchema.safeParse({ name: input.name, hosts: input.hosts, placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } });
    if (!parsed.success) throw new StudioError('bad_input', `credential: ${formatZodError(parsed.error)}`);
    return writeTransaction(this.#db, () => {
      if (this.find(input.name)) return false;
      this.#writeSpec(parsed.data);
      const { name: _name, hosts: _hosts, ...server } = input;
      this.oauth.define(input.name, server);
      bumpCredentials(this.#db);
      return true;
    });
  }

  /**
   * Deletes the credential, its secret and its grants; returns the functions it was granted to. An
   * OAuth credential's grant is revoked at the server first where it can be; `onNote` hears how that went.
   */
  async remove(name: string, onNote?: (note: string) => void): Promise<string[]> {
    if (!this.find(name)) throw new StudioError('not_found', `no credential named "${name}"; "callable credentials list" shows them`);
    if (this.oauth.isOAuth(name)) {
      const note = await this.oauth.revoke(name);
      if (note) onNote?.(note);
      await this.oauth.forgetSecrets(name);
    }
    if (this.#secrets.kind !== 'env') await this.#secrets.delete({ kind: 'credential', name });
    const grantees = this.grantees(name);
    writeTransaction(this.#db, () => {
      this.oauth.deleteRow(name);
      this.#db.prepare('DELETE FROM credential_grants WHERE credential = ?').run(name);
      this.#db.prepare('DELETE FROM credentials WHERE name = ?').run(name);
      bumpCredentials(this.#db);
    });
    return grantees;
  }

  // ---- grants: a function uses a credential only once the user has granted it ----

  /**
   * Lets the function `functionName` use the credential `name`. The function must list it in its
   * "credentials"; the credential itself may be created later. Granting twice changes nothing.
   */
  grant(name: string, functionName: string): { granted: boolean; credentialExists: boolean } {
    const fn = this.#functionRow(functionName);
    const listed = (JSON.parse(fn.spec) as { credentials?: string[] }).credentials ?? [];
    if (!listed.includes(name)) {
      const asks = listed.length === 0 ? 'it lists none' : `it lists ${listed.join(', ')}`;
      throw new StudioError('bad_input', `function "${functionName}" does not list credential "${name}" in its "credentials" (${asks}); add it there first, then grant it`);
    }
    const changes = writeTransaction(this.#db, () => {
      const n = this.#db.prepare('INSERT OR IGNORE INTO credential_grants (function_id, credential, granted_at) VALUES (?, ?, ?)').run(fn.id, name, nowIso()).changes;
      if (n > 0) bumpCredentials(this.#db);
      return n;
    });
    return { granted: changes > 0, credentialExists: this.find(name) !== undefined };
  }

  /** Takes back a grant: the function's next runs are refused the credential. */
  revoke(name: string, functionName: string): void {
    const fn = this.#functionRow(functionName);
    const changes = writeTransaction(this.#db, () => {
      const n = this.#db.prepare('DELETE FROM credential_grants WHERE function_id = ? AND credential = ?').run(fn.id, name).changes;
      if (n > 0) bumpCredentials(this.#db);
      return n;
    });
    if (changes === 0) throw new StudioError('not_found', `function "${functionName}" has not been granted credential "${name}"; nothing to revoke`);
  }

  /** The credentials the function `functionName` has been granted (by name, sorted). */
  grantsOf(functionName: string): string[] {
    const rows = this.#db
      .prepare('SELECT g.credential FROM credential_grants g JOIN functions f ON f.id = g.function_id WHERE f.name = ? ORDER BY g.credential')
      .all(functionName) as Array<{ credential: string }>;
    return rows.map((r) => r.credential);
  }

  /** The functions the credential `name` has been granted to (sorted). */
  grantees(name: string): string[] {
    const rows = this.#db
      .prepare('SELECT f.name FROM credential_grants g JOIN functions f ON f.id = g.function_id WHERE g.credential = ? ORDER BY f.name')
      .all(name) as Array<{ name: string }>;
    return rows.map((r) => r.name);
  }

  /** The credentials `fn` lists but has not been granted: what import and save tell the user about. */
  ungranted(fn: { name: string; credentials: readonly string[] }): string[] {
    const granted = new Set(this.grantsOf(fn.name));
    return fn.credentials.filter((c) => !granted.has(c));
  }

  /** Refuses (credential_refused) a credential the function does not list, or lists but has not been granted. */
  authorize(name: string, fn: { name: string; credentials: readonly string[] }): void {
    if (!fn.credentials.includes(name)) {
      throw new StudioError('credential_refused', credentialNotListedMessage(name));
    }
    this.#grantedRead ??= this.#db.prepare('SELECT 1 FROM credential_grants g JOIN functions f ON f.id = g.function_id WHERE f.name = ? AND g.credential = ?');
    const granted = this.#grantedRead.get(fn.name, name);
    if (!granted) {
      throw new StudioError(
        'credential_refused',
        `function "${fn.name}" has not been granted credential "${name}", so nothing was sent; if it should use it, grant it: callable credentials grant ${name} ${fn.name} (or on the Credentials page)`,
        { credential: name, function: fn.name },
      );
    }
  }

  /** The spec of a credential `fn` may use (listed, granted, existing), or the credential_refused error that says what to do. */
  usable(name: string, fn: { name: string; credentials: readonly string[] }): CredentialSpec {
    this.authorize(name, fn);
    const spec = this.find(name);
    if (!spec) throw missingCredential(name);
    return spec;
  }

  #functionRow(functionName: string): { id: number; spec: string } {
    const fn = this.#db.prepare('SELECT id, spec FROM functions WHERE name = ?').get(functionName) as { id: number; spec: string } | undefined;
    if (!fn) throw new StudioError('not_found', `no function named "${functionName}"; "callable list" shows them`);
    return fn;
  }

  /**
   * Every credential's secret in this data folder, for redaction and for the scan of saved tests.
   * A keychain read takes tens of ms, so they are kept until a credential changes in any process
   * (credentials_version). With no credential the keychain is not asked. Rejects with the
   * keychain's error (keychain_*), which is not kept, or the database's (async, so a caller's
   * handler gets it rather than an event handler throwing).
   */
  async storedSecrets(): Promise<Array<{ name: string; secret: string }>> {
    const version = credentialsVersion(this.#db);
    if (this.#stored?.version !== version) {
      const secrets = this.#readSecrets();
      this.#stored = { version, secrets };
      secrets.catch(() => {
        if (this.#stored?.secrets === secrets) this.#stored = undefined;
      });
    }
    return this.#stored!.secrets;
  }

  async #readSecrets(): Promise<Array<{ name: string; secret: string }>> {
    const names = (this.#db.prepare('SELECT name FROM credentials ORDER BY name').all() as Array<{ name: string }>).map((r) => r.name);
    const out: Array<{ name: string; secret: string }> = [];
    for (const name of names) {
      const secret = await this.#secrets.get({ kind: 'credential', name });
      if (secret !== undefined) out.push({ name, secret });
      if (this.oauth.isOAuth(name)) for (const other of await this.oauth.extraSecrets(name)) out.push({ name, secret: other });
    }
    return out;
  }

  /** What the guarded fetch adds for `name`, for a function that declared `allowed` credentials. */
  async injection(name: string, allowed: readonly string[], signal?: AbortSignal): Promise<CredentialInjection> {
    if (!allowed.includes(name)) {
      throw new StudioError('credential_refused', credentialNotListedMessage(name));
    }
    const spec = this.find(name);
    if (!spec) throw missingCredential(name);
    // An OAuth access token near its expiry is refreshed first (by one process of this folder).
    const generation = await this.oauth.fresh(name, signal);
    // A keychain that is locked, stopped or missing throws its own error here (keychain_*).
    let secret: string | undefined;
    try {
      secret = await this.#secrets.get({ kind: 'credential', name }, signal);
    } catch (error) {
      if (error instanceof StudioError && error.code.startsWith('keychain_')) {
        throw new StudioError(error.code, `cannot read the secret of credential "${name}": ${error.message}`, error.details);
      }
      throw error;
    }
    if (secret === undefined) {
      throw new StudioError(
        'credential_refused',
        this.#secrets.kind === 'env'
          ? `credential "${name}" has no secret: set ${FolderSecrets.variableFor({ kind: 'credential', name })} in the environment`
          : `the secret of credential "${name}" was deleted from the keychain (it answered, and has no entry for it); set it again with "callable credentials set ${name} --host HOST" or on the Credentials page`,
      );
    }
    const hosts = spec.hosts.map(parseHostPattern).filter((p): p is HostPattern => !isHostPatternError(p));
    const placement = spec.placement;
    // A 401 to this token: a newer one (another process's, or a refresh now), asked for once.
    const refresh = generation === undefined ? {} : { refresh: async () => (await this.oauth.newerThan(name, generation, signal), this.injection(name, allowed, signal)) };
    return placement.kind === 'header'
      ? { name, hosts, secret, header: [placement.header, placement.template.split('{secret}').join(secret)], ...refresh }
      : { name, hosts, secret, query: [placement.param, secret], ...refresh };
  }

  /**
   * The bearer token of the Streamable HTTP MCP server: generated once and kept in this data
   * folder's secrets (the OS keychain), so the app and `callable serve` on the same folder share
   * it. With CALLABLE_SECRETS=env it comes from CALLABLE_MCP_TOKEN and cannot be regenerated.
   */
  async mcpToken(options: { regenerate?: boolean } = {}): Promise<string> {
    if (this.#secrets.kind === 'env') {
      if (options.regenerate) throw new StudioError('bad_input', 'CALLABLE_SECRETS=env: the token is CALLABLE_MCP_TOKEN; change that variable to replace it');
      const token = await this.#secrets.get({ kind: 'mcp-token' });
      if (!token) throw new StudioError('bad_input', 'CALLABLE_SECRETS=env: set CALLABLE_MCP_TOKEN to the HTTP bearer token, or serve with --no-auth');
      return token;
    }
    // `mcp_token_version` (shared by every process on this folder) moves on each regeneration, so a
    // running server re-reads the keychain only then: a cheap read per request, not a keychain call.
    if (!options.regenerate) {
      const seen = mcpTokenVersion(this.#db);
      if (this.#mcpTokenSeen?.version === seen) return this.#mcpTokenSeen.token;
      const existing = await this.#secrets.get({ kind: 'mcp-token' });
      if (existing) {
        this.#mcpTokenSeen = { version: seen, token: existing };
        return existing;
      }
    }
    const token = randomBytes(24).toString('base64url');
    // Checked first (a lock held past the busy timeout, a schema moved by another version): a token
    // is only replaced in the keychain when the servers can be told. A full disk passes this empty
    // transaction and fails the write below.
    writeTransaction(this.#db, () => undefined);
    /** The token the running servers use: put back if they cannot be told of the new one (undefined: none). */
    const previous = options.regenerate ? await this.#secrets.get({ kind: 'mcp-token' }) : undefined;
    await this.#secrets.set({ kind: 'mcp-token' }, token);
    try {
      writeTransaction(this.#db, () =>
        this.#db.prepare("INSERT INTO settings (key, value) VALUES ('mcp_token_version', '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1").run(),
      );
    } catch (error) {
      // The write failed after the check (the disk filled, another process took the lock): the
      // keychain goes back to the token the servers know, or to none.
      await (previous === undefined ? this.#secrets.delete({ kind: 'mcp-token' }) : this.#secrets.set({ kind: 'mcp-token' }, previous)).catch(() => {});
      if (error instanceof StudioError) throw new StudioError(error.code, `${error.message}; the token was not changed`, error.details);
      throw error;
    }
    this.#mcpTokenSeen = { version: mcpTokenVersion(this.#db), token };
    return token;
  }
}

function missingCredential(name: string): StudioError {
  return new StudioError('credential_refused', `credential "${name}" does not exist; create it with "callable credentials set ${name} --host HOST"`);
}

function toSpec(row: Row): CredentialSpec {
  return { name: row.name, hosts: JSON.parse(row.hosts) as string[], placement: JSON.parse(row.placement) as CredentialSpec['placement'] };
}
