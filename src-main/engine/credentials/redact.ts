/** Secrets shorter than this are not looked for: they would match ordinary text. */
const MIN_SECRET_LENGTH = 4;

/**
 * The forms of `secret` the product recognises: raw, JSON-escaped (also with `\/`, and with `\u`
 * escapes as Go, Python, PHP and .NET write them), URL-encoded (also as a form field; hex digits in
 * either case), hex, its UTF-8 bytes read as latin1 (an HTTP header), and base64 (standard and
 * URL-safe). Base64 of the secret inside a longer base64 text depends on where
 * in a 3-byte group it starts, so each of the three alignments gives the characters that only the
 * secret's bytes determine.
 */
export function secretForms(secret: string): string[] {
  const bytes = Buffer.from(secret);
  const form = new URLSearchParams([['', secret]]).toString().slice(1);
  const lowerHex = (s: string) => s.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
  const forms = new Set([secret, bytes.toString('latin1'), encodeURIComponent(secret), lowerHex(encodeURIComponent(secret)), form, lowerHex(form)]);
  forms.add(bytes.toString('hex')).add(bytes.toString('hex').toUpperCase()).add(bytes.toString('base64'));
  const escaped = (s: string, chars: RegExp, upper = false) =>
    s.replace(chars, (c) => {
      const hex = c.charCodeAt(0).toString(16).padStart(4, '0');
      return `\\u${upper ? hex.toUpperCase() : hex}`;
    });
  const json = JSON.stringify(secret).slice(1, -1);
  const jsons = [
    json,
    escaped(json, /[<>&\u2028\u2029]/g), // Go
    escaped(json, /[\u0080-\uffff]/g), // Python, PHP
    escaped(json, /[<>&\u2028\u2029\u0080-\uffff]/g),
    escaped(json.replace(/\\"/g, '"'), /["+<>&'`\u0080-\uffff]/g, true), // .NET System.Text.Json
  ];
  for (const j of jsons) forms.add(j).add(j.split('/').join('\\/'));
  for (let shift = 0; shift < 3; shift++) {
    const shifted = Buffer.concat([Buffer.alloc(shift), bytes]).toString('base64');
    const core = shifted.slice(Math.ceil((8 * shift) / 6), Math.floor((8 * (shift + bytes.length)) / 6));
    forms.add(core);
    forms.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...forms].filter((f) => f.length >= MIN_SECRET_LENGTH);
}

/** How many secrets' forms are kept worked out: every run that reads a response redacts all the stored secrets, which rarely change. */
const FORMS_KEPT = 64;
const formsKept = new Map<string, readonly string[]>();

/** secretForms of a secret the redactor is given, worked out once while it is among the last FORMS_KEPT. */
function storedForms(secret: string): readonly string[] {
  let forms = formsKept.get(secret);
  if (forms === undefined) {
    formsKept.set(secret, (forms = secretForms(secret)));
    if (formsKept.size > FORMS_KEPT) formsKept.delete(formsKept.keys().next().value!);
  }
  return forms;
}

interface Needle {
  needle: string;
  label: string;
}

/**
 * Replaces every occurrence of the run's secrets (in the forms of secretForms) in what crosses
 * into the sandbox (response bodies, headers, messages) and in text leaving a run (logs, traces,
 * results, error messages).
 */
export class Redactor {
  readonly #needles: Needle[] = [];
  readonly #known = new Set<string>();
  /** Longest first (a secret inside a longer one's form is replaced with the longer); sorted when next used. */
  #sorted = true;

  add(name: string, secret: string): void {
    if (secret.length < MIN_SECRET_LENGTH) return;
    const label = `[redacted:${name}]`;
    for (const needle of storedForms(secret)) {
      if (this.#known.has(needle)) continue;
      this.#known.add(needle);
      this.#needles.push({ needle, label });
      this.#sorted = false;
    }
  }

  get active(): boolean {
    return this.#needles.length > 0;
  }

  #ordered(): readonly Needle[] {
    if (!this.#sorted) this.#needles.sort((a, b) => b.needle.length - a.needle.length);
    this.#sorted = true;
    return this.#needles;
  }

  text(value: string): string {
    let out = value;
    for (const { needle, label } of this.#ordered()) if (out.includes(needle)) out = out.split(needle).join(label);
    return out;
  }

  /** Redacts inside any JSON value by redacting its serialized form. */
  json<T>(value: T): T {
    if (!this.active || value === undefined) return value;
    const text = JSON.stringify(value);
    const redacted = this.text(text);
    return redacted === text ? value : (JSON.parse(redacted) as T);
  }

  /** A redaction of one byte stream, with the secrets known now. */
  stream(): StreamRedaction {
    return new StreamRedaction(this.#ordered());
  }
}

/** Base64 is wrapped in lines at least this long (PEM 64, MIME 76) for a secret across a break to be found. */
const MIN_WRAP = 60;

/**
 * Redacts a byte stream chunk by chunk: what it gives back never holds a secret, and a secret
 * split across chunks is still found, since the bytes that could start one are held back until
 * the next chunk (or the end) decides. A needle of base64 characters is also found across line
 * breaks, as base64 is wrapped in MIME and PEM.
 */
export class StreamRedaction {
  readonly #needles: Array<{ bytes: Buffer; label: Buffer; wraps: boolean }>;
  /** The longest span a needle can take (with line breaks) less one: a tail this long may be the start of a secret. */
  readonly #hold: number;
  /** The needles by their first byte. */
  readonly #starting: Array<Array<{ bytes: Buffer; wraps: boolean }> | undefined> = [];
  #carry: Buffer = Buffer.alloc(0);
  /** Whether a secret was replaced (the body's length may have changed). */
  replaced = false;

  constructor(needles: readonly Needle[]) {
    this.#needles = needles.map((n) => ({ bytes: Buffer.from(n.needle), label: Buffer.from(n.label), wraps: /^[A-Za-z0-9+/_-]+$/.test(n.needle) }));
    this.#hold = Math.max(0, ...this.#needles.map((n) => n.bytes.length - 1 + (n.wraps ? 2 * Math.ceil(n.bytes.length / MIN_WRAP) : 0)));
    for (const n of this.#needles) if (n.bytes.length > 0) (this.#starting[n.bytes[0]!] ??= []).push(n);
  }

  push(chunk: Uint8Array): Buffer {
    if (this.#needles.length === 0) return Buffer.from(chunk);
    return this.#scan(this.#carry.length === 0 ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([this.#carry, chunk]), false);
  }

  end(): Buffer {
    return this.#scan(this.#carry, true);
  }

  #scan(buf: Buffer, final: boolean): Buffer {
    const out: Buffer[] = [];
    let pos = 0;
    // `buf` without its CR and LF bytes, and where each of its bytes is in `buf`.
    let flat: Buffer | undefined;
    let where: Int32Array | undefined;
    if (this.#needles.some((n) => n.wraps) && (buf.includes(10) || buf.includes(13))) {
      flat = Buffer.allocUnsafe(buf.length);
      where = new Int32Array(buf.length);
      let n = 0;
      for (let i = 0; i < buf.length; i++) {
        if (buf[i] === 10 || buf[i] === 13) continue;
        flat[n] = buf[i]!;
        where[n++] = i;
      }
      flat = flat.subarray(0, n);
      where = where.subarray(0, n);
    }
    /** The first occurrence of needle `i` at or after `from`, as [start, end) in `buf`; start -1 when none. */
    const find = (i: number, from: number): [number, number] => {
      const { bytes, wraps } = this.#needles[i]!;
      if (!flat || !where || !wraps) {
        const at = buf.indexOf(bytes, from);
        return [at, at + bytes.length];
      }
      let lo = 0;
      for (let hi = where.length; lo < hi; ) {
        const mid = (lo + hi) >> 1;
        if (where[mid]! < from) lo = mid + 1;
        else hi = mid;
      }
      const at = flat.indexOf(bytes, lo);
      return at < 0 ? [-1, 0] : [where[at]!, where[at + bytes.length - 1]! + 1];
    };
    const next = this.#needles.map((_, i) => find(i, 0));
    // Held back: only a tail that could be the start of a secret (so a short event of a stream is not kept waiting for the next).
    const held = final ? buf.length : this.#heldFrom(buf);
    for (;;) {
      // The leftmost occurrence; of two at the same place, the longer.
      let best = -1;
      for (let i = 0; i < next.length; i++) {
        const [at, end] = next[i]!;
        if (at >= 0 && (best < 0 || at < next[best]![0] || (at === next[best]![0] && end > next[best]![1]))) best = i;
      }
      // A match this near the end may be the inside of a longer secret the next chunk completes.
      if (best < 0 || (!final && next[best]![0] >= held)) break;
      const [at, end] = next[best]!;
      this.replaced = true;
      out.push(buf.subarray(pos, at), this.#needles[best]!.label);
      pos = end;
      for (let i = 0; i < next.length; i++) if (next[i]![0] >= 0 && next[i]![0] < pos) next[i] = find(i, pos);
    }
    const safe = final ? buf.length : Math.max(pos, held);
    out.push(buf.subarray(pos, safe));
    this.#carry = Buffer.from(buf.subarray(safe));
    return Buffer.concat(out);
  }

  /** Where the first tail of `buf` starts that a secret (or one wrapped across lines) could begin with and the next chunk complete; buf.length when none. */
  #heldFrom(buf: Buffer): number {
    for (let i = Math.max(0, buf.length - this.#hold); i < buf.length; i++) {
      for (const { bytes, wraps } of this.#starting[buf[i]!] ?? []) if (this.#tailMatches(buf, i, bytes, wraps)) return i;
    }
    return buf.length;
  }

  /** Whether buf[from..] (without line breaks when `wraps`) is a prefix of `needle` that the next chunk may complete. */
  #tailMatches(buf: Buffer, from: number, needle: Buffer, wraps: boolean): boolean {
    let k = 0;
    for (let j = from; j < buf.length; j++) {
      if (wraps && (buf[j] === 10 || buf[j] === 13)) continue;
      if (k >= needle.length || buf[j] !== needle[k]) return false;
      k++;
    }
    return k < needle.length;
  }
}
