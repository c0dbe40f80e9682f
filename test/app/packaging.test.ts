// The packaging configuration (electron-builder.config.ts) and its two hooks. electron-builder itself
// cannot run here (it downloads Electron); what it is given, and what the hooks do, is checked for real:
// the config loaded and validated by electron-builder's own code, the engine's import graph against
// the files shipped, the Node runtime fetched over HTTP into the layout the resolver reads, and the
// fuses flipped by @electron/fuses in a fuse wire laid out as in Electron's binary.
import { FuseState, FuseV1Options, FuseVersion, flipFuses, getCurrentFuseWire } from '@electron/fuses';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { join, matchesGlob, relative } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import config, { ENGINE_FILES } from '../../electron-builder.config.ts';
import { afterPack, checkPackedApp, FUSES, NATIVE_MODULES } from '../../scripts/afterPack.mjs';
import { beforePack, RUNTIME_DIR, runtimeBinary, runtimeDir } from '../../scripts/fetchNodeRuntime.mjs';
import { bundledNodePath, ENGINE_ENTRY, engineEntry, resolveNodeRuntime } from '../../src-main/app/nodeRuntime.ts';
import { REPO } from '../support/callable.ts';
import { scratch } from '../support/scratch.ts';

const s = scratch();
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { main: string; dependencies: Record<string, string> };
const FETCH_SCRIPT = join(REPO, 'scripts/fetchNodeRuntime.mjs');

/** Whether electron-builder's file patterns take `file` (later "!" patterns exclude). */
function selected(patterns: readonly string[], file: string): boolean {
  let taken = false;
  for (const p of patterns) {
    if (p.startsWith('!')) {
      if (matchesGlob(file, p.slice(1))) taken = false;
    } else if (matchesGlob(file, p)) taken = true;
  }
  return taken;
}

const files = config.files as string[];
const unpack = config.asarUnpack as string[];

