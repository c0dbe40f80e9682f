// ctx.secret(NAME): a stand-in for a credential's secret that a function hands to an SDK or puts in a
// header it builds, without ever holding the secret. The engine mints one per credential per run;
// the guarded fetch (and the deployed egress Worker, which bundles this module) swaps it for the
// secret only in header values and query parameter values of requests to that credential's own
// hosts, and refuses it anywhere else, in any encoding it knows.
import { hostMatches, isHostPatternError, parseHostPattern, StudioError, type HostPattern } from '../model/index.ts';
import { secretForms } from './redact.ts';

export const PLACEHOLDER_PREFIX = 'callable_secret_';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 22 base62 characters hold 130 bits: the placeholder cannot be guessed. */
const RANDOM_CHARS = 22;
const ANY_PLACEHOLDER = new RegExp(`${PLACEHOLDER_PREFIX}[0-9A-Za-z]{${RANDOM_CHARS}}`, 'g');

const reversed = (s: string): string => [...s].reverse().join('');
/** The forms a placeholder is looked for in: raw, JSON, URL-encoded, hex, base64 (secretForms), reversed, and in one case (a header name is lowercased). */
const formsOf = (text: string): string[] => [...new Set([...secretForms(text), reversed(text), text.toLowerCase(), text.toUpperCase()])];
/** Every form of a placeholder holds a form of the prefix: a text without one holds no placeholder. */
const PREFIX_FORMS = formsOf(PLACEHOLDER_PREFIX).map((f) => Buffer.from(f));
/** The same forms as text: all ASCII, so a string holds one exactly when its UTF-8 bytes do. */
const PREFIX_TEXTS = PREFIX_FORMS.map((f) => f.toString('latin1'));

/** Letters and digits only, so any SDK takes it as a key and no URL or header encoding changes it. */
export function mintPlaceholder(): string {
  let out = PLACEHOLDER_PREFIX;
  while (out.length < PLACEHOLDER_PREFIX.length + RANDOM_CHARS) {
    // 248 = 4 × 62: bytes below it map evenly onto the alphabet.
    for (const byte of crypto.getRandomValues(new Uint8Array(32))) if (byte < 248 && out.length < PLACEHOLDER_PREFIX.length + RANDOM_CHARS) out += ALPHABET[byte % 62];
  }
  return out;
}

export interface Minted {
  name: string;
  placeholder: string;
  hosts: HostPattern[];
  /** The credential's hosts as the user wrote them, for messages. */
  hostsText: readonly string[];
  readonly forms: Buffer[];
}

/** A placeholder found in some text: one of this run's, or one this run did not make (another run's, or made up). */
export type Found = { minted: Minted } | { foreign: true };

/** The label a placeholder is replaced with where it is kept (traces, recordings, logs of a refused run). */
export const maskLabel = (name: string): string => `[ctx.secret:${name}]`;

/** One run's placeholders: minted when the run starts, forgotten with it (so they mean nothing in any other run). */
export class RunPlaceholders {
  readonly #minted = new Map<string, Minted>();

  mint(name: string, hosts: readonly string[]): string {
    return this.adopt(name, hosts, mintPlaceholder());
  }

