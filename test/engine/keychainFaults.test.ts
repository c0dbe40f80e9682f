import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createEngine, KeychainSecretStore } from '../../src-main/engine/index.ts';
import { CALLABLE_COMMAND } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { kernelKeys, privateKeyring, type PrivateKeyring } from '../support/keyring.ts';
import { scratch } from '../support/scratch.ts';
import { vendorServer } from '../support/vendor.ts';
import { alive } from '../support/wait.ts';

// A keychain that is missing, locked, stopped or wedged, provoked for real: a private D-Bus and
// gnome-keyring per case (test/support/keyring.ts), locked over D-Bus, stopped with SIGSTOP.
const SECRET = `faults-${Math.random().toString(36).slice(2)}-secret`;
const service = `Callable Studio Faults ${process.pid}`;
const s = scratch();
let vendor: Awaited<ReturnType<typeof vendorServer>>;

/** Folders that live for the whole file (a describe's data folder, made in beforeAll). */
const folders: string[] = [];
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});
function folder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  folders.push(dir);
  return dir;
}

beforeAll(async () => {
  vendor = await vendorServer((req, res) => res.end(JSON.stringify({ saw: req.headers['x-api-key'] ?? null })));
});

/** A data folder with the credential `vault` (secret in the keychain of `env`) and the function `uses_vault`, granted it. */
async function prepared(env: NodeJS.ProcessEnv, timeoutMs = 15_000): Promise<string> {
  const data = folder('callable-faults-');
  const fns = folder('callable-faults-fn-');
  mkdirSync(join(fns, 'uses_vault'));
  writeFileSync(join(fns, 'uses_vault', 'function.json'), JSON.stringify({ name: 'uses_vault', description: 'x', allowedHosts: [`127.0.0.1:${vendor.port}`], credentials: ['vault'], timeoutMs }));
  writeFileSync(join(fns, 'uses_vault', 'index.js'), `export default async (a, ctx) => (await ctx.fetch('http://127.0.0.1:${vendor.port}/', { credential: 'vault' })).json();`);
  for (const [argv, stdin] of [
    [['credentials', 'set', 'vault', '--host', `127.0.0.1:${vendor.port}`, '--header', 'X-Api-Key', '--template', '{secret}'], SECRET],
    [['import', fns], undefined],
    [['credentials', 'grant', 'vault', 'uses_vault'], undefined],
  ] as Array<[string[], string | undefined]>) {
    const out = await cli([...argv, '--data-dir', data], { env, stdin });
    expect(out.code, out.stderr).toBe(0);
  }
  return data;
}

/** A private D-Bus and gnome-keyring (stop it after) holding the secret of a data folder `prepared` in it. */
async function keyringWithVault(timeoutMs?: number): Promise<{ keyring: PrivateKeyring; env: NodeJS.ProcessEnv; data: string }> {
  const keyring = await privateKeyring();
  const env = { ...keyring.env, CALLABLE_KEYCHAIN_SERVICE: service };
  return { keyring, env, data: await prepared(env, timeoutMs) };
}

describe.runIf(process.platform === 'linux' && existsSync('/proc/keys'))('no Secret Service, only the kernel session keyring (an SSH login)', () => {
  it('"credentials set" refuses, says why and what to do instead, saves nothing and leaves the secret nowhere', async () => {
    const data = s.dir('callable-faults-');
    const env = { ...process.env, DBUS_SESSION_BUS_ADDRESS: '', CALLABLE_KEYCHAIN_SERVICE: service };
    const set = await cli(['credentials', 'set', 'my-api', '--host', 'api.example.com', '--data-dir', data], { env, stdin: SECRET });
    expect(set.code).toBe(1);
    expect(set.stderr.trim().split('\n')).toHaveLength(1);
    expect(set.stderr).toContain('No OS keychain is available: no Secret Service (gnome-keyring, KWallet) answers on D-Bus in this session');
    expect(set.stderr).toContain('the kernel session keyring is not used because it loses secrets at logout or reboot');
    expect(set.stderr).toContain('or set CALLABLE_SECRETS=env and pass each secret as CALLABLE_SECRET_<NAME>');
    expect(set.stderr).toContain('nothing was saved');
    expect(set.stdout).not.toContain('saved');
    expect((await cli(['credentials', 'list', '--data-dir', data], { env })).stdout).toContain('No credentials yet');
    // The library's default would have put it in the session keyring (/proc/keys names it "keyring:<account>@<service>").
    expect(kernelKeys()).not.toContain(service);
  });
});

