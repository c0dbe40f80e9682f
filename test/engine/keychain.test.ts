import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, EnvSecretStore, KeychainSecretStore, type Engine } from '../../src-main/engine/index.ts';
import { cli } from '../support/cli.ts';
import { defineFunction, testEngine } from '../support/engine.ts';
import { vendorServer } from '../support/vendor.ts';

// The real Secret Service started by test/setup/keychain.ts (a private gnome-keyring on Linux).
const service = process.env.CALLABLE_KEYCHAIN_SERVICE!;
const SECRET = `kc-${Math.random().toString(36).slice(2)}-secret`;

describe('the OS keychain', () => {
  it('stores, reads and deletes a secret', async () => {
    const store = new KeychainSecretStore(service);
    await store.set('roundtrip', SECRET);
    expect(await store.get('roundtrip')).toBe(SECRET);
    await store.delete('roundtrip');
    expect(await store.get('roundtrip')).toBeUndefined();
  });

  it.runIf(process.platform === 'linux')('says clearly when no keychain is reachable (Linux: no Secret Service on the bus)', async () => {
    // A fresh process: the keychain library keeps its bus connection for the life of a process.
    const script = `import { KeychainSecretStore } from './src-main/engine/credentials/secretStore.ts';
      new KeychainSecretStore('probe').set('x', 'secret').then(() => console.log('{"reached":true}'), (e) => console.log(JSON.stringify({ code: e.code, message: e.message })));`;
    const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '../..'),
      env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus' },
      encoding: 'utf8',
    });
    expect(JSON.parse(out.stdout)).toMatchObject({ code: 'keychain_unavailable', message: expect.stringContaining('CALLABLE_SECRETS=env') });
  });

  it('reads secrets from the environment when asked to (CALLABLE_SECRETS=env)', async () => {
    const store = new EnvSecretStore({ CALLABLE_SECRET_MY_API: 'from-env' });
    expect(await store.get('my-api')).toBe('from-env');
    await expect(store.set('my-api')).rejects.toThrow(/read-only: set CALLABLE_SECRET_MY_API/);
  });
});

describe('a credential from the keychain, end to end', () => {
  const engine = testEngine({ secrets: new KeychainSecretStore(service) });
  let vendor: Awaited<ReturnType<typeof vendorServer>>;

  beforeAll(async () => {
    vendor = await vendorServer((req, res) => res.end(JSON.stringify({ saw: req.headers['x-api-key'] ?? null })));
  });

  it('injects the keychain secret into the request and never stores it in SQLite', async () => {
    await engine.credentials.set({ name: 'kc', hosts: [`127.0.0.1:${vendor.port}`], placement: { kind: 'header', header: 'X-Api-Key', template: '{secret}' } }, SECRET);
    await defineFunction(
      engine,
      { name: 'kc_user', allowedHosts: [`127.0.0.1:${vendor.port}`], credentials: ['kc'] },
      `export default async (a, ctx) => {
        const res = await ctx.fetch('http://127.0.0.1:${vendor.port}/', { credential: 'kc' });
        return { body: await res.json() };
      }`,
    );
    const result = await engine.run('kc_user', {}, { caller: 'test' });
    expect(vendor.seen.at(-1)!.headers['x-api-key']).toBe(SECRET);
    expect(result).toMatchObject({ ok: true, value: { body: { saw: '[redacted:kc]' } } });
    expect((await engine.credentials.list())[0]).toMatchObject({ name: 'kc', hasSecret: true });
    expect(JSON.stringify(await engine.credentials.list())).not.toContain(SECRET);
    for (const file of readdirSync(engine.dataDir)) {
      expect(readFileSync(join(engine.dataDir, file)).includes(SECRET), file).toBe(false);
    }
    await engine.credentials.remove('kc');
    expect(await new KeychainSecretStore(service).get('kc')).toBeUndefined();
  });
});

describe('secrets belong to their data folder', () => {
  const header = { kind: 'header', header: 'X-Api-Key', template: '{secret}' } as const;
  const secretOf = async (engine: Engine, name: string) => (await engine.credentials.injection(name, [name])).secret;
  const folder = (): Engine => testEngine({ secrets: new KeychainSecretStore(service) });
  const a = folder();
  const b = folder();

  it('keeps a credential of the same name apart in two data folders, and removing it in one leaves the other', async () => {
    await a.credentials.set({ name: 'shared', hosts: ['api.example.com'], placement: header }, 'secret-of-a');
    await b.credentials.set({ name: 'shared', hosts: ['api.example.com'], placement: header }, 'secret-of-b');
    expect(await secretOf(a, 'shared')).toBe('secret-of-a');
    expect(await secretOf(b, 'shared')).toBe('secret-of-b');

    await b.credentials.remove('shared');
    expect(await a.credentials.list()).toMatchObject([{ name: 'shared', hasSecret: true }]);
    expect(await secretOf(a, 'shared')).toBe('secret-of-a');
  });

  it('stores each secret under an account named after the data folder\'s install id', async () => {
    await a.credentials.set({ name: 'named', hosts: ['api.example.com'], placement: header }, 'named-secret');
    const keychain = new KeychainSecretStore(service);
    expect(a.installId).toMatch(/^[0-9a-f]{32}$/);
    expect(a.installId).not.toBe(b.installId);
    expect(await keychain.get(`${a.installId}:credential:named`)).toBe('named-secret');
    expect(await keychain.get('named')).toBeUndefined();
    const token = await a.mcpToken();
    expect(await keychain.get(`${a.installId}:mcp:http-token`)).toBe(token);
  });

  it('keeps its install id when the data folder is opened again', () => {
    const again = createEngine({ dataDir: a.dataDir, secrets: new KeychainSecretStore(service) });
    try {
      expect(again.installId).toBe(a.installId);
    } finally {
      again.close();
    }
  });

  it('gives each data folder its own HTTP token, and "callable token --regenerate" in one leaves the other', async () => {
    const tokenOf = async (engine: Engine, ...flags: string[]) => {
      const out = await cli(['token', ...flags, '--data-dir', engine.dataDir]);
      expect(out.code, out.stderr).toBe(0);
      return out.stdout.trim();
    };
    const tokenA = await tokenOf(a);
    const tokenB = await tokenOf(b);
    expect(tokenA).not.toBe(tokenB);
    const newB = await tokenOf(b, '--regenerate');
    expect(newB).not.toBe(tokenB);
    expect(await tokenOf(b)).toBe(newB);
    expect(await tokenOf(a)).toBe(tokenA);
  });
});

