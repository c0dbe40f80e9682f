// A sandbox host gives a function no more isolates than isolated-vm has threads for, a few calls in
// each; calls beyond those seats wait for one. What a user sees: every call completes, each in a
// fresh context, and a call never waits behind calls that wait for it (ctx.elicit answered by
// calling the same function).
import { describe, expect, it } from 'vitest';
import type { ElicitAnswer } from '../../src-main/engine/index.ts';
import { defineFunction, testEngine } from '../support/engine.ts';

const engine = testEngine({ sandbox: { hosts: 1 } });
/** More calls at once than any host has seats for one function (at most 4 isolates of 4 calls). */
const CALLS = 24;

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
