#!/usr/bin/env node
// `npm start`: makes sure Electron's binary is there (the first launch downloads it), builds the app
// and launches it. A binary that cannot be downloaded is one line saying what to do, exit 1, instead
// of the stack trace Electron's own loader prints.
//
//   node scripts/start.mjs [ARGS…]      (ARGS go to Electron after the app folder)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const REPO = join(import.meta.dirname, '..');
const ELECTRON_DIR = join(REPO, 'node_modules', 'electron');

/** The Electron executable as node_modules/electron finds it (path.txt names it inside dist/, or ELECTRON_OVERRIDE_DIST_PATH). */
function electronBinary() {
  const pathFile = join(ELECTRON_DIR, 'path.txt');
  const name = existsSync(pathFile) ? readFileSync(pathFile, 'utf8').trim() : undefined;
  if (process.env.ELECTRON_OVERRIDE_DIST_PATH) return join(process.env.ELECTRON_OVERRIDE_DIST_PATH, name || 'electron');
  if (name === undefined) return undefined;
  const binary = join(ELECTRON_DIR, 'dist', name);
  return existsSync(binary) ? binary : undefined;
}

/** Runs Electron's installer quietly (a terminal sees a progress line while it runs); its output says why it failed. */
function download() {
  const progress = process.stderr.isTTY === true;
  if (progress) process.stderr.write("npm start: downloading Electron's binary (first launch)…");
  const r = spawnSync(process.execPath, [join(ELECTRON_DIR, 'install.js')], { cwd: ELECTRON_DIR, encoding: 'utf8', env: process.env });
  if (progress) process.stderr.write('\r\x1b[K');
  if (r.status === 0) return { ok: true };
  const lines = `${r.stderr ?? ''}\n${r.stdout ?? ''}`.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('at '));
  return { ok: false, reason: (lines.find((l) => /error/i.test(l)) ?? lines[0] ?? r.error?.message ?? `exit ${r.status}`).slice(0, 200) };
}

function fail(message) {
  process.stderr.write(`npm start: ${message}\n`);
  process.exit(1);
}

if (!existsSync(ELECTRON_DIR)) fail('Electron is not installed (no node_modules/electron): run npm install first');
let binary = electronBinary();
if (binary === undefined) {
  const got = download();
  binary = got.ok ? electronBinary() : undefined;
  if (binary === undefined) {
    fail(
      `Electron's binary could not be downloaded (${got.reason ?? 'the installer left no binary'}): connect to the network, or set ELECTRON_MIRROR to a mirror you can reach, and run npm start again; the headless commands (npx callable …) need no Electron`,
    );
  }
}

const build = spawnSync(process.execPath, [join(REPO, 'node_modules', 'electron-vite', 'bin', 'electron-vite.js'), 'build'], { cwd: REPO, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

const child = spawn(binary, ['.', ...process.argv.slice(2)], { cwd: REPO, stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('error', (error) => fail(`could not start Electron (${binary}): ${error.message}`));
child.on('exit', (code, signal) => process.exit(code ?? (signal === 'SIGTERM' ? 143 : 130)));
