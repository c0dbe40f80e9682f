import { deflateRawSync, deflateSync, gunzipSync, gzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { RunResult } from '../../src-main/engine/index.ts';
import { defineFunction, testEngine } from '../support/engine.ts';

// The web platform inside the sandbox (WinterTC Minimum Common API): DOMException, events and
// abort, structuredClone, performance, navigator, reportError, setInterval, and WHATWG streams with
// the encoding and compression transforms, each run in a real sandbox through the engine.
const engine = testEngine();

/** Saves `source` as function `name` and runs it with `args`. */
async function run(name: string, source: string, args: Record<string, unknown> = {}, spec: Record<string, unknown> = {}): Promise<RunResult> {
  await defineFunction(engine, { name, ...spec }, source);
  return engine.run(name, args, { caller: 'test' });
}

/** Runs `body` (the statements of an async handler `(args, ctx)`) and returns its value; fails the test on a failed run. */
async function value(name: string, body: string, args: Record<string, unknown> = {}, spec: Record<string, unknown> = {}): Promise<any> {
  const result = await run(name, `export default async (args, ctx) => { ${body} }`, args, spec);
  expect(result.ok, JSON.stringify(result)).toBe(true);
  return (result as { value: unknown }).value;
}

const CLASSES = [
  'DOMException', 'Event', 'CustomEvent', 'EventTarget', 'AbortController', 'AbortSignal', 'Performance',
  'ReadableStream', 'ReadableStreamDefaultReader', 'ReadableStreamBYOBReader', 'ReadableStreamBYOBRequest', 'ReadableByteStreamController',
  'ReadableStreamDefaultController', 'WritableStream', 'WritableStreamDefaultWriter', 'WritableStreamDefaultController',
  'TransformStream', 'TransformStreamDefaultController', 'ByteLengthQueuingStrategy', 'CountQueuingStrategy',
  'TextEncoderStream', 'TextDecoderStream', 'CompressionStream', 'DecompressionStream',
];
const FUNCTIONS = ['structuredClone', 'reportError', 'setInterval', 'clearInterval', 'queueMicrotask'];

describe('the globals', () => {
  it('exist in a fresh context with the right typeof, non-enumerable and replaceable, and navigator names the runtime', async () => {
    const got = await value(
      'globals',
      `const names = ${JSON.stringify([...CLASSES, ...FUNCTIONS, 'performance', 'navigator'])};
       const types = Object.fromEntries(names.map((n) => [n, typeof globalThis[n]]));
       const enumerable = names.filter((n) => Object.keys(globalThis).includes(n));
       const misnamed = names.filter((n) => /^[A-Z]/.test(n) && globalThis[n].name !== n);
       const tags = [new AbortController(), new DOMException(), new Event('x'), performance, navigator, new TextDecoderStream()].map((o) => Object.prototype.toString.call(o));
       globalThis.ReadableStream = 1;
       return { types, enumerable, misnamed, tags, replaced: ReadableStream, ua: navigator.userAgent, protoOk: performance instanceof EventTarget && performance instanceof Performance };`,
    );
    expect(got.types).toEqual(Object.fromEntries([...CLASSES.map((n) => [n, 'function']), ...FUNCTIONS.map((n) => [n, 'function']), ['performance', 'object'], ['navigator', 'object']]));
    expect(got.enumerable).toEqual([]);
    expect(got.misnamed).toEqual([]);
    expect(got.tags).toEqual(['[object AbortController]', '[object DOMException]', '[object Event]', '[object Performance]', '[object Navigator]', '[object TextDecoderStream]']);
    expect(got.replaced).toBe(1);
    expect(got.ua).toBe('Callable-Studio');
    expect(got.protoOk).toBe(true);
  });

  it('DOMException has WebIDL names, messages, legacy codes and a stack', async () => {
    const got = await value(
      'dom_exception',
      `const e = new DOMException('gone', 'AbortError');
       const plain = new DOMException();
       return { e: [e.name, e.message, e.code, e instanceof Error, e instanceof DOMException, typeof e.stack, Object.keys(e), String(e)],
                plain: [plain.name, plain.message, plain.code], unknown: new DOMException('x', 'Nope').code,
                constants: [DOMException.ABORT_ERR, DOMException.TIMEOUT_ERR, DOMException.DATA_CLONE_ERR, e.INVALID_STATE_ERR],
                own: Object.getOwnPropertyNames(e).filter((n) => n !== 'stack') };`,
    );
    expect(got.e).toEqual(['AbortError', 'gone', 20, true, true, 'string', [], 'AbortError: gone']);
    expect(got.plain).toEqual(['Error', '', 0]);
    expect(got.unknown).toBe(0);
    expect(got.constants).toEqual([20, 23, 25, 11]);
    expect(got.own).toEqual([]);
  });
});

describe('events and abort', () => {
  it('calls listeners in order (capture first at the target), once, handleEvent objects, and removes by signal or removeEventListener', async () => {
    const got = await value(
      'listeners',
      `const t = new EventTarget(); const seen = [];
       const removed = () => seen.push('removed');
       t.addEventListener('ping', (e) => seen.push('a:' + e.eventPhase + ':' + (e.currentTarget === t)));
       t.addEventListener('ping', { handleEvent(e) { seen.push('object:' + (this.handleEvent !== undefined)); } });
       t.addEventListener('ping', () => seen.push('once'), { once: true });
       t.addEventListener('ping', () => seen.push('capture'), true);
       t.addEventListener('ping', removed);
       t.addEventListener('ping', removed);
       const c = new AbortController();
       t.addEventListener('ping', () => seen.push('signalled'), { signal: c.signal });
       t.dispatchEvent(new Event('ping'));
       seen.push('|');
       c.abort();
       t.removeEventListener('ping', removed);
       t.dispatchEvent(new Event('ping'));
       seen.push('|');
       t.addEventListener('stop', (e) => { seen.push('s1'); e.stopImmediatePropagation(); });
       t.addEventListener('stop', () => seen.push('s2'));
       t.addEventListener('stop', () => { throw new Error('listener failed'); }, true);
       const ev = new Event('stop', { cancelable: true });
       t.addEventListener('stop', (e) => e.preventDefault(), { capture: true, passive: true });
       const notCanceled = t.dispatchEvent(ev);
       let busy;
       t.addEventListener('nested', (e) => { try { t.dispatchEvent(e); } catch (err) { busy = err.name; } });
       t.dispatchEvent(new Event('nested'));
       const legacy = new Event('old', { cancelable: true }); legacy.preventDefault(); legacy.initEvent('renamed', true);
       return { seen, notCanceled, prevented: ev.defaultPrevented, phaseAfter: ev.eventPhase, target: ev.target === t, busy, legacy: [legacy.type, legacy.bubbles, legacy.cancelable, legacy.defaultPrevented] };`,
    );
    expect(got.seen).toEqual(['capture', 'a:2:true', 'object:true', 'once', 'removed', 'signalled', '|', 'capture', 'a:2:true', 'object:true', '|', 's1']);
    expect(got.notCanceled).toBe(true); // the only preventDefault was in a passive listener
    expect(got.prevented).toBe(false);
    expect(got.phaseAfter).toBe(0);
    expect(got.target).toBe(true);
    expect(got.busy).toBe('InvalidStateError');
    expect(got.legacy).toEqual(['renamed', true, false, false]);
  });

  it("reports a listener's exception as an error log line and goes on", async () => {
    const result = await run('listener_throws', `export default () => { const t = new EventTarget(); let after = false; t.addEventListener('x', () => { throw new TypeError('broken listener'); }); t.addEventListener('x', () => { after = true; }); t.dispatchEvent(new Event('x')); reportError(new Error('reported')); return after; }`);
    expect(result).toMatchObject({ ok: true, value: true });
    const errors = result.logs.filter((l) => l.level === 'error').map((l) => l.message.split('\n')[0]);
    expect(errors).toEqual(['Uncaught TypeError: broken listener', 'Uncaught Error: reported']);
  });

  it('aborts with an AbortError by default or the given reason, once, firing onabort and listeners with a trusted event', async () => {
    const got = await value(
      'abort_reason',
      `const c = new AbortController(); const s = c.signal; const fired = [];
       s.onabort = (e) => fired.push(['onabort', e.type, e.isTrusted, e.target === s]);
       s.addEventListener('abort', () => fired.push(['listener', s.aborted]));
       c.abort(); c.abort('second');
       let thrown; try { s.throwIfAborted(); } catch (e) { thrown = [e.name, e.code, e.message]; }
       const custom = new AbortController(); custom.abort({ why: 'mine' });
       let illegal; try { new AbortSignal(); } catch (e) { illegal = e.constructor.name; }
       return { fired, reason: [s.reason.name, s.reason instanceof DOMException], thrown, custom: custom.signal.reason,
                staticAbort: [AbortSignal.abort().aborted, AbortSignal.abort().reason.name, AbortSignal.abort(7).reason], illegal };`,
    );
    expect(got.fired).toEqual([['onabort', 'abort', true, true], ['listener', true]]);
    expect(got.reason).toEqual(['AbortError', true]);
    expect(got.thrown).toEqual(['AbortError', 20, 'signal is aborted without reason']);
    expect(got.custom).toEqual({ why: 'mine' });
    expect(got.staticAbort).toEqual([true, 'AbortError', 7]);
    expect(got.illegal).toBe('TypeError');
  });

  it('AbortSignal.any follows every source (flattening other any() signals) and takes the first reason', async () => {
    const got = await value(
      'abort_any',
      `const a = new AbortController(), b = new AbortController();
       const any = AbortSignal.any([a.signal, b.signal]); const outer = AbortSignal.any([any]);
       const events = []; any.onabort = () => events.push('any'); outer.onabort = () => events.push('outer');
       const before = any.aborted;
       b.abort('b first'); a.abort('a later');
       const early = AbortSignal.any([new AbortController().signal, AbortSignal.abort('already')]);
       let bad; try { AbortSignal.any([{}]); } catch (e) { bad = e.name; }
       return { before, after: [any.aborted, any.reason, outer.aborted, outer.reason], events, early: [early.aborted, early.reason], bad };`,
    );
    expect(got).toEqual({ before: false, after: [true, 'b first', true, 'b first'], events: ['any', 'outer'], early: [true, 'already'], bad: 'TypeError' });
  });

  it('AbortSignal.timeout fires within the run with a TimeoutError, on the run’s timers', async () => {
    const got = await value(
      'abort_timeout',
      `const t0 = performance.now(); const s = AbortSignal.timeout(40);
       const before = s.aborted;
       await new Promise((resolve) => s.addEventListener('abort', resolve));
       return { before, name: s.reason.name, code: s.reason.code, waited: performance.now() - t0 };`,
    );
    expect(got.before).toBe(false);
    expect(got.name).toBe('TimeoutError');
    expect(got.code).toBe(23);
    expect(got.waited).toBeGreaterThanOrEqual(39);
  });

  it('AbortSignal.timeout past the deadline never fires: the run ends at timeoutMs, and the isolate serves the next call', async () => {
    const result = await run('abort_timeout_late', `export default () => new Promise((resolve) => AbortSignal.timeout(60_000).addEventListener('abort', () => resolve('fired')))`, {}, { timeoutMs: 300 });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error.code).toBe('timeout');
    await defineFunction(engine, { name: 'abort_timeout_late' }, `export default () => typeof AbortSignal.timeout(1)`);
    expect(await engine.run('abort_timeout_late', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'object' });
  });
});