describe('a locked keychain', () => {
  let keyring: PrivateKeyring;
  let env: NodeJS.ProcessEnv;
  let data: string;

  beforeAll(async () => {
    ({ keyring, env, data } = await keyringWithVault());
    keyring.lock();
  });
  afterAll(() => keyring.stop());

  it('"credentials list" lists the metadata and says once that the keychain is locked', async () => {
    const list = await cli(['credentials', 'list', '--data-dir', data], { env });
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('vault  127.0.0.1:');
    expect(list.stdout).toContain('(secret not checked)  granted to uses_vault');
    expect(list.stderr).toMatch(/^callable credentials: secrets not checked: the keychain is locked \(unlock it and retry\)/);
    expect(list.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('a run that needs the credential fails closed, saying the keychain is locked; nothing is sent', async () => {
    const before = vendor.seen.length;
    const run = await cli(['run', 'uses_vault', '--data-dir', data], { env });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('the keychain is locked (unlock it and retry)');
    expect(vendor.seen.length).toBe(before);
  });

  it('"credentials set" is refused and nothing is saved', async () => {
    const set = await cli(['credentials', 'set', 'other', '--host', 'api.example.com', '--data-dir', data], { env, stdin: 'another-secret' });
    expect(set.code).toBe(1);
    expect(set.stderr).toContain('the keychain is locked (unlock it and retry)');
    expect(set.stderr).toContain('nothing was saved');
    expect((await cli(['credentials', 'list', '--data-dir', data], { env })).stdout).not.toContain('other');
  });
});

describe('a keychain that does not answer', () => {
  let keyring: PrivateKeyring;
  let env: NodeJS.ProcessEnv;
  let data: string;

  beforeAll(async () => ({ keyring, env, data } = await keyringWithVault(1000)));
  afterAll(() => keyring.stop());

  it('a stopped Secret Service: the call fails as "not answering" while the event loop keeps turning', async () => {
    const store = new KeychainSecretStore(service, { env });
    keyring.pause();
    try {
      let loopTurned = false;
      const timer = setTimeout(() => (loopTurned = true), 20);
      const outcome = await store.get('anything').then(
        () => 'answered',
        (error: { code: string; message: string }) => {
          // The timer is checked when the call ends: it must have fired while the keychain was stuck.
          expect(loopTurned).toBe(true);
          return error;
        },
      );
      clearTimeout(timer);
      expect(outcome).toMatchObject({ code: 'keychain_not_answering', message: expect.stringContaining('the keychain is not answering') });

      const list = await cli(['credentials', 'list', '--data-dir', data], { env });
      expect(list.code).toBe(0);
      expect(list.stderr).toContain('secrets not checked: the keychain is not answering');
    } finally {
      keyring.resume();
      store.dispose();
    }
  });

  it('a wedged keychain call (its bus stopped) is abandoned after CALLABLE_KEYCHAIN_TIMEOUT_MS, and its helper process is killed', async () => {
    const store = new KeychainSecretStore(service, { env, timeoutMs: 500 });
    await store.get('warm-up');
    keyring.bus.kill('SIGSTOP');
    try {
      const pending = store.get('anything');
      const helper = store.helperPid!;
      await expect(pending).rejects.toMatchObject({ code: 'keychain_not_answering', message: expect.stringContaining('no answer within 0.5 s') });
      await expect.poll(() => alive(helper)).toBe(false);

      const list = await cli(['credentials', 'list', '--data-dir', data], { env: { ...env, CALLABLE_KEYCHAIN_TIMEOUT_MS: '500' } });
      expect(list.code).toBe(0);
      expect(list.stderr).toContain('secrets not checked: the keychain is not answering (no answer within 0.5 s; if it asks to be unlocked, unlock it and retry)');
    } finally {
      keyring.bus.kill('SIGCONT');
      store.dispose();
    }
  });

  it('a run waiting on a wedged keychain ends at its own deadline, and "callable run" exits', async () => {
    keyring.bus.kill('SIGSTOP');
    try {
      const child = s.child(spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'run', 'uses_vault', '--data-dir', data], { env: { ...env, CALLABLE_KEYCHAIN_TIMEOUT_MS: '120000' }, stdio: ['ignore', 'pipe', 'pipe'] }));
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code, stderr).toBe(1);
      expect(stderr).toContain('uses_vault failed (timeout)');
    } finally {
      keyring.bus.kill('SIGCONT');
    }
  });

  it('rejects a CALLABLE_KEYCHAIN_TIMEOUT_MS that is not a number of milliseconds', async () => {
    const list = await cli(['credentials', 'list', '--data-dir', data], { env: { ...env, CALLABLE_KEYCHAIN_TIMEOUT_MS: '5s' } });
    expect(list.code).toBe(2);
    expect(list.stderr).toContain('CALLABLE_KEYCHAIN_TIMEOUT_MS must be a whole number of milliseconds from 100 to 600000, not "5s"');
  });
});

