#!/usr/bin/env node
// The Node runtime a packaged Callable Studio carries for its engine process: the official build
// from nodejs.org for one platform and architecture, checked against the release's SHASUMS256.txt,
// reduced to the binary and its licence, in the layout src-main/app/nodeRuntime.ts looks for
// (<resources>/node/bin/node, or <resources>\node\node.exe on Windows).
//
//   node scripts/fetchNodeRuntime.mjs [--platform linux|darwin|win32] [--arch x64|arm64] [--version 24.x.y] [--dest DIR]
//
// DIR defaults to dist/node-runtime/<os>-<arch>, where electron-builder.config.ts takes it from;
// CALLABLE_NODE_MIRROR replaces https://nodejs.org/dist (a mirror with the same layout).
//
// Also electron-builder's beforePack hook (electron-builder.config.ts): it fetches the runtime of the
// target being packed unless it is already there. The version defaults to the Node running this
// script, which must be the major the native modules in node_modules were installed for.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';

/** Where the fetched runtimes are kept, per electron-builder ${os}-${arch} (linux-x64, mac-arm64, win-x64). */
export const RUNTIME_DIR = 'dist/node-runtime';
export const DEFAULT_MIRROR = 'https://nodejs.org/dist';
const REPO = join(import.meta.dirname, '..');
const PLATFORMS = { linux: 'linux', darwin: 'mac', win32: 'win' };
const ARCHES = ['x64', 'arm64'];

/** electron-builder's name for a Node platform, as its ${os} macro spells it. */
export const builderOs = (platform) => PLATFORMS[platform];

/** The folder of the runtime for `platform`/`arch`, as the extraResources entry of the config names it. */
export const runtimeDir = (platform, arch) => join(REPO, RUNTIME_DIR, `${builderOs(platform)}-${arch}`);

/** The Node binary inside a runtime folder (the layout of nodejs.org's archives). */
export const runtimeBinary = (dir, platform) => (platform === 'win32' ? join(dir, 'node.exe') : join(dir, 'bin', 'node'));

class FetchError extends Error {}

/**
 * Downloads and verifies node-v<version>-<platform>-<arch> into `dest` (replacing what is there),
 * keeping only the binary and LICENSE. Resolves with the binary's path.
 */
export async function fetchNodeRuntime({ platform, arch, version, dest, mirror = DEFAULT_MIRROR, fetchImpl = fetch }) {
  if (!builderOs(platform)) throw new FetchError(`--platform must be one of ${Object.keys(PLATFORMS).join(', ')} (got "${platform}")`);
  if (!ARCHES.includes(arch)) throw new FetchError(`--arch must be one of ${ARCHES.join(', ')} (got "${arch}")`);
  if (!/^\d+\.\d+\.\d+$/.test(version)) throw new FetchError(`--version must look like 24.11.1 (got "${version}")`);
  const base = `${mirror.replace(/\/+$/, '')}/v${version}`;
  const stem = `node-v${version}-${platform === 'win32' ? 'win' : platform}-${arch}`;
  const archive = `${stem}.${platform === 'win32' ? 'zip' : 'tar.gz'}`;

  const sums = await download(fetchImpl, `${base}/SHASUMS256.txt`);
  const line = sums.toString('utf8').split('\n').find((l) => l.trim().endsWith(`  ${archive}`));
  if (!line) throw new FetchError(`${base}/SHASUMS256.txt does not list ${archive}: is Node ${version} built for ${platform}-${arch}?`);
  const expected = line.trim().split(/\s+/)[0];
  const body = await download(fetchImpl, `${base}/${archive}`);
  const actual = createHash('sha256').update(body).digest('hex');
  if (actual !== expected) throw new FetchError(`${archive} from ${base} has SHA-256 ${actual}, but SHASUMS256.txt says ${expected}: not used; try again or use another mirror`);

  const work = mkdtempSync(join(tmpdir(), 'callable-node-runtime-'));
  try {
    const file = join(work, archive);
    writeFileSync(file, body);
    // tar reads .tar.gz everywhere, and .zip where it is bsdtar (macOS, Windows 10 and later).
    const untar = spawnSync('tar', ['-xf', file, '-C', work], { encoding: 'utf8' });
    if (untar.error || untar.status !== 0) throw new FetchError(`could not unpack ${archive} with tar: ${untar.error?.message ?? untar.stderr.trim().split('\n')[0]}`);
    const from = join(work, stem);
    const binary = runtimeBinary(from, platform);
    if (!existsSync(binary)) throw new FetchError(`${archive} has no ${platform === 'win32' ? 'node.exe' : 'bin/node'}`);
    rmSync(dest, { recursive: true, force: true });
    const target = runtimeBinary(dest, platform);
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(binary, target);
    if (existsSync(join(from, 'LICENSE'))) copyFileSync(join(from, 'LICENSE'), join(dest, 'LICENSE'));
    writeFileSync(join(dest, 'VERSION'), `${version}\n`);
    return target;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function download(fetchImpl, url) {
  let response;
  try {
    response = await fetchImpl(url);
  } catch (error) {
    throw new FetchError(`could not download ${url}: ${error.cause?.message ?? error.message}`);
  }
  if (!response.ok) throw new FetchError(`could not download ${url}: HTTP ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

/** The runtime for a target, fetched unless `dest` already holds this version. */
export async function ensureNodeRuntime({ platform, arch, version = process.versions.node, dest = runtimeDir(platform, arch), mirror = process.env.CALLABLE_NODE_MIRROR || DEFAULT_MIRROR }) {
  const stamp = join(dest, 'VERSION');
  if (existsSync(runtimeBinary(dest, platform)) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === version) return runtimeBinary(dest, platform);
  return fetchNodeRuntime({ platform, arch, version, dest, mirror });
}

/** electron-builder's beforePack: the runtime of the target about to be packed. */
export async function beforePack(context) {
  const arch = { 1: 'x64', 3: 'arm64' }[context.arch];
  if (!arch) throw new Error(`Callable Studio bundles Node for x64 and arm64 only, not for this target's architecture (${context.arch})`);
  await ensureNodeRuntime({ platform: context.electronPlatformName, arch });
}

async function main() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        platform: { type: 'string', default: process.platform },
        arch: { type: 'string', default: process.arch },
        version: { type: 'string', default: process.versions.node },
        dest: { type: 'string' },
      },
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`fetchNodeRuntime: ${error.message}; usage: node scripts/fetchNodeRuntime.mjs [--platform linux|darwin|win32] [--arch x64|arm64] [--version 24.x.y] [--dest DIR]\n`);
    return 2;
  }
  try {
    const binary = await ensureNodeRuntime(values);
    process.stdout.write(`Node ${values.version} for ${values.platform}-${values.arch}: ${binary}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof FetchError)) throw error;
    process.stderr.write(`fetchNodeRuntime: ${error.message}\n`);
    return /must (be one of|look like)/.test(error.message) ? 2 : 1;
  }
}

if (import.meta.main) process.exitCode = await main();
