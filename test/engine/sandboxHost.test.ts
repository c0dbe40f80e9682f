import { spawn, spawnSync } from 'node:child_process';
import ivm from 'isolated-vm';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore, type Engine, type EngineOptions } from '../../src-main/engine/index.ts';
import { effectiveLimits } from '../../src-main/engine/model/limits.ts';
import type { SandboxJob } from '../../src-main/engine/sandbox/protocol.ts';
import { Sandbox, startHostEarly } from '../../src-main/engine/sandbox/sandbox.ts';
import { guestSource } from '../../src-main/sandboxHost/guestBundle.ts';
import { GuestCode } from '../../src-main/sandboxHost/guestCode.ts';
import { ECHO_INPUT_SCHEMA, ECHO_SOURCE } from '../bench/fixture.ts';
import { productStdio, sandboxHostPids, startStdio } from '../bench/targets.ts';
import { CALLABLE_COMMAND, REPO, startServe } from '../support/callable.ts';
import { connect } from '../support/mcpClients.ts';
import { vendorServer } from '../support/vendor.ts';
import { alive } from '../support/wait.ts';

// Isolates live in sandbox host processes: plain Node processes that hold no database and no
// secret. These tests provoke the faults for real (a signal, a memory bomb, a builtin that ignores
// the deadline, a killed engine) and check what a user would see: the call that caused it ends
// with an error naming what happened, the engine and the next call carry on.

