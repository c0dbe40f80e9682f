import { describe, expect, it } from 'vitest';
import { defineFunction, testEngine } from '../support/engine.ts';

// The Encoding standard's TextEncoder/TextDecoder, URL and URLSearchParams (URL standard) and
// Headers (Fetch standard) inside the sandbox, each run in a real sandbox through the engine.
const engine = testEngine();

/** Runs `body` (the statements of an async handler `(args, ctx)`) and returns its value; fails the test on a failed run. */
async function value(name: string, body: string): Promise<any> {
  await defineFunction(engine, { name }, `export default async (args, ctx) => { ${body} }`);
  const result = await engine.run(name, {}, { caller: 'test' });
  expect(result.ok, JSON.stringify(result)).toBe(true);
  return (result as { value: unknown }).value;
}

/** `error.name: message` of what `fn` throws, inside the function's source. */
const THROWN = `const thrown = (fn) => { try { fn(); return 'no error'; } catch (e) { return e.name + ': ' + e.message; } };`;

describe('TextDecoder', () => {
  it('decodes a UTF-8 sequence split across {stream: true} calls as one character, and flushes a cut-off one as U+FFFD', async () => {
    const got = await value(
      'stream_utf8',
      `const d = new TextDecoder();
       // U+1F600 is F0 9F 98 80; U+20AC is E2 82 AC.
       const parts = [d.decode(new Uint8Array([0x41, 0xf0]), { stream: true }), d.decode(new Uint8Array([0x9f]), { stream: true }),
                      d.decode(new Uint8Array([0x98, 0x80, 0xe2]), { stream: true }), d.decode(new Uint8Array([0x82, 0xac]))];
       d.decode(new Uint8Array([0xe2, 0x82]), { stream: true });
       const flushed = d.decode();
       const after = d.decode(new Uint8Array([0x42]));
       const wholeAtOnce = new TextDecoder().decode(new Uint8Array([0xf0, 0x9f, 0x41]));
       return { parts, flushed, after, wholeAtOnce };`,
    );
    expect(got.parts).toEqual(['A', '', '\u{1F600}', '\u20AC']);
    expect(got.flushed).toBe('\uFFFD');
    expect(got.after).toBe('B');
    // A sequence broken by an ASCII byte: one U+FFFD for the broken part, then the byte itself.
    expect(got.wholeAtOnce).toBe('\uFFFDA');
  });

  it('decodes UTF-16LE and UTF-16BE, pairs split across calls included, and lone surrogates as U+FFFD', async () => {
    const got = await value(
      'stream_utf16',
      `const le = new TextDecoder('utf-16le');
       // U+1D11E is D834 DD1E.
       const split = [le.decode(new Uint8Array([0x34]), { stream: true }), le.decode(new Uint8Array([0xd8, 0x1e]), { stream: true }), le.decode(new Uint8Array([0xdd, 0x41, 0x00]))];
       const be = new TextDecoder('UTF-16BE').decode(new Uint8Array([0x00, 0x48, 0x00, 0x69]));
       const lone = new TextDecoder('utf-16le').decode(new Uint8Array([0x00, 0xd8, 0x41, 0x00]));
       const oddByte = new TextDecoder('utf-16le').decode(new Uint8Array([0x41, 0x00, 0x42]));
       return { split, be, lone, oddByte, label: new TextDecoder('utf-16').encoding };`,
    );
    expect(got.split).toEqual(['', '', '\u{1D11E}A']);
    expect(got.be).toBe('Hi');
    expect(got.lone).toBe('\uFFFDA');
    expect(got.oddByte).toBe('A\uFFFD');
    expect(got.label).toBe('utf-16le');
  });

  it('with fatal: bad or cut-off input is a TypeError, and the next decode starts afresh', async () => {
    const got = await value(
      'fatal',
      `${THROWN}
       const d = new TextDecoder('utf-8', { fatal: true });
       const bad = thrown(() => d.decode(new Uint8Array([0x61, 0xff])));
       const afterBad = d.decode(new Uint8Array([0x62]));
       d.decode(new Uint8Array([0xc3]), { stream: true });
       const cutOff = thrown(() => d.decode());
       const surrogate = thrown(() => d.decode(new Uint8Array([0xed, 0xa0, 0x80])));
       const overlong = thrown(() => d.decode(new Uint8Array([0xc0, 0x80])));
       const utf16 = thrown(() => new TextDecoder('utf-16be', { fatal: true }).decode(new Uint8Array([0xdc, 0x00])));
       return { bad, afterBad, cutOff, surrogate, overlong, utf16, flags: [d.fatal, d.ignoreBOM, new TextDecoder().fatal] };`,
    );
    expect(got.bad).toBe('TypeError: The encoded data was not valid UTF-8.');
    expect(got.afterBad).toBe('b');
    expect(got.cutOff).toMatch(/^TypeError/);
    expect(got.surrogate).toMatch(/^TypeError/);
    expect(got.overlong).toMatch(/^TypeError/);
    expect(got.utf16).toBe('TypeError: The encoded data was not valid UTF-16.');
    expect(got.flags).toEqual([true, false, false]);
  });

  it('drops one byte order mark at the start of a stream (also split across calls), and keeps it with ignoreBOM', async () => {
    const got = await value(
      'bom',
      `const bom = [0xef, 0xbb, 0xbf];
       const d = new TextDecoder();
       const split = d.decode(new Uint8Array([0xef]), { stream: true }) + d.decode(new Uint8Array([0xbb, 0xbf, 0x61]), { stream: true }) + d.decode(new Uint8Array([...bom, 0x62]));
       const again = d.decode(new Uint8Array([...bom, 0x63]));
       const kept = new TextDecoder('utf-8', { ignoreBOM: true }).decode(new Uint8Array([...bom, 0x64]));
       const le = new TextDecoder('utf-16le').decode(new Uint8Array([0xff, 0xfe, 0x65, 0x00]));
       const beAsLe = new TextDecoder('utf-16le').decode(new Uint8Array([0xfe, 0xff, 0x00, 0x66]));
       return { split, again, kept, le, beAsLe };`,
    );
    // Only the first BOM goes; a later U+FEFF is text.
    expect(got.split).toBe('a\uFEFFb');
    expect(got.again).toBe('c');
    expect(got.kept).toBe('\uFEFFd');
    expect(got.le).toBe('e');
    // A UTF-16BE BOM read as UTF-16LE is U+FFFE, a character, not a BOM.
    expect(got.beAsLe).toBe('\uFFFE\u6600');
  });

  it('takes labels as the standard lists them, and says which encodings it does not decode', async () => {
    const got = await value(
      'labels',
      `${THROWN}
       const names = [' UTF8\\n', 'unicode-1-1-utf-8', 'Unicode20UTF8', 'ucs-2', 'unicodeFFFE'].map((l) => new TextDecoder(l).encoding);
       return { names, vtab: thrown(() => new TextDecoder('\\vutf-8')), multiByte: thrown(() => new TextDecoder('shift_jis')),
                replacement: thrown(() => new TextDecoder('iso-2022-kr')), options: thrown(() => new TextDecoder('utf-8', 5)),
                input: thrown(() => new TextDecoder().decode('text')) };`,
    );
    expect(got.names).toEqual(['utf-8', 'utf-8', 'utf-8', 'utf-16le', 'utf-16be']);
    expect(got.vtab).toMatch(/^RangeError/);
    expect(got.multiByte).toBe(
      'RangeError: TextDecoder: "shift_jis" is not an encoding this sandbox decodes; use utf-8, utf-16le, utf-16be or a single-byte encoding such as windows-1252 (the legacy multi-byte encodings shift_jis, euc-jp, iso-2022-jp, gbk, gb18030, big5 and euc-kr are not supported)',
    );
    expect(got.replacement).toMatch(/^RangeError/);
    expect(got.options).toMatch(/^TypeError/);
    expect(got.input).toMatch(/^TypeError/);
  });

  it('decodes the single-byte legacy encodings by their index: latin1 is windows-1252, an unmapped byte is U+FFFD or fatal, no BOM is dropped', async () => {
    const got = await value(
      'single_byte',
      `${THROWN}
       const latin1 = new TextDecoder('latin1');
       const koi = new TextDecoder('koi8-r');
       return { latin1: [latin1.encoding, latin1.decode(new Uint8Array([0x80, 0x41, 0xe9, 0x9f]))], koi: koi.decode(new Uint8Array([0xc1, 0xc2])),
                unmapped: new TextDecoder('iso-8859-3').decode(new Uint8Array([0xa5])), fatal: thrown(() => new TextDecoder('iso-8859-3', { fatal: true }).decode(new Uint8Array([0xa5]))),
                bom: new TextDecoder('windows-1252').decode(new Uint8Array([0xef, 0xbb, 0xbf])), userDefined: new TextDecoder('x-user-defined').decode(new Uint8Array([0x61, 0x80, 0xff])) };`,
    );
    expect(got.latin1).toEqual(['windows-1252', '\u20ACA\u00E9\u0178']);
    expect(got.koi).toBe('\u0430\u0431');
    expect(got.unmapped).toBe('\uFFFD');
    expect(got.fatal).toBe('TypeError: The encoded data was not valid iso-8859-3.');
    expect(got.bom).toBe('\u00EF\u00BB\u00BF');
    expect(got.userDefined).toBe('a\uF780\uF7FF');
  });

  it('reads any BufferSource: an ArrayBuffer, a DataView or typed array window, a SharedArrayBuffer', async () => {
    const got = await value(
      'sources',
      `const bytes = new TextEncoder().encode('xhéllo!');
       const d = new TextDecoder();
       return [d.decode(bytes.buffer), d.decode(new DataView(bytes.buffer, 1, 6)), d.decode(new Uint16Array(bytes.buffer, 0, 3)),
               typeof SharedArrayBuffer === 'function' ? (() => { const s = new SharedArrayBuffer(3); new Uint8Array(s).set([0x61, 0x62, 0x63]); return d.decode(s); })() : 'abc'];`,
    );
    expect(got).toEqual(['xhéllo!', 'héllo', 'xhéll', 'abc']);
  });

  it('TextDecoderStream shares the decoder: UTF-16 and split sequences through a stream', async () => {
    const got = await value(
      'decoder_stream',
      `const out = [];
       const s = new TextDecoderStream('utf-16be');
       const w = s.writable.getWriter();
       w.write(new Uint8Array([0xd8])); w.write(new Uint8Array([0x34, 0xdd])); w.write(new Uint8Array([0x1e])); w.close();
       const r = s.readable.getReader();
       for (;;) { const { done, value } = await r.read(); if (done) break; out.push(value); }
       return { text: out.join(''), encoding: s.encoding };`,
    );
    expect(got).toEqual({ text: '\u{1D11E}', encoding: 'utf-16be' });
  });
});

