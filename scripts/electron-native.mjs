#!/usr/bin/env node
// Makes the one ABI-specific native module, isolated-vm, loadable by Electron without disturbing
// plain Node: it builds isolated-vm against this Electron's headers and puts the result beside
// the Node prebuilds as `isolated-vm.electron.abi<N>.node`. node-gyp-build picks the file whose
// runtime and ABI match, so `npm test` (Node) and `npm start` (Electron) share one checkout.
// better-sqlite3 and @napi-rs/keyring are Node-API modules and load in both as they are.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const electronDir = dirname(require.resolve('electron/package.json'));
const electronVersion = JSON.parse(readFileSync(join(electronDir, 'package.json'), 'utf8')).version;
const abi = readFileSync(join(electronDir, 'abi_version'), 'utf8').trim();
const ivmDir = dirname(require.resolve('isolated-vm/package.json'));
const libc = process.platform === 'linux' ? (process.report?.getReport().header.glibcVersionRuntime ? '.glibc' : '.musl') : '';
const target = join(ivmDir, 'prebuilds', `${process.platform}-${process.arch}`, `isolated-vm.electron.abi${abi}${libc}.node`);

if (existsSync(target)) process.exit(0);

console.error(`Building isolated-vm for Electron ${electronVersion} (ABI ${abi}); this happens once and needs a C++ toolchain and the Electron headers (downloaded from electronjs.org).`);
const nodeGyp = process.env.npm_execpath ? join(dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js') : undefined;
if (!nodeGyp || !existsSync(nodeGyp)) {
  console.error('Cannot find node-gyp: run this through npm (npm start).');
  process.exit(1);
}
const work = mkdtempSync(join(tmpdir(), 'callable-ivm-electron-'));
try {
  cpSync(ivmDir, work, { recursive: true, filter: (src) => !src.includes(`${join(ivmDir, 'prebuilds')}`) && !src.includes(join(ivmDir, 'build')) });
  const result = spawnSync(process.execPath, [nodeGyp, 'rebuild', '--release', `--target=${electronVersion}`, '--runtime=electron', '--dist-url=https://electronjs.org/headers', '-j', 'max'], {
    cwd: work,
    stdio: 'inherit',
    env: { ...process.env, npm_config_nodedir: '' },
  });
  if (result.status !== 0) {
    console.error('Building isolated-vm for Electron failed (see above). `npm test` and `callable` are unaffected.');
    process.exit(result.status ?? 1);
  }
  mkdirSync(dirname(target), { recursive: true });
  cpSync(join(work, 'build', 'Release', 'isolated-vm.node'), target);
  console.error(`Built ${target}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