const engines: Array<{ engine: Engine; dataDir: string }> = [];
afterEach(() => {
  for (const { engine, dataDir } of engines.splice(0)) {
    engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

function freshEngine(options: Partial<EngineOptions> = {}): Engine {
  const dataDir = mkdtempSync(join(tmpdir(), 'callable-host-'));
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore(), sandbox: { hosts: 1 }, ...options });
  engines.push({ engine, dataDir });
  return engine;
}

async function eventually<T>(probe: () => T | undefined, what: string, ms = 5000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const SLOW = 'export default () => new Promise((r) => setTimeout(() => r("late"), 5000))';
const ECHO = 'export default (a) => ({ echo: a.text })';
/** The three functions that crashed or bloated the serving process before hosts were separate. */
const BOMBS = {
  array: 'export default () => { const a = new Array(1024 * 1024 * 60).fill(); return a.length; }',
  maxString: 'export default () => { let s = "x"; for (;;) s = s + s; }',
  bombWithFetches:
    'export default async (a, ctx) => { const pending = [1, 2, 3].map((i) => ctx.fetch(a.url + i).catch(() => 0)); const keep = []; for (;;) keep.push(new Array(1e6).fill(1)); }',
};

describe('a sandbox host process', () => {
  it('that aborts ends the calls it was running with sandbox_crashed, naming the function; the next call works', async () => {
    const engine = freshEngine();
    await engine.saveFunction({ spec: { name: 'slow' } as never, source: SLOW });
    await engine.saveFunction({ spec: { name: 'echo' } as never, source: ECHO });
    expect(await engine.run('echo', { text: 'warm' }, { caller: 'test' })).toMatchObject({ ok: true });
    const [host] = engine.sandboxHosts;
    const call = engine.run('slow', {}, { caller: 'test' });
    await new Promise((r) => setTimeout(r, 200));
    process.kill(host!.pid, 'SIGABRT');
    const result = await call;
    expect(result).toMatchObject({ ok: false, error: { code: 'sandbox_crashed' } });
    expect(!result.ok && result.error.message).toMatch(/"slow" did not finish: its sandbox process crashed \(SIGABRT\)/);
    // Recorded, replaced, and the next call works.
    expect(engine.runs.list({ functionName: 'slow', limit: 1 })[0]).toMatchObject({ ok: false, errorCode: 'sandbox_crashed' });
    expect(await engine.run('echo', { text: 'after' }, { caller: 'test' })).toMatchObject({ ok: true, value: { echo: 'after' } });
    expect(engine.sandboxHosts[0]!.pid).not.toBe(host!.pid);
    expect(alive(host!.pid)).toBe(false);
  });

  it('that goes over its memory cap ends the allocating run with memory_limit and is replaced before it can stay there', async () => {
    const engine = freshEngine();
    await engine.saveFunction({ spec: { name: 'array_bomb', memoryMb: 64 } as never, source: BOMBS.array });
    await engine.saveFunction({ spec: { name: 'echo' } as never, source: ECHO });
    const started = Date.now();
    const result = await engine.run('array_bomb', {}, { caller: 'test' });
    expect(result).toMatchObject({ ok: false, error: { code: 'memory_limit', details: { limit: 'memoryMb' } } });
    // Ended by the cap, not by the 15 s deadline.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await engine.run('echo', { text: 'next' }, { caller: 'test' })).toMatchObject({ ok: true });
    const host = await eventually(() => engine.sandboxHosts.find((h) => h.capBytes > 0), 'a heartbeat from the new host');
    expect(host.rssBytes).toBeLessThanOrEqual(host.capBytes);
  });

  it('survives a string that doubles to V8\'s maximum length', async () => {
    const engine = freshEngine();
    await engine.saveFunction({ spec: { name: 'string_bomb', memoryMb: 64 } as never, source: BOMBS.maxString });
    await engine.saveFunction({ spec: { name: 'echo' } as never, source: ECHO });
    const result = await engine.run('string_bomb', {}, { caller: 'test' });
    expect(!result.ok && `${result.error.code} ${result.error.message}`).toMatch(/^(memory_limit|function_error RangeError: Invalid string length)/);
    expect(await engine.run('echo', { text: 'next' }, { caller: 'test' })).toMatchObject({ ok: true });
  });

  it('that blows its memory while fetches are pending ends with memory_limit and closes those requests', async () => {
    let open = 0;
    const vendor = await vendorServer((_req, res) => {
      open++;
      res.on('close', () => open--);
      // Never answers: the requests stay pending until the run ends.
    });
    const engine = freshEngine();
    await engine.saveFunction({ spec: { name: 'fetch_bomb', memoryMb: 64, allowedHosts: [`127.0.0.1:${vendor.port}`] } as never, source: BOMBS.bombWithFetches });
    const result = await engine.run('fetch_bomb', { url: `http://127.0.0.1:${vendor.port}/` }, { caller: 'test' });
    expect(result).toMatchObject({ ok: false, error: { code: 'memory_limit' } });
    await eventually(() => open === 0 || undefined, 'the vendor requests to be closed');
  });

  it('stuck in a builtin past its deadline is killed within the deadline plus a bounded grace', async () => {
    // A high memoryMb keeps the cap out of the way: only the deadline can end this one.
    const engine = freshEngine({ sandbox: { hosts: 1, maxHostMemoryMb: 4096 } });
    await engine.saveFunction({ spec: { name: 'wedge', memoryMb: 512, timeoutMs: 1000 } as never, source: BOMBS.array });
    await engine.saveFunction({ spec: { name: 'echo' } as never, source: ECHO });
    const started = Date.now();
    const result = await engine.run('wedge', {}, { caller: 'test' });
    const took = Date.now() - started;
    expect(result).toMatchObject({ ok: false, error: { code: 'timeout', details: { limit: 'timeoutMs' } } });
    expect(took).toBeLessThan(1000 + 1500 + 2000);
    expect(await engine.run('echo', { text: 'next' }, { caller: 'test' })).toMatchObject({ ok: true });
  });

  it.skipIf(process.platform === 'win32')('that stops answering (SIGSTOP: no heartbeat) is killed and replaced; its call ends with sandbox_crashed (POSIX signals)', async () => {
    const engine = freshEngine({ sandbox: { hosts: 1, heartbeatTimeoutMs: 1000 } });
    await engine.saveFunction({ spec: { name: 'slow' } as never, source: SLOW });
    await engine.saveFunction({ spec: { name: 'echo' } as never, source: ECHO });
    expect(await engine.run('echo', { text: 'warm' }, { caller: 'test' })).toMatchObject({ ok: true });
    const pid = engine.sandboxHosts[0]!.pid;
    const call = engine.run('slow', {}, { caller: 'test' });
    await new Promise((r) => setTimeout(r, 100));
    process.kill(pid, 'SIGSTOP');
    const result = await call;
    expect(result).toMatchObject({ ok: false, error: { code: 'sandbox_crashed' } });
    expect(!result.ok && result.error.message).toMatch(/"slow" did not finish: its sandbox process stopped answering and was restarted/);
    // Ended by the missing heartbeat (1 s here), long before the run's own deadline (15 s) plus grace.
    expect(result.metrics.durationMs).toBeLessThan(10_000);
    expect(await engine.run('echo', { text: 'after' }, { caller: 'test' })).toMatchObject({ ok: true, value: { echo: 'after' } });
    await eventually(() => !alive(pid) || undefined, 'the stopped host to be gone');
  });

  it.skipIf(process.platform !== 'linux')('holds no secret, no database file and no inherited environment (reads /proc, Linux only)', async () => {
    const engine = freshEngine({ env: { ...process.env, CALLABLE_SECRETS: 'env', CALLABLE_SECRET_DEEPL: 'sk-very-secret' } });
    await engine.saveFunction({ spec: { name: 'echo' } as never, source: ECHO });
    expect(await engine.run('echo', { text: 'x' }, { caller: 'test' })).toMatchObject({ ok: true });
    const pid = engine.sandboxHosts[0]!.pid;
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
    expect(environ).not.toContain('sk-very-secret');
    expect(environ).not.toContain('CALLABLE_');
    expect(environ).not.toContain('DBUS_SESSION_BUS_ADDRESS');
    const files = readdirSync(`/proc/${pid}/fd`).map((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '';
      }
    });
    expect(files.filter((f) => f.includes(engine.dataDir) || f.endsWith('.db'))).toEqual([]);
  });
});

describe.skipIf(process.platform !== 'linux')('an idle sandbox host (reads /proc, Linux only)', () => {
  it('wakes a few times a second (its heartbeat), not every 10 ms as while guest code may allocate', async () => {
    const engine = freshEngine();
    await engine.saveFunction({ spec: { name: 'echo' } as never, source: ECHO });
    expect(await engine.run('echo', { text: 'x' }, { caller: 'test' })).toMatchObject({ ok: true });
    const pid = engine.sandboxHosts[0]!.pid;
    // The sleeps of its main thread: one per wake-up.
    const sleeps = () => Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
    const during = async (ms: number) => {
      const before = sleeps();
      await new Promise((r) => setTimeout(r, ms));
      return sleeps() - before;
    };
    // Right after a call it watches its memory closely (the spare context it prepares may run the module's top level).
    expect(await during(500)).toBeGreaterThan(20);
    await new Promise((r) => setTimeout(r, 1000));
    expect(await during(2000)).toBeLessThan(60);
  });
});

describe('a host started before the sandbox (callable mcp and callable serve start one while they load)', () => {
  async function echoJob(text: string): Promise<SandboxJob> {
    const engine = freshEngine();
    await engine.saveFunction({ spec: { name: 'echo' } as never, source: ECHO });
    return { functionName: 'echo', compiled: engine.functions.load('echo').compiled, limits: effectiveLimits({}), argsJson: JSON.stringify({ text }), runId: `early-${text}`, fetch: () => Promise.reject(new Error('no fetch here')) };
  }

  it('is the first host of the sandbox made next, and a call sent before it is ready is answered there', async () => {
    const job = await echoJob('early');
    const pid = startHostEarly();
    const sandbox = new Sandbox({ hosts: 1 });
    try {
      expect(await sandbox.run(job)).toMatchObject({ ok: true, value: { echo: 'early' } });
      expect(sandbox.hosts.map((h) => h.pid)).toEqual([pid]);
    } finally {
      sandbox.dispose();
    }
  });

  it('takes the calls of functions whose own host is still starting', async () => {
    const engine = freshEngine();
    const names = ['a', 'b', 'c', 'd'];
    for (const name of names) await engine.saveFunction({ spec: { name } as never, source: 'export default async () => { await new Promise((r) => setTimeout(r, 300)); return "done"; }' });
    const job = (name: string): SandboxJob => ({ functionName: name, compiled: engine.functions.load(name).compiled, limits: effectiveLimits({}), argsJson: '{}', runId: `spread-${name}-${Math.random()}`, fetch: () => Promise.reject(new Error('no fetch here')) });
    const pid = startHostEarly();
    const sandbox = new Sandbox({ hosts: 2 });
    try {
      // "b" belongs to the early host's slot; once it has answered, that host is up and the other is not started yet.
      expect(await sandbox.run(job('b'))).toMatchObject({ ok: true, value: 'done' });
      // "a" and "c" belong to the other slot, whose host only starts now.
      const calls = names.map((name) => sandbox.run(job(name)));
      await new Promise((r) => setTimeout(r, 100));
      expect(sandbox.hosts.find((h) => h.pid === pid)?.inflight).toBe(names.length);
      for (const outcome of await Promise.all(calls)) expect(outcome).toMatchObject({ ok: true, value: 'done' });
    } finally {
      sandbox.dispose();
    }
  });

  it('is ended, not used, by a sandbox whose hosts have another memory cap', async () => {
    const job = await echoJob('capped');
    const pid = startHostEarly();
    const sandbox = new Sandbox({ hosts: 1, maxHostMemoryMb: 1024 });
    try {
      expect(await sandbox.run(job)).toMatchObject({ ok: true, value: { echo: 'capped' } });
      expect(sandbox.hosts.map((h) => h.pid)).not.toContain(pid);
      await eventually(() => !alive(pid), 'the early host to end');
    } finally {
      sandbox.dispose();
    }
  });

  describe.skipIf(process.platform !== 'linux')('callable mcp and callable serve (read /proc, Linux only)', () => {
    const hostsPerSandbox = Math.min(4, Math.max(1, Math.floor(availableParallelism() / 2)));
    let dataDir = '';
    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'callable-early-'));
      const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
      await engine.saveFunction({ spec: { name: 'echo', inputSchema: ECHO_INPUT_SCHEMA } as never, source: ECHO_SOURCE });
      engine.close();
    });
    afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

    it('callable mcp answers a call made right after tools/list, and runs no host beyond its own', async () => {
      const server = await startStdio(productStdio(dataDir));
      try {
        expect(server.toolNames).toEqual(['echo']);
        expect(await server.call(21)).toMatchObject({ ok: true });
        // The host it started before loading the server is its first: none is left over beside them.
        expect(sandboxHostPids(server.pid()!)).toHaveLength(hostsPerSandbox);
      } finally {
        await server.close();
      }
    });

    it('callable serve answers a call made right after tools/list, and runs no host beyond its own', async () => {
      const server = await startServe(dataDir, ['--no-auth']);
      try {
        const client = await connect('2025-11-25', { transport: 'http', url: server.url });
        try {
          expect((await client.listTools()).map((t) => t.name)).toEqual(['echo']);
          const result = await client.callTool('echo', { text: 'served', n: 2 });
          expect(result.isError).toBeFalsy();
          expect(JSON.parse(result.content[0]?.text ?? '')).toEqual({ echo: 'served', n: 4 });
        } finally {
          await client.close();
        }
        expect(sandboxHostPids(server.child.pid!)).toHaveLength(hostsPerSandbox);
      } finally {
        await server.stop();
      }
    });
  });
});