describe('TextEncoder.encodeInto', () => {
  it('writes only whole characters that fit, counts UTF-16 units read, and writes U+FFFD for a lone surrogate', async () => {
    const got = await value(
      'encode_into',
      `const e = new TextEncoder();
       const small = new Uint8Array(5);
       const r1 = e.encodeInto('a\u{1F600}b', small);
       const window = new Uint8Array(8).fill(0xaa);
       const r2 = e.encodeInto('\\ud800z', window.subarray(2, 6));
       return { r1, small: [...small], r2, window: [...window], notBytes: (() => { try { e.encodeInto('x', new Uint16Array(2)); return 'no error'; } catch (x) { return x.name; } })() };`,
    );
    // The emoji is 2 UTF-16 units and 4 bytes: it fits after 'a', then 'b' does not.
    expect(got.r1).toEqual({ read: 3, written: 5 });
    expect(got.small).toEqual([0x61, 0xf0, 0x9f, 0x98, 0x80]);
    expect(got.r2).toEqual({ read: 2, written: 4 });
    expect(got.window).toEqual([0xaa, 0xaa, 0xef, 0xbf, 0xbd, 0x7a, 0xaa, 0xaa]);
    expect(got.notBytes).toBe('TypeError');
  });
});

describe('URL and URLSearchParams', () => {
  it('parses and serializes application/x-www-form-urlencoded: + and %20, bad percent bytes, lone surrogates', async () => {
    const got = await value(
      'params_text',
      `const p = new URLSearchParams('?a=1+2&b=%2B&c=%FF%C3%A9&d=%zz&=e&f');
       const s = new URLSearchParams({ 'x y': '*~\\ud800', 'é': "a'b" });
       return { entries: [...p], text: s.toString(), size: p.size };`,
    );
    expect(got.entries).toEqual([['a', '1 2'], ['b', '+'], ['c', '\uFFFDé'], ['d', '%zz'], ['', 'e'], ['f', '']]);
    expect(got.text).toBe('x+y=*%7E%EF%BF%BD&%C3%A9=a%27b');
    expect(got.size).toBe(6);
  });

  it('set() gives the first pair of a name the value and drops the later ones, in URLSearchParams and Headers alike', async () => {
    const got = await value(
      'set_first',
      `const p = new URLSearchParams('a=1&b=2&a=3&c=4&a=5'); p.set('a', 'x'); p.set('d', 'y');
       const h = new Headers([['a', '1'], ['b', '2'], ['a', '3']]); h.set('a', 'x'); h.set('d', 'y');
       return { params: p.toString(), headers: [...h] };`,
    );
    expect(got).toEqual({ params: 'a=x&b=2&c=4&d=y', headers: [['a', 'x'], ['b', '2'], ['d', 'y']] });
  });

  it('builds from a record, a list of pairs or another URLSearchParams, and rejects pairs that are not pairs', async () => {
    const got = await value(
      'params_init',
      `${THROWN}
       const fromPairs = new URLSearchParams([['a', '1'], ['a', '2']]);
       return { record: [...new URLSearchParams({ b: 2, a: 1 })], copy: [...new URLSearchParams(fromPairs)], bad: thrown(() => new URLSearchParams([['a']])),
                symbol: thrown(() => new URLSearchParams({ [Symbol('s')]: 1 })) };`,
    );
    expect(got.record).toEqual([['b', '2'], ['a', '1']]);
    expect(got.copy).toEqual([['a', '1'], ['a', '2']]);
    expect(got.bad).toMatch(/^TypeError/);
    expect(got.symbol).toMatch(/^TypeError/);
  });

  it('has and delete match a value when given one, sort is stable by name, and iteration sees changes made while iterating', async () => {
    const got = await value(
      'params_ops',
      `const p = new URLSearchParams('z=1&a=2&z=3&a=4');
       const has = [p.has('z', '3'), p.has('z', '9'), p.has('z')];
       p.delete('z', '1');
       const afterDelete = p.toString();
       p.sort();
       const sorted = p.toString();
       const url = new URL('https://example.com/?a=1&b=2&c=3');
       const seen = [];
       for (const [k] of url.searchParams) { seen.push(k); if (k === 'a') url.search = '?x=1&y=2'; }
       return { has, afterDelete, sorted, seen, href: url.href };`,
    );
    expect(got.has).toEqual([true, false, true]);
    expect(got.afterDelete).toBe('a=2&z=3&a=4');
    expect(got.sorted).toBe('a=2&a=4&z=3');
    expect(got.seen).toEqual(['a', 'y']);
    expect(got.href).toBe('https://example.com/?x=1&y=2');
  });

  it('a string that is not a URL is a TypeError; only the href setter throws, other setters leave the URL as it was', async () => {
    const got = await value(
      'url_errors',
      `${THROWN}
       const u = new URL('https://example.com:8080/p?q#h');
       u.port = 'not a port';
       const href = thrown(() => { u.href = 'nope'; });
       u.searchParams.append('k', 'v w');
       return { ctor: thrown(() => new URL('/relative')), canParse: [URL.canParse('/x', 'https://a.test'), URL.canParse('/x')], parse: URL.parse('nope'),
                href, after: u.href, name: URL.name, length: URL.length, tag: Object.prototype.toString.call(u.searchParams) };`,
    );
    expect(got.ctor).toBe('TypeError: Invalid URL: /relative');
    expect(got.canParse).toEqual([true, false]);
    expect(got.parse).toBeNull();
    expect(got.href).toBe('TypeError: Invalid URL: nope');
    expect(got.after).toBe('https://example.com:8080/p?q=&k=v+w#h');
    expect([got.name, got.length, got.tag]).toEqual(['URL', 1, '[object URLSearchParams]']);
  });
});

