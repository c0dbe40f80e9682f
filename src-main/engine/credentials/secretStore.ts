import { StudioError } from '../model/index.ts';
import { KEYCHAIN_TIMEOUT_MS, KeychainProcess } from './keychainProcess.ts';

/** Where secrets live. Only the keychain implementation is used by the product. */
export interface SecretStore {
  readonly kind: 'keychain' | 'env' | 'memory';
  /** `signal` abandons the read (the run that needed it ended): it rejects at once. */
  get(name: string, signal?: AbortSignal): Promise<string | undefined>;
  set(name: string, secret: string): Promise<void>;
  delete(name: string): Promise<void>;
  /** Releases what the store holds (the keychain helper process). */
  dispose?(): void;
}

export const KEYCHAIN_SERVICE = 'Callable Studio';

export interface KeychainOptions {
  /** The environment of the session whose keychain is used (its D-Bus address on Linux); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** How long one keychain call may take; default KEYCHAIN_TIMEOUT_MS. */
  timeoutMs?: number;
}

/**
 * Secrets in the OS keychain (macOS Keychain, Windows Credential Manager, the Secret Service on
 * Linux; never the kernel session keyring, which forgets) via @napi-rs/keyring. Every call runs in
 * a helper process, off the event loop and bounded in time: a locked, stopped or missing keychain
 * fails with keychain_locked, keychain_not_answering or keychain_unavailable, never a hang.
 */
export class KeychainSecretStore implements SecretStore {
  readonly kind = 'keychain';
  readonly #service: string;
  readonly #helper: KeychainProcess;

  constructor(service: string = KEYCHAIN_SERVICE, options: KeychainOptions = {}) {
    this.#service = service;
    this.#helper = new KeychainProcess({ env: options.env ?? process.env, timeoutMs: options.timeoutMs ?? KEYCHAIN_TIMEOUT_MS });
  }

  /** The helper process's pid while it runs. */
  get helperPid(): number | undefined {
    return this.#helper.pid;
  }

  async get(name: string, signal?: AbortSignal): Promise<string | undefined> {
    return (await this.#helper.call('get', this.#service, name, undefined, signal)) ?? undefined;
  }

  async set(name: string, secret: string): Promise<void> {
    await this.#helper.call('set', this.#service, name, secret);
  }

  async delete(name: string): Promise<void> {
    await this.#helper.call('delete', this.#service, name);
  }

  dispose(): void {
    this.#helper.dispose();
  }
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
  if (choice === 'keychain') {
    const timeout = env.CALLABLE_KEYCHAIN_TIMEOUT_MS;
    const timeoutMs = timeout === undefined || timeout === '' ? KEYCHAIN_TIMEOUT_MS : Number(timeout);
    if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 600_000) {
      throw new StudioError('bad_input', `CALLABLE_KEYCHAIN_TIMEOUT_MS must be a whole number of milliseconds from 100 to 600000, not "${timeout}"`);
    }
    return new KeychainSecretStore(env.CALLABLE_KEYCHAIN_SERVICE || KEYCHAIN_SERVICE, { env, timeoutMs });
  }
  throw new StudioError('bad_input', `CALLABLE_SECRETS must be "keychain" (the default) or "env", not "${choice}"`);
}
