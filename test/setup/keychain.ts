import { spawnSync } from 'node:child_process';
import { privateKeyring, type PrivateKeyring } from '../support/keyring.ts';

/**
 * Tests use a real OS keychain. On Linux that is a Secret Service: this starts a private D-Bus
 * session and an unlocked gnome-keyring for the test run (so a developer's own keyring is never
 * touched), and every test process and spawned `callable` inherits it. macOS and Windows use
 * their system keychain under a test-only service name.
 */
export default async function setup(): Promise<() => void> {
  // The integration and e2e tiers both name this setup; a run of both starts one keyring.
  if (process.env.CALLABLE_TEST_KEYRING === 'up') return () => {};
  process.env.CALLABLE_TEST_KEYRING = 'up';
  process.env.CALLABLE_KEYCHAIN_SERVICE = `Callable Studio Test ${process.pid}`;
  if (process.platform !== 'linux') return () => {};
  for (const tool of ['dbus-daemon', 'gnome-keyring-daemon', 'gdbus']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) {
      throw new Error(`the tests need a real Secret Service: install ${tool} (Debian: apt-get install dbus gnome-keyring libglib2.0-bin); .ci/run does this`);
    }
  }
  const keyring = await privateKeyring();
  let stopping = false;
  try {
    const { DBUS_SESSION_BUS_ADDRESS, XDG_DATA_HOME, XDG_RUNTIME_DIR } = keyring.env;
    Object.assign(process.env, { DBUS_SESSION_BUS_ADDRESS, XDG_DATA_HOME, XDG_RUNTIME_DIR });
    await keychainAnswers();
    superviseDaemon(keyring, () => stopping);
    return () => {
      stopping = true;
      keyring.stop();
    };
  } catch (error) {
    keyring.stop();
    throw error;
  }
}

/**
 * gnome-keyring-daemon has been seen to end in the middle of a full run ("Message
 * recipient disconnected from message bus without replying"), after which every later keychain
 * test failed. It is said on stderr, with how it ended and its last words, and started again on the
 * same bus and data: the tests that were talking to it at that moment still fail, the others do not.
 */
function superviseDaemon(keyring: PrivateKeyring, stopping: () => boolean): void {
  keyring.daemon.once('exit', (code, signal) => {
    if (stopping()) return;
    process.stderr.write(`test keyring: gnome-keyring-daemon ended (${signal ?? `exit ${code}`}); starting it again. Its last words:\n${keyring.daemonLog() || '(none)'}\n`);
    keyring.restart().then(
      () => superviseDaemon(keyring, stopping),
      (error: unknown) => process.stderr.write(`test keyring: could not start gnome-keyring-daemon again: ${String(error)}\n`),
    );
  });
}

/** Resolves once the Secret Service answers a real write and read through the keychain library. */
async function keychainAnswers(): Promise<void> {
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
}
