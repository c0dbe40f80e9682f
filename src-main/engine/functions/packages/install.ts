import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StudioError } from '../../model/index.ts';
import { registryOf, runNpm, type NpmResult } from './npm.ts';

/** A function's packages as stored with it: what was asked for, and what npm pinned. */
export interface FunctionPackages {
  /** package.json's `dependencies`: name → the range or version asked for. */
  dependencies: Record<string, string>;
  /** package-lock.json as npm wrote it: the exact version and integrity of every package installed. */
  lock: string;
}

export interface InstalledPackages extends FunctionPackages {
  /** The folder whose node_modules holds exactly the locked packages. */
  root: string;
  /** The version each direct dependency resolved to. */
  versions: Record<string, string>;
  /** How many packages the lock holds, dependencies of dependencies included. */
  count: number;
}

/** How long a resolution stands for the same dependencies: one save's steps, not the next save's. */
const RESOLVED_FOR_MS = 60_000;

// npm's rules for a name on the registry (validate-npm-package-name), lower case, 214 at most.
const NAME = /^(?:@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/;
/** One exact version (what `npm install --save-exact` writes), not a range. */
const EXACT = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
// A version, range or dist-tag on the registry; git, file, URL and alias specs (a colon or slash) are not.
const RANGE = /^[A-Za-z0-9.\-+^~<>=|* ]{1,100}$/;

/** Checks one dependency's name and range; a bad one is one bad_input line. */
export function checkDependency(name: string, range: string): void {
  if (name.length > 214 || !NAME.test(name)) {
    throw new StudioError('bad_input', `"${name}" is not an npm package name (lower case letters, digits, - . _ ~, optionally @scope/); check the spelling`);
  }
  if (!RANGE.test(range)) {
    throw new StudioError('bad_input', `"${name}@${range}": give a version, a range (^1.2.0) or a tag (latest) from the registry; git, file, URL and alias specs are not supported`);
  }
}

/** Splits `name[@range]` (`@scope/name@range` too). */
export function parseDependencySpec(spec: string): { name: string; range: string | undefined } {
  const at = spec.indexOf('@', 1);
  const name = at === -1 ? spec : spec.slice(0, at);
  const range = at === -1 ? undefined : spec.slice(at + 1);
  checkDependency(name, range ?? 'latest');
  return { name, range };
}

/**
 * Installs functions' packages with the npm that ships with Node: lifecycle scripts never run,
 * tarballs come through one content-addressed cache (`<dir>/cache`) that every function shares,
 * and each distinct lock is installed once (`<dir>/installs/<hash of the lock>`) so a function
 * whose packages did not change is bundled again without npm.
 */
export class PackageStore {
  readonly #dir: string;
  readonly #env: NodeJS.ProcessEnv;
  /** Locks npm resolved lately, by what was asked for (see #recent). */
  readonly #resolved = new Map<string, { at: number; lock: string }>();

  constructor(dir: string, env: NodeJS.ProcessEnv) {
    this.#dir = dir;
    this.#env = env;
  }

  /**
   * Installs `dependencies`. With a `lock` whose dependencies are these, exactly the locked
   * versions are installed (from the cache when it holds them, without asking the registry);
   * otherwise npm resolves what changed and writes a new lock, keeping the pins it can (exact
   * versions another function installed, or a resolution moments ago, are taken without npm).
   * A dist-tag asked for (`latest`) is recorded as `^` the version it resolved to.
   */
  async install(who: string, dependencies: Record<string, string>, lock?: string): Promise<InstalledPackages> {
    for (const [name, range] of Object.entries(dependencies)) checkDependency(name, range);
    this.#sweep();
    const locked = lock !== undefined && sameDependencies(lockedDependencies(lock, who), dependencies);
    if (locked) {
      const ready = this.#ready(lock);
      if (ready) return ready;
    }
    const asked = JSON.stringify([Object.entries(dependencies).sort(([a], [b]) => (a < b ? -1 : 1)), lock ?? null]);
    if (!locked) {
      const taken = this.#recent(asked) ?? (lock === undefined ? this.#installedFor(dependencies) : undefined);
      if (taken) return taken;
    }
    const work = join(this.#dir, `tmp-${randomBytes(6).toString('hex')}`);
    mkdirSync(work, { recursive: true });
    try {
      writeFileSync(join(work, 'package.json'), `${JSON.stringify({ name: 'callable-function', private: true, dependencies }, null, 2)}\n`);
      if (lock !== undefined) writeFileSync(join(work, 'package-lock.json'), lock);
      // The lock names each tarball's URL: without it npm must ask the registry again, even offline.
      const common = ['--no-omit-lockfile-registry-resolved', '--ignore-scripts', '--no-audit', '--no-fund', '--omit=dev', '--no-bin-links', '--logs-max=0', '--loglevel=error', `--cache=${join(this.#dir, 'cache')}`];
      const npm = async (args: string[]): Promise<void> => {
        const result = await runNpm([...args, ...common], work, this.#env);
        if (result.code !== 0) throw await this.#failure(result, who, Object.keys(dependencies), work);
      };
      let written = { lock: lock ?? '', dependencies };
      if (!locked) {
        // Resolving alone is quick (the registry's metadata, no tarballs); when another function
        // already installed the lock it gives, that install is used and nothing is unpacked again.
        await npm(['install', '--package-lock-only']);
        written = pinTags(readFileSync(join(work, 'package-lock.json'), 'utf8'), dependencies);
        this.#resolved.set(asked, { at: Date.now(), lock: written.lock });
        const ready = this.#ready(written.lock);
        if (ready) return ready;
        writeFileSync(join(work, 'package-lock.json'), written.lock);
        writeFileSync(join(work, 'package.json'), `${JSON.stringify({ name: 'callable-function', private: true, dependencies: written.dependencies }, null, 2)}\n`);
      }
      await npm(['ci', '--prefer-offline']);
      writeFileSync(join(work, '.complete'), '');
      const root = this.#rootOf(written.lock);
      mkdirSync(join(this.#dir, 'installs'), { recursive: true });
      try {
        if (!existsSync(join(root, '.complete'))) renameSync(work, root);
      } catch (error) {
        // Another process installed the same lock meanwhile: theirs is as good as ours.
        if (!existsSync(join(root, '.complete'))) throw error;
      }
      return this.#ready(written.lock)!;
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }

  /**
   * The install of what npm resolved for the same request moments ago. Saving checks a function
   * and then writes it, and `callable import` checks every folder before saving any: each step
   * would otherwise have npm resolve the same dependencies again (a second or more each), and a
   * newer version published in between would make the check and the save disagree.
   */
  #recent(asked: string): InstalledPackages | undefined {
    const now = Date.now();
    for (const [key, entry] of this.#resolved) if (now - entry.at > RESOLVED_FOR_MS) this.#resolved.delete(key);
    const entry = this.#resolved.get(asked);
    return entry ? this.#ready(entry.lock) : undefined;
  }

  /**
   * When every package is asked for at an exact version, the newest install made for exactly these
   * dependencies: its lock is what npm resolved for them then, as a package-lock.json beside the
   * function would keep (npm keeps a lock's pins that still satisfy), so a second function with the
   * same pins is saved without npm, offline too. A range or a tag is resolved anew.
   */
  #installedFor(dependencies: Record<string, string>): InstalledPackages | undefined {
    const names = Object.keys(dependencies);
    if (names.length === 0 || !names.every((n) => EXACT.test(dependencies[n]!))) return undefined;
    const installs = join(this.#dir, 'installs');
    if (!existsSync(installs)) return undefined;
    let best: { lock: string; at: number } | undefined;
    for (const name of readdirSync(installs)) {
      try {
        const at = statSync(join(installs, name, '.complete')).mtimeMs;
        if (best && at <= best.at) continue;
        const lock = readFileSync(join(installs, name, 'package-lock.json'), 'utf8');
        // Only a lock that names its own folder: what #ready serves is what was hashed.
        if (this.#rootOf(lock) === join(installs, name) && sameDependencies(lockedDependencies(lock, name), dependencies)) best = { lock, at };
      } catch {
        // Not a finished install (or not readable): npm resolves instead.
      }
    }
    return best && this.#ready(best.lock);
  }

  /** Work folders an install left when its process was killed (an hour is far past any install). */
  #sweep(): void {
    if (!existsSync(this.#dir)) return;
    for (const name of readdirSync(this.#dir)) {
      if (!name.startsWith('tmp-')) continue;
      const path = join(this.#dir, name);
      try {
        if (Date.now() - statSync(path).mtimeMs > 3_600_000) rmSync(path, { recursive: true, force: true });
      } catch {
        // Another process swept it first.
      }
    }
  }

  #rootOf(lock: string): string {
    return join(this.#dir, 'installs', createHash('sha256').update(lock).digest('hex').slice(0, 32));
  }

  #ready(lock: string): InstalledPackages | undefined {
    const root = this.#rootOf(lock);
    if (!existsSync(join(root, '.complete'))) return undefined;
    const parsed = parseLock(lock, 'package-lock.json');
    const dependencies = lockedDependencies(lock, 'package-lock.json');
    const versions: Record<string, string> = {};
    for (const name of Object.keys(dependencies)) versions[name] = parsed.packages[`node_modules/${name}`]?.version ?? '?';
    // Its real path: esbuild resolves through links, and what it resolves is checked to lie inside the install.
    return { root: realpathSync(root), dependencies, lock, versions, count: Object.keys(parsed.packages).filter((k) => k !== '').length };
  }

  async #failure(result: NpmResult, who: string, names: string[], cwd: string): Promise<StudioError> {
    const text = result.stderr;
    const code = /npm (?:error|ERR!) code (\S+)/.exec(text)?.[1] ?? '';
    const url = /(?:GET|request to|fetch(?:ing)?) (https?:\/\/[^\s,]+)/.exec(text)?.[1];
    const pkg = (url && packageOfUrl(url)) ?? (/'(@?[^@'\s]+)@[^']*' is not in this registry/.exec(text)?.[1] ?? (names.length === 1 ? names[0] : undefined));
    const registry = url ? registryOfUrl(url, pkg) : await registryOf(pkg ?? names[0] ?? '', cwd, this.#env);
    const detail = npmLines(text).find((l) => !/^code |^A complete log|^errno |^syscall |^\d{3} Not Found/.test(l)) ?? `npm exited with code ${result.code}`;
    const named = pkg ? `"${pkg}"` : 'a package';
    if (code === 'E404') return new StudioError('bad_input', `${who}: the package ${named} is not in the registry ${registry}; check its name (callable remove ${who} ${pkg ?? 'PACKAGE'} drops it)`);
    if (code === 'ETARGET') return new StudioError('bad_input', `${who}: ${detail.replace(/\.$/, '')} in the registry ${registry}; ask for a version it has (npm view ${pkg ?? 'PACKAGE'} versions)`);
    if (['ENOTCACHED', 'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED'].includes(code)) {
      return new StudioError('bad_input', `${who}: the package ${named} is not in the package cache and the registry ${registry} cannot be reached (${code}); connect to the network (or set npm's registry or proxy), then try again`);
    }
    if (code === 'EINTEGRITY') {
      return new StudioError('bad_input', `${who}: the tarball of ${named} from ${registry} does not match the integrity pinned in package-lock.json, so nothing was installed; if the package was republished, remove and add it again`);
    }
    return new StudioError('bad_input', `${who}: npm could not install the packages: ${detail}`);
  }
}

interface Lock {
  packages: Record<string, { version?: string; integrity?: string; dependencies?: Record<string, string> }>;
}

function parseLock(lock: string, where: string): Lock {
  let parsed: unknown;
  try {
    parsed = JSON.parse(lock);
  } catch (error) {
    throw new StudioError('bad_input', `${where}: not valid JSON (${(error as Error).message})`);
  }
  const packages = (parsed as { packages?: unknown } | null)?.packages;
  if (!packages || typeof packages !== 'object') throw new StudioError('bad_input', `${where}: not a package-lock.json of lockfileVersion 2 or 3 (no "packages"); delete it and save again to lock anew`);
  return parsed as Lock;
}

/** The dependencies a lock was made for (its root package's). */
function lockedDependencies(lock: string, where: string): Record<string, string> {
  return parseLock(lock, where).packages['']?.dependencies ?? {};
}

function sameDependencies(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k]);
}

/** Dist-tags become `^version` in package.json and in the lock's root, so the lock stays valid when the tag moves. */
function pinTags(lock: string, dependencies: Record<string, string>): { lock: string; dependencies: Record<string, string> } {
  const parsed = parseLock(lock, 'package-lock.json');
  const out = { ...dependencies };
  let changed = false;
  for (const [name, range] of Object.entries(dependencies)) {
    const version = parsed.packages[`node_modules/${name}`]?.version;
    if (/^[A-Za-z][\w.-]*$/.test(range) && version) {
      out[name] = `^${version}`;
      changed = true;
    }
  }
  if (!changed) return { lock, dependencies };
  parsed.packages['']!.dependencies = out;
  return { lock: `${JSON.stringify(parsed, null, 2)}\n`, dependencies: out };
}

/** npm's error lines without their prefix. */
function npmLines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.replace(/^npm (?:error|ERR!)\s*/, '').replace(/^notarget\s+/, '').trim())
    .filter((l) => l.length > 0 && !/^npm warn/i.test(l));
}

/** The package a registry URL is about: `/name`, `/@scope%2fname`, `/name/-/name-1.0.0.tgz`. */
function packageOfUrl(url: string): string | undefined {
  let path: string;
  try {
    path = decodeURIComponent(new URL(url).pathname);
  } catch {
    return undefined;
  }
  const match = /\/((?:@[^/]+\/)?[^/@]+)(?:\/-\/[^/]+\.tgz)?\/?$/.exec(path);
  return match?.[1];
}

function registryOfUrl(url: string, pkg: string | undefined): string {
  const parsed = new URL(url);
  const path = decodeURIComponent(parsed.pathname);
  const at = pkg ? (path.indexOf(`/${pkg}/`) + 1 || path.lastIndexOf(`/${pkg}`) + 1) - 1 : -1;
  return `${parsed.origin}${at > 0 ? path.slice(0, at) : ''}/`;
}
