import { describe, expect, it } from 'vitest';
import { defineFunction, testEngine } from '../support/engine.ts';

const engine = testEngine();

async function runSource(name: string, source: string, spec: Record<string, unknown> = {}) {
  await defineFunction(engine, { name, ...spec }, source);
  return engine.run(name, {}, { caller: 'test' });
}

/** Host file paths or internals that must never show up inside the sandbox. */
const HOST_LEAK = /node:internal|\/src-main\/|executor\.ts|isolated-vm\.js|node_modules|at process\.|ivm\b/;

describe('attempts to reach the host', () => {
  it('constructor.constructor finds the isolate, not the host', async () => {
    const result = await runSource(
      'ctor_escape',
      `export default () => {
        const F = (() => {}).constructor.constructor;
        const g = F('return this')();
        return { process: typeof g.process, require: typeof g.require, module: typeof g.module, buffer: typeof g.Buffer, global: typeof g.global };
      }`,
    );
    expect(result).toMatchObject({ ok: true, value: { process: 'undefined', require: 'undefined', module: 'undefined', buffer: 'undefined', global: 'undefined' } });
  });

  it('has no process, require or module loader', async () => {
    const result = await runSource(
      'no_node',
      `export default async () => {
        let imported = 'no';
        try { const spec = 'node:' + 'fs'; await import(spec); imported = 'yes'; } catch (e) { imported = 'refused'; }
        let required = 'no';
        try { const name = 'f' + 's'; const fs = require(name); required = typeof fs.readFileSync; } catch (e) { required = 'refused'; }
        return { process: typeof process, imported, required, globalRequire: typeof globalThis.require };
      }`,
    );
    expect(result).toMatchObject({ ok: true, value: { process: 'undefined', imported: 'refused', required: 'refused', globalRequire: 'undefined' } });
  });

  it('refuses static imports at compile time', async () => {
    await expect(defineFunction(engine, { name: 'static_import' }, `import fs from 'node:fs'; export default () => fs.readFileSync('/etc/passwd', 'utf8');`)).rejects.toThrow(
      /imports are not available/,
    );
  });

  it('sees only the documented globals: no bridge, no References', async () => {
    const result = await runSource('globals', 'export default () => Object.getOwnPropertyNames(globalThis).filter((k) => !/^[A-Z]/.test(k) || !(k in Object.getOwnPropertyDescriptors(Object.getPrototypeOf(Function))))');
    expect(result.ok).toBe(true);
    const names = (result as { value: string[] }).value;
    for (const forbidden of ['ivm', '_ivm', 'hostSync', 'hostStart', 'settle', 'invoke', 'process', 'require', '__callable_exports']) {
      expect(names).not.toContain(forbidden);
    }
    for (const expected of ['console', 'URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder', 'atob', 'btoa', 'setTimeout', 'clearTimeout', 'crypto']) {
      expect(names).toContain(expected);
    }
  });

  it("errors from host operations carry no host stack, even through Error.prepareStackTrace", async () => {
    const result = await runSource(
      'stack_peek',
      `export default async (a, ctx) => {
        const files = [];
        Error.prepareStackTrace = (e, frames) => { for (const f of frames) files.push(String(f.getFileName())); return 'peeked'; };
        const errors = [];
        try { new URL('not a url'); } catch (e) { errors.push(String(e.stack)); }
        try { await ctx.fetch('https://nope.example.com/'); } catch (e) { errors.push(String(e.stack)); }
        try { ctx.progress('x'); } catch (e) { errors.push(String(e.stack)); }
        return { files, errors };
      }`,
    );
    expect(result.ok).toBe(true);
    const text = JSON.stringify(result);
    expect(text).not.toMatch(HOST_LEAK);
  });

  it("a function's thrown error shows only the function's own frames", async () => {
    const result = await runSource('own_stack', 'export default () => { function inner() { throw new Error("boom"); } inner(); }');
    expect(result.ok).toBe(false);
    const stack = String(result.ok ? "" : result.error.details?.stack);
    expect(stack).toContain('own_stack.js');
    expect(stack).not.toMatch(HOST_LEAK);
  });

  it('tampering with JSON, Promise and prototypes does not change what crosses the boundary', async () => {
    const result = await runSource(
      'tamper',
      `export default async (a, ctx) => {
        JSON.stringify = () => '{"ok":true,"value":"forged"}';
        JSON.parse = () => ({ forged: true });
        Object.prototype.toJSON = function () { return 'forged'; };
        Array.prototype.map = function () { return ['forged']; };
        Map.prototype.get = function () { return undefined; };
        const realThen = Promise.prototype.then;
        Promise.prototype.then = function (f, r) { return realThen.call(this, f, r); };
        console.log('still logging', 1, 2);
        return 'real';
      }`,
    );
    expect(result).toMatchObject({ ok: true });
    expect(result.logs[0]?.message).toBe('still logging 1 2');
    // toJSON on Object.prototype is honoured by the (captured) JSON.stringify: the value is the
    // function's own choice. What matters is that the forged envelope never reaches the host.
    expect((result as { value: unknown }).value).not.toBe('forged-envelope');
    expect(JSON.stringify(result)).not.toContain('"forged"}');
  });

  it('a thenable result or a getter that throws stays inside the run', async () => {
    const result = await runSource('thenable', `export default () => ({ then(resolve) { resolve({ get boom() { throw new Error('getter'); } }); } })`);
    expect(result).toMatchObject({ ok: false, error: { code: 'function_error' } });
    expect((await runSource('after_thenable', 'export default () => 1')).ok).toBe(true);
  });

  it('host callbacks reject values they did not expect instead of crashing', async () => {
    const result = await runSource(
      'bad_bridge_values',
      `export default async (a, ctx) => {
        const out = [];
        for (const bad of [undefined, null, 42, Symbol.iterator, { toString() { throw new Error('x'); } }]) {
          try { await ctx.fetch(bad, { method: { toString() { return 'GET'; } }, headers: [['a', 'b', 'c']] }); } catch (e) { out.push(e.message); }
        }
        try { ctx.progress(NaN); } catch (e) { out.push(e.message); }
        try { crypto.getRandomValues(new Uint8Array(70000)); } catch (e) { out.push(e.message); }
        return out;
      }`,
    );
    expect(result.ok).toBe(true);
    expect((result as { value: string[] }).value.length).toBe(7);
  });
});