describe('secrets saved before they were scoped to a data folder', () => {
  // Its own service, so the old unscoped accounts seen here are only this test's.
  const legacyService = `${service} legacy`;
  const keychain = new KeychainSecretStore(legacyService);
  const header = { kind: 'header', header: 'X-Api-Key', template: '{secret}' } as const;
  const secretOf = async (engine: Engine, name: string) => (await engine.credentials.injection(name, [name])).secret;

  const opened: Engine[] = [];
  const open = (dataDir: string): Engine => {
    const engine = createEngine({ dataDir, secrets: new KeychainSecretStore(legacyService) });
    opened.push(engine);
    return engine;
  };
  const older = [testEngine(), testEngine(), testEngine()];
  const [dirA, dirB, dirC] = older.map((e) => e.dataDir) as [string, string, string];
  const freshDir = testEngine().dataDir;
  const functionsOnly = testEngine();

  beforeAll(async () => {
    // Data folders as the previous release left them: schema 1, no install id, credential "old".
    for (const engine of older) {
      await engine.credentials.set({ name: 'old', hosts: ['api.example.com'], placement: header }, 'discarded');
      engine.database.exec("DELETE FROM settings WHERE key IN ('install_id', 'adopt_unscoped_secrets')");
      engine.database.pragma('user_version = 1');
    }
    await defineFunction(functionsOnly, { name: 'noop' }, 'export default () => 1');
    functionsOnly.database.exec("DELETE FROM settings WHERE key IN ('install_id', 'adopt_unscoped_secrets')");
    functionsOnly.database.pragma('user_version = 1');
    await keychain.set('old', 'old-shared-secret');
    await keychain.set('mcp:http-token', 'old-shared-token');
  });
  afterAll(() => {
    for (const engine of opened) engine.close();
  });

  it('copies each old unscoped secret to the data folder on first use, and leaves the old entry for other folders', async () => {
    const a = open(dirA);
    const b = open(dirB);
    expect(await a.credentials.list()).toMatchObject([{ name: 'old', hasSecret: true }]);
    expect(await secretOf(a, 'old')).toBe('old-shared-secret');
    expect(await secretOf(b, 'old')).toBe('old-shared-secret');
    expect(await a.mcpToken()).toBe('old-shared-token');
    expect(await b.mcpToken()).toBe('old-shared-token');
    expect(await keychain.get(`${a.installId}:credential:old`)).toBe('old-shared-secret');
    expect(await keychain.get('old')).toBe('old-shared-secret');

    // From then on the copies are independent.
    await b.credentials.remove('old');
    expect(await secretOf(a, 'old')).toBe('old-shared-secret');
    await a.mcpToken({ regenerate: true });
    expect(await b.mcpToken()).toBe('old-shared-token');
  });

  it('copies only once: a secret removed later is not brought back from the old entry', async () => {
    const a = open(dirA);
    await a.credentials.set({ name: 'old', hosts: ['api.example.com'], placement: header }, 'new-secret');
    await a.credentials.remove('old');
    a.database.prepare("INSERT INTO credentials (name, hosts, placement, created_at, updated_at) VALUES ('old', '[]', ?, '', '')").run(JSON.stringify(header));
    expect(await a.credentials.list()).toMatchObject([{ name: 'old', hasSecret: false }]);
  });

  it('keeps a secret the data folder already has rather than the old shared one', async () => {
    const c = open(dirC);
    await keychain.set(`${c.installId}:credential:old`, 'already-its-own');
    expect(await secretOf(c, 'old')).toBe('already-its-own');
    expect(await c.mcpToken()).toBe('old-shared-token');
  });

  it('gives an older data folder with functions but no credentials the old HTTP token', async () => {
    expect(await open(functionsOnly.dataDir).mcpToken()).toBe('old-shared-token');
  });

  it('never gives a data folder created after the upgrade the old shared secrets', async () => {
    const fresh = open(freshDir);
    expect(await fresh.mcpToken()).not.toBe('old-shared-token');
    fresh.database.prepare("INSERT INTO credentials (name, hosts, placement, created_at, updated_at) VALUES ('old', '[]', ?, '', '')").run(JSON.stringify(header));
    expect(await fresh.credentials.list()).toMatchObject([{ name: 'old', hasSecret: false }]);
  });
});
