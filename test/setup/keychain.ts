import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Tests use a real OS keychain. On Linux that is a Secret Service: this starts a private D-Bus
 * session and an unlocked gnome-keyring for the test run (so a developer's own keyring is never
 * touched), and every test process and spawned `callable` inherits it. macOS and Windows use
 * their system keychain under a test-only service name.
 */
export default async function setup(): Promise<() => void> {
  process.env.CALLABLE_KEYCHAIN_SERVICE = `Callable Studio Test ${process.pid}`;
  if (process.platform !== 'linux') return () => {};
  for (const tool of ['dbus-daemon', 'gnome-keyring-daemon']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) {
      throw new Error(`the tests need a real Secret Service: install ${tool} (Debian: apt-get install dbus gnome-keyring); .ci/run does this`);
    }
  }
  const home = mkdtempSync(join(tmpdir(), 'callable-keyring-'));
  const children: ChildProcess[] = [];
  const dbus = spawn('dbus-daemon', ['--session', '--nofork', '--nopidfile', '--print-address=1'], { stdio: ['ignore', 'pipe', 'ignore'] });
  children.push(dbus);
  const address = await new Promise<string>((resolve, reject) => {
    let out = '';
    dbus.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    dbus.on('exit', (code) => reject(new Error(`dbus-daemon exited (${code})`)));
  });
  const env = { ...process.env, DBUS_SESSION_BUS_ADDRESS: address, XDG_DATA_HOME: join(home, 'data'), XDG_RUNTIME_DIR: home };
  const keyring = spawn('gnome-keyring-daemon', ['--foreground', '--unlock', '--components=secrets'], { env, stdio: ['pipe', 'ignore', 'ignore'] });
  children.push(keyring);
  keyring.stdin!.end('callable-test-keyring');
  Object.assign(process.env, { DBUS_SESSION_BUS_ADDRESS: address, XDG_DATA_HOME: env.XDG_DATA_HOME, XDG_RUNTIME_DIR: home });

  // Wait until the Secret Service answers a real write and read.
  const { AsyncEntry } = await import('@napi-rs/keyring');
  const probe = new AsyncEntry(`${process.env.CALLABLE_KEYCHAIN_SERVICE} probe`, 'probe');
  let lastError: unknown;
  for (let i = 0; i < 50; i++) {
    try {
      await probe.setPassword('ok');
      if ((await probe.getPassword()) === 'ok') {
        await probe.deletePassword();
        lastError = undefined;
        break;
      }
    } catch (error) {
      lastError = error;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  if (lastError) throw new Error(`the test keyring did not come up: ${String(lastError)}`);

  return () => {
    for (const child of children.reverse()) child.kill();
    rmSync(home, { recursive: true, force: true });
  };
}