  /** Knows a placeholder minted elsewhere for this run (the deployed gateway mints, its egress Worker swaps). */
  adopt(name: string, hosts: readonly string[], placeholder: string): string {
    const patterns = hosts.map(parseHostPattern).filter((p): p is HostPattern => !isHostPatternError(p));
    // Its forms are worked out the first time a text holds a form of the prefix: most runs' texts hold none.
    let forms: Buffer[] | undefined;
    this.#minted.set(placeholder, {
      name,
      placeholder,
      hosts: patterns,
      hostsText: hosts,
      get forms() {
        return (forms ??= formsOf(placeholder).map((f) => Buffer.from(f)));
      },
    });
    return placeholder;
  }

  /** The run's placeholders and their credentials, as [placeholder, name] pairs. */
  pairs(): Array<[string, string]> {
    return [...this.#minted.values()].map((m) => [m.placeholder, m.name]);
  }

  /** A placeholder in any known form in `text` (this run's first), or undefined. */
  find(text: string | Uint8Array): Found | undefined {
    // Most texts hold no form of the prefix: a string is looked at as it is, without encoding it first.
    if (typeof text === 'string' && (this.#minted.size === 0 ? !text.includes(PLACEHOLDER_PREFIX) : !PREFIX_TEXTS.some((f) => text.includes(f)))) return undefined;
    const bytes = typeof text === 'string' ? Buffer.from(text) : Buffer.from(text.buffer, text.byteOffset, text.byteLength);
    // With none of its own, a run looks only for other runs' placeholders as-is: one scan of a large body, not one per form.
    if (this.#minted.size === 0 ? !bytes.includes(PLACEHOLDER_PREFIX) : !PREFIX_FORMS.some((f) => bytes.includes(f))) return undefined;
    for (const m of this.#minted.values()) if (m.forms.some((f) => bytes.includes(f))) return { minted: m };
    const raw = bytes.toString('latin1');
    for (const match of raw.matchAll(ANY_PLACEHOLDER)) if (!this.#minted.has(match[0])) return { foreign: true };
    return undefined;
  }

  /** This run's placeholders that appear as-is in `text`. */
  rawIn(text: string): Minted[] {
    if (!text.includes(PLACEHOLDER_PREFIX)) return [];
    return [...this.#minted.values()].filter((m) => text.includes(m.placeholder));
  }

  /**
   * `text` with each of this run's placeholders that appears as-is replaced by `secretOf(name)`;
   * what is left is checked for any other form of a placeholder (encoded, reversed, not this run's).
   */
  swap(text: string, secretOf: (name: string) => string): { text: string; left: Found | undefined } {
    let out = text;
    for (const m of this.rawIn(text)) out = out.split(m.placeholder).join(secretOf(m.name));
    // Looked for in what the function wrote, less the placeholders as-is: a secret's own characters are not its business.
    let rest = text;
    for (const m of this.rawIn(text)) rest = rest.split(m.placeholder).join(' ');
    return { text: out, left: this.find(rest) };
  }

  /** `text` with every placeholder (this run's in any form, and any other as-is) replaced by its label. */
  mask(text: string): string {
    if (!PREFIX_TEXTS.some((f) => text.includes(f))) return text;
    let out = text;
    for (const m of this.#minted.values()) for (const f of m.forms) out = out.split(f.toString('latin1')).join(maskLabel(m.name));
    return out.replace(ANY_PLACEHOLDER, maskLabel('another run'));
  }

  /** `value` with every placeholder in it masked (through its JSON text). */
  maskJson<T>(value: T): T {
    if (value === undefined) return value;
    const text = JSON.stringify(value);
    const masked = this.mask(text);
    return masked === text ? value : (JSON.parse(masked) as T);
  }

  /** Whether `minted` may be sent to the host of `url`. */
  static allows(minted: Minted, url: URL): boolean {
    const defaultPort = url.protocol === 'https:' ? 443 : 80;
    return minted.hosts.some((h) => hostMatches(h, url.hostname, url.port === '' ? defaultPort : Number(url.port), defaultPort));
  }
}

const BASIC = /^(basic +)([A-Za-z0-9+/]+={0,2})$/i;
/**
 * A `Basic` header value's decoded `user:password` (RFC 7617), when its base64 is standard and exact:
 * SDKs (Twilio, Mailgun) build it themselves from the key they are given, so a placeholder in it is as-is.
 */
function basicCredentials(value: string): { scheme: string; decoded: string } | undefined {
  const match = BASIC.exec(value);
  if (!match) return undefined;
  const bytes = Buffer.from(match[2]!, 'base64');
  if (bytes.toString('base64') !== match[2]) return undefined;
  const decoded = bytes.toString('latin1');
  return decoded.includes(':') ? { scheme: match[1]!, decoded } : undefined;
}

/** This run's placeholders in a header value as-is, or inside its `Basic` credentials. */
const rawInHeader = (placeholders: RunPlaceholders, value: string): Minted[] => {
  const basic = basicCredentials(value);
  return basic ? placeholders.rawIn(basic.decoded) : placeholders.rawIn(value);
};

/** A header value with this run's placeholders swapped for `secretOf(name)`, inside `Basic` credentials re-encoded. */
export function swapHeader(placeholders: RunPlaceholders, value: string, secretOf: (name: string) => string): string {
  const basic = basicCredentials(value);
  if (!basic) return placeholders.swap(value, secretOf).text;
  const decoded = placeholders.swap(basic.decoded, (name) => Buffer.from(secretOf(name)).toString('latin1')).text;
  return basic.scheme + Buffer.from(decoded, 'latin1').toString('base64');
}

/** Where in a request's headers or body a placeholder may not be (anywhere but a header value as-is, or in its `Basic` credentials). */
export function requestProblem(placeholders: RunPlaceholders, headers: Iterable<[string, string]>, body: Uint8Array | undefined): { found: Found; place: string } | undefined {
  for (const [name, value] of headers) {
    const inName = placeholders.find(name);
    if (inName) return { found: inName, place: 'the name of a header' };
    const inValue = placeholders.swap(basicCredentials(value)?.decoded ?? value, () => '').left;
    if (inValue) return { found: inValue, place: `the "${name}" header in a form other than as-is (encoded, reversed or from another run)` };
  }
  const inBody = body && placeholders.find(body);
  return inBody ? { found: inBody, place: 'the request body' } : undefined;
}

/**
 * One hop's headers with the placeholders they hold, checked against the hop's host. A placeholder
 * towards a host its credential does not name is refused on the first hop; on a redirect, a header
 * that holds one is left out (as Authorization is on a cross-origin redirect), while a query that
 * holds one (the vendor's own Location) is refused.
 */
export function hopPlan(
  placeholders: RunPlaceholders,
  headers: Iterable<[string, string]>,
  url: URL,
  hop: number,
): { headers: Array<[string, string]>; used: string[]; refused?: { found: Found; place: string } } {
  const elsewhere = (m: Minted, place: string) => ({ found: { minted: m }, place: `${place} of a request to ${url.host}, which is not one of its hosts` });
  const kept: Array<[string, string]> = [];
  const used = new Set<string>();
  for (const [name, value] of headers) {
    const inValue = rawInHeader(placeholders, value);
    const stray = inValue.find((m) => !RunPlaceholders.allows(m, url));
    if (stray && hop === 0) return { headers: [], used: [], refused: elsewhere(stray, `the "${name}" header`) };
    if (stray) continue;
    for (const m of inValue) used.add(m.name);
    kept.push([name, value]);
  }
  const inQuery = placeholders.rawIn(url.search);
  const strayQuery = inQuery.find((m) => !RunPlaceholders.allows(m, url));
  if (strayQuery) return { headers: [], used: [], refused: elsewhere(strayQuery, 'a query parameter') };
  for (const m of inQuery) used.add(m.name);
  return { headers: kept, used: [...used] };
}

/**
 * The one message for a placeholder where it may not go: which credential, where it was found, and
 * what happened instead (`outcome`, e.g. "nothing was sent").
 */
export function placeholderRefusal(found: Found, place: string, outcome: string): StudioError {
  if ('foreign' in found) {
    return new StudioError(
      'credential_refused',
      `a ctx.secret() placeholder this run did not make was found in ${place}, so ${outcome}: a placeholder is valid only in the run that made it; call ctx.secret() in each run`,
    );
  }
  const { name, hostsText } = found.minted;
  return new StudioError(
    'credential_refused',
    `ctx.secret("${name}") was found in ${place}, so ${outcome}: it stands for the secret of credential "${name}" only in header values and query parameters of requests to ${hostsText.join(', ')}`,
    { credential: name },
  );
}

/**
 * `search` (a URL's query, with its "?") with this run's placeholders in parameter values replaced
 * by `secretOf(name)`, URL-encoded; every other byte of the query is kept as the function wrote it.
 */
export function swapQuery(placeholders: RunPlaceholders, search: string, secretOf: (name: string) => string): string {
  if (placeholders.rawIn(search).length === 0) return search;
  const pairs = search.slice(1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    if (eq < 0) return pair;
    return pair.slice(0, eq + 1) + placeholders.swap(pair.slice(eq + 1), (name) => encodeURIComponent(secretOf(name))).text;
  });
  return `?${pairs.join('&')}`;
}

/**
 * Where in `url` a placeholder may not be: anywhere but a query parameter's value as-is. Returns
 * the place and what was found, or undefined.
 */
export function urlProblem(placeholders: RunPlaceholders, url: URL): { found: Found; place: string } | undefined {
  const decoded = (s: string): string => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      return s;
    }
  };
  const outside = `${url.username}:${url.password}@${url.host}`;
  const checks: Array<[string, string]> = [
    [outside, 'the URL\'s host or user name'],
    [url.pathname, 'the URL path'],
    [decoded(url.pathname), 'the URL path'],
    [url.hash, 'the URL fragment'],
  ];
  for (const pair of url.search.slice(1).split('&')) {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    checks.push([name, 'a query parameter name'], [decoded(name), 'a query parameter name']);
    if (eq >= 0) {
      const value = pair.slice(eq + 1);
      const plain = decoded(value);
      // Percent-encoding a placeholder's letters hides it from the swap: that is a form other than as-is too.
      const hidden = placeholders.rawIn(plain).find((m) => plain.split(m.placeholder).length !== value.split(m.placeholder).length);
      const left = hidden ? { minted: hidden } : (placeholders.swap(value, () => '').left ?? placeholders.swap(plain, () => '').left);
      if (left) return { found: left, place: 'a query parameter value in a form other than as-is (encoded, reversed or from another run)' };
    }
  }
  for (const [text, place] of checks) {
    const found = placeholders.find(text);
    if (found) return { found, place };
  }
  return undefined;
}
