import { describe, expect, it } from 'vitest';
import { defineFunction, testEngine } from '../support/engine.ts';

const engine = testEngine();

describe('running a function in the sandbox', () => {
  it('returns the handler result as JSON, with logs', async () => {
    await defineFunction(
      engine,
      { name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' }, n: { type: 'number' } }, required: ['text'] } },
      `export default async function (args: { text: string; n?: number }, ctx) {
        console.log('hello', { a: 1 });
        ctx.log.warn('careful');
        return { echo: args.text, n: (args.n ?? 1) * 2 };
      }`,
    );
    const result = await engine.run('echo', { text: 'hi', n: 21 }, { caller: 'test' });
    expect(result).toMatchObject({ ok: true, value: { echo: 'hi', n: 42 } });
    expect(result.logs.map((l) => [l.level, l.message])).toEqual([
      ['info', 'hello {"a":1}'],
      ['warn', 'careful'],
    ]);
  });

  it('refuses arguments that do not match the inputSchema before entering the sandbox', async () => {
    const result = await engine.run('echo', { n: 'x' }, { caller: 'test' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe('bad_input');
    expect(result.error.message).toContain('args.text is required');
    expect(result.error.message).toContain('args.n must be number');
  });

  it('reports a thrown error with its message and the function keeps working', async () => {
    await defineFunction(engine, { name: 'thrower' }, `export default () => { throw new RangeError('no good: ' + 42); }`);
    const result = await engine.run('thrower', {}, { caller: 'test' });
    expect(result).toMatchObject({ ok: false, error: { code: 'function_error', message: 'RangeError: no good: 42' } });
    expect((await engine.run('echo', { text: 'again' }, { caller: 'test' })).ok).toBe(true);
  });

  it('provides the web built-ins', async () => {
    await defineFunction(
      engine,
      { name: 'builtins' },
      `export default async () => {
        const u = new URL('/v2/translate?x=1', 'https://api.example.com');
        u.searchParams.append('q', 'a b&c');
        const bytes = new TextEncoder().encode('héllo ✓');
        const back = new TextDecoder().decode(bytes);
        const rand = crypto.getRandomValues(new Uint8Array(8));
        const waited = await new Promise((r) => setTimeout(() => r('late'), 5));
        let cleared = 'not fired';
        const t = setTimeout(() => { cleared = 'fired'; }, 1);
        clearTimeout(t);
        await new Promise((r) => setTimeout(r, 10));
        return {
          href: u.href, host: u.host, q: u.searchParams.get('q'),
          bytes: bytes.length, back,
          b64: btoa('hello'), unb64: atob('aGVsbG8='),
          uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID()),
          randLen: rand.length, waited, cleared,
          params: new URLSearchParams({ a: '1', b: 'x y' }).toString(),
          headers: new Headers({ 'X-A': '1' }).get('x-a'),
        };
      }`,
    );
    const result = await engine.run('builtins', {}, { caller: 'test' });
    expect(result).toMatchObject({
      ok: true,
      value: {
        href: 'https://api.example.com/v2/translate?x=1&q=a+b%26c',
        host: 'api.example.com',
        q: 'a b&c',
        bytes: 10,
        back: 'héllo ✓',
        b64: 'aGVsbG8=',
        unb64: 'hello',
        uuid: true,
        randLen: 8,
        waited: 'late',
        cleared: 'not fired',
        params: 'a=1&b=x+y',
        headers: '1',
      },
    });
  });

  it('starts every call in a fresh context: nothing survives between calls', async () => {
    await defineFunction(
      engine,
      { name: 'counter' },
      `let n = 0; export default () => { globalThis.seen = (globalThis.seen ?? 0) + 1; n++; Array.prototype.polluted = true; return { n, seen: globalThis.seen }; }`,
    );
    // Enough calls to use contexts prepared ahead of time too.
    for (let i = 0; i < 4; i++) {
      expect(await engine.run('counter', {}, { caller: 'test' })).toMatchObject({ ok: true, value: { n: 1, seen: 1 } });
      await new Promise((r) => setTimeout(r, 10));
    }
  });

  it('behaves the same whether the module is evaluated at call time or ahead of it', async () => {
    await defineFunction(engine, { name: 'top_level' }, `console.log('module loaded'); const id = crypto.randomUUID(); export default () => id.length;`);
    for (let i = 0; i < 4; i++) {
      const result = await engine.run('top_level', {}, { caller: 'test' });
      expect(result).toMatchObject({ ok: true, value: 36 });
      expect(result.logs.map((l) => l.message)).toEqual(['module loaded']);
      await new Promise((r) => setTimeout(r, 10));
    }
    await defineFunction(engine, { name: 'top_level_timer' }, `let fired = false; setTimeout(() => { fired = true; }, 1); export default async () => { await new Promise((r) => setTimeout(r, 20)); return fired; };`);
    for (let i = 0; i < 4; i++) {
      expect(await engine.run('top_level_timer', {}, { caller: 'test' })).toMatchObject({ ok: true, value: true });
      await new Promise((r) => setTimeout(r, 10));
    }
  });

  it('readies a listed function before its first call, and each call still starts from a fresh context', async () => {
    await defineFunction(engine, { name: 'listed' }, `console.log('module loaded'); const loadedAt = Date.now(); let n = 0; export default () => { n++; globalThis.seen = (globalThis.seen ?? 0) + 1; return { loadedAt, n, seen: globalThis.seen }; }`);
    // What a server does when a client lists its tools.
    engine.prewarm(['listed']);
    await new Promise((r) => setTimeout(r, 1000));
    const calledAt = Date.now();
    const first = await engine.run('listed', {}, { caller: 'test' });
    expect(first).toMatchObject({ ok: true, value: { n: 1, seen: 1 } });
    // Its module was evaluated ahead, in the context the call then used; its log still belongs to the call.
    expect(first.ok && (first.value as { loadedAt: number }).loadedAt).toBeLessThan(calledAt);
    expect(first.logs.map((l) => l.message)).toEqual(['module loaded']);
    for (let i = 0; i < 3; i++) {
      const next = await engine.run('listed', {}, { caller: 'test' });
      expect(next).toMatchObject({ ok: true, value: { n: 1, seen: 1 } });
      expect(next.logs.map((l) => l.message)).toEqual(['module loaded']);
      await new Promise((r) => setTimeout(r, 10));
    }
  });

  it('gives the call after a timed-out run a fresh context, not the one the timed-out run left', async () => {
    await defineFunction(engine, { name: 'spinner', timeoutMs: 300, inputSchema: { type: 'object', properties: { spin: { type: 'boolean' } } } }, `let calls = 0; export default ({ spin }) => { calls++; globalThis.left = 'by call ' + calls; while (spin) {} return { calls, left: globalThis.left }; }`);
    engine.prewarm(['spinner']);
    await new Promise((r) => setTimeout(r, 300));
    for (let i = 0; i < 3; i++) {
      expect(await engine.run('spinner', { spin: true }, { caller: 'test' })).toMatchObject({ ok: false, error: { code: 'timeout' } });
      expect(await engine.run('spinner', { spin: false }, { caller: 'test' })).toMatchObject({ ok: true, value: { calls: 1, left: 'by call 1' } });
    }
  });

  it('runs the newly saved version even when a context was prepared for the old one', async () => {
    await defineFunction(engine, { name: 'versioned' }, 'export default () => "v1"');
    for (let i = 0; i < 3; i++) await engine.run('versioned', {}, { caller: 'test' });
    await new Promise((r) => setTimeout(r, 20));
    await defineFunction(engine, { name: 'versioned' }, 'export default () => "v2"');
    expect(await engine.run('versioned', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'v2' });
  });

  it('returns MCP content for images', async () => {
    await defineFunction(engine, { name: 'pixel' }, `export default (args, ctx) => ctx.content.image(new Uint8Array([137, 80, 78, 71]), 'image/png')`);
    const result = await engine.run('pixel', {}, { caller: 'test' });
    expect(result).toMatchObject({ ok: true, content: [{ type: 'image', data: 'iVBORw==', mimeType: 'image/png' }] });
  });
});
