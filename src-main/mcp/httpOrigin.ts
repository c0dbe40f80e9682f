/**
 * The Origin allow-list of the HTTP MCP server. An origin is compared as scheme + host + port, in
 * the form browsers send it: lower-case scheme and host, no default port, nothing after the host.
 * A page of the server's own loopback address and port (http://127.0.0.1:PORT, http://localhost:PORT,
 * http://[::1]:PORT) is not cross-origin and passes; any other browser page (even
 * http://localhost:3000) is refused unless its origin was listed. Requests without an Origin
 * (agents, command-line clients) are not browser requests and are not affected.
 */

/** The canonical form of an origin (`http://localhost:6274`), or why the text is not one. */
export function normalizeOrigin(text: string): { origin: string } | { error: string } {
  const value = text.trim();
  if (value.toLowerCase() === 'null') return { error: 'the "null" origin (sandboxed pages, files) is never accepted' };
  if (value === '*') return { error: '"*" is not accepted: list each origin' };
  const shape = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)\/?$/i.exec(value);
  if (!shape) return { error: `"${text}" is not an origin: write scheme://host[:port], with no path, query or fragment` };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { error: `"${text}" is not an origin: write scheme://host[:port]` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { error: `"${text}" is not an http or https origin` };
  if (url.username !== '' || url.password !== '' || shape[2]!.includes('@')) return { error: `"${text}" is not an origin: it has a user name` };
  if (url.hostname === '') return { error: `"${text}" is not an origin: it has no host` };
  // URL lower-cases the scheme and host and drops a default port (:80 for http, :443 for https).
  return { origin: `${url.protocol}//${url.host}` };
}

/** The canonical origins of a list, or the first entry's error (for a one-line usage message). */
export function parseAllowedOrigins(values: readonly string[]): { origins: string[] } | { error: string } {
  const origins: string[] = [];
  for (const value of values) {
    const parsed = normalizeOrigin(value);
    if ('error' in parsed) return parsed;
    if (!origins.includes(parsed.origin)) origins.push(parsed.origin);
  }
  return { origins };
}

/** The origins of a server listening on a loopback address at `port`: its own pages, not cross-origin. */
export function sameHostOrigins(port: number): string[] {
  return [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`];
}

/**
 * Whether a request's Origin header(s) may pass: none at all, or exactly one whose canonical form
 * is on the list. An Origin a browser would never send (a path, a trailing slash) is refused
 * rather than normalised, so only the exact serialisation of an allowed origin passes.
 */
export function originAllowed(headers: readonly string[] | undefined, allowed: ReadonlySet<string>): { ok: true } | { ok: false; message: string } {
  if (headers === undefined || headers.length === 0) return { ok: true };
  if (headers.length > 1) return { ok: false, message: 'Forbidden: more than one Origin header' };
  const value = headers[0]!;
  const parsed = normalizeOrigin(value);
  if ('error' in parsed || parsed.origin !== value) {
    return { ok: false, message: 'Forbidden: the Origin header is not a plain scheme://host[:port] origin' };
  }
  if (!allowed.has(parsed.origin)) {
    return { ok: false, message: `Forbidden: origin ${parsed.origin} is not on this server's allow-list (callable serve --allow-origin ORIGIN adds one)` };
  }
  return { ok: true };
}
