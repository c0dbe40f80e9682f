import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../src-main/engine/index.ts';
import { defineFunction } from '../support/engine.ts';
import { connect, type Era, type TestClient } from '../support/mcpClients.ts';
import { freePort, processAlive, processGone, startDeployServe, type DeployServe } from './support.ts';

/**
 * `callable deploy --serve` on the real npm workerd, which has no CPU limit: a function that keeps
 * the CPU busy is held to its own deadline, not the longest deployed one, and the calls caught in
 * the same process get a clear error and work again right after. A result larger than what an RPC
 * message carries is the local result_too_large.
 */
let dataDir: string;
let served: DeployServe;
const clients: TestClient[] = [];
const textOf = (result: { content: Array<{ text?: string }> }): string => result.content.map((c) => c.text ?? '').join('');

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'callable-deploy-supervisor-'));
  const engine = createEngine({ dataDir });
  try {
    await defineFunction(engine, { name: 'spin', description: 'Keeps the CPU busy', timeoutMs: 1000 }, 'export default () => { for (;;) {} }');
    await defineFunction(engine, { name: 'quick', description: 'Answers at once' }, "export default () => 'quick'");
    // Its deadline is the longest deployed: the spinning call must not be held to it.
    await defineFunction(engine, { name: 'patient', description: 'May take two minutes', timeoutMs: 120_000 }, "export default () => 'patient'");
    await defineFunction(
      engine,
      { name: 'huge', description: 'Returns 40 MiB', limits: { resultBytes: 16 * 1024 * 1024 }, inputSchema: { type: 'object', properties: {} } },
      "export default () => 'x'.repeat(40 * 1024 * 1024)",
    );
    await defineFunction(
      engine,
      { name: 'huge_unsized', description: 'Returns 40 MiB past the isolate\'s own sizing', limits: { resultBytes: 16 * 1024 * 1024 }, inputSchema: { type: 'object', properties: {} } },
      "export default () => { TextEncoder.prototype.encode = () => new Uint8Array(0); return 'x'.repeat(40 * 1024 * 1024); }",
    );
  } finally {
    engine.close();
  }
  served = await startDeployServe(dataDir, ['--port', String(await freePort())]);
}, 60_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await served?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function client(era: Era): Promise<TestClient> {
  const c = await connect(era, { transport: 'http', url: served.url, token: served.token });
  clients.push(c);
  return c;
}

const RESTARTED = 'quick did not finish because its sandbox process stopped: workerd was restarted because a call to spin kept the CPU busy past its deadline; call again';

describe.each(['2026-07-28', '2025-11-25'] as Era[])('a function that keeps the CPU busy, with a %s client', (era) => {
  it('ends at its own deadline; calls made meanwhile are answered or told workerd restarted, and work right after', async () => {
    const c = await client(era);
    expect(textOf(await c.callTool('quick', {}))).toBe('quick');
    const started = Date.now();
    const spinning = c.callTool('spin', {});
    await new Promise((r) => setTimeout(r, 300));
    const meanwhile = await Promise.all([c.callTool('quick', {}), c.callTool('patient', {})]);
    const spun = await spinning;
    const took = Date.now() - started;
    expect(spun.isError).toBe(true);
    expect(textOf(spun)).toBe('spin stopped at a sandbox limit (timeout): the run exceeded its deadline of 1000 ms (timeoutMs); make it faster or raise timeoutMs');
    // Its deadline, a second's grace and a health check: far from patient's two minutes.
    expect(took).toBeLessThan(6000);
    expect([RESTARTED, 'quick']).toContain(textOf(meanwhile[0]!));
    expect([RESTARTED.replace('quick did', 'patient did'), 'patient']).toContain(textOf(meanwhile[1]!));
    expect(textOf(await c.callTool('quick', {}))).toBe('quick');
    expect(served.stderr()).toMatch(/callable deploy: spin kept workerd busy past its deadline \(1000 ms\): restarting workerd/);
    expect(served.stderr()).toMatch(/callable deploy: workerd restarted \(pid \d+\)/);
  }, 30_000);
});

describe('a spinning call its client cancelled', () => {
  it('is still held to its deadline: workerd is replaced for it, not for the next call', async () => {
    const c = await client('2026-07-28');
    const cancel = new AbortController();
    const spinning = c.callTool('spin', {}, { signal: cancel.signal });
    await new Promise((r) => setTimeout(r, 300));
    cancel.abort(new Error('the user gave up'));
    await expect(spinning).rejects.toThrow();
    const restarts = served.stderr().match(/callable deploy: spin kept workerd busy/g)?.length ?? 0;
    // Made while the cancelled spin still holds workerd: answered only once workerd is replaced.
    expect(textOf(await c.callTool('quick', {}))).toBe(RESTARTED);
    expect(served.stderr().match(/callable deploy: spin kept workerd busy/g)?.length).toBe(restarts + 1);
    expect(textOf(await c.callTool('quick', {}))).toBe('quick');
  }, 30_000);
});

describe('a result larger than an RPC message carries (32 MiB)', () => {
  it('is result_too_large naming the limit, as locally', async () => {
    const c = await client('2026-07-28');
    const result = await c.callTool('huge', {});
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      `huge stopped at a sandbox limit (result_too_large): the result is ${40 * 1024 * 1024 + 2} bytes, over the result size limit of ${16 * 1024 * 1024} bytes (limits.resultBytes); return less or raise the limit`,
    );
    expect(textOf(await c.callTool('quick', {}))).toBe('quick');
  }, 30_000);

  it('is result_too_large naming the RPC limit when the function gets past the isolate\'s sizing', async () => {
    const result = await (await client('2025-11-25')).callTool('huge_unsized', {});
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(
      /^huge_unsized stopped at a sandbox limit \(result_too_large\): the result is 419430\d\d bytes, over the most one workerd RPC message carries \(33554432 bytes\); return less$/,
    );
  }, 30_000);
});

describe('stopping --serve while a function spins', () => {
  it('stops workerd with it: a workerd held by the spin never gets to its SIGTERM handler, so it is killed', async () => {
    const c = await client('2026-07-28');
    const pid = Number([...served.stderr().matchAll(/workerd (?:restarted )?\(pid (\d+)\)/g)].at(-1)![1]);
    expect(processAlive(pid)).toBe(true);
    const spinning = c.callTool('spin', {}).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));
    expect(await served.stop()).toBe(143);
    expect(await processGone(pid)).toBe(true);
    await spinning;
  }, 30_000);
});
