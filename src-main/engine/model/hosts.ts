/**
 * Host patterns as written in `allowedHosts` and credential hosts: `api.example.com`,
 * `*.example.com`, either with an optional `:port`, or a literal address such as
 * `127.0.0.1:8080` / `[::1]:8080` (the only way to reach a local mock server).
 * Pure: uses only the WHATWG URL parser, which the renderer has too.
 */
export interface HostPattern {
  /** Lower-case hostname without the `*.` prefix; IPv6 literals keep their brackets. */
  host: string;
  wildcard: boolean;
  /** Explicit port, or undefined for the scheme's default port. */
  port: number | undefined;
  /** True for an IPv4 or IPv6 literal. */
  literal: boolean;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

export function parseHostPattern(raw: string): HostPattern | { error: string } {
  const text = raw.trim().toLowerCase();
  if (text === '') return { error: 'a host pattern may not be empty' };
  if (/[/?#@\s]/.test(text) || text.includes('://')) {
    return { error: `"${raw}" is not a host pattern: write a host name such as api.example.com, *.example.com or 127.0.0.1:8080, without scheme or path` };
  }
  const wildcard = text.startsWith('*.');
  const rest = wildcard ? text.slice(2) : text;
  if (rest.includes('*')) return { error: `"${raw}": a wildcard is only allowed as a leading "*." (e.g. *.example.com)` };
  let url: URL;
  try {
    url = new URL(`https://${rest}`);
  } catch {
    return { error: `"${raw}" is not a valid host name` };
  }
  const host = url.hostname;
  const portText = /:(\d+)$/.exec(rest)?.[1];
  const port = portText === undefined ? undefined : Number(portText);
  if (port !== undefined && (port < 1 || port > 65535)) return { error: `"${raw}": port must be 1-65535` };
  const literal = host.startsWith('[') || IPV4.test(host);
  if (literal && wildcard) return { error: `"${raw}": a wildcard cannot be combined with an address` };
  if (!literal) {
    const labels = host.split('.');
    if (labels.length < 1 || !labels.every((l) => LABEL.test(l))) return { error: `"${raw}" is not a valid host name` };
    if (wildcard && labels.length < 2) return { error: `"${raw}": a wildcard needs at least two labels after it (e.g. *.example.com)` };
  }
  return { host, wildcard, port, literal };
}

export function isHostPatternError(p: HostPattern | { error: string }): p is { error: string } {
  return 'error' in p;
}

/** Does `pattern` cover this hostname (lower-case, as URL.hostname gives it) and port? */
export function hostMatches(pattern: HostPattern, hostname: string, port: number, defaultPort: number): boolean {
  const wantPort = pattern.port ?? defaultPort;
  if (port !== wantPort) return false;
  if (pattern.wildcard) return hostname.endsWith(`.${pattern.host}`);
  return hostname === pattern.host;
}
