import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineProcess, withCompileCache } from '../../src-main/app/engineProcess.ts';
import { resolveNodeRuntime } from '../../src-main/app/nodeRuntime.ts';
import type { EngineStatus } from '../../src-preload/contract.ts';
import { REPO } from '../support/callable.ts';
import { alive } from '../support/wait.ts';

const ENTRY = join(REPO, 'src-main/engineProcess/main.ts');
const THIS_NODE = { ok: true as const, path: process.execPath, version: process.versions.node };

const dirs: string[] = [];
function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('the bridge relayed to a real engine process', () => {
  const statuses: EngineStatus[] = [];
  let relay: EngineProcess;

  beforeAll(async () => {
    relay = new EngineProcess({ node: THIS_NODE, entry: ENTRY, args: ['--data-dir', tempDir('callable-relay-'), '--mcp-port', '0'], onStatus: (s) => statuses.push(s) });
    await relay.start();
  });
  afterAll(() => relay?.close());

  it('a bridge call round-trips through the engine process, and its events come back', async () => {
    expect(relay.status.state).toBe('ready');
    expect(relay.pid).not.toBe(process.pid);
    const changed = new Promise<void>((resolve) => relay.subscribe('catalog:changed', () => resolve()));
    const saved = await relay.invoke('functions:save', { spec: { name: 'sleepy', timeoutMs: 60_000 }, source: 'export default async function () {\n  await new Promise((r) => setTimeout(r, 30_000));\n  return "late";\n}\n' });
    expect(saved).toMatchObject({ ok: true, value: { name: 'sleepy', revision: 1 } });
    expect(await relay.invoke('functions:list', {})).toMatchObject({ ok: true, value: [{ name: 'sleepy', enabled: true }] });
    await changed;
    // Engine errors cross as { code, message }.
    expect(await relay.invoke('functions:get', { name: 'missing' })).toMatchObject({ ok: false, error: { code: 'not_found', message: expect.stringContaining('no function named "missing"') } });
  });

  it.skipIf(process.platform !== 'linux')('starts the engine process from Node\'s compile cache (reads /proc, Linux only)', () => {
    const environ = readFileSync(`/proc/${relay.pid}/environ`, 'utf8').split('\0');
    expect(environ).toContain(`NODE_COMPILE_CACHE=${process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'node-compile-cache')}`);
    // A cache the environment names, or one it turns off, is left as it is.
    expect(withCompileCache({ NODE_COMPILE_CACHE: '/elsewhere' })).toEqual({ NODE_COMPILE_CACHE: '/elsewhere' });
    expect(withCompileCache({ NODE_DISABLE_COMPILE_CACHE: '1' })).toEqual({ NODE_DISABLE_COMPILE_CACHE: '1' });
  });

  it('refuses a malformed payload or an unknown method with bad_input, naming the field', async () => {
    expect(await relay.invoke('functions:get', { name: 'Not A Name' })).toMatchObject({ ok: false, error: { code: 'bad_input', message: expect.stringContaining('functions:get: name: a function name starts with') } });
    expect(await relay.invoke('functions:get', { name: 'sleepy', extra: 1 })).toMatchObject({ ok: false, error: { code: 'bad_input' } });
    expect(await relay.invoke('fs:readFile', { path: '/etc/passwd' })).toEqual({ ok: false, error: { code: 'bad_input', message: 'unknown method "fs:readFile"' } });
    expect(await relay.invoke('runs:start', { name: 'sleepy', args: { big: 1n }, token: 't' })).toMatchObject({ ok: false, error: { code: 'bad_input', message: expect.stringContaining('cannot be sent as JSON') } });
  });

  it('a killed engine fails its in-flight calls clearly, is restarted and reported, and the next call works', async () => {
    const oldPid = relay.pid!;
    const inFlight = relay.invoke('runs:start', { name: 'sleepy', args: {}, token: 'run-1' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    process.kill(oldPid, 'SIGKILL');
    expect(await inFlight).toEqual({
      ok: false,
      error: { code: 'engine_unavailable', message: 'runs:start did not finish: the engine process was killed by SIGKILL. It is being restarted: try again in a moment.' },
    });
    expect(statuses.at(-1)).toEqual({ state: 'restarting', message: 'The engine process was killed by SIGKILL; restarting it…' });
    // A call made while it restarts waits for it rather than failing.
    expect(await relay.invoke('functions:get', { name: 'sleepy' })).toMatchObject({ ok: true, value: { name: 'sleepy', revision: 1 } });
    expect(relay.status.state).toBe('ready');
    expect(statuses.slice(-2).map((s) => s.state)).toEqual(['restarting', 'ready']);
    expect(relay.pid).not.toBe(oldPid);
    expect(alive(oldPid)).toBe(false);
  });

  it('closing the relay stops its engine process', async () => {
    const pid = relay.pid!;
    await relay.close();
    expect(alive(pid)).toBe(false);
    expect(await relay.invoke('functions:list', {})).toEqual({ ok: false, error: { code: 'engine_unavailable', message: 'Callable Studio is closing.' } });
  });
});

describe('supervision', () => {
  it('when the process that owns the relay is killed, its engine process exits too', async () => {
    const owner = spawn(process.execPath, ['--no-node-snapshot', join(import.meta.dirname, 'relayOwner.ts'), tempDir('callable-owner-')], { stdio: ['ignore', 'pipe', 'inherit'] });
    const enginePid = await new Promise<number>((resolve, reject) => {
      let out = '';
      owner.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(Number(out.trim()));
      });
      owner.on('exit', (code) => reject(new Error(`the relay owner exited (${code}) before its engine was ready`)));
    });
    expect(alive(enginePid)).toBe(true);
    owner.kill('SIGKILL');
    await expect.poll(() => alive(enginePid), { timeout: 10_000, interval: 100 }).toBe(false);
  });

  it('an engine that keeps crashing is given up on with a clear message, and calls answer at once', async () => {
    const entry = join(tempDir('callable-crash-'), 'crash.mjs');
    writeFileSync(entry, 'process.exit(3);\n');
    const statuses: EngineStatus[] = [];
    const relay = new EngineProcess({ node: THIS_NODE, entry, maxCrashes: 3, restartDelayMs: 10, onStatus: (s) => statuses.push(s) });
    const message = 'The engine process stopped 3 times within 60 s (the last time it exited with code 3), so Callable Studio stopped restarting it. Quit and start the app again; its terminal shows what the engine reported.';
    await expect(relay.start()).rejects.toThrow(message);
    expect(statuses.map((s) => s.state)).toEqual(['starting', 'restarting', 'restarting', 'unavailable']);
    expect(await relay.invoke('functions:list', {})).toEqual({ ok: false, error: { code: 'engine_unavailable', message } });
    // Payloads are still checked first.
    expect(await relay.invoke('functions:get', {})).toMatchObject({ ok: false, error: { code: 'bad_input' } });
    await relay.close();
  });

  it('an engine that cannot open its data folder is reported and not restarted', async () => {
    const notAFolder = join(tempDir('callable-fatal-'), 'file');
    writeFileSync(notAFolder, '');
    const statuses: EngineStatus[] = [];
    const relay = new EngineProcess({ node: THIS_NODE, entry: ENTRY, args: ['--data-dir', notAFolder, '--mcp-port', '0'], onStatus: (s) => statuses.push(s) });
    await expect(relay.start()).rejects.toThrow(`The engine could not open its data folder ${notAFolder}: `);
    expect(statuses.map((s) => s.state)).toEqual(['starting', 'unavailable']);
    await relay.close();
  });

  it('without Node 24, the relay starts nothing and every call answers engine_unavailable with how to fix it', async () => {
    const relay = new EngineProcess({ node: { ok: false, message: 'no Node 24: install it' }, entry: ENTRY });
    await expect(relay.start()).rejects.toThrow('no Node 24: install it');
    expect(relay.pid).toBeUndefined();
    expect(await relay.invoke('functions:list', {})).toEqual({ ok: false, error: { code: 'engine_unavailable', message: 'no Node 24: install it' } });
  });
});