describe('timers, clock and structuredClone', () => {
  it('setInterval repeats with its arguments until clearInterval (or clearTimeout), and a throwing callback is reported, not fatal', async () => {
    const result = await run(
      'interval',
      `export default async () => {
         let ticks = 0;
         await new Promise((resolve) => { const h = setInterval((step) => { ticks += step; if (ticks === 2) throw new Error('tick two'); if (ticks >= 3) { clearInterval(h); resolve(); } }, 5, 1); });
         const atClear = ticks;
         // One map of timers: clearTimeout stops an interval, clearInterval a timeout.
         let crossed = 0;
         clearTimeout(setInterval(() => crossed++, 1));
         clearInterval(setTimeout(() => crossed++, 1));
         await new Promise((r) => setTimeout(r, 50));
         return { atClear, later: ticks, crossed };
       }`,
    );
    expect(result).toMatchObject({ ok: true, value: { atClear: 3, later: 3, crossed: 0 } });
    expect(result.logs.map((l) => l.message.split('\n')[0])).toEqual(['Uncaught Error: tick two']);
  });

  it('an interval stops at the run’s deadline: the run ends at timeoutMs and no tick is logged after it', async () => {
    const result = await run('interval_deadline', `export default () => new Promise(() => { setInterval(() => console.log('tick'), 20); })`, {}, { timeoutMs: 300 });
    expect(!result.ok && result.error.code).toBe('timeout');
    expect(result.logs.length).toBeGreaterThan(3);
    expect(Math.max(...result.logs.map((l) => l.at))).toBeLessThanOrEqual(320);
  });

  it('performance.now() is monotonic, in 100 µs steps, from a time origin at the start of the context', async () => {
    const got = await value(
      'clock',
      `const start = Date.now(); const a = performance.now(); let x = 0; for (let i = 0; i < 2e6; i++) x += i; const b = performance.now();
       await new Promise((r) => setTimeout(r, 30)); const c = performance.now();
       return { a, b, c, steps: [a, b, c].every((t) => Math.abs(t * 10 - Math.round(t * 10)) < 1e-6), origin: start - performance.timeOrigin, json: performance.toJSON() };`,
    );
    expect(got.a).toBeGreaterThanOrEqual(0);
    expect(got.b).toBeGreaterThanOrEqual(got.a);
    expect(got.c - got.b).toBeGreaterThanOrEqual(29);
    expect(got.steps).toBe(true);
    expect(got.origin).toBeGreaterThanOrEqual(0);
    expect(got.origin).toBeLessThan(2000);
    expect(Object.keys(got.json)).toEqual(['timeOrigin']);
  });

  it('structuredClone copies Map, Set, Date, typed arrays, cycles and errors, and throws a DataCloneError for functions and symbols', async () => {
    const got = await value(
      'clone',
      `const source = { map: new Map([['k', { d: new Date(86400000) }]]), set: new Set([1, 'two']), bytes: new Uint8Array([1, 2, 255]), floats: new Float64Array([0.5, -0]), big: 12n, re: /x/gi, err: new RangeError('far') };
       source.self = source;
       const copy = structuredClone(source);
       const failures = [];
       for (const bad of [{ f() {} }, Symbol('s'), [() => 1]]) { try { structuredClone(bad); failures.push('cloned'); } catch (e) { failures.push([e.name, e.code, e instanceof DOMException]); } }
       return { distinct: copy !== source && copy.map !== source.map && copy.bytes !== source.bytes, cycle: copy.self === copy,
                map: copy.map instanceof Map && copy.map.get('k').d.toISOString(), set: [...copy.set], bytes: [copy.bytes.constructor.name, ...copy.bytes],
                floats: [copy.floats.constructor.name, copy.floats[0], Object.is(copy.floats[1], -0)], big: typeof copy.big, re: String(copy.re),
                err: [copy.err.constructor.name, copy.err.message], failures };`,
    );
    expect(got).toEqual({
      distinct: true,
      cycle: true,
      map: '1970-01-02T00:00:00.000Z',
      set: [1, 'two'],
      bytes: ['Uint8Array', 1, 2, 255],
      floats: ['Float64Array', 0.5, true],
      big: 'bigint',
      re: '/x/gi',
      err: ['RangeError', 'far'],
      failures: [['DataCloneError', 25, true], ['DataCloneError', 25, true], ['DataCloneError', 25, true]],
    });
  });

  it('structuredClone throws a DataCloneError for a URL or URLSearchParams anywhere in the value, even one whose prototype the function swapped', async () => {
    const got = await value(
      'clone_url',
      `const disguised = new URL('https://example.com/a?b=c');
       Object.setPrototypeOf(disguised, Object.prototype);
       const refused = (v) => { try { structuredClone(v); return 'cloned'; } catch (e) { return [e.name, e.code, e instanceof DOMException, e.message]; } };
       return [new URL('about:blank'), new URLSearchParams('a=1'), { nested: [new Map([['k', new URL('https://example.com/')]])] }, new Set([new URLSearchParams()]), disguised].map(refused)
         .concat([JSON.stringify(structuredClone({ href: new URL('https://example.com/x').href, list: [1, { a: 2 }] }))]);`,
    );
    const refusal = (kind: string) => ['DataCloneError', 25, true, `structuredClone: a ${kind} could not be cloned.`];
    expect(got).toEqual([refusal('URL'), refusal('URLSearchParams'), refusal('URL'), refusal('URLSearchParams'), refusal('URL'), '{"href":"https://example.com/x","list":[1,{"a":2}]}']);
  });
});

