import ivm from 'isolated-vm';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { build, type Plugin } from 'esbuild';
import { buildGuest, GUEST_BUILD_OPTIONS, GUEST_PART_OP, guestScript, loadGuest, splitGuest } from '../../src-main/sandboxHost/guestBundle.ts';
import { GuestCode } from '../../src-main/sandboxHost/guestCode.ts';
import { defineFunction, testEngine } from '../support/engine.ts';
import { tempDir } from '../support/tmp.ts';

const GUEST_DIR = fileURLToPath(new URL('../../src-main/sandboxHost/guest/', import.meta.url));
const ENTRY = /^[0-9a-f]{32}\.([0-9a-f]{64})\.js$/;
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const entries = (dir: string): string[] => readdirSync(dir).filter((name) => ENTRY.test(name));

const engine = testEngine();
const isolates: ivm.Isolate[] = [];
afterEach(() => {
  for (const isolate of isolates.splice(0)) isolate.dispose();
});

/**
 * Evaluates a guest text in a fresh context of a real isolate, as the sandbox host does: the script
 * without its parts (GuestCode), and `install` answers the guest's requests for them.
 */
function evaluate(source: string): { context: ivm.Context; prelude: ivm.Reference<(...a: unknown[]) => unknown>; globals: (expression: string) => unknown; install: () => void } {
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  isolates.push(isolate);
  const context = isolate.createContextSync();
  const guest = new GuestCode(source);
  const prelude = guest.compileIn(isolate).runSync(context, { reference: true }) as ivm.Reference<(...a: unknown[]) => unknown>;
  return { context, prelude, globals: (expression) => context.evalSync(expression, { copy: true }), install: () => install(prelude, guest) };
}

/** Installs the guest runtime in the context (host callbacks that answer nothing but the guest's own parts). */
function install(prelude: ivm.Reference<(...a: unknown[]) => unknown>, guest: GuestCode): void {
  const hostSync = new ivm.Callback((op: unknown, index: unknown) => (op === GUEST_PART_OP ? guest.part(index) : undefined));
  prelude.applySync(undefined, [hostSync, new ivm.Callback(() => undefined)], { result: { reference: true } });
}

/** The guest bundle (or another entry given as stdin) with every npm file counting its top-level runs in globalThis.__loads[file]. */
async function countingBuild(stdin?: { contents: string; resolveDir: string; sourcefile: string }): Promise<{ source: string; npmFiles: string[] }> {
  const countLoads: Plugin = {
    name: 'count-loads',
    setup(b) {
      b.onLoad({ filter: /[\\/]node_modules[\\/]/ }, (args) => ({
        contents: `(globalThis.__loads ??= {})[${JSON.stringify(args.path)}] = (globalThis.__loads[${JSON.stringify(args.path)}] ?? 0) + 1;\n${readFileSync(args.path, 'utf8')}`,
        loader: 'js',
      }));
    },
  };
  const result = await build({ ...GUEST_BUILD_OPTIONS, ...(stdin ? { entryPoints: [], stdin } : {}), plugins: [countLoads] });
  return { source: guestScript(result), npmFiles: Object.keys(result.metafile.inputs).filter((f) => f.includes('node_modules')) };
}

