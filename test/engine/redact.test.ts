// The redactor (src-main/engine/credentials/redact.ts) on bytes: every form of every secret is
// found, wherever a body is cut into chunks, and the output is the same bytes as in one piece. A
// vendor echoing secrets to a real run is in echoedSecrets.test.ts and echoedSecretsAttacks.test.ts.
import { describe, expect, it } from 'vitest';
import { Redactor, secretForms } from '../../src-main/engine/credentials/redact.ts';

const rand = () => Math.random().toString(36).slice(2, 10);
/** Has the characters URL, form and base64 encodings change. */
const SECRET = `sk/live+${rand()}=key!`;
const OTHER = `other/${rand()}+secret`;
/** Lowercase letters and digits only: it can be a header name, or a host name label. */
const TOKEN = `tok${rand()}${rand()}`;
/** Has the characters Go's encoding/json writes as \u0026, \u003c, \u003e. */
const HTML = `k&e<y>${rand()}`;
/** Non-ASCII: Python's json.dumps writes it as \u00e9; an HTTP header carries its UTF-8 bytes. */
const ACCENT = `clé-${rand()}`;
const SECRETS = { vendor: SECRET, token: TOKEN, html: HTML, accent: ACCENT };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const reversed = (s: string) => [...s].reverse().join('');
const codes = (s: string) => Array.from(s, (c) => c.charCodeAt(0)).join(',');
/** Base64 wrapped at 76 columns with CRLF, as MIME (and PEM at 64) write it. */
const mime = (bytes: Buffer) => bytes.toString('base64').replace(/.{76}(?=.)/g, '$&\r\n');
/** What a function could make of a secret: none of it may be left in a redacted body. */
const RECOVERED = [SECRET, OTHER].flatMap((s) => [s, reversed(s), b64(s), codes(s), encodeURIComponent(s)]);

function expectNoSecret(text: string, where: string): void {
  for (const form of RECOVERED) expect(text.includes(form), `${where} holds ${form}`).toBe(false);
}

describe('redaction of a byte stream', () => {
  const redactor = new Redactor();
  redactor.add('vendor', SECRET);
  redactor.add('other', OTHER);
  const body = Buffer.from(`{"a":"${SECRET}","b":"${b64(`user:${SECRET}`)}","c":"${encodeURIComponent(OTHER)}","d":"${b64(`xy${OTHER}`)}"}`);
  const whole = (() => {
    const r = redactor.stream();
    return Buffer.concat([r.push(body), r.end()]).toString();
  })();

  it('finds every form of every secret', () => {
    expectNoSecret(whole, 'the body');
    for (const secret of [SECRET, OTHER]) for (const form of secretForms(secret)) expect(whole.includes(form), form).toBe(false);
    expect(whole.match(/\[redacted:vendor\]/g)).toHaveLength(2);
    expect(whole.match(/\[redacted:other\]/g)).toHaveLength(2);
  });

  it('finds a secret split across chunks at any byte, and gives the same bytes as in one piece', () => {
    for (let cut = 1; cut < body.length; cut++) {
      const r = redactor.stream();
      const out = Buffer.concat([r.push(body.subarray(0, cut)), r.push(body.subarray(cut)), r.end()]).toString();
      expect(out, `cut at ${cut}`).toBe(whole);
    }
    // One byte at a time.
    const r = redactor.stream();
    const parts = [...body].map((byte) => r.push(Buffer.from([byte])));
    expect(Buffer.concat([...parts, r.end()]).toString()).toBe(whole);
  });
});

describe('a secret that is a substring of another secret', () => {
  const INNER = `inner${rand()}`;
  const OUTER = `${rand()}${INNER}${rand()}`;
  const redactor = new Redactor();
  redactor.add('inner', INNER);
  redactor.add('outer', OUTER);
  const body = Buffer.from(`<${OUTER}>`);

  it('the longer wins, wherever a chunk ends (even right after the shorter one)', () => {
    for (let cut = 1; cut < body.length; cut++) {
      const r = redactor.stream();
      const out = Buffer.concat([r.push(body.subarray(0, cut)), r.push(body.subarray(cut)), r.end()]).toString();
      expect(out, `cut at ${cut}`).toBe('<[redacted:outer]>');
    }
    expect(redactor.text(body.toString())).toBe('<[redacted:outer]>');
  });
});

describe('a body cut into many chunks at random places', () => {
  it('gives the same bytes as in one piece, for overlapping secrets, base64 across line breaks and every encoding', () => {
    const INNER = `inner${rand()}`;
    const OUTER = `${rand()}${INNER}${rand()}`;
    const redactor = new Redactor();
    for (const [name, secret] of Object.entries({ ...SECRETS, inner: INNER, outer: OUTER })) redactor.add(name, secret);
    const body = Buffer.from(
      [`<${INNER}>`, `<${OUTER}>`, `[${rand()}${INNER}`, encodeURIComponent(SECRET).toLowerCase(), mime(Buffer.from(`${'m'.repeat(55)}${SECRET}${'n'.repeat(30)}`)), Buffer.from(TOKEN).toString('hex'), JSON.stringify(ACCENT)].join(' | '),
    );
    const whole = (() => {
      const r = redactor.stream();
      return Buffer.concat([r.push(body), r.end()]).toString();
    })();
    // A fixed sequence (a linear congruential generator), so a failure can be replayed.
    let seed = 12345;
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let round = 0; round < 300; round++) {
      const r = redactor.stream();
      const out: Buffer[] = [];
      for (let at = 0; at < body.length; ) {
        const size = 1 + next(12);
        out.push(r.push(body.subarray(at, at + size)));
        at += size;
      }
      out.push(r.end());
      expect(Buffer.concat(out).toString(), `round ${round}`).toBe(whole);
    }
    expect(whole).not.toContain(INNER);
    expect(whole).toContain('<[redacted:outer]>');
    // The secret inside the MIME base64 is found across its line break.
    expect(whole.match(/\[redacted:vendor\]/g)).toHaveLength(2);
  });
});

describe('base64 wrapped in lines, cut into chunks', () => {
  it('is found across the line break wherever a chunk ends', () => {
    const redactor = new Redactor();
    redactor.add('vendor', SECRET);
    for (const lead of [54, 55, 56]) {
      const body = Buffer.from(mime(Buffer.from(`${'m'.repeat(lead)}${SECRET}${'n'.repeat(30)}`)));
      const whole = (() => {
        const r = redactor.stream();
        return Buffer.concat([r.push(body), r.end()]).toString();
      })();
      expect(whole).toContain('[redacted:vendor]');
      for (let cut = 1; cut < body.length; cut++) {
        const r = redactor.stream();
        expect(Buffer.concat([r.push(body.subarray(0, cut)), r.push(body.subarray(cut)), r.end()]).toString(), `cut at ${cut}`).toBe(whole);
      }
    }
  });
});