describe('streams', () => {
  it('pipes through a TransformStream and iterates the result', async () => {
    const got = await value(
      'pipe_through',
      `const source = new ReadableStream({ start(c) { for (const w of ['a', 'b', 'c']) c.enqueue(w); c.close(); } });
       const upper = new TransformStream({ transform(chunk, c) { c.enqueue(chunk.toUpperCase() + chunk); } });
       const out = []; for await (const chunk of source.pipeThrough(upper)) out.push(chunk);
       return out;`,
    );
    expect(got).toEqual(['Aa', 'Bb', 'Cc']);
  });

  it('reads a byte stream with a BYOB reader into the caller’s buffer', async () => {
    const got = await value(
      'byob',
      `const stream = new ReadableStream({ type: 'bytes', start(c) { c.enqueue(new Uint8Array([1, 2, 3, 4, 5])); c.close(); } });
       const reader = stream.getReader({ mode: 'byob' });
       const first = await reader.read(new Uint8Array(3)); const second = await reader.read(new Uint8Array(8)); const end = await reader.read(new Uint8Array(1));
       return { kind: reader instanceof ReadableStreamBYOBReader, first: [...first.value], second: [...second.value], end: end.done };`,
    );
    expect(got).toEqual({ kind: true, first: [1, 2, 3], second: [4, 5], end: true });
  });

  it('applies backpressure with a queuing strategy: desiredSize falls as writes queue and ready waits for the sink', async () => {
    const got = await value(
      'backpressure',
      `const written = [];
       const sink = new WritableStream({ write(chunk) { return new Promise((r) => setTimeout(() => { written.push(chunk); r(); }, 10)); } }, new CountQueuingStrategy({ highWaterMark: 2 }));
       const w = sink.getWriter(); const sizes = [w.desiredSize];
       for (const n of [1, 2, 3]) { w.write(n); sizes.push(w.desiredSize); }
       await w.ready; sizes.push(w.desiredSize); await w.close();
       const bytes = new ByteLengthQueuingStrategy({ highWaterMark: 16 });
       return { sizes, written, byteSize: bytes.size(new Uint8Array(5)), hwm: bytes.highWaterMark };`,
    );
    expect(got.sizes.slice(0, 4)).toEqual([2, 1, 0, -1]);
    expect(got.sizes[4]).toBeGreaterThan(0);
    expect(got.written).toEqual([1, 2, 3]);
    expect(got.byteSize).toBe(5);
    expect(got.hwm).toBe(16);
  });

  it('TextDecoderStream decodes characters split across chunks; TextEncoderStream joins a split surrogate pair', async () => {
    const got = await value(
      'text_streams',
      `const bytes = new TextEncoder().encode('€ a 😀 é');
       const decoder = new TextDecoderStream(); const w = decoder.writable.getWriter();
       for (const b of bytes) w.write(new Uint8Array([b])); w.close();
       let text = ''; const pieces = []; for await (const s of decoder.readable) { text += s; pieces.push(s); }
       const bom = new TextDecoderStream(); const bw = bom.writable.getWriter(); bw.write(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])); bw.write(new Uint8Array([0xef, 0xbb, 0xbf])); bw.write(new Uint8Array([0xe2, 0x82])); bw.close();
       let bomText = ''; for await (const s of bom.readable) bomText += s;
       const fatal = new TextDecoderStream('utf-8', { fatal: true }); const fw = fatal.writable.getWriter(); fw.write(new Uint8Array([0x41, 0xff])).catch(() => {}); fw.close().catch(() => {});
       let fatalError; try { for await (const s of fatal.readable) {} } catch (e) { fatalError = e.name; }
       const encoder = new TextEncoderStream(); const ew = encoder.writable.getWriter(); ew.write('x\\uD83D'); ew.write('\\uDE00'); ew.write('\\uD800'); ew.close();
       const encoded = []; for await (const chunk of encoder.readable) encoded.push(...chunk);
       return { text, pieces: pieces.length, bomText, fatalError, encoded, props: [decoder.encoding, decoder.fatal, decoder.ignoreBOM, fatal.fatal, encoder.encoding] };`,
    );
    expect(got.text).toBe('€ a 😀 é');
    expect(got.pieces).toBeGreaterThan(1);
    expect(got.bomText).toBe('A\uFEFF\uFFFD');
    expect(got.fatalError).toBe('TypeError');
    expect(got.encoded).toEqual([...Buffer.from('x😀\uFFFD')]);
    expect(got.props).toEqual(['utf-8', false, false, true, 'utf-8']);
  });

  const collect = `async function collect(stream) { const parts = []; for await (const c of stream) parts.push(...c); return new Uint8Array(parts); }
                   function from(bytes, size = 7) { return new ReadableStream({ start(c) { for (let i = 0; i < bytes.length; i += size) c.enqueue(bytes.slice(i, i + size)); c.close(); } }); }
                   const b64 = (bytes) => btoa(String.fromCharCode(...bytes));
                   const unb64 = (s) => Uint8Array.from(atob(s), (ch) => ch.charCodeAt(0));`;

  it('compresses to gzip, deflate and deflate-raw that node:zlib reads, and round-trips each', async () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(200);
    const got = await value(
      'compress',
      `${collect}
       const input = new TextEncoder().encode(args.text); const out = {};
       for (const format of ['gzip', 'deflate', 'deflate-raw']) {
         const packed = await collect(from(input).pipeThrough(new CompressionStream(format)));
         const back = await collect(from(packed).pipeThrough(new DecompressionStream(format)));
         out[format] = { packed: b64(packed), same: new TextDecoder().decode(back) === args.text };
       }
       let bad; try { new CompressionStream('br'); } catch (e) { bad = e.name; }
       return { out, bad };`,
      { text },
    );
    const unpack = { gzip: gunzipSync, deflate: inflateSync, 'deflate-raw': inflateRawSync } as const;
    for (const format of ['gzip', 'deflate', 'deflate-raw'] as const) {
      const packed = Buffer.from(got.out[format].packed, 'base64');
      expect(packed.length).toBeLessThan(text.length / 10);
      expect(unpack[format](packed).toString()).toBe(text);
      expect(got.out[format].same).toBe(true);
    }
    expect(got.bad).toBe('TypeError');
  });

  it('decompresses gzip, deflate and deflate-raw made by node:zlib, and errors on corrupt, truncated or empty data with a TypeError', async () => {
    const text = 'héllo wörld 😀 '.repeat(500);
    const packed = { gzip: gzipSync(text), deflate: deflateSync(text), 'deflate-raw': deflateRawSync(text) };
    const got = await value(
      'decompress',
      `${collect}
       const out = {};
       for (const [format, data] of Object.entries(args.packed)) out[format] = new TextDecoder().decode(await collect(from(unb64(data), 100).pipeThrough(new DecompressionStream(format))));
       const errors = [];
       for (const data of [new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]), unb64(args.packed.gzip).slice(0, 40), new Uint8Array(0)]) {
         try { await collect(from(data).pipeThrough(new DecompressionStream('gzip'))); errors.push('none'); } catch (e) { errors.push(e.name); }
       }
       return { out, errors };`,
      { packed: Object.fromEntries(Object.entries(packed).map(([k, v]) => [k, v.toString('base64')])) },
    );
    expect(got.out).toEqual({ gzip: text, deflate: text, 'deflate-raw': text });
    expect(got.errors).toEqual(['TypeError', 'TypeError', 'TypeError']);
  });

  it('a decompression bomb ends the run with the memory error and the host serves the next call', async () => {
    const bomb = gzipSync(Buffer.alloc(256 * 1024 * 1024), { level: 9 }).toString('base64');
    const name = 'gzip_bomb';
    const result = await run(
      name,
      `export default async (args) => { ${collect} const all = []; for await (const c of from(unb64(args.bomb), 65536).pipeThrough(new DecompressionStream('gzip'))) all.push(c); return all.length; }`,
      { bomb },
      { memoryMb: 32, timeoutMs: 30_000 },
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(`${result.error.code} ${result.error.message}`).toMatch(/^memory_limit .*memoryMb|^function_error RangeError: DecompressionStream: out of memory.*memoryMb/);
    await defineFunction(engine, { name, memoryMb: 32 }, 'export default () => "fine"');
    expect(await engine.run(name, {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'fine' });
  });
});

describe('a function cannot break these for the next call', () => {
  it('sabotaged prototypes and globals affect only the run that did it: the next run in the same isolate gets pristine ones', async () => {
    const source = `export default async ({ sabotage }) => {
      if (sabotage) {
        const dispatch = EventTarget.prototype.dispatchEvent;
        ReadableStream.prototype.getReader = () => { throw new Error('sabotaged'); };
        TransformStream.prototype.constructor = null;
        Object.defineProperty(AbortSignal.prototype, 'aborted', { get: () => false });
        EventTarget.prototype.dispatchEvent = () => false;
        DOMException.prototype.constructor = null;
        Event.prototype.preventDefault = () => {};
        globalThis.structuredClone = () => 'sabotaged';
        Object.setPrototypeOf(performance, null);
        globalThis.CompressionStream = undefined;
        // The runtime reads a signal's own state, not the prototype's getter: an aborted signal adds no listener.
        const t = new EventTarget(); let heard = false;
        t.addEventListener('x', () => { heard = true; }, { signal: AbortSignal.abort() });
        dispatch.call(t, new Event('x'));
        return { heard, getReader: (() => { try { new ReadableStream().getReader(); return 'worked'; } catch (e) { return e.message; } })() };
      }
      const s = new ReadableStream({ start(c) { c.enqueue('ok'); c.close(); } });
      const read = await s.getReader().read();
      const c = new AbortController(); c.abort();
      return { read: read.value, aborted: c.signal.aborted, clone: structuredClone({ a: 1 }), now: typeof performance.now(), compression: typeof CompressionStream,
               dispatched: new EventTarget().dispatchEvent(new Event('x')) };
    }`;
    await defineFunction(engine, { name: 'sabotage' }, source);
    const first = await engine.run('sabotage', { sabotage: true }, { caller: 'test' });
    expect(first).toMatchObject({ ok: true, value: { heard: false, getReader: 'sabotaged' } });
    const second = await engine.run('sabotage', { sabotage: false }, { caller: 'test' });
    expect(second).toMatchObject({ ok: true, value: { read: 'ok', aborted: true, clone: { a: 1 }, now: 'number', compression: 'function', dispatched: true } });
  });
});

describe('made on first use', () => {
  it('works as specified when the function replaced globals and prototypes before it first used the platform, and hands it none of the runtime’s internals', async () => {
    // Nothing of the platform is touched before the sabotage: each class is made after it. Every
    // replacement would change a result below if the runtime used it instead of what it captured first.
    const got = await value(
      'first_use_after_sabotage',
      `const I16 = Int16Array, apply = Reflect.apply, ownNames = Object.getOwnPropertyNames;
       const internals = ['blobBytes', 'isBlob', 'makeBlob', 'headerList', 'formParts', 'fetchFn', 'interfaces', 'classes', '__exports'];
       const leaked = [];
       Function.prototype.call = function (self, ...args) {
         for (let i = -1; i < args.length; i++) {
           const a = i < 0 ? self : args[i];
           if (a !== null && (typeof a === 'object' || typeof a === 'function')) for (const n of ownNames(a)) if (internals.includes(n)) leaked.push(n);
         }
         return apply(this, self, args);
       };
       Date.now = () => 0;
       Math.min = Math.max = () => 0;
       Number.parseInt = () => 0;
       Reflect.ownKeys = () => [];
       Object.hasOwn = () => false;
       Object.getPrototypeOf(Uint8Array.prototype).set = () => {};
       globalThis.Int16Array = globalThis.DataView = undefined;

       const file = new File(['ab', 'cd'], 'f.txt', { type: 'text/plain' });
       const clone = new Response(new ReadableStream({ start(c) { c.enqueue(new I16([1, 2])); c.close(); } })).clone();
       const chunk = (await clone.body.getReader().read()).value;
       const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
       const form = await new Response(new URLSearchParams('a=%41&b=2')).formData();
       return {
         lastModified: file.lastModified > 1e12, text: await file.text(), slice: await file.slice(1, 3).text(),
         param: new URLSearchParams('a=%41').get('a'), header: new Headers({ a: '1' }).get('a'),
         enumerable: Object.keys(Headers.prototype).includes('append') && Object.keys(URL.prototype).includes('href'),
         chunk: [chunk instanceof I16, Array.from(chunk)], keyPair: [pair.privateKey.type, pair.publicKey.type],
         form: [...form].map(([k, v]) => k + '=' + v), decoded: new TextDecoder().decode(new TextEncoder().encode('é')),
         leaked,
       };`,
    );
    expect(got).toEqual({
      lastModified: true, text: 'abcd', slice: 'bc', param: 'A', header: '1', enumerable: true,
      chunk: [true, [1, 2]], keyPair: ['private', 'public'], form: ['a=A', 'b=2'], decoded: 'é', leaked: [],
    });
  });

  it('gives a module loaded on first use none of an accessor the function put on Object.prototype', async () => {
    // The runtime's module objects are plain objects: an inherited `__exports` accessor must never
    // receive a module's exports nor hand it the function's own.
    const got = await value(
      'exports_accessor',
      `const seen = [];
       Object.defineProperty(Object.prototype, '__exports', {
         configurable: true,
         get() { seen.push('get'); return { isBlob: () => () => true, blobBytes: () => () => new Uint8Array([1]) }; },
         set(v) { seen.push('set:' + Object.keys(v).length); },
       });
       const blob = new Blob(['abc']);
       const text = await blob.text();
       const url = new URL('https://example.com/a?b=1').searchParams.get('b');
       delete Object.prototype.__exports;
       return { text, url, seen };`,
    );
    expect(got).toEqual({ text: 'abc', url: '1', seen: [] });
  });
});
