import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { CALLABLE_COMMAND } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { connect } from '../support/mcpClients.ts';
import { tempDir } from '../support/tmp.ts';
import { vendorServer } from '../support/vendor.ts';
import { until } from '../support/wait.ts';

// However a run ends (a limit, a guest that keeps running after its end, its sandbox host killed),
// `callable run` answers: exit 1, one line naming what ended it, and the run in `callable runs`.

/** Loops on awaited requests the engine refuses (a host not in allowedHosts), catching each refusal. */
const REFUSED_LOOP = 'export default async (a, ctx) => { for (;;) { try { await ctx.fetch("https://blocked.example.org/x") } catch {} } }';
/** The same with requests the sandbox refuses before they reach the engine (a bad redirect mode). */
const BAD_REQUEST_LOOP = 'export default async (a, ctx) => { for (;;) { try { await ctx.fetch("https://api.example.com/x", { redirect: "sideways" }) } catch {} } }';
/** Catches the deadline's termination around a host call, forever. */
const CATCHING_LOOP = 'export default async () => { await new Promise((r) => setTimeout(r, 10)); for (;;) { try { new URL("::") } catch {} } }';

async function dataWith(functions: Array<{ name: string; source: string; timeoutMs?: number; allowedHosts?: string[] }>): Promise<string> {
  const dataDir = tempDir();
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  for (const { name, source, timeoutMs, allowedHosts } of functions) {
    await engine.saveFunction({ spec: { name, allowedHosts: allowedHosts ?? ['api.example.com'], ...(timeoutMs ? { timeoutMs } : {}) }, source });
  }
  engine.close();
  return dataDir;
}

function start(args: string[]): { child: ChildProcess; exit: Promise<{ code: number | null; stderr: string }> } {
  const child = spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<{ code: number | null; stderr: string }>((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
  return { child, exit };
}

async function lastRun(dataDir: string): Promise<Record<string, unknown>> {
  const runs = await cli(['runs', '--json', '--data-dir', dataDir]);
  expect(runs.code, runs.stderr).toBe(0);
  return (JSON.parse(runs.stdout) as Array<Record<string, unknown>>)[0]!;
}

/** The sandbox host processes started by `pid` (Linux /proc). */
function hostsOf(pid: number): number[] {
  const hosts: number[] = [];
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('sandboxHost/main.ts')) hosts.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return hosts;
}

describe('how a `callable run` ends', () => {
  it('a loop of refused requests ends at fetchCount: exit 1, the limit named, the run recorded', async () => {
    const dataDir = await dataWith([{ name: 'refused_loop', source: REFUSED_LOOP }]);
    const { code, stderr } = await start(['run', 'refused_loop', '--data-dir', dataDir]).exit;
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(/refused_loop failed \(fetch_limit\): the function made more than 20 requests \(limits\.fetchCount\)/);
    expect(stderr).not.toMatch(/unsettled|unhandled/i);
    expect(await lastRun(dataDir)).toMatchObject({ functionName: 'refused_loop', caller: 'cli', ok: false, errorCode: 'fetch_limit' });
  });

  it('requests refused inside the sandbox count too, and `callable mcp` ends the same loops with the same code', async () => {
    const dataDir = await dataWith([
      { name: 'refused_loop', source: REFUSED_LOOP },
      { name: 'bad_request_loop', source: BAD_REQUEST_LOOP },
    ]);
    const { code, stderr } = await start(['run', 'bad_request_loop', '--data-dir', dataDir]).exit;
    expect(code, stderr).toBe(1);
    expect(stderr).toContain('bad_request_loop failed (fetch_limit)');

    const client = await connect('2026-07-28', { transport: 'stdio', stdioArgs: ['--data-dir', dataDir] });
    onTestFinished(() => client.close());
    for (const name of ['refused_loop', 'bad_request_loop']) {
      const result = await client.callTool(name, {});
      expect(result.isError).toBe(true);
      expect(result.content[0]?.text).toContain('the function made more than 20 requests (limits.fetchCount)');
    }
    // The server records a run just after answering it (runs close together share one commit).
    type Run = { functionName: string; caller: string; errorCode: string };
    let runs: Run[] = [];
    for (let i = 0; i < 100 && runs.length < 3; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 50));
      runs = JSON.parse((await cli(['runs', '--json', '--data-dir', dataDir])).stdout) as Run[];
    }
    expect(runs.map((r) => [r.functionName, r.caller, r.errorCode])).toEqual([
      ['bad_request_loop', 'mcp', 'fetch_limit'],
      ['refused_loop', 'mcp', 'fetch_limit'],
      ['bad_request_loop', 'cli', 'fetch_limit'],
    ]);
  });

  it('a guest that catches its deadline around a host call ends at timeoutMs, well before its host would be killed', async () => {
    const dataDir = await dataWith([{ name: 'catching_loop', source: CATCHING_LOOP, timeoutMs: 1000 }]);
    const { code, stderr } = await start(['run', 'catching_loop', '--data-dir', dataDir]).exit;
    expect(code, stderr).toBe(1);
    expect(stderr).toContain('catching_loop failed (timeout): the run exceeded its deadline of 1000 ms (timeoutMs)');
    expect(stderr).not.toContain('it was stopped');
    expect(await lastRun(dataDir)).toMatchObject({ functionName: 'catching_loop', ok: false, errorCode: 'timeout' });
  });

  it.skipIf(process.platform !== 'linux')('its sandbox host killed (SIGKILL) mid-run: exit 1, the crash named, the run recorded (reads /proc, Linux only)', async () => {
    const vendor = await vendorServer(() => {
      // Never answers: the run waits on it until its host is killed.
    });
    const dataDir = await dataWith([
      { name: 'waits', source: `export default async (a, ctx) => (await ctx.fetch("http://127.0.0.1:${vendor.port}/")).text()`, allowedHosts: [`127.0.0.1:${vendor.port}`], timeoutMs: 60_000 },
    ]);
    const { child, exit } = start(['run', 'waits', '--data-dir', dataDir]);
    await until(() => vendor.seen.length === 1, 'the vendor request');
    const hosts = hostsOf(child.pid!);
    expect(hosts.length).toBeGreaterThan(0);
    for (const pid of hosts) process.kill(pid, 'SIGKILL');
    const { code, stderr } = await exit;
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(/waits failed \(sandbox_crashed\): "waits" did not finish: its sandbox process crashed \(SIGKILL\)/);
    expect(await lastRun(dataDir)).toMatchObject({ functionName: 'waits', ok: false, errorCode: 'sandbox_crashed' });
  });
});