describe('the guest bundle', () => {
  it('is built once, then read from a private per-user cache folder', () => {
    const dir = join(tempDir(), 'cache', 'callable-studio', 'guest');
    const first = loadGuest(dir);
    expect(first.from).toBe('build');
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const [name] = entries(dir);
    expect(entries(dir)).toHaveLength(1);
    expect(statSync(join(dir, name!)).mode & 0o077).toBe(0);
    const second = loadGuest(dir);
    expect(second).toEqual({ from: 'cache', source: first.source });
  });

  it('never runs a cache entry whose content no longer matches its name: it is rebuilt', () => {
    const dir = join(tempDir(), 'guest');
    const built = loadGuest(dir).source;
    const [name] = entries(dir);
    const planted = built.replace('\nreturn ', '\nglobalThis.planted = true; return ');
    expect(planted).not.toBe(built);
    writeFileSync(join(dir, name!), planted);

    const again = loadGuest(dir);
    expect(again.from).toBe('build');
    expect(again.source).toBe(built);
    expect(readFileSync(join(dir, name!), 'utf8')).toBe(built);
    const { install, globals } = evaluate(again.source);
    install();
    expect(globals('typeof globalThis.planted')).toBe('undefined');
  });

  it('rebuilds when a package file it bundled has changed since the entry was written', () => {
    const dir = join(tempDir(), 'guest');
    const { source } = loadGuest(dir);
    const [name] = entries(dir);
    // An entry that bundled `lib` (standing in for a file under node_modules), with lib's hash then.
    const lib = join(tempDir(), 'lib.js');
    writeFileSync(lib, 'export const version = 1;');
    const firstLine = source.slice(0, source.indexOf('\n'));
    const recorded = firstLine.replace(/\{.*\}$/, JSON.stringify({ [lib]: sha256('export const version = 1;') }));
    const entry = recorded + source.slice(source.indexOf('\n'));
    renameSync(join(dir, name!), join(dir, name!.replace(ENTRY, (whole, hash: string) => whole.replace(hash, sha256(entry)))));
    writeFileSync(join(dir, entries(dir)[0]!), entry);
    expect(loadGuest(dir)).toEqual({ from: 'cache', source: entry });

    writeFileSync(lib, 'export const version = 2;');
    expect(loadGuest(dir)).toEqual({ from: 'build', source });
    expect(entries(dir)).toEqual([name]);
  });

  it('keeps the three most recently used entries of other guest versions and drops the rest', () => {
    const dir = join(tempDir(), 'guest');
    mkdirSync(dir, { mode: 0o700 });
    const others = [1, 2, 3, 4, 5].map((i) => {
      const name = `${String(i).repeat(32)}.${sha256(String(i))}.js`;
      writeFileSync(join(dir, name), String(i));
      utimesSync(join(dir, name), i * 1000, i * 1000); // used at time i
      return name;
    });
    const { from } = loadGuest(dir);
    expect(from).toBe('build');
    expect(entries(dir).sort()).toEqual([...others.slice(2), ...entries(dir).filter((n) => !others.includes(n))].sort());
    expect(entries(dir)).toHaveLength(4);
  });

  it.skipIf(process.platform === 'win32')('does not use a cache folder other users can read or write (POSIX modes)', () => {
    const good = join(tempDir(), 'good');
    const built = loadGuest(good).source;
    const [name] = entries(good);
    const open = join(tempDir(), 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const planted = built.replace('\nreturn ', '\nglobalThis.planted = true; return ');
    writeFileSync(join(open, name!.replace(ENTRY, (whole, hash: string) => whole.replace(hash, sha256(planted)))), planted);

    expect(loadGuest(open)).toEqual({ from: 'build', source: built });
    expect(entries(open)).toHaveLength(1); // only the planted file: nothing read, nothing written
  });

  it('builds in memory when the cache folder cannot be made', () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, '');
    const result = loadGuest(join(file, 'guest'));
    expect(result.from).toBe('build');
    const { prelude } = evaluate(result.source);
    expect(prelude.typeof).toBe('function');
  });

  it('adds no global of its own to a context: only what the runtime installs, never enumerable', () => {
    const source = buildGuest();
    const isolate = new ivm.Isolate({ memoryLimit: 64 });
    isolates.push(isolate);
    const bare = isolate.createContextSync().evalSync('Object.getOwnPropertyNames(globalThis).join()');
    const { install, globals } = evaluate(source);
    expect(globals('Object.getOwnPropertyNames(globalThis).join()')).toBe(bare);
    install();
    expect(globals('Object.keys(globalThis)')).toEqual([]);
    expect(globals("Object.getOwnPropertyNames(globalThis).filter((n) => n.startsWith('__'))")).toEqual([]);
  });

  it('gives a function a global object with nothing enumerable and no trace of the bundle', async () => {
    await defineFunction(engine, { name: 'globals' }, `export default () => ({ keys: Object.keys(globalThis), hidden: Object.getOwnPropertyNames(globalThis).filter((n) => n.startsWith('__')) })`);
    expect(await engine.run('globals', {}, { caller: 'test' })).toMatchObject({ ok: true, value: { keys: [], hidden: [] } });
  });

  it('names every function and class it installs as the platform does (String(fetch), Blob.name), though the bundle renamed some', async () => {
    // Every global that is a function (reading each makes the lazy ones), and what String() shows of two.
    await defineFunction(
      engine,
      { name: 'named' },
      `export default () => {
        const wrong = [];
        for (const key of Object.getOwnPropertyNames(globalThis)) {
          const value = globalThis[key];
          if (typeof value === 'function' && value.name !== key) wrong.push(key + ' is named ' + JSON.stringify(value.name));
        }
        return { wrong, distinct: clearInterval !== clearTimeout, blob: Object.prototype.toString.call(new Blob([])) + ' ' + new Blob([]).constructor.name };
      }`,
    );
    expect(await engine.run('named', {}, { caller: 'test' })).toMatchObject({ ok: true, value: { wrong: [], distinct: true, blob: '[object Blob] Blob' } });
  });

  it('makes none of the globals built on first use on a plain call\'s path: its handler finds them all still unmade', async () => {
    const names = ['TextEncoder', 'TextDecoder', 'URL', 'URLSearchParams', 'Headers', 'Blob', 'File', 'FormData', 'FileReader', 'Request', 'Response', 'fetch', 'ReadableStream', 'DOMException', 'AbortController', 'performance', 'SubtleCrypto'];
    await defineFunction(engine, { name: 'unmade' }, `export default () => ${JSON.stringify(names)}.filter((n) => typeof Object.getOwnPropertyDescriptor(globalThis, n)?.get !== 'function')`);
    // Twice: the second call runs in a context prepared ahead of it.
    for (let i = 0; i < 2; i++) expect(await engine.run('unmade', {}, { caller: 'test' })).toMatchObject({ ok: true, value: [] });
  });

  it('runs a package a guest module requires inside a lazy global only on first use', async () => {
    // The pattern of globals.js's defineLazyGlobal, with the packages the web platform bundles.
    const { source, npmFiles: files } = await countingBuild({
        resolveDir: GUEST_DIR,
        sourcefile: 'lazy-check.js',
        contents: `
          import { defineLazyGlobal } from './globals.js';
          defineLazyGlobal('ReadableStream', () => require('web-streams-polyfill').ReadableStream);
          defineLazyGlobal('gzipSync', () => require('fflate').gzipSync);
          defineLazyGlobal('structuredClone', () => require('@ungap/structured-clone').default);
          export function callablePrelude() { return []; }
        `,
    });
    expect(files.some((f) => /web-streams-polyfill/.test(f))).toBe(true);
    // Browser builds: fflate's Node build would need worker_threads.
    expect(files.filter((f) => /fflate/.test(f)).map((f) => f.replace(/^.*node_modules[\\/]/, ''))).toEqual([join('fflate', 'lib', 'browser.cjs')]);

    const { install, globals } = evaluate(source);
    install();
    expect(globals('globalThis.__loads')).toBeUndefined();
    expect(globals('typeof new ReadableStream().getReader')).toBe('function');
    const afterStreams = globals('globalThis.__loads') as Record<string, number>;
    expect(Object.keys(afterStreams).every((f) => /web-streams-polyfill/.test(f))).toBe(true);
    expect(Object.values(afterStreams)).toEqual([1]);
    expect(globals('[gzipSync(new Uint8Array(3)).length > 0, structuredClone(new Map([[1, 2]])).get(1), typeof ReadableStream]')).toEqual([true, 2, 'function']);
    expect(Object.values(globals('globalThis.__loads') as Record<string, number>).every((n) => n === 1)).toBe(true);
    expect(Object.keys(globals('globalThis.__loads') as object)).toHaveLength(files.length);
  });

  it('loads no bundled package while installing the runtime (a plain call pays for none)', async () => {
    const { source } = await countingBuild();
    const { install, globals } = evaluate(source);
    install();
    expect(globals('globalThis.__loads')).toBeUndefined();
  });

  it('evaluates none of the modules that build classes while installing the runtime: each runs once, on first use of one of its globals', async () => {
    // Guest modules whose top level builds classes, tables or helpers a plain call never uses: each
    // is loaded by its globals' factories (ctxMethods.js by a call's ctx.fetch, ctx.elicit or ctx.sample).
    const lazy = ['textCoders.js', 'url.js', 'headers.js', 'encoding.js', 'legacyEncodings.js', 'ctxMethods.js', 'web/domException.js', 'web/events.js', 'web/misc.js', 'web/streams.js', 'web/blob.js', 'web/formData.js', 'web/fileReader.js', 'web/fetch.js', 'web/subtle.js'];
    const countGuestLoads: Plugin = {
      name: 'count-guest-loads',
      setup(b) {
        b.onLoad({ filter: /[\\/]sandboxHost[\\/]guest[\\/].*\.js$/ }, (args) => {
          const name = relative(GUEST_DIR, args.path).split(sep).join('/');
          const source = readFileSync(args.path, 'utf8');
          return { contents: lazy.includes(name) ? `${source}\n(globalThis.__loads ??= []).push(${JSON.stringify(name)});\n` : source, loader: 'js' };
        });
      },
    };
    const result = await build({ ...GUEST_BUILD_OPTIONS, plugins: [countGuestLoads] });
    const { install, globals } = evaluate(guestScript(result));
    install();
    expect(globals('globalThis.__loads')).toBeUndefined();
    const names = ['TextEncoder', 'TextDecoder', 'URL', 'URLSearchParams', 'Headers', 'Blob', 'File', 'FormData', 'FileReader', 'ProgressEvent', 'Request', 'Response', 'fetch', 'SubtleCrypto', 'CryptoKey'];
    // Still the getters that make them: nothing was made.
    expect(globals(`${JSON.stringify(names)}.filter((n) => typeof Object.getOwnPropertyDescriptor(globalThis, n).get !== 'function')`)).toEqual([]);

    // structuredClone looks for URLs only once URLs can exist.
    expect(globals('structuredClone({ a: [1] }).a[0]')).toBe(1);
    expect(globals('globalThis.__loads')).toEqual(['web/misc.js']);

    expect(globals('new Blob(["ab"]).size')).toBe(2);
    expect(globals('globalThis.__loads')).toEqual(['web/misc.js', 'legacyEncodings.js', 'encoding.js', 'web/domException.js', 'web/streams.js', 'web/blob.js']);
    expect(globals('[typeof Object.getOwnPropertyDescriptor(globalThis, "Blob").value, typeof Object.getOwnPropertyDescriptor(globalThis, "File").get]')).toEqual(['function', 'function']);
    // Response builds on Blob, Headers and URLSearchParams: each module still runs once.
    expect(globals('typeof new Response("x").headers.get')).toBe('function');
    expect(globals('typeof crypto.subtle.digest')).toBe('function');
    expect(globals(`${JSON.stringify(names)}.every((n) => typeof globalThis[n] === 'function')`)).toBe(true);
    expect((globals('globalThis.__loads') as string[]).sort()).toEqual(lazy.filter((name) => name !== 'ctxMethods.js').sort());
  });

  it('is minified (no indentation, no comments) but keeps its names: a runtime error\'s stack names its frames', async () => {
    const source = buildGuest();
    expect(source).not.toMatch(/^ {2}/m);
    await defineFunction(engine, { name: 'bad_header' }, `export default () => new Headers([['a b', 'c']])`);
    const result = await engine.run('bad_header', {}, { caller: 'test' });
    const stack = String(result.ok ? '' : result.error.details?.stack);
    expect(stack).toMatch(/^TypeError: Headers: "a b" is not a valid header name\n {4}at headerName \(callable:prelude:\d+:\d+\)\n {4}at Headers\.append \(callable:prelude:\d+:\d+\)\n {4}at new Headers \(callable:prelude:\d+:\d+\)\n {4}at bad_header_default \(bad_header\.js:\d+:\d+\)\n {4}at invoke \(callable:prelude:/);
  });

  it('keeps the large npm packages and the legacy encodings\' tables out of the script every isolate compiles: the host holds them once, each evaluated on first use', () => {
    const text = buildGuest();
    const { script, parts } = splitGuest(text);
    expect(parts.map((part) => part.name)).toEqual(['callable:web-streams-polyfill/dist/ponyfill.js', 'callable:fflate/lib/browser.cjs', 'callable:legacyEncodings.js']);
    expect(script.length + parts.reduce((n, part) => n + part.source.length, 0)).toBeLessThan(text.length);
    expect(script.length).toBeLessThan(text.length * 0.65);
    for (const part of parts) expect(script).not.toContain(part.source.slice(40, 200));
    // In an isolate, the script asks the host for each part on first use (evaluate() splits the text as a host does).
    const { install, globals } = evaluate(text);
    install();
    expect(globals('typeof new ReadableStream().getReader')).toBe('function');
    // Single-byte decoders read their tables from their part.
    expect(globals('[new TextDecoder("windows-1252").decode(new Uint8Array([0x80, 0x41])), new TextDecoder("koi8-r").encoding, new TextDecoder("latin1").decode(new Uint8Array([0x9c]))]')).toEqual(['\u20ACA', 'koi8-r', '\u0153']);
  });

  it('evaluates a package part with the eval and Reflect.apply of the fresh context, whatever the function replaced, and names it in stacks', async () => {
    await defineFunction(
      engine,
      { name: 'streams_after_tampering' },
      `export default async () => {
        globalThis.eval = () => { throw new Error('replaced eval'); };
        Reflect.apply = () => { throw new Error('replaced apply'); };
        let stack = '';
        try { new ReadableStream({ start() { throw new Error('in start'); } }); } catch (e) { stack = e.stack; }
        return stack;
      }`,
    );
    // Twice: the second call runs in a context prepared ahead of it, in the same isolate.
    for (let i = 0; i < 2; i++) {
      const result = await engine.run('streams_after_tampering', {}, { caller: 'test' });
      expect(result).toMatchObject({ ok: true });
      const stack = String(result.ok ? result.value : '');
      expect(stack).toMatch(/^Error: in start\n {4}at Object\.start \(streams_after_tampering\.js:\d+:\d+\)\n/);
      expect(stack).toMatch(/\(callable:web-streams-polyfill\/dist\/ponyfill\.js:\d+:\d+\)/);
      expect(stack).not.toMatch(/node_modules|\/src-main\/|guestPart/);
    }
  });

  it('compresses and decompresses through fflate\'s part, in a module evaluated ahead of its call too', async () => {
    await defineFunction(
      engine,
      { name: 'gzip_round_trip' },
      `const ready = new CompressionStream('gzip');
      export default async ({ text }) => {
        const zipped = new Response(new Blob([text]).stream().pipeThrough(ready));
        const bytes = new Uint8Array(await zipped.arrayBuffer());
        const back = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).text();
        return [bytes[0], bytes[1], back];
      }`,
    );
    for (let i = 0; i < 2; i++) expect(await engine.run('gzip_round_trip', { text: 'héllo '.repeat(50) }, { caller: 'test' })).toMatchObject({ ok: true, value: [0x1f, 0x8b, 'héllo '.repeat(50)] });
  });

  it('makes a lazily loaded module\'s exports when it first loads, not in every fresh context', () => {
    const source = buildGuest();
    // esbuild writes each such module's __export(...) at the top level; the script has it in the module's initializer.
    const calls = [...source.matchAll(/__export\((\w+)_exports,\{/g)].map(([, name]) => name);
    const initializers = [...source.matchAll(/init_(\w+)=\(\)=>\{init_\1=__esmDone;try\{__export\((\w+)_exports,\{/g)];
    expect(initializers.length).toBeGreaterThanOrEqual(8);
    expect(initializers.every(([, init, exported]) => init === exported)).toBe(true);
    // Every other call is the entry's own, made once for callablePrelude.
    expect(calls.filter((name) => !initializers.some(([, init]) => init === name))).toEqual(['index']);
  });

  it('runs a guest module\'s initializer once, and a failed one throws its error again on every later load', async () => {
    // Without esbuild's __esm wrapper (guestBundle.ts rewrites it): the same behaviour, fewer objects per context.
    const modules: Plugin = {
      name: 'init-check',
      setup(b) {
        b.onResolve({ filter: /^virtual:/ }, (args) => ({ path: args.path, namespace: 'init-check' }));
        b.onLoad({ filter: /.*/, namespace: 'init-check' }, (args) => ({
          contents:
            args.path === 'virtual:fails'
              ? `globalThis.failRuns = (globalThis.failRuns ?? 0) + 1;\nexport const never = globalThis.failRuns > 0 ? (() => { throw new Error('init failed ' + globalThis.failRuns); })() : 1;`
              : `globalThis.okRuns = (globalThis.okRuns ?? 0) + 1;\nexport const value = 42;`,
          loader: 'js',
        }));
      },
    };
    const result = await build({
      ...GUEST_BUILD_OPTIONS,
      entryPoints: [],
      stdin: {
        resolveDir: GUEST_DIR,
        sourcefile: 'init-check.js',
        contents: `
          import { defineLazyGlobal } from './globals.js';
          defineLazyGlobal('okValue', () => require('virtual:ok').value);
          defineLazyGlobal('okAgain', () => require('virtual:ok').value);
          defineLazyGlobal('failing', () => require('virtual:fails').never);
          export function callablePrelude() { return () => undefined; }
        `,
      },
      plugins: [modules],
    });
    for (const input of Object.keys(result.metafile.inputs)) if (input.startsWith('init-check:')) delete result.metafile.inputs[input];
    const source = guestScript(result);
    expect(source).not.toContain('__esm(');
    const { install, globals } = evaluate(source);
    install();
    expect(globals('[globalThis.okRuns, globalThis.failRuns]')).toEqual([undefined, undefined]);
    expect(globals('[okValue, okAgain, okValue, globalThis.okRuns]')).toEqual([42, 42, 42, 1]);
    const attempt = 'try { failing; "loaded" } catch (e) { e.message }';
    expect([globals(attempt), globals(attempt), globals('globalThis.failRuns')]).toEqual(['init failed 1', 'init failed 1', 1]);
  });

  it('is compiled from V8\'s code cache by every isolate once the host has made it', async () => {
    const guest = new GuestCode(buildGuest());
    expect(guest.cached).toBe(false);
    await guest.prepare();
    expect(guest.cached).toBe(true);
    const isolate = new ivm.Isolate({ memoryLimit: 64 });
    isolates.push(isolate);
    const script = guest.compileIn(isolate) as ivm.Script & { cachedDataRejected?: boolean };
    expect(script.cachedDataRejected).toBe(false);
    const context = isolate.createContextSync();
    const prelude = script.runSync(context, { reference: true }) as ivm.Reference<(...a: unknown[]) => unknown>;
    install(prelude, guest);
    expect(context.evalSync('new TextDecoder().decode(new TextEncoder().encode("ok"))')).toBe('ok');
  });
});
