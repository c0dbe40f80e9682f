import { randomBytes } from 'node:crypto';

/** What the host answers an operation of the prelude: a value, or an error the guest sees. */
export type HostAnswer = { ok: true; value?: unknown } | { ok: false; error: { code?: string; message: string } };

const URL_PARTS = new Set(['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash']);

export function refusal(message: string, code = 'bad_input'): HostAnswer {
  return { ok: false, error: { code, message } };
}

/** Host operations that need no run: random bytes and URL parsing. Never throws. */
export function pureHostOp(op: unknown, a?: unknown, b?: unknown, c?: unknown, d?: unknown): HostAnswer {
  switch (op) {
    case 'random': {
      const n = typeof a === 'number' && Number.isInteger(a) && a >= 0 && a <= 65536 ? a : -1;
      if (n < 0) return refusal('random: bad length');
      return { ok: true, value: new Uint8Array(randomBytes(n)) };
    }
    case 'url':
      return parseUrl(a, b, c, d);
    default:
      return refusal('unknown host operation');
  }
}

function parseUrl(href: unknown, base: unknown, part: unknown, value: unknown): HostAnswer {
  if (typeof href !== 'string' || (base !== undefined && typeof base !== 'string')) return refusal('URL: expected strings');
  let url: URL;
  try {
    url = base === undefined ? new URL(href) : new URL(href, base);
  } catch {
    return { ok: false, error: { code: 'bad_input', message: `Invalid URL: ${href.slice(0, 200)}` } };
  }
  if (part !== undefined) {
    if (typeof part !== 'string' || !URL_PARTS.has(part) || typeof value !== 'string') return refusal('URL: bad property');
    try {
      (url as unknown as Record<string, string>)[part] = value;
    } catch {
      return { ok: false, error: { code: 'bad_input', message: `Invalid URL: ${value.slice(0, 200)}` } };
    }
  }
  const { href: h, origin, protocol, username, password, host, hostname, port, pathname, search, hash } = url;
  return { ok: true, value: { href: h, origin, protocol, username, password, host, hostname, port, pathname, search, hash } };
}

