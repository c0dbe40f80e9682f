import { beforeAll, describe, expect, it } from 'vitest';
import { defineFunction, testEngine } from '../support/engine.ts';
import { vendorServer, type SeenRequest } from '../support/vendor.ts';

// Blob, File and FileReader (W3C File API) inside the sandbox, run through the real engine; a
// FormData upload goes to a real local vendor.
const engine = testEngine();
let port: number;
let seen: SeenRequest[];

beforeAll(async () => {
  const vendor = await vendorServer((_req, res) => res.end('ok'));
  port = vendor.port;
  seen = vendor.seen;
});

/** Runs `body` (the statements of an async handler; `base` is the vendor's origin) and returns its value; fails the test on a failed run. */
async function value(name: string, body: string): Promise<any> {
  const base = `http://127.0.0.1:${port}`;
  await defineFunction(engine, { name, allowedHosts: [`127.0.0.1:${port}`] }, `export default async (args, ctx) => { const base = ${JSON.stringify(base)}; ${body} }`);
  const result = await engine.run(name, {}, { caller: 'test' });
  expect(result.ok, JSON.stringify(result)).toBe(true);
  return (result as { value: unknown }).value;
}

/** In the sandbox: reads `blob` with `reader[method](blob, ...extra)` and resolves with the events seen (type, readyState, loaded/total) and the result. */
const READ = `
const read = (blob, method, ...extra) => new Promise((resolve) => {
  const reader = new FileReader();
  const events = [];
  for (const type of ['loadstart', 'progress', 'load', 'abort', 'error', 'loadend']) {
    reader.addEventListener(type, (e) => {
      events.push([type, reader.readyState, e.loaded, e.total, e instanceof ProgressEvent]);
      if (type === 'loadend') resolve({ events, result: reader.result, error: reader.error });
    });
  }
  reader[method](blob, ...extra);
  events.push(['sync', reader.readyState, reader.result]);
});`;

