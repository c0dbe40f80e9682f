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
} from '../model/index.ts';
import type { CredentialInjection } from '../net/guardedFetch.ts';
import { FolderSecrets } from './folderSecrets.ts';
import type { SecretStore } from './secretStore.ts';

interface Row {
  name: string;
  hosts: string;
  placement: string;
  created_at: string;
  updated_at: string;
}

/**
 * Credential metadata in SQLite, secrets in this data folder's secrets. The secret is write-only
 * from the outside: nothing here returns it except `injection`, which the guarded fetch uses host-side.
 */
export class CredentialService {
  readonly #db: Db;
  readonly #secrets: FolderSecrets;

  constructor(db: Db, secrets: FolderSecrets) {
    this.#db = db;
    this.#secrets = secrets;
  }

  get storeKind(): SecretStore['kind'] {
    return this.#secrets.kind;
  }

  async list(): Promise<CredentialInfo[]> {
    const rows = this.#db.prepare('SELECT * FROM credentials ORDER BY name').all() as Row[];
    return Promise.all(
      rows.map(async (row) => {
        let hasSecret: boolean | 'unknown';
        try {
          hasSecret = (await this.#secrets.get({ kind: 'credential', name: row.name })) !== undefined;
        } catch {
          hasSecret = 'unknown';
        }
        return { ...toSpec(row), hasSecret, createdAt: row.created_at, updatedAt: row.updated_at };
      }),
    );
  }

  find(name: string): CredentialSpec | undefined {
    const row = this.#db.prepare('SELECT * FROM credentials WHERE name = ?').get(name) as Row | undefined;
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
    if (secret !== undefined && this.#secrets.kind === 'env') {
      throw new StudioError(
        'bad_input',
        `CALLABLE_SECRETS=env stores no secrets, and nothing was saved: put the secret in ${FolderSecrets.variableFor({ kind: 'credential', name: spec.name })} and give no secret here (e.g. stdin from /dev/null) to save the metadata`,
      );
    }
    if (secret !== undefined) {
      if (secret.length === 0) throw new StudioError('bad_input', 'the secret is empty; pass the secret on standard input');
      if (/[\r\n]/.test(secret)) throw new StudioError('bad_input', 'the secret contains a line break; secrets are single-line values');
      await this.#secrets.set({ kind: 'credential', name: spec.name }, secret);
    } else if (!this.find(spec.name) && this.#secrets.kind === 'keychain') {
      throw new StudioError('bad_input', `credential "${spec.name}" is new: give its secret`);
    }
    const now = nowIso();
    writeTransaction(this.#db, () =>
      this.#db
        .prepare(
          `INSERT INTO credentials (name, hosts, placement, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT(name) DO UPDATE SET hosts = excluded.hosts, placement = excluded.placement, updated_at = excluded.updated_at`,
        )
        .run(spec.name, JSON.stringify(spec.hosts), JSON.stringify(spec.placement), now, now),
    );
    return spec;
  }

  async remove(name: string): Promise<void> {
    if (!this.find(name)) throw new StudioError('not_found', `no credential named "${name}"; "callable credentials list" shows them`);
    if (this.#secrets.kind !== 'env') await this.#secrets.delete({ kind: 'credential', name });
    writeTransaction(this.#db, () => this.#db.prepare('DELETE FROM credentials WHERE name = ?').run(name));
  }

  /** What the guarded fetch adds for `name`, for a function that declared `allowed` credentials. */
  async injection(name: string, allowed: readonly string[]): Promise<CredentialInjection> {
    if (!allowed.includes(name)) {
      throw new StudioError('credential_refused', `this function may not use credential "${name}": add it to the function's "credentials" list`);
    }
    const spec = this.find(name);
    if (!spec) throw new StudioError('credential_refused', `credential "${name}" does not exist; create it with "callable credentials set ${name} --host HOST"`);
    const secret = await this.#secrets.get({ kind: 'credential', name });
    if (secret === undefined) {
      throw new StudioError(
        'credential_refused',
        this.#secrets.kind === 'env'
          ? `credential "${name}" has no secret: set ${FolderSecrets.variableFor({ kind: 'credential', name })} in the environment`
          : `credential "${name}" has no secret in the OS keychain (or the keychain is locked or not running); set it again with "callable credentials set ${name}" or on the Credentials page`,
      );
    }
    const hosts = spec.hosts.map(parseHostPattern).filter((p): p is HostPattern => !isHostPatternError(p));
    const placement = spec.placement;
    return placement.kind === 'header'
      ? { name, hosts, secret, header: [placement.header, placement.template.split('{secret}').join(secret)] }
      : { name, hosts, secret, query: [placement.param, secret] };
  }
}

function toSpec(row: Row): CredentialSpec {
  return { name: row.name, hosts: JSON.parse(row.hosts) as string[], placement: JSON.parse(row.placement) as CredentialSpec['placement'] };
}
