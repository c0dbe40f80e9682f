// A sandbox host gives a function no more isolates than isolated-vm has threads for, a few calls in
// each; calls beyond those seats wait for one. What a user sees: no more of a function's calls run
// at once than those seats (README: "at most as many isolates as isolated-vm has threads (one more
// than the machine's cores, four at most), each running up to 4 of its calls at once"), every call
// completes, each in a fresh context, and a call never waits behind calls that wait for it
// (ctx.elicit answered by calling the same function).
//
// How many isolates hold those seats is not seen from outside: a call's globals are its own
// context's, and nothing a function can reach is shared by an isolate's contexts. Only the product,
// isolates × 4, is: the test below reads it from when each call's code ran.
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import type { ElicitAnswer } from '../../src-main/engine/index.ts';
import { defineFunction, testEngine } from '../support/engine.ts';

const engine = testEngine({ sandbox: { hosts: 1 } });
/** More calls at once than any host has seats for one function (at most 4 isolates of 4 calls). */
const CALLS = 24;
/** The seats of one function in one host, as the README gives them. */
const SEATS = Math.min(4, availableParallelism() + 1) * 4;

/** A call that holds its seat until the moment `until` (ms since the epoch), then says when it ran. */
const SPAN_SOURCE = 'export default async ({ until }) => { const start = Date.now(); await new Promise((r) => setTimeout(r, Math.max(0, until - start))); return [start, Date.now()]; }';

/** The most intervals [start, end) that hold one instant. */
function mostAtOnce(spans: Array<[number, number]>): number {
  // At one instant an end comes before a start: a call seated as another left did not run beside it.
  const events = spans.flatMap(([start, end]) => [[start, 1], [end, -1]] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, step] of events) most = Math.max(most, (now += step));
  return most;
}

describe('calls beyond the seats of a function', () => {
  it('wait for a seat and complete, each in a fresh context', async () => {
    await defineFunction(
      engine,
      { name: 'slow_count', language: 'js', timeoutMs: 20_000 },
      'export default async () => { globalThis.n = (globalThis.n ?? 0) + 1; await new Promise((r) => setTimeout(r, 150)); return globalThis.n; }',
    );
    const results = await Promise.all(Array.from({ length: CALLS }, () => engine.run('slow_count', {}, { caller: 'test' })));
    expect(results.map((r) => r.ok && r.value)).toEqual(Array.from({ length: CALLS }, () => 1));
    expect(engine.runs.list({ functionName: 'slow_count', limit: 100 })).toHaveLength(CALLS);
  });

  it('run no more at once than the host has seats for the function, and as many as that; another function’s calls have their own', async () => {
    // Each call says when its code started and ended, by the isolate's clock (the host's), holding
    // its seat until a moment the test names (a timer inside the isolate is not a wait for the
    // engine): every call seated before that moment is still running at it, however late it started.
    const spanning = { language: 'js', timeoutMs: 30_000, inputSchema: { type: 'object', properties: { until: { type: 'number' } }, required: ['until'] } } as const;
    await defineFunction(engine, { name: 'seated_span', ...spanning }, SPAN_SOURCE);
    await defineFunction(engine, { name: 'seated_span_too', ...spanning }, SPAN_SOURCE);
    const spansOf = (results: Awaited<ReturnType<typeof engine.run>>[]): Array<[number, number]> =>
      results.map((r) => (r.ok ? (r.value as [number, number]) : expect.unreachable(r.error.message)));

    let until = Date.now() + 5_000;
    const one = await Promise.all(Array.from({ length: CALLS }, () => engine.run('seated_span', { until }, { caller: 'test' })));
    expect(CALLS, 'more calls than seats').toBeGreaterThan(SEATS);
    // All were sent at once: without the cap every one would be running at that moment; with it, the
    // first SEATS are, and the rest take the places they leave.
    expect(mostAtOnce(spansOf(one))).toBe(SEATS);

    // The seats are the function's: a second function's calls run beside them, in seats of their own
    // (so what the spans show above is the cap, not how many calls the host can run at all).
    until = Date.now() + 5_000;
    const both = await Promise.all(
      Array.from({ length: 2 * SEATS }, (_, i) => engine.run(i % 2 === 0 ? 'seated_span' : 'seated_span_too', { until }, { caller: 'test' })),
    );
    expect(mostAtOnce(spansOf(both))).toBe(2 * SEATS);
  });

  it('are not kept waiting by calls that wait on ctx.elicit for them', async () => {
    await defineFunction(
      engine,
      { name: 'ask_then_echo', language: 'js', timeoutMs: 20_000, inputSchema: { type: 'object', properties: { ask: { type: 'boolean' } } } },
      `export default async ({ ask }, ctx) => ask ? (await ctx.elicit('Go on?', { type: 'object', properties: { go: { type: 'boolean' } } })).action : 'answered'`,
    );
    // Every asking call is answered only once a call of the same function, made after all of them
    // have asked, has completed: each one waits for that call.
    let asked = 0;
    let release!: (value: Promise<unknown>) => void;
    const last = new Promise<unknown>((resolve) => (release = resolve));
    const elicit = async (): Promise<ElicitAnswer> => {
      if (++asked === CALLS) release(engine.run('ask_then_echo', { ask: false }, { caller: 'test' }));
      await last;
      return { action: 'decline' };
    };
    const results = await Promise.all(Array.from({ length: CALLS }, () => engine.run('ask_then_echo', { ask: true }, { caller: 'test', elicit })));
    expect(results.map((r) => (r.ok ? r.value : r.error.code))).toEqual(Array.from({ length: CALLS }, () => 'decline'));
    expect(await last).toMatchObject({ ok: true, value: 'answered' });
  });
});