describe('a frozen keychain and many credentials', () => {
  it('"credentials list" reads their secrets under one deadline: 12 return within about one read\'s time limit, each marked not checked', async () => {
    const keyring = await privateKeyring();
    onTestFinished(() => keyring.stop());
    const env = { ...keyring.env, CALLABLE_KEYCHAIN_SERVICE: service, CALLABLE_KEYCHAIN_TIMEOUT_MS: '4000' };
    const data = s.dir('callable-faults-');
    const names = Array.from({ length: 12 }, (_, i) => `vendor${String(i).padStart(2, '0')}`);
    for (const name of names) {
      // Setting up, not the behaviour under test: a keyring just started on a loaded machine can
      // miss D-Bus's own reply timeout on its first writes, so a write that was not answered is retried.
      let set = await cli(['credentials', 'set', name, '--host', 'api.example.com', '--data-dir', data], { env, stdin: SECRET });
      for (let retry = 0; retry < 3 && set.code !== 0 && set.stderr.includes('not answering'); retry++) {
        set = await cli(['credentials', 'set', name, '--host', 'api.example.com', '--data-dir', data], { env, stdin: SECRET });
      }
      expect(set.code, set.stderr).toBe(0);
    }
    keyring.pause();
    const started = performance.now();
    const list = await cli(['credentials', 'list', '--data-dir', data], { env });
    const took = performance.now() - started;
    expect(list.code, list.stderr).toBe(0);
    // Read one after another, each would wait for D-Bus to give up on it (about 2 s each: 24 s in all).
    expect(took).toBeLessThan(4000 + 3000);
    expect(list.stdout.trim().split('\n')).toEqual(names.map((name) => expect.stringMatching(new RegExp(`^${name}  api\\.example\\.com  .*\\(secret not checked\\)  granted to no function$`))));
    expect(list.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^callable credentials: secrets not checked: the keychain is not answering/)]);
  }, 120_000);
});

describe('a deleted secret and a missing keychain are told apart', () => {
  it('says the secret was deleted when the keychain answers without it, and that no keychain is available when none answers', async () => {
    const data = await prepared(process.env);
    const engine = createEngine({ dataDir: data, createDataDir: false });
    const installId = engine.installId;
    engine.close();
    const store = new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE);
    try {
      await store.delete(`${installId}:credential:vault`);
    } finally {
      store.dispose();
    }

    const deleted = await cli(['run', 'uses_vault', '--data-dir', data]);
    expect(deleted.code).toBe(1);
    expect(deleted.stderr).toContain('the secret of credential "vault" was deleted from the keychain');
    expect((await cli(['credentials', 'list', '--data-dir', data])).stdout).toContain('(NO SECRET)');

    const missing = await cli(['run', 'uses_vault', '--data-dir', data], { env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus' } });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('No OS keychain is available');
    expect(missing.stderr).not.toContain('deleted');
  });
});