describe('FileReader', () => {
  it('is a lazy, replaceable global: a getter until first used, then the class, with its constants', async () => {
    const got = await value(
      'reader_global',
      `const before = typeof Object.getOwnPropertyDescriptor(globalThis, 'FileReader').get;
       const r = new FileReader();
       const after = Object.getOwnPropertyDescriptor(globalThis, 'FileReader');
       const shape = [FileReader.EMPTY, FileReader.LOADING, FileReader.DONE, r.readyState, r.result, r.error, r.onload, String(r), r instanceof EventTarget];
       const enumerable = Object.keys(globalThis).includes('FileReader');
       globalThis.ProgressEvent = 1;
       return { before, after: [typeof after.value, after.writable, after.enumerable], shape, enumerable, replaced: ProgressEvent };`,
    );
    expect(got).toEqual({
      before: 'function',
      after: ['function', true, false],
      shape: [0, 1, 2, 0, null, null, null, '[object FileReader]', true],
      enumerable: false,
      replaced: 1,
    });
  });

  it('reads as text, bytes, a binary string and a data: URL, firing loadstart, progress, load, loadend in later tasks', async () => {
    const got = await value(
      'reader_kinds',
      `${READ}
       const blob = new Blob(['h\\u00e9']);
       const text = await read(blob, 'readAsText');
       const buffer = await read(blob, 'readAsArrayBuffer');
       const binary = await read(blob, 'readAsBinaryString');
       const url = await read(new Blob([new Uint8Array([0xfb, 0xff])], { type: 'Image/PNG' }), 'readAsDataURL');
       const untyped = await read(new Blob([]), 'readAsDataURL');
       return { text, buffer: [buffer.result instanceof ArrayBuffer, [...new Uint8Array(buffer.result)]], binary: binary.result, url: url.result, untyped };`,
    );
    expect(got.text).toEqual({
      events: [
        ['sync', 1, null],
        ['loadstart', 1, 0, 3, true],
        ['progress', 1, 3, 3, true],
        ['load', 2, 3, 3, true],
        ['loadend', 2, 3, 3, true],
      ],
      result: 'hé',
      error: null,
    });
    expect(got.buffer).toEqual([true, [0x68, 0xc3, 0xa9]]);
    expect(got.binary).toBe('h\u00c3\u00a9');
    expect(got.url).toBe('data:image/png;base64,+/8=');
    // An empty blob loads no data, so there is no progress event; a data: URL without a type says octet-stream.
    expect(got.untyped.events.map((e: unknown[]) => e[0])).toEqual(['sync', 'loadstart', 'load', 'loadend']);
    expect(got.untyped.result).toBe('data:application/octet-stream;base64,');
  });

  it("decodes text by the encoding given, else the type's charset, else UTF-8; a byte order mark overrides both", async () => {
    const got = await value(
      'reader_encodings',
      `${READ}
       const latin = new Uint8Array([0x63, 0x61, 0x66, 0xe9]);
       return [
         (await read(new Blob([latin]), 'readAsText', 'windows-1252')).result,
         (await read(new Blob([latin], { type: 'text/plain; charset="ISO-8859-1"' }), 'readAsText')).result,
         (await read(new Blob([latin], { type: 'text/plain;charset=latin1' }), 'readAsText', 'no-such-encoding')).result,
         (await read(new Blob([latin]), 'readAsText')).result,
         (await read(new Blob([new Uint8Array([0xff, 0xfe, 0x41, 0x00])]), 'readAsText', 'utf-8')).result,
         (await read(new Blob([new Uint8Array([0xef, 0xbb, 0xbf, 0x41])]), 'readAsText', 'windows-1252')).result,
       ];`,
    );
    expect(got).toEqual(['café', 'café', 'café', 'caf\ufffd', 'A', 'A']);
  });

  it('refuses a second read while loading and a non-Blob; abort() ends a read with abort then loadend and no load', async () => {
    const got = await value(
      'reader_abort',
      `const reader = new FileReader();
       const events = [];
       for (const type of ['loadstart', 'progress', 'load', 'abort', 'error', 'loadend']) reader.addEventListener(type, () => events.push(type + ':' + reader.readyState));
       const refused = [];
       try { reader.readAsText({ size: 1 }); } catch (e) { refused.push(e.constructor.name); }
       reader.readAsText(new Blob(['abc']));
       try { reader.readAsArrayBuffer(new Blob(['x'])); } catch (e) { refused.push(e.name); }
       reader.abort();
       const afterAbort = [reader.readyState, reader.result];
       await new Promise((r) => setTimeout(r, 20));
       reader.abort();
       return { refused, events, afterAbort };`,
    );
    expect(got).toEqual({ refused: ['TypeError', 'InvalidStateError'], events: ['abort:2', 'loadend:2'], afterAbort: [2, null] });
  });

  it("a read started from a load handler replaces the first: the first read's loadend is not fired", async () => {
    const got = await value(
      'reader_reread',
      `const reader = new FileReader();
       const seen = [];
       let second = false;
       reader.onload = () => { seen.push('load:' + reader.result); if (!second) { second = true; reader.readAsText(new Blob(['two'])); } };
       await new Promise((resolve) => { reader.onloadend = () => { seen.push('loadend:' + reader.result); resolve(); }; reader.readAsText(new Blob(['one'])); });
       return seen;`,
    );
    expect(got).toEqual(['load:one', 'load:two', 'loadend:two']);
  });
});

