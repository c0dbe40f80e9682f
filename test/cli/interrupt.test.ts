import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { CALLABLE_COMMAND, startServe } from '../support/callable.ts';
import { connect } from '../support/mcpClients.ts';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { vendorServer } from '../support/vendor.ts';
import { until } from '../support/wait.ts';

/** A vendor that never answers; counts the requests whose connection was closed by the caller. */
async function silentVendor() {
  let closed = 0;
  const vendor = await vendorServer((_req, res) => res.on('close', () => closed++));
  return { ...vendor, closed: () => closed };
}

/** A data folder with `hang`, a function that waits on the silent vendor. */
async function dataWithHang(port: number): Promise<string> {
  const data = tempDir();
  const fns = tempDir();
  mkdirSync(join(fns, 'hang'));
  writeFileSync(join(fns, 'hang/function.json'), JSON.stringify({ name: 'hang', description: 'waits on a vendor', allowedHosts: [`127.0.0.1:${port}`], timeoutMs: 60_000 }));
  writeFileSync(join(fns, 'hang/index.js'), `export default async (a, ctx) => (await ctx.fetch('http://127.0.0.1:${port}/slow')).text();`);
  expect((await cli(['import', fns, '--data-dir', data])).code).toBe(0);
  return data;
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

function spawnCallable(args: string[]): { child: ChildProcess; stderr: () => string; stdout: () => string } {
  const child = spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: process.env });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return { child, stdout: () => out, stderr: () => err };
}

describe('stopping callable with a run in flight', () => {
  it('Ctrl-C during `callable run` closes the vendor request, records the run as interrupted and exits 130 within a second', async () => {
    const vendor = await silentVendor();
    const data = await dataWithHang(vendor.port);
    const { child, stderr } = spawnCallable(['run', 'hang', '--data-dir', data]);
    await until(() => vendor.seen.length === 1, 'the vendor request');
    const exit = exited(child);
    const signalled = performance.now();
    child.kill('SIGINT');
    expect(await exit, stderr()).toEqual({ code: 130, signal: null });
    expect(performance.now() - signalled).toBeLessThan(1000);
    await until(() => vendor.closed() === 1, 'the vendor request to close', 2000);
    expect(stderr()).toContain('interrupted (SIGINT)');

    const runs = await cli(['runs', '--json', '--data-dir', data]);
    expect(JSON.parse(runs.stdout)).toMatchObject([{ functionName: 'hang', caller: 'cli', ok: false, errorCode: 'interrupted' }]);
    expect((await cli(['runs', '--data-dir', data])).stdout).toMatch(/hang {2}failed: interrupted/);
  });

  it('SIGTERM to `callable mcp` with a call in flight records it as interrupted and exits 143 within a second', async () => {
    const vendor = await silentVendor();
    const data = await dataWithHang(vendor.port);
    const { child, stdout, stderr } = spawnCallable(['mcp', '--data-dir', data]);
    const send = (message: object): void => void child.stdin!.write(`${JSON.stringify(message)}\n`);
    send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'sigterm-test', version: '1.0' } } });
    await until(() => stdout().includes('"id":1'), `the initialize answer (stderr: ${stderr()})`);
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'hang', arguments: {} } });
    await until(() => vendor.seen.length === 1, 'the vendor request');
    const exit = exited(child);
    const signalled = performance.now();
    child.kill('SIGTERM');
    expect(await exit, stderr()).toEqual({ code: 143, signal: null });
    expect(performance.now() - signalled).toBeLessThan(1000);
    await until(() => vendor.closed() === 1, 'the vendor request to close', 2000);

    const runs = await cli(['runs', '--json', '--data-dir', data]);
    expect(JSON.parse(runs.stdout)).toMatchObject([{ functionName: 'hang', caller: 'mcp', clientName: 'sigterm-test', transport: 'stdio', ok: false, errorCode: 'interrupted' }]);
  });

  it('SIGTERM to `callable mcp` right after a burst of calls keeps every run, those still waiting for their group commit too', async () => {
    const data = tempDir();
    const fns = tempDir();
    mkdirSync(join(fns, 'echo'));
    writeFileSync(join(fns, 'echo/function.json'), JSON.stringify({ name: 'echo', description: 'echoes' }));
    writeFileSync(join(fns, 'echo/index.js'), 'export default (a) => a;');
    expect((await cli(['import', fns, '--data-dir', data])).code).toBe(0);
    const { child, stdout, stderr } = spawnCallable(['mcp', '--data-dir', data]);
    const send = (message: object): void => void child.stdin!.write(`${JSON.stringify(message)}\n`);
    send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'burst-test', version: '1.0' } } });
    await until(() => stdout().includes('"id":1'), `the initialize answer (stderr: ${stderr()})`);
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const CALLS = 12;
    for (let i = 0; i < CALLS; i++) send({ jsonrpc: '2.0', id: 100 + i, method: 'tools/call', params: { name: 'echo', arguments: { i } } });
    await until(() => stdout().includes(`"id":${100 + CALLS - 1}`), `the last answer (stderr: ${stderr()})`);
    const exit = exited(child);
    child.kill('SIGTERM');
    expect(await exit, stderr()).toEqual({ code: 143, signal: null });

    const runs = JSON.parse((await cli(['runs', '--json', '--data-dir', data])).stdout) as Array<{ functionName: string; ok: boolean; args: { i: number } }>;
    expect(runs.map((r) => r.args.i).sort((a, b) => a - b)).toEqual(Array.from({ length: CALLS }, (_, i) => i));
    expect(runs.every((r) => r.functionName === 'echo' && r.ok)).toBe(true);
  });

  it('Ctrl-C to `callable serve` with an HTTP call in flight records it as interrupted and exits 130', async () => {
    const vendor = await silentVendor();
    const data = await dataWithHang(vendor.port);
    const serve = await startServe(data, ['--no-auth']);
    const client = await connect('2026-07-28', { transport: 'http', url: serve.url });
    const call = client.callTool('hang', {}).catch((error: unknown) => error);
    await until(() => vendor.seen.length === 1, 'the vendor request');
    const exit = exited(serve.child);
    const signalled = performance.now();
    serve.child.kill('SIGINT');
    expect(await exit, serve.stderr()).toEqual({ code: 130, signal: null });
    expect(performance.now() - signalled).toBeLessThan(1000);
    await call;
    await client.close().catch(() => {});
    await until(() => vendor.closed() === 1, 'the vendor request to close', 2000);
    const runs = await cli(['runs', '--json', '--data-dir', data]);
    expect(JSON.parse(runs.stdout)).toMatchObject([{ functionName: 'hang', caller: 'mcp', transport: 'http', ok: false, errorCode: 'interrupted' }]);
  });

  it('`callable serve` exits 130 on SIGINT and 143 on SIGTERM', async () => {
    for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
      const data = tempDir();
      const { child, stderr } = spawnCallable(['serve', '--port', '0', '--no-auth', '--data-dir', data]);
      await until(() => stderr().includes('MCP on http://'), 'serve to listen');
      const exit = exited(child);
      child.kill(signal);
      expect(await exit, stderr()).toEqual({ code, signal: null });
    }
  });

  it('a run that is not interrupted still exits 0 (the signal handlers do not hold the process)', () => {
    const data = tempDir();
    const result = spawnSync(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'list', '--data-dir', data], { encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
  });
});