describe("the guest script's V8 code cache", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  function cacheFolder(): string {
    const dir = mkdtempSync(join(tmpdir(), 'callable-codecache-'));
    dirs.push(dir);
    return join(dir, 'guest');
  }
  /** Compiles the guest script in a new isolate; true when V8 took the code cache. */
  function compiledFromCache(guest: GuestCode): boolean {
    const isolate = new ivm.Isolate({ memoryLimit: 32 });
    try {
      return (guest.compileIn(isolate) as ivm.Script & { cachedDataRejected?: boolean }).cachedDataRejected === false;
    } finally {
      isolate.dispose();
    }
  }

  it('is kept in the cache folder, and the next host reads it instead of parsing the script again', async () => {
    const folder = cacheFolder();
    const first = new GuestCode(guestSource(), folder);
    await first.prepare();
    const [file] = readdirSync(folder).filter((name) => name.endsWith('.v8cache'));
    expect(file).toBeDefined();
    expect(statSync(folder).mode & 0o077).toBe(0);
    const written = statSync(join(folder, file!));
    const next = new GuestCode(guestSource(), folder);
    await next.prepare();
    expect(next.cached).toBe(true);
    expect(compiledFromCache(next)).toBe(true);
    // Read, not made and written again.
    expect(statSync(join(folder, file!)).ino).toBe(written.ino);
  });

  it('that is damaged is never given to V8: it is made again and replaced', async () => {
    const folder = cacheFolder();
    await new GuestCode(guestSource(), folder).prepare();
    const [file] = readdirSync(folder).filter((name) => name.endsWith('.v8cache'));
    const path = join(folder, file!);
    const damaged = readFileSync(path);
    damaged.writeUInt8(damaged.readUInt8(damaged.length - 100) ^ 0xff, damaged.length - 100);
    writeFileSync(path, damaged);
    const guest = new GuestCode(guestSource(), folder);
    await guest.prepare();
    expect(compiledFromCache(guest)).toBe(true);
    expect(readFileSync(path).equals(damaged)).toBe(false);
    const after = new GuestCode(guestSource(), folder);
    await after.prepare();
    expect(compiledFromCache(after)).toBe(true);
  });
});