describe('Blob and File', () => {
  it('take any iterable as parts, convert each part as WebIDL does, and keep their bytes whatever the buffers do later', async () => {
    const got = await value(
      'blob_parts',
      `const bytes = new Uint8Array([0x61, 0x62]);
       const fromIterable = new Blob({ *[Symbol.iterator]() { yield 'x'; yield bytes; yield 7; } });
       const fromString = new Blob(new String('hi'));
       bytes[0] = 0x7a;
       const native = new Blob(['a\\r\\nb\\rc\\n'], { endings: 'native' });
       const refused = []; for (const bad of [{ endings: 'crlf' }, 5]) { try { new Blob([], bad); } catch (e) { refused.push(e.constructor.name); } }
       const sliced = new Blob(['abcdef'], { type: 'text/plain' });
       return {
         iterable: await fromIterable.text(), string: await fromString.text(), native: await native.text(), refused,
         slices: [await sliced.slice(-3).text(), await sliced.slice(1, -1).text(), sliced.slice(0, 2).type, sliced.slice(0, 2, 'TEXT/X').type, sliced.slice(0, 2, 'a\\u00ff').type],
         file: (() => { const f = new File([sliced], 'n\\uD800.txt', { lastModified: 12.7 }); return [f.name, f.lastModified, f.type, f.size, f instanceof Blob]; })(),
       };`,
    );
    expect(got).toEqual({
      iterable: 'xab7',
      string: 'hi',
      native: 'a\nb\nc\n',
      refused: ['TypeError', 'TypeError'],
      slices: ['def', 'bcde', '', 'text/x', ''],
      file: ['n\ufffd.txt', 12, '', 6, true],
    });
  });

  it("converts arguments as WebIDL says: slice's [Clamp] rounds half to even, lastModified is a long long, options in dictionary order, buffers copied last", async () => {
    const got = await value(
      'blob_webidl',
      `const b = new Blob(['abcdef']);
       const order = [];
       const buffer = new Uint8Array([0x61, 0x61]);
       const options = { get type() { order.push('type'); buffer[1] = 0x62; return 'text/plain'; }, get endings() { order.push('endings'); }, get lastModified() { order.push('lastModified'); return -1.7; } };
       const file = new File([buffer], { toString() { order.push('name'); return 'f'; } }, options);
       const parts = Object.assign(function () {}, { *[Symbol.iterator]() { yield 'fn'; } });
       return {
         sizes: [b.slice(0.7).size, b.slice(1.5).size, b.slice(2.5).size, b.slice(-0.7).size, b.slice(0, -1.5).size, b.slice(-Infinity, Infinity).size, b.slice(NaN).size],
         lastModified: [Infinity, NaN, 2 ** 64 + 2 ** 12, 2 ** 63, -(2 ** 53)].map((v) => new File([], 'x', { lastModified: v }).lastModified),
         order, file: [file.lastModified, await file.text(), file.type], fromFunction: await new Blob(parts).text(),
         lengths: [Blob.length, File.length, Blob.prototype.slice.length, FileReader.prototype.readAsText.length],
       };`,
    );
    expect(got).toEqual({
      sizes: [5, 4, 4, 1, 4, 6, 6],
      lastModified: [0, 0, 4096, -(2 ** 63), -(2 ** 53)],
      order: ['name', 'endings', 'type', 'lastModified'],
      file: [-1, 'ab', 'text/plain'],
      fromFunction: 'fn',
      lengths: [0, 2, 0, 1],
    });
  });

  it('a File in a FormData upload reaches the vendor with its name escaped as the HTML form encoding says', async () => {
    await value(
      'blob_upload_names',
      `const form = new FormData();
       form.append('line\\nbreak "q"', 'one\\ntwo');
       form.append('file', new File(['data'], 'a"b\\r\\nc.txt', { type: 'text/plain' }));
       return (await fetch(base + '/upload', { method: 'POST', body: form })).status;`,
    );
    const body = Buffer.from(seen.at(-1)!.bytes).toString('utf8');
    expect(body).toContain('Content-Disposition: form-data; name="line%0D%0Abreak %22q%22"\r\n\r\none\r\ntwo\r\n');
    expect(body).toContain('Content-Disposition: form-data; name="file"; filename="a%22b%0D%0Ac.txt"\r\nContent-Type: text/plain\r\n\r\ndata\r\n');
  });
});
