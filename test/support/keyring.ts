import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A private Secret Service (its own D-Bus session and gnome-keyring, unlocked). test/setup/keychain.ts
 * starts one for the whole run; tests that lock, stop or break a keyring start a second one, so what
 * they do to it never reaches the other tests. Only processes started with `env` see it (the
 * keychain library keeps one bus connection per process, so tests drive it through child processes).
 */
export interface PrivateKeyring {
  /** process.env pointed at this keyring's bus. */
  env: NodeJS.ProcessEnv;
  /** The gnome-keyring-daemon process. */
  daemon: ChildProcess;
  /** The private dbus-daemon: stopped, every call on the bus waits forever (a wedged native call). */
  bus: ChildProcess;
  /** Locks the login collection over D-Bus (org.freedesktop.Secret.Service.Lock), as a screen lock or `seahorse` would. */
  lock(): void;
  /** SIGSTOP / SIGCONT the daemon: a keyring that is running but not answering. */
  pause(): void;
  resume(): void;
  stop(): void;
  /** Starts the daemon again on the same bus and data (after it ended), unlocked, once it answers. */
  restart(): Promise<void>;
  /** The end of what the daemon wrote to stderr (kept in a file of the keyring's folder). */
  daemonLog(): string;
}

const PASSWORD = 'callable-private-keyring';

export async function privateKeyring(): Promise<PrivateKeyring> {
  const home = mkdtempSync(join(tmpdir(), 'callable-keyring2-'));
  const children: ChildProcess[] = [];
  const stop = (): void => {
    for (const child of [...children].reverse()) {
      if (child.signalCode === null && child.exitCode === null) {
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      }
    }
    rmSync(home, { recursive: true, force: true });
  };
  try {
    const config = join(home, 'session.conf');
    writeFileSync(
      config,
      `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:dir=${home}</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>`,
    );
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
    const env: NodeJS.ProcessEnv = { ...process.env, DBUS_SESSION_BUS_ADDRESS: address, XDG_DATA_HOME: join(home, 'data'), XDG_RUNTIME_DIR: home };
    const log = join(home, 'daemon.log');
    const startDaemon = async (): Promise<ChildProcess> => {
      const out = openSync(log, 'a');
      const daemon = spawn('gnome-keyring-daemon', ['--foreground', '--unlock', '--components=secrets'], { env, stdio: ['pipe', 'ignore', out] });
      closeSync(out);
      children.push(daemon);
      daemon.stdin!.end(PASSWORD);
      // Up when the login collection answers over the bus.
      const gdbus = (...args: string[]) =>
        spawnSync('gdbus', ['call', '--session', '--dest', 'org.freedesktop.secrets', ...args], { env, encoding: 'utf8', timeout: 5000 });
      let probe = gdbus('--object-path', '/org/freedesktop/secrets/collection/login', '--method', 'org.freedesktop.DBus.Properties.Get', 'org.freedesktop.Secret.Collection', 'Locked');
      for (let i = 0; i < 100 && !probe.stdout.includes('false'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        probe = gdbus('--object-path', '/org/freedesktop/secrets/collection/login', '--method', 'org.freedesktop.DBus.Properties.Get', 'org.freedesktop.Secret.Collection', 'Locked');
      }
      if (!probe.stdout.includes('false')) throw new Error(`the private keyring did not come up: ${probe.stderr || probe.stdout}`);
      return daemon;
    };
    const keyring: PrivateKeyring = {
      env,
      daemon: await startDaemon(),
      bus: dbus,
      async restart() {
        keyring.daemon = await startDaemon();
      },
      daemonLog: () => {
        try {
          return readFileSync(log, 'utf8').trim().split('\n').slice(-10).join('\n');
        } catch {
          return '';
        }
      },
      lock() {
        execFileSync(
          'gdbus',
          ['call', '--session', '--dest', 'org.freedesktop.secrets', '--object-path', '/org/freedesktop/secrets', '--method', 'org.freedesktop.Secret.Service.Lock', "['/org/freedesktop/secrets/collection/login']"],
          { env, timeout: 5000 },
        );
      },
      pause: () => void keyring.daemon.kill('SIGSTOP'),
      resume: () => void keyring.daemon.kill('SIGCONT'),
      stop,
    };
    return keyring;
  } catch (error) {
    stop();
    throw error;
  }
}

/** The entries of the kernel keyrings this process can see (/proc/keys), e.g. to check that no secret was left there. */
export function kernelKeys(): string {
  try {
    return execFileSync('cat', ['/proc/keys'], { encoding: 'utf8' });
  } catch {
    return '';
  }
}