describe('Headers', () => {
  it('combines values for get, keeps Set-Cookie values apart, and iterates sorted with set-cookie unjoined', async () => {
    const got = await value(
      'headers_combine',
      `const h = new Headers([['X-B', '1'], ['set-cookie', 'a=1'], ['x-b', '2'], ['Set-Cookie', 'b=2'], ['a', 'z']]);
       return { get: [h.get('x-b'), h.get('SET-COOKIE')], cookies: h.getSetCookie(), entries: [...h], keys: [...h.keys()] };`,
    );
    expect(got.get).toEqual(['1, 2', 'a=1, b=2']);
    expect(got.cookies).toEqual(['a=1', 'b=2']);
    expect(got.entries).toEqual([['a', 'z'], ['set-cookie', 'a=1'], ['set-cookie', 'b=2'], ['x-b', '1, 2']]);
    expect(got.keys).toEqual(['a', 'set-cookie', 'set-cookie', 'x-b']);
  });

  it('normalizes values, rejects bad names and values with a TypeError, and allows names a browser forbids', async () => {
    const got = await value(
      'headers_validate',
      `${THROWN}
       const h = new Headers();
       h.set('x', ' \\t v \\f\\t');
       h.append('Cookie', 'c=1'); h.append('Host', 'example.com');
       return { value: h.get('x'), forbidden: [h.get('cookie'), h.get('host')],
                lf: thrown(() => h.set('x', 'a\\nb')), nul: thrown(() => h.append('x', 'a\\0')), wide: thrown(() => h.set('x', 'Ā')),
                name: thrown(() => h.set('bad name', 'v')), nullInit: thrown(() => new Headers(null)) };`,
    );
    // Only HTTP whitespace (tab, space, CR, LF) is trimmed; a form feed stays.
    expect(got.value).toBe('v \f');
    expect(got.forbidden).toEqual(['c=1', 'example.com']);
    expect(got.lf).toBe('TypeError: Headers: a header value cannot contain NUL, CR or LF');
    expect(got.nul).toMatch(/^TypeError/);
    expect(got.wide).toMatch(/^TypeError: .*above U\+00FF/);
    expect(got.name).toBe('TypeError: Headers: "bad name" is not a valid header name');
    expect(got.nullInit).toMatch(/^TypeError/);
  });

  it('iteration reads the live list: a header deleted ahead is skipped, one appended ahead is reached', async () => {
    const got = await value(
      'headers_live',
      `const h = new Headers({ a: '1', b: '2', c: '3' });
       const seen = [];
       for (const [k] of h) { seen.push(k); if (k === 'a') { h.delete('b'); h.append('d', '4'); } }
       const it = h.entries();
       return { seen, proto: Object.getPrototypeOf(Object.getPrototypeOf(it)) === Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())),
                tag: Object.prototype.toString.call(it) };`,
    );
    expect(got.seen).toEqual(['a', 'c', 'd']);
    expect(got.proto).toBe(true);
    expect(got.tag).toBe('[object Headers Iterator]');
  });
});
