import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { EnvSecretStore, KeychainSecretStore } from '../../src-main/engine/index.ts';
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