describe('which Node runs the engine', () => {
  /** A folder holding a fake `node` that reports `version`. */
  function fakeNode(version: string, sub = ''): string {
    const dir = join(tempDir('callable-node-'), sub);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'node');
    writeFileSync(file, `#!/bin/sh\necho ${version}\n`);
    chmodSync(file, 0o755);
    return file;
  }
  const FIX = 'Install Node.js 24 from https://nodejs.org (or run `npm install -g node@24`), or set CALLABLE_NODE to the path of a Node 24 binary, then start Callable Studio again.';

  it('refuses a Node older than 24 on PATH, saying what it found and how to fix it', () => {
    const old = fakeNode('v20.11.1');
    expect(resolveNodeRuntime({ env: { PATH: dirname(old) }, platform: 'linux' })).toEqual({
      ok: false,
      message: `Callable Studio runs its engine on Node.js 24 or newer and found Node 20.11.1 at ${old} (from PATH). ${FIX}`,
    });
  });

  it('says so when there is no node at all', () => {
    expect(resolveNodeRuntime({ env: { PATH: tempDir('callable-empty-') }, platform: 'linux' })).toEqual({
      ok: false,
      message: `Callable Studio runs its engine on Node.js 24 or newer and found no \`node\` on PATH. ${FIX}`,
    });
  });

  it('accepts the running Node, from PATH or from npm', () => {
    const expected = { ok: true, path: process.execPath, version: process.versions.node };
    expect(resolveNodeRuntime({ env: { PATH: dirname(process.execPath) }, platform: 'linux' })).toEqual({ ...expected, path: join(dirname(process.execPath), 'node') });
    expect(resolveNodeRuntime({ env: { npm_node_execpath: process.execPath, PATH: dirname(fakeNode('v20.11.1')) }, platform: 'linux' })).toEqual(expected);
  });

  it('CALLABLE_NODE picks the binary, and is checked like any other', () => {
    expect(resolveNodeRuntime({ env: { CALLABLE_NODE: process.execPath, npm_node_execpath: fakeNode('v22.1.0') }, platform: 'linux' })).toEqual({ ok: true, path: process.execPath, version: process.versions.node });
    const old = fakeNode('v18.20.0');
    expect(resolveNodeRuntime({ env: { CALLABLE_NODE: old }, platform: 'linux' })).toMatchObject({ ok: false, message: expect.stringContaining(`found Node 18.20.0 at ${old} (from CALLABLE_NODE)`) });
    expect(resolveNodeRuntime({ env: { CALLABLE_NODE: '/nonexistent/node' }, platform: 'linux' })).toMatchObject({ ok: false, message: expect.stringMatching(/^Callable Studio runs its engine on Node\.js 24 or newer; \/nonexistent\/node \(from CALLABLE_NODE\) did not run: .*ENOENT/) });
  });

  it('a packaged app uses the Node bundled in its resources', () => {
    const bundled = fakeNode('v24.3.0', 'node/bin');
    const resourcesPath = dirname(dirname(dirname(bundled)));
    expect(resolveNodeRuntime({ env: { PATH: dirname(process.execPath) }, resourcesPath, platform: 'linux' })).toEqual({ ok: true, path: bundled, version: '24.3.0' });
  });
});