describe('when the engine goes away', () => {
  it('its hosts exit too, even when the engine is killed with SIGKILL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'callable-orphan-'));
    try {
      const script = join(dir, 'engine.ts');
      writeFileSync(
        script,
        `import { createEngine, MemorySecretStore } from ${JSON.stringify(join(REPO, 'src-main/engine/index.ts'))};
         const engine = createEngine({ dataDir: ${JSON.stringify(dir)}, secrets: new MemorySecretStore(), sandbox: { hosts: 2 } });
         await engine.saveFunction({ spec: { name: 'a' }, source: 'export default () => 1' });
         await engine.saveFunction({ spec: { name: 'b' }, source: 'export default () => 2' });
         await engine.run('a', {}, { caller: 'test' });
         await engine.run('b', {}, { caller: 'test' });
         process.stdout.write(JSON.stringify(engine.sandboxHosts.map((h) => h.pid)) + '\\n');
         setInterval(() => {}, 1000);`,
      );
      const child = spawn(CALLABLE_COMMAND.command, ['--no-node-snapshot', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      const pids = await new Promise<number[]>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve(JSON.parse(out) as number[]);
        });
        child.on('exit', (code) => reject(new Error(`the engine exited early (${code})`)));
      });
      expect(pids.length).toBeGreaterThan(0);
      expect(pids.every(alive)).toBe(true);
      child.kill('SIGKILL');
      await eventually(() => pids.every((pid) => !alive(pid)) || undefined, 'the hosts to exit');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the compile cache', () => {
  it.skipIf(process.platform !== 'linux')('a host and the keychain helper are told where the engine keeps it, and fill it once ready, though they may end by SIGKILL (reads /proc, Linux only)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'callable-cache-'));
    try {
      const cache = join(dir, 'cache');
      const script = join(dir, 'engine.ts');
      // The engine enables the cache but writes its own entries only when it exits: entries found
      // while it runs are the host's.
      writeFileSync(
        script,
        `import module from 'node:module';
         import { readdirSync, readFileSync } from 'node:fs';
         module.enableCompileCache(${JSON.stringify(cache)});
         const { createEngine, MemorySecretStore } = await import(${JSON.stringify(join(REPO, 'src-main/engine/index.ts'))});
         const engine = createEngine({ dataDir: ${JSON.stringify(join(dir, 'data'))}, secrets: new MemorySecretStore(), sandbox: { hosts: 1 } });
         await engine.saveFunction({ spec: { name: 'a' }, source: 'export default () => 1' });
         const result = await engine.run('a', {}, { caller: 'test' });
         const environ = readFileSync('/proc/' + engine.sandboxHosts[0].pid + '/environ', 'utf8').split('\\0').filter(Boolean);
         const cachedFiles = () => readdirSync(${JSON.stringify(cache)}, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).length;
         const cached = cachedFiles();
         // The keychain helper is given the same (and, with an empty environment to pass on, nothing else).
         const { KeychainSecretStore } = await import(${JSON.stringify(join(REPO, 'src-main/engine/index.ts'))});
         const store = new KeychainSecretStore('callable-cache-test', { env: {} });
         await store.get('nothing').catch(() => {});
         const helperCached = cachedFiles() - cached;
         const helperEnviron = readFileSync('/proc/' + store.helperPid + '/environ', 'utf8').split('\\0').filter(Boolean);
         store.dispose();
         process.stdout.write(JSON.stringify({ ok: result.ok, environ, helperEnviron, cacheDir: module.getCompileCacheDir(), cached, helperCached }));
         engine.close();`,
      );
      const child = spawnSync(CALLABLE_COMMAND.command, ['--no-node-snapshot', script], { encoding: 'utf8', timeout: 60_000 });
      expect(child.status, child.stderr).toBe(0);
      const seen = JSON.parse(child.stdout) as { ok: boolean; environ: string[]; helperEnviron: string[]; cacheDir: string; cached: number; helperCached: number };
      expect(seen.ok).toBe(true);
      // Nothing else: the user's cache folder the engine resolved (the test run's own, test/setup/userCache.ts), no secrets.
      expect(seen.environ).toEqual([`NODE_COMPILE_CACHE=${seen.cacheDir}`, `XDG_CACHE_HOME=${process.env.XDG_CACHE_HOME}`]);
      expect(seen.helperEnviron).toEqual([`NODE_COMPILE_CACHE=${seen.cacheDir}`]);
      expect(seen.cached).toBeGreaterThan(0);
      // The helper too writes what it compiled once it is ready (it may end by SIGKILL as well).
      expect(seen.helperCached).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('callable run of a memory bomb', () => {
  it('exits 1 with the error, never by a signal', () => {
    const data = mkdtempSync(join(tmpdir(), 'callable-bomb-'));
    try {
      const fn = join(data, 'bomb');
      spawnSync('mkdir', ['-p', fn]);
      writeFileSync(join(fn, 'function.json'), JSON.stringify({ name: 'bomb', description: 'grows', memoryMb: 64 }));
      writeFileSync(join(fn, 'index.js'), BOMBS.array);
      const env = { ...process.env, CALLABLE_DATA_DIR: join(data, 'store') };
      expect(spawnSync(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'import', fn], { env, encoding: 'utf8' }).status).toBe(0);
      const run = spawnSync(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'run', 'bomb'], { env, encoding: 'utf8', timeout: 30_000 });
      expect(run.signal).toBeNull();
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(/memory_limit|memory/);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });
});
