import { StudioError } from '../model/index.ts';
import { writeTransaction, type Db } from '../store/database.ts';
import { EnvSecretStore, type SecretStore } from './secretStore.ts';

/** A secret of a data folder: a credential's, or the HTTP MCP server's bearer token. */
export type SecretKey = { kind: 'credential'; name: string } | { kind: 'mcp-token' } | { kind: 'oauth-refresh' | 'oauth-client'; name: string };

const MCP_TOKEN_VARIABLE = 'CALLABLE_MCP_TOKEN';

/**
 * The secrets of one data folder. Keychain accounts carry the folder's install id
 * (`<installId>:credential:<name>`, `<installId>:mcp:http-token`), so two data folders never read
 * or overwrite each other's entries. In env mode the variables are the same for every folder.
 */
export class FolderSecrets {
  readonly #store: SecretStore;
  readonly #db: Db;
  readonly #env: NodeJS.ProcessEnv;
  readonly installId: string;
  #adopting: Promise<void> | undefined;

  constructor(db: Db, store: SecretStore, env: NodeJS.ProcessEnv) {
    this.#db = db;
    this.#store = store;
    this.#env = env;
    const row = db.prepare("SELECT value FROM settings WHERE key = 'install_id'").get() as { value: string } | undefined;
    if (!row) throw new Error('the database has no install id; it was not migrated');
    this.installId = row.value;
  }

  get kind(): SecretStore['kind'] {
    return this.#store.kind;
  }

  /** The keychain account of `key` in this data folder. */
  account(key: SecretKey): string {
    return `${this.installId}:${key.kind === 'mcp-token' ? 'mcp:http-token' : `${key.kind}:${key.name}`}`;
  }

  /** Where env mode reads `key` from. */
  static variableFor(key: SecretKey): string {
    if (key.kind === 'mcp-token') return MCP_TOKEN_VARIABLE;
    return EnvSecretStore.variableFor(key.kind === 'credential' ? key.name : `${key.name}_${key.kind}`);
  }

  async get(key: SecretKey, signal?: AbortSignal): Promise<string | undefined> {
    if (this.#store.kind === 'env') {
      const value = this.#env[FolderSecrets.variableFor(key)];
      return value === undefined || value === '' ? undefined : value;
    }
    await this.#adoptUnscoped();
    return this.#store.get(this.account(key), signal);
  }

  /** Releases the store (the keychain helper process). */
  dispose(): void {
    this.#store.dispose?.();
  }

  async set(key: SecretKey, secret: string): Promise<void> {
    if (this.#store.kind === 'env') throw envReadOnly(key, 'set');
    await this.#adoptUnscoped();
    await this.#store.set(this.account(key), secret);
  }

  async delete(key: SecretKey): Promise<void> {
    if (this.#store.kind === 'env') throw envReadOnly(key, 'unset');
    await this.#adoptUnscoped();
    await this.#store.delete(this.account(key));
  }

  /**
   * Once per data folder that held data before secrets were scoped: each of its secrets still
   * under the old unscoped account (the credential's name, `mcp:http-token`) is copied to its
   * scoped account unless that exists. The old entry stays: another folder may still adopt it.
   */
  #adoptUnscoped(): Promise<void> {
    this.#adopting ??= this.#adopt().catch((error: unknown) => {
      this.#adopting = undefined;
      throw error;
    });
    return this.#adopting;
  }

  async #adopt(): Promise<void> {
    const flag = this.#db.prepare("SELECT 1 FROM settings WHERE key = 'adopt_unscoped_secrets'").get();
    if (!flag) return;
    const names = (this.#db.prepare('SELECT name FROM credentials').all() as Array<{ name: string }>).map((r) => r.name);
    const keys: SecretKey[] = [...names.map((name) => ({ kind: 'credential' as const, name })), { kind: 'mcp-token' }];
    for (const key of keys) {
      const legacy = await this.#store.get(key.kind === 'credential' ? key.name : 'mcp:http-token');
      if (legacy === undefined) continue;
      if ((await this.#store.get(this.account(key))) === undefined) await this.#store.set(this.account(key), legacy);
    }
    writeTransaction(this.#db, () => this.#db.prepare("DELETE FROM settings WHERE key = 'adopt_unscoped_secrets'").run());
  }
}

function envReadOnly(key: SecretKey, verb: 'set' | 'unset'): StudioError {
  return new StudioError('bad_input', `CALLABLE_SECRETS=env stores no secrets: ${verb} ${FolderSecrets.variableFor(key)} in the environment instead`);
}
