import type { AsyncEntry as AsyncEntryType } from '@napi-rs/keyring';
import { createRequire } from 'node:module';
import { StudioError } from '../model/index.ts';

const require = createRequire(import.meta.url);
let AsyncEntryClass: typeof AsyncEntryType | undefined;
/** The keychain binding, loaded when a secret is first touched. */
function entry(service: string, account: string): AsyncEntryType {
  AsyncEntryClass ??= (require('@napi-rs/keyring') as typeof import('@napi-rs/keyring')).AsyncEntry;
  return new AsyncEntryClass(service, account);
}

/** Where secrets live. Only the keychain implementation is used by the product. */
export interface SecretStore {
  readonly kind: 'keychain' | 'env' | 'memory';
  get(name: string): Promise<string | undefined>;
  set(name: string, secret: string): Promise<void>;
  delete(name: string): Promise<void>;
}

export const KEYCHAIN_SERVICE = 'Callable Studio';

const NO_KEYCHAIN =
  'No OS keychain is available. On Linux a Secret Service (e.g. gnome-keyring) must be running and unlocked in this session. ' +
  'For headless CI, set CALLABLE_SECRETS=env and pass each secret as CALLABLE_SECRET_<NAME> (name upper-cased, - as _).';

/** Secrets in the OS keychain (macOS Keychain, Windows Credential Manager, Secret Service) via @napi-rs/keyring. */
export class KeychainSecretStore implements SecretStore {
  readonly kind = 'keychain';
  readonly #service: string;

  constructor(service: string = KEYCHAIN_SERVICE) {
    this.#service = service;
  }

  async get(name: string): Promise<string | undefined> {
    try {
      return (await entry(this.#service, name).getPassword()) ?? undefined;
    } catch (error) {
      throw keychainError(error);
    }
  }

  async set(name: string, secret: string): Promise<void> {
    try {
      await entry(this.#service, name).setPassword(secret);
    } catch (error) {
      throw keychainError(error);
    }
  }

  async delete(name: string): Promise<void> {
    try {
      await entry(this.#service, name).deletePassword();
    } catch (error) {
      throw keychainError(error);
    }
  }
}

function keychainError(error: unknown): StudioError {
  const detail = error instanceof Error ? error.message : String(error);
  return new StudioError('keychain_unavailable', `${NO_KEYCHAIN} (keychain said: ${detail})`);
}

/**
 * Read-only secrets from environment variables, for headless CI where no keychain exists.
 * Chosen explicitly with CALLABLE_SECRETS=env; never a silent fallback.
 */
export class EnvSecretStore implements SecretStore {
  readonly kind = 'env';
  readonly #env: NodeJS.ProcessEnv;

  constructor(env: NodeJS.ProcessEnv) {
    this.#env = env;
  }

  static variableFor(name: string): string {
    return `CALLABLE_SECRET_${name.toUpperCase().replace(/-/g, '_')}`;
  }

  async get(name: string): Promise<string | undefined> {
    const value = this.#env[EnvSecretStore.variableFor(name)];
    return value === undefined || value === '' ? undefined : value;
  }

  async set(name: string): Promise<void> {
    throw new StudioError('bad_input', `CALLABLE_SECRETS=env is read-only: set ${EnvSecretStore.variableFor(name)} in the environment instead`);
  }

  async delete(name: string): Promise<void> {
    throw new StudioError('bad_input', `CALLABLE_SECRETS=env is read-only: unset ${EnvSecretStore.variableFor(name)} in the environment instead`);
  }
}

/** In-memory double for tests that are about something other than the keychain. */
export class MemorySecretStore implements SecretStore {
  readonly kind = 'memory';
  readonly #secrets = new Map<string, string>();

  async get(name: string): Promise<string | undefined> {
    return this.#secrets.get(name);
  }

  async set(name: string, secret: string): Promise<void> {
    this.#secrets.set(name, secret);
  }

  async delete(name: string): Promise<void> {
    this.#secrets.delete(name);
  }
}

/** The store the environment asks for: the keychain unless CALLABLE_SECRETS=env. */
export function secretStoreFromEnv(env: NodeJS.ProcessEnv): SecretStore {
  const choice = env.CALLABLE_SECRETS ?? 'keychain';
  if (choice === 'env') return new EnvSecretStore(env);
  if (choice === 'keychain') return new KeychainSecretStore(env.CALLABLE_KEYCHAIN_SERVICE || KEYCHAIN_SERVICE);
  throw new StudioError('bad_input', `CALLABLE_SECRETS must be "keychain" (the default) or "env", not "${choice}"`);
}
