// electron-builder's afterPack hook (electron-builder.config.ts): checks that the packed app carries
// what its engine process needs, then sets Electron's fuses. It runs before signing, as fuses must.
import { FuseV1Options, FuseVersion } from '@electron/fuses';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bundledNodePath, ENGINE_ENTRY, MIN_NODE_MAJOR } from '../src-main/app/nodeRuntime.ts';

/**
 * The fuses every package gets. The engine runs on its own bundled Node, so Electron's binary never
 * has to act as Node: no ELECTRON_RUN_AS_NODE, no NODE_OPTIONS, no --inspect; the app loads only
 * from app.asar, whose header Electron checks against the hash in the binary (macOS and Windows;
 * Electron has no such check on Linux). Cookies are encrypted at rest with the OS keychain.
 */
export const FUSES = {
  version: FuseVersion.V1,
  [FuseV1Options.RunAsNode]: false,
  [FuseV1Options.EnableCookieEncryption]: true,
  [FuseV1Options.EnableNodeOptionsEnvironmentVariable]: false,
  [FuseV1Options.EnableNodeCliInspectArguments]: false,
  [FuseV1Options.EnableEmbeddedAsarIntegrityValidation]: true,
  [FuseV1Options.OnlyLoadAppFromAsar]: true,
};

/** The native modules the engine loads; built for Node (not Electron), so only the bundled Node can load them. */
export const NATIVE_MODULES = ['better-sqlite3', 'isolated-vm', '@napi-rs/keyring'];

const ARCH_NAMES = { 0: 'ia32', 1: 'x64', 2: 'armv7l', 3: 'arm64', 4: 'universal' };

/**
 * What must hold in a packed app at `resourcesDir` for `platform`/`arch`: the bundled Node and the
 * unpacked engine entry exist, and, when the package is for this very machine, the bundled Node is
 * new enough and loads the native modules (built for another Node they would fail at the first run).
 * Returns the problems, one line each.
 */
export function checkPackedApp(resourcesDir, platform, arch) {
  const problems = [];
  const node = bundledNodePath(resourcesDir, platform);
  const unpacked = join(resourcesDir, 'app.asar.unpacked');
  if (!existsSync(node)) problems.push(`no bundled Node at ${node}: run "node scripts/fetchNodeRuntime.mjs --platform ${platform} --arch ${arch}" (the beforePack hook does) and pack again`);
  if (!existsSync(join(unpacked, ENGINE_ENTRY))) problems.push(`the engine entry ${ENGINE_ENTRY} is not unpacked under ${unpacked}: check "files" and "asarUnpack" in electron-builder.config.ts`);
  for (const name of NATIVE_MODULES) {
    if (!existsSync(join(unpacked, 'node_modules', name))) problems.push(`the native module ${name} is not unpacked under ${unpacked}/node_modules`);
  }
  if (problems.length === 0 && platform === process.platform && arch === process.arch) {
    const probe = spawnSync(
      node,
      ['--no-node-snapshot', '-e', `const major = Number(process.versions.node.split('.')[0]); if (major < ${MIN_NODE_MAJOR}) throw new Error('Node ' + process.versions.node + ' is older than ${MIN_NODE_MAJOR}'); for (const m of ${JSON.stringify(NATIVE_MODULES)}) require(m);`],
      { cwd: unpacked, encoding: 'utf8', timeout: 60_000 },
    );
    if (probe.error || probe.status !== 0) {
      const why = probe.error?.message ?? probe.stderr.split('\n').find((l) => /^\w*Error\b/.test(l)) ?? `exit ${probe.status}`;
      problems.push(`the bundled Node cannot load the native modules (${why.trim()}): run npm ci with the same Node major as the bundled one (${node}), then pack again`);
    }
  }
  return problems;
}

/** The afterPack hook: refuses a package its engine could not run in, then flips the fuses. */
export async function afterPack(context) {
  const platform = context.electronPlatformName;
  const arch = ARCH_NAMES[context.arch] ?? String(context.arch);
  const problems = checkPackedApp(context.packager.getResourcesDir(context.appOutDir), platform, arch);
  if (problems.length > 0) throw new Error(`Callable Studio's package for ${platform}-${arch} is incomplete:\n- ${problems.join('\n- ')}`);
  // Flipping fuses breaks an ad-hoc macOS signature; reset it (a real signature comes after this hook).
  await context.packager.addElectronFuses(context, { ...FUSES, resetAdHocDarwinSignature: platform === 'darwin' });
}