describe('electron-builder.config.ts', () => {
  it('loads and validates with electron-builder\'s own loader and schema', async () => {
    const require = createRequire(import.meta.url);
    const { getConfig, validateConfiguration } = require('app-builder-lib/out/util/config/config.js') as typeof import('app-builder-lib/out/util/config/config.js');
    const { DebugLogger } = require('builder-util') as { DebugLogger: new (enabled: boolean) => Parameters<typeof validateConfiguration>[1] };
    const loaded = await getConfig(REPO, 'electron-builder.config.ts', null);
    await validateConfiguration(loaded, new DebugLogger(false));
    expect(loaded.extraResources).toEqual(config.extraResources);
    expect(loaded.afterPack).toBe('./scripts/afterPack.mjs');
    expect(loaded.beforePack).toBe('./scripts/fetchNodeRuntime.mjs');
    // The hooks, loaded the way electron-builder loads them: the functions the scripts export.
    const { resolveFunction } = require('app-builder-lib/out/util/resolve.js') as { resolveFunction: (type: string | undefined, executor: unknown, name: string, root: string) => Promise<unknown> };
    // (Its own module instance, outside vitest's: the same function by name and source.)
    for (const [name, hook, own] of [['beforePack', loaded.beforePack, beforePack], ['afterPack', loaded.afterPack, afterPack]] as const) {
      const resolved = (await resolveFunction('module', hook, name, REPO)) as (...args: unknown[]) => unknown;
      expect(resolved.name).toBe(name);
      expect(String(resolved)).toBe(String(own));
    }
  });

  it('targets AppImage and deb on Linux, dmg on macOS, nsis on Windows', () => {
    expect(config.linux?.target).toEqual(['AppImage', 'deb']);
    expect(config.mac?.target).toEqual(['dmg']);
    expect(config.win?.target).toEqual(['nsis']);
  });

  it('ships the Electron side from out/ in app.asar', () => {
    expect(config.asar).toBe(true);
    for (const file of [pkg.main, 'out/preload/index.cjs', 'out/renderer/index.html', 'package.json']) {
      expect(selected(files, file), file).toBe(true);
      expect(selected(unpack, file), file).toBe(false);
    }
  });

  it('ships, unpacked, every file the engine process and its helpers load, and needs only production modules', async () => {
    expect(ENGINE_ENTRY).toBe('src-main/engineProcess/main.ts');
    expect(engineEntry('/opt/Callable Studio/resources/app.asar')).toBe(join('/opt/Callable Studio/resources/app.asar.unpacked', ENGINE_ENTRY));
    expect(engineEntry(REPO)).toBe(join(REPO, ENGINE_ENTRY));
    // What Node loads: the entry, the sandbox host and keychain helper it spawns, and the CLI the MCP page offers.
    const entries = [ENGINE_ENTRY, 'src-main/sandboxHost/main.ts', 'src-main/engine/credentials/keychainHelper.ts', 'bin/callable.js'];
    const result = await build({ entryPoints: entries.map((e) => join(REPO, e)), absWorkingDir: REPO, bundle: true, write: false, platform: 'node', format: 'esm', packages: 'external', metafile: true, outdir: join(REPO, 'out/.packaging-test'), logLevel: 'silent' });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs).toContain(ENGINE_ENTRY);
    const missing = inputs.filter((file) => !(selected(files, file) && selected(unpack, file)));
    expect(missing, 'engine files not shipped unpacked').toEqual([]);
    const modules = new Set<string>();
    for (const input of Object.values(result.metafile.inputs)) {
      for (const imported of input.imports) if (imported.external && !imported.path.startsWith('node:')) modules.add(imported.path.split('/').slice(0, imported.path.startsWith('@') ? 2 : 1).join('/'));
    }
    expect(modules.size).toBeGreaterThan(3);
    expect([...modules].filter((m) => !(m in pkg.dependencies)), 'imported by the engine but not production dependencies').toEqual([]);
    expect(unpack).toContain('node_modules/**');
    expect(ENGINE_FILES.every((glob) => unpack.includes(glob))).toBe(true);
  });

  it('keeps the native modules as npm built them for Node: unpacked, production dependencies, not rebuilt for Electron', () => {
    expect(NATIVE_MODULES).toEqual(['better-sqlite3', 'isolated-vm', '@napi-rs/keyring']);
    expect(config.npmRebuild).toBe(false);
    for (const name of NATIVE_MODULES) {
      expect(pkg.dependencies[name], name).toBeDefined();
      expect(selected(unpack, `node_modules/${name}/package.json`), name).toBe(true);
    }
  });

  it('puts each target\'s Node where the resolver looks for it in a packaged app', () => {
    expect(config.extraResources).toEqual([{ from: `${RUNTIME_DIR}/\${os}-\${arch}`, to: 'node' }]);
    const [resource] = config.extraResources as Array<{ from: string; to: string }>;
    for (const [platform, os] of [['linux', 'linux'], ['darwin', 'mac'], ['win32', 'win']] as const) {
      for (const arch of ['x64', 'arm64']) {
        const from = join(REPO, resource!.from.replace('${os}', os).replace('${arch}', arch));
        expect(runtimeDir(platform, arch)).toBe(from);
        // Copied as extraResources does: the folder's contents into <resources>/<to>.
        const shipped = join('/resources', resource!.to, relative(from, runtimeBinary(from, platform)));
        expect(shipped).toBe(bundledNodePath('/resources', platform));
      }
    }
  });
});

