import { describe, expect, it } from 'vitest';
import { defineFunction, testEngine } from '../support/engine.ts';

const engine = testEngine();

async function expectLimit(name: string, source: string, spec: Record<string, unknown>, code: string, limitName: string | RegExp) {
  await defineFunction(engine, { name, ...spec }, source);
  const result = await engine.run(name, {}, { caller: 'test' });
  expect(result.ok).toBe(false);
  if (result.ok) return;
  if (typeof limitName === 'string') {
    expect(result.error.code).toBe(code);
    expect(result.error.message).toContain(limitName);
  } else {
    expect(`${result.error.code} ${result.error.message}`).toMatch(limitName);
  }
  // The host is still up and the next call of the same function works once it behaves.
  await defineFunction(engine, { name, ...spec }, 'export default () => "fine"');
  expect(await engine.run(name, {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'fine' });
}

describe('each limit, crossed', () => {
  it('ends an infinite loop at the deadline', async () => {
    await expectLimit('spin', 'export default () => { for (;;) {} }', { timeoutMs: 300 }, 'timeout', 'timeoutMs');
  });

  it('ends a loop that starts after an await (CPU outside the first entry)', async () => {
    await expectLimit('spin_later', 'export default async () => { await new Promise((r) => setTimeout(r, 5)); for (;;) {} }', { timeoutMs: 300 }, 'timeout', 'timeoutMs');
  });

  it('ends a function put back to the version that crossed a limit as it did the first time', async () => {
    // Its sandbox host is sent that version again (it keeps only a function's latest).
    for (let i = 0; i < 2; i++) await expectLimit('spin_again', 'export default () => { for (;;) {} }', { timeoutMs: 300 }, 'timeout', 'timeoutMs');
  });

  it('ends a run that awaits forever at the deadline', async () => {
    await expectLimit('hang', 'export default () => new Promise(() => {})', { timeoutMs: 200 }, 'timeout', 'timeoutMs');
  });

  it('ends a loop that catches the deadline around a host call at timeoutMs, without restarting its sandbox host', async () => {
    await defineFunction(engine, { name: 'warm_hosts' }, 'export default () => 1');
    await engine.run('warm_hosts', {}, { caller: 'test' });
    const hosts = engine.sandboxHosts.map((h) => h.pid);
    // isolated-vm ends the loop by an exception thrown inside the host call, which the guest's catch swallows.
    await expectLimit('catches_deadline', 'export default async () => { await new Promise((r) => setTimeout(r, 5)); for (;;) { try { new URL("::") } catch {} } }', { timeoutMs: 300 }, 'timeout', 'timeoutMs');
    expect(engine.sandboxHosts.map((h) => h.pid)).toEqual(hosts);
  });

  it('ends a loop of refused requests at fetchCount, however they are refused', async () => {
    for (const [name, request] of [
      ['refused_by_policy', '"https://not-allowed.example.org/"'],
      ['refused_in_sandbox', '"https://api.example.com/", { redirect: "sideways" }'],
    ] as const) {
      await expectLimit(name, `export default async (a, ctx) => { for (;;) { try { await ctx.fetch(${request}) } catch {} } }`, { allowedHosts: ['api.example.com'] }, 'fetch_limit', 'fetchCount');
    }
  });

  it('ends a run whose timer would fire after the deadline', async () => {
    await expectLimit('sleepy', 'export default () => new Promise((r) => setTimeout(r, 60_000))', { timeoutMs: 200 }, 'timeout', 'timeoutMs');
  });

  // V8 itself refuses some allocations before the isolate's heap limit is reached (string length,
  // array buffers): those end as a RangeError from inside the function; either way the run ends
  // with an error and the host stays up.
  const memoryOrRangeError = /^memory_limit .*memoryMb|^function_error RangeError: (Invalid string length|Array buffer allocation failed)/;
  for (const [bomb, source] of [
    ['a 60M-element array', 'export default () => { const a = new Array(60_000_000).fill(1.5); return a.length; }'],
    ['a doubling string', 'export default () => { let s = "x"; for (;;) s += s; }'],
    ['a push loop', 'export default () => { const a = []; for (;;) a.push({ i: a.length, s: "x".repeat(10) }); }'],
    ['typed-array growth', 'export default () => { const keep = []; for (;;) keep.push(new Float64Array(1_000_000)); }'],
  ] as const) {
    it(`survives a memory bomb: ${bomb}`, async () => {
      await expectLimit(`bomb_${bomb.replace(/[^a-z0-9]+/gi, '_').toLowerCase()}`.slice(0, 60), source, { memoryMb: 32, timeoutMs: 20_000 }, 'memory_limit', memoryOrRangeError);
    });
  }

  it('holds what a function keeps in byte arrays to its memoryMb, within the room its young generation adds', async () => {
    // isolated-vm lets an isolate's array buffers reach memoryMb plus what V8 adds to its heap limit,
    // most of it the young generation a host gives its isolates (HOST_NODE_FLAGS): 12 MB at 4 MB
    // semi-spaces, 48 MB at 16. A function keeps 1 MiB arrays until one is refused and says how many.
    const source = 'export default () => { const keep = []; try { for (;;) keep.push(new Uint8Array(1 << 20)); } catch { return keep.length; } }';
    await defineFunction(engine, { name: 'keeps_bytes', memoryMb: 16, timeoutMs: 20_000 }, source);
    const result = await engine.run('keeps_bytes', {}, { caller: 'test' });
    expect(result).toMatchObject({ ok: true });
    const kept = result.ok ? (result.value as number) : 0;
    expect(kept).toBeGreaterThanOrEqual(8);
    expect(kept).toBeLessThanOrEqual(16 + 16);
  });

  it('ends a heap bomb with an error that names the memory limit', async () => {
    await expectLimit('heap_bomb', 'export default () => { const a = []; for (;;) a.push([a.length, {}]); }', { memoryMb: 16, timeoutMs: 20_000 }, 'memory_limit', 'memoryMb');
  });

  it('refuses a result over the result size limit', async () => {
    await expectLimit('huge_result', 'export default () => "x".repeat(20_000)', { limits: { resultBytes: 10_000 } }, 'result_too_large', 'resultBytes');
  });

  it('survives a huge output with the default limits', async () => {
    await expectLimit('huge_default', 'export default () => "x".repeat(30 * 1024 * 1024)', { memoryMb: 256 }, 'result_too_large', 'resultBytes');
  });

  it('ends a run that logs more than its log volume', async () => {
    await expectLimit('chatty', 'export default () => { for (;;) console.log("spam ".repeat(100)); }', { limits: { logBytes: 4096 } }, 'log_limit', 'logBytes');
  });

  it('ends a run that makes more fetches than allowed', async () => {
    await expectLimit(
      'fetchy',
      'export default async (a, ctx) => { for (let i = 0; i < 10; i++) { try { await ctx.fetch("https://api.example.com/" + i); } catch {} } return "done"; }',
      { limits: { fetchCount: 2 }, allowedHosts: ['api.invalid'] },
      'fetch_limit',
      'fetchCount',
    );
  });

  it('refuses a limit above its hard maximum when the function is saved', async () => {
    await expect(defineFunction(engine, { name: 'greedy', timeoutMs: 3_600_000 }, 'export default () => 1')).rejects.toThrow(/timeoutMs may be at most 300000/);
    await expect(defineFunction(engine, { name: 'greedy', memoryMb: 4096 }, 'export default () => 1')).rejects.toThrow(/memoryMb may be at most 512/);
  });

  it('cancels a run when asked', async () => {
    await defineFunction(engine, { name: 'slow' }, 'export default () => new Promise((r) => setTimeout(r, 10_000))');
    const controller = new AbortController();
    const pending = engine.run('slow', {}, { caller: 'test', signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    expect(await pending).toMatchObject({ ok: false, error: { code: 'cancelled' } });
  });
});
