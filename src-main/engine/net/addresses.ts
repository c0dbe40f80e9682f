import ipaddr from 'ipaddr.js';

/** Public addresses that still reach a cloud provider's metadata or control plane. */
const METADATA_ADDRESSES = new Set(['168.63.129.16', '100.100.100.200', '169.254.169.254', 'fd00:ec2::254', '169.254.170.2']);

/** Ranges a literal address may be in when the allow-list names it exactly (local mock servers). */
const LOCAL_WHEN_NAMED = new Set(['loopback', 'private', 'uniqueLocal']);

export type AddressVerdict = { allowed: true; address: string; family: 4 | 6 } | { allowed: false; address: string; reason: string };

/**
 * Classifies one resolved or literal address. Only global unicast is allowed, except that a
 * loopback or private literal that the allow-list names exactly (`namedLiteral`) is allowed too.
 * IPv4-mapped, IPv4-compatible, NAT64 and 6to4 forms are refused outright: each can smuggle an
 * IPv4 address past a check that only looks at the IPv6 range.
 */
export function classifyAddress(address: string, namedLiteral: boolean): AddressVerdict {
  // A verdict depends only on its two arguments: the addresses a process talks to are few, and asked for on every request.
  const key = `${namedLiteral ? '1' : '0'}${address}`;
  let verdict = verdicts.get(key);
  if (verdict === undefined) {
    verdict = Object.freeze(classify(address, namedLiteral));
    verdicts.set(key, verdict);
    if (verdicts.size > VERDICTS_KEPT) verdicts.delete(verdicts.keys().next().value!);
  }
  return verdict;
}

const VERDICTS_KEPT = 512;
const verdicts = new Map<string, Readonly<AddressVerdict>>();

function classify(address: string, namedLiteral: boolean): AddressVerdict {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return { allowed: false, address, reason: `"${address}" is not an IP address` };
  }
  const normalized = parsed.toString();
  const range = parsed.range();
  const family = parsed.kind() === 'ipv4' ? 4 : 6;
  if (METADATA_ADDRESSES.has(normalized)) {
    return { allowed: false, address: normalized, reason: `${normalized} is a cloud metadata address` };
  }
  if (range === 'unicast') return { allowed: true, address: normalized, family };
  if (namedLiteral && LOCAL_WHEN_NAMED.has(range)) return { allowed: true, address: normalized, family };
  const hint = LOCAL_WHEN_NAMED.has(range)
    ? ' (a local mock server is reachable only by its literal address named in allowedHosts, e.g. 127.0.0.1:8080)'
    : '';
  return { allowed: false, address: normalized, reason: `${normalized} is a ${describeRange(range)} address${hint}` };
}

function describeRange(range: string): string {
  switch (range) {
    case 'loopback':
      return 'loopback';
    case 'private':
    case 'uniqueLocal':
      return 'private-network';
    case 'linkLocal':
      return 'link-local';
    case 'carrierGradeNat':
      return 'carrier-grade NAT';
    case 'unspecified':
      return 'unspecified';
    case 'multicast':
      return 'multicast';
    case 'broadcast':
      return 'broadcast';
    case 'ipv4Mapped':
      return 'IPv4-mapped IPv6';
    case 'rfc6145':
    case 'rfc6052':
      return 'IPv4-translated IPv6';
    case '6to4':
    case 'teredo':
      return 'IPv6 tunnel';
    default:
      return `reserved (${range})`;
  }
}

export function isIpLiteral(hostname: string): boolean {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) && (bare.includes(':') || /^\d{1,3}(\.\d{1,3}){3}$/.test(bare));
}

export function unbracket(hostname: string): string {
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
}