describe('scripts/fetchNodeRuntime.mjs, against a mirror on a real socket', () => {
  const VERSION = '24.99.0';
  const STEM = `node-v${VERSION}-linux-x64`;
  let server: Server;
  let mirror: string;
  let archive: Buffer;
  let sums = '';
  const requests: string[] = [];

  /** A stand-in Node: answers the resolver's version probe (-p process.versions.node) like Node 24.99.0. */
  const FAKE_NODE = `#!/bin/sh\necho ${VERSION}\n`;

  beforeAll(async () => {
    const src = s.dir('callable-node-dist-');
    mkdirSync(join(src, STEM, 'bin'), { recursive: true });
    writeFileSync(join(src, STEM, 'bin', 'node'), FAKE_NODE, { mode: 0o755 });
    writeFileSync(join(src, STEM, 'LICENSE'), 'Node.js licence\n');
    writeFileSync(join(src, STEM, 'README.md'), 'not shipped\n');
    const tar = spawn('tar', ['-czf', '-', '-C', src, STEM]);
    const chunks: Buffer[] = [];
    tar.stdout.on('data', (d: Buffer) => chunks.push(d));
    await new Promise((resolve) => tar.on('close', resolve));
    archive = Buffer.concat(chunks);
    sums = `${createHash('sha256').update(archive).digest('hex')}  ${STEM}.tar.gz\n${'0'.repeat(64)}  node-v${VERSION}-darwin-arm64.tar.gz\n`;
    server = createServer((req, res) => {
      requests.push(req.url ?? '');
      if (req.url === `/v${VERSION}/SHASUMS256.txt`) res.end(sums);
      else if (req.url === `/v${VERSION}/${STEM}.tar.gz`) res.end(archive);
      else if (req.url === `/v${VERSION}/node-v${VERSION}-darwin-arm64.tar.gz`) res.end(archive);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    mirror = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server?.close(() => resolve())));

  function fetchScript(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const child = s.child(spawn(process.execPath, [FETCH_SCRIPT, ...args], { env: { ...process.env, CALLABLE_NODE_MIRROR: mirror, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  it('fetches, verifies and unpacks the binary and its licence into the folder extraResources copies, where the resolver finds it', async () => {
    const dest = join(s.dir('callable-runtime-'), 'linux-x64');
    const fetched = await fetchScript(['--platform', 'linux', '--arch', 'x64', '--version', VERSION, '--dest', dest]);
    expect(fetched).toEqual({ code: 0, stdout: `Node ${VERSION} for linux-x64: ${join(dest, 'bin', 'node')}\n`, stderr: '' });
    expect(readFileSync(join(dest, 'LICENSE'), 'utf8')).toBe('Node.js licence\n');
    expect(existsSync(join(dest, 'README.md'))).toBe(false);

    // A packaged app's resources: the runtime folder copied to <resources>/node, as the config says.
    const resources = s.dir('callable-resources-');
    symlinkSync(dest, join(resources, 'node'));
    expect(resolveNodeRuntime({ resourcesPath: resources, platform: 'linux', env: { PATH: '' } })).toEqual({ ok: true, path: bundledNodePath(resources, 'linux'), version: VERSION });

    // Fetched again: already there, nothing downloaded.
    const before = requests.length;
    expect((await fetchScript(['--platform', 'linux', '--arch', 'x64', '--version', VERSION, '--dest', dest])).code).toBe(0);
    expect(requests.length).toBe(before);
  });

  it('refuses an archive whose checksum does not match, keeping nothing', async () => {
    const dest = join(s.dir('callable-runtime-'), 'mac-arm64');
    const refused = await fetchScript(['--platform', 'darwin', '--arch', 'arm64', '--version', VERSION, '--dest', dest]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^fetchNodeRuntime: node-v24\.99\.0-darwin-arm64\.tar\.gz from http:\/\/127\.0\.0\.1:\d+\/v24\.99\.0 has SHA-256 [0-9a-f]{64}, but SHASUMS256\.txt says 0{64}: not used; try again or use another mirror\n$/);
    expect(existsSync(dest)).toBe(false);
  });

  it('says in one line what is wrong: an unknown platform or option (2), a version the mirror lacks or a mirror that is down (1)', async () => {
    const dest = join(s.dir('callable-runtime-'), 'x');
    expect(await fetchScript(['--platform', 'solaris', '--dest', dest])).toEqual({ code: 2, stdout: '', stderr: 'fetchNodeRuntime: --platform must be one of linux, darwin, win32 (got "solaris")\n' });
    const unknown = await fetchScript(['--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^fetchNodeRuntime: Unknown option '--bogus'.*; usage: node scripts\/fetchNodeRuntime\.mjs \[--platform/);
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
    const lacking = await fetchScript(['--platform', 'linux', '--arch', 'x64', '--version', '24.0.1', '--dest', dest]);
    expect(lacking).toMatchObject({ code: 1, stderr: expect.stringMatching(/^fetchNodeRuntime: could not download http:\/\/127\.0\.0\.1:\d+\/v24\.0\.1\/SHASUMS256\.txt: HTTP 404\n$/) });
    // A port that was just free and is closed again: nothing listens.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const down = await fetchScript(['--platform', 'linux', '--arch', 'x64', '--version', VERSION, '--dest', dest], { CALLABLE_NODE_MIRROR: `http://127.0.0.1:${port}` });
    expect(down).toEqual({ code: 1, stdout: '', stderr: `fetchNodeRuntime: could not download http://127.0.0.1:${port}/v24.99.0/SHASUMS256.txt: connect ECONNREFUSED 127.0.0.1:${port}\n` });
    expect(existsSync(dest)).toBe(false);
  });
});

describe('scripts/afterPack.mjs', () => {
  /** An unpacked app for this machine: its Node, the engine entry and node_modules (this checkout's, built for this Node). */
  function packedApp(node: string): string {
    const resources = s.dir('callable-packed-');
    mkdirSync(join(resources, 'node', 'bin'), { recursive: true });
    symlinkSync(node, bundledNodePath(resources, process.platform));
    const unpacked = join(resources, 'app.asar.unpacked');
    mkdirSync(unpacked);
    for (const dir of ['src-main', 'node_modules']) symlinkSync(join(REPO, dir), join(unpacked, dir));
    return resources;
  }

  /** A file laid out like Electron 45's fuse wire: the sentinel, version 1, nine fuses at their defaults. */
  function electronLike(): string {
    const file = join(s.dir('callable-electron-'), 'callable-studio');
    const defaults = [1, 0, 1, 1, 0, 0, 0, 1, 1].map((on) => (on ? FuseState.ENABLE : FuseState.DISABLE));
    writeFileSync(file, Buffer.concat([Buffer.alloc(4096, 7), Buffer.from('dL7pKGdnNz796PbbjQWNKmHXBZaB9tsX'), Buffer.from([1, defaults.length, ...defaults]), Buffer.alloc(4096, 7)]));
    return file;
  }

  it('sets the fuses: no RunAsNode, NODE_OPTIONS or inspect arguments; only app.asar, integrity-checked; cookies encrypted', () => {
    expect(FUSES).toEqual({
      version: FuseVersion.V1,
      [FuseV1Options.RunAsNode]: false,
      [FuseV1Options.EnableCookieEncryption]: true,
      [FuseV1Options.EnableNodeOptionsEnvironmentVariable]: false,
      [FuseV1Options.EnableNodeCliInspectArguments]: false,
      [FuseV1Options.EnableEmbeddedAsarIntegrityValidation]: true,
      [FuseV1Options.OnlyLoadAppFromAsar]: true,
    });
  });

  it('accepts a package whose bundled Node loads the native modules, and flips the fuses in the binary', async () => {
    const resources = packedApp(process.execPath);
    expect(checkPackedApp(resources, process.platform, process.arch)).toEqual([]);
    const binary = electronLike();
    const packager = { getResourcesDir: () => resources, addElectronFuses: (_context: unknown, fuses: Parameters<typeof flipFuses>[1]) => flipFuses(binary, fuses) };
    await afterPack({ electronPlatformName: process.platform, arch: { x64: 1, arm64: 3 }[process.arch as 'x64' | 'arm64'], appOutDir: resources, packager });
    const wire = await getCurrentFuseWire(binary);
    expect(wire[FuseV1Options.RunAsNode]).toBe(FuseState.DISABLE);
    expect(wire[FuseV1Options.EnableCookieEncryption]).toBe(FuseState.ENABLE);
    expect(wire[FuseV1Options.EnableNodeOptionsEnvironmentVariable]).toBe(FuseState.DISABLE);
    expect(wire[FuseV1Options.EnableNodeCliInspectArguments]).toBe(FuseState.DISABLE);
    expect(wire[FuseV1Options.EnableEmbeddedAsarIntegrityValidation]).toBe(FuseState.ENABLE);
    expect(wire[FuseV1Options.OnlyLoadAppFromAsar]).toBe(FuseState.ENABLE);
    // Fuses the config leaves alone keep Electron's value.
    expect(wire[FuseV1Options.GrantFileProtocolExtraPrivileges]).toBe(FuseState.ENABLE);
  });

  it('refuses a package without its Node, engine entry or native modules, and flips nothing', async () => {
    const resources = s.dir('callable-packed-');
    const binary = electronLike();
    const before = readFileSync(binary);
    const packager = { getResourcesDir: () => resources, addElectronFuses: (_context: unknown, fuses: Parameters<typeof flipFuses>[1]) => flipFuses(binary, fuses) };
    await expect(afterPack({ electronPlatformName: 'linux', arch: 1, appOutDir: resources, packager })).rejects.toThrow(
      new RegExp(
        `package for linux-x64 is incomplete:\\n- no bundled Node at ${resources}/node/bin/node: run "node scripts/fetchNodeRuntime.mjs --platform linux --arch x64".*\\n- the engine entry src-main/engineProcess/main.ts is not unpacked.*\\n- the native module better-sqlite3 is not unpacked`,
      ),
    );
    expect(readFileSync(binary).equals(before)).toBe(true);
  });

  // A real older Node stands for a wrong bundled one (Debian's is 20); skipped where the system has none.
  const olderNode = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => existsSync(p) && !/^v2[4-9]/.test(spawnSync(p, ['-v'], { encoding: 'utf8' }).stdout));
  it.skipIf(!olderNode)('refuses a package whose bundled Node is too old for the engine and its native modules (needs a Node older than 24 at /usr/bin/node)', () => {
    const [problem, ...rest] = checkPackedApp(packedApp(olderNode!), process.platform, process.arch);
    expect(rest).toEqual([]);
    expect(problem).toMatch(/^the bundled Node cannot load the native modules \(Error: Node 2\d\.\d+\.\d+ is older than 24\): run npm ci with the same Node major as the bundled one/);
  });
});
