import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
  const stop = (): void => {
    for (const child of children.reverse()) child.kill();
    rmSync(home, { recursive: true, force: true });
  };
  // A bus without service activation: otherwise the first probe can make D-Bus start a second,
  // locked gnome-keyring before ours has registered, and the probe fails.
  const config = join(home, 'session.conf');
  writeFileSync(
    config,
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:dir=${home}</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>`,
  );
  try {
    return await start(home, config, children, stop);
  } catch (error) {
    stop();
    throw error;
  }
}

async function start(home: string, config: string, children: ChildProcess[], stop: () => void): Promise<() => void> {
  const dbus = spawn('dbus-daemon', [`--config-file=${config}`, '--nofork', '--nopidfile', '--print-address=1'], { stdio: ['ignore', 'pipe', 'ignore'] });
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

  // Wait until the Secret Service answers a real write and read. Each probe runs in a fresh
  // process: the keychain library keeps its first connection (and its failure) per process.
  const probe = `const { AsyncEntry } = require('@napi-rs/keyring');
    const e = new AsyncEntry('callable test probe', 'probe');
    e.setPassword('ok').then(() => e.getPassword()).then((v) => e.deletePassword().then(() => process.exit(v === 'ok' ? 0 : 1)), (err) => { console.error(String(err)); process.exit(1); });`;
  let lastError: string | undefined = 'not probed';
  for (let i = 0; i < 100 && lastError; i++) {
    const r = spawnSync(process.execPath, ['-e', probe], { env: process.env, encoding: 'utf8', timeout: 10_000 });
    lastError = r.status === 0 ? undefined : r.stderr.trim() || `exit ${r.status}`;
    if (lastError) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (lastError) throw new Error(`the test keyring did not come up: ${String(lastError)}`);

  return stop;
}
