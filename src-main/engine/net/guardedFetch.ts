import { lookup as dnsLookup } from 'node:dns/promises';
import type { IncomingMessage } from 'node:http';
import type { LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';
import { hopPlan, placeholderRefusal, requestProblem, swapHeader, swapQuery, urlProblem, type RunPlaceholders } from '../credentials/placeholders.ts';
import type { Redactor } from '../credentials/redact.ts';
import type { ResponseSink } from '../sandbox/protocol.ts';
import { hostMatches, isHostPatternError, parseHostPattern, StudioError, type HostPattern, type IncomingResponse, type OutgoingRequest, type TraceEntry } from '../model/index.ts';
import { notAllowedHostReason } from '../model/toolResults.ts';
import { classifyAddress, isIpLiteral, unbracket } from './addresses.ts';

// Not ES imports: node:http's module namespace reads its lazy exports, loading undici (~100 ms of the first run).
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');

/** How long a kept connection waits for its next request (under Node's servers' 5 s, as undici's fetch). */
const KEEP_ALIVE_MS = 4000;
/** Kept connections per name (one checked address, port, TLS name and credential set). */
const MAX_FREE_PER_NAME = 8;

/**
 * What a kept-alive connection is filed under, beyond Node's host, port and TLS options: the address
 * the egress check passed (the socket was connected to it, so a name that now resolves elsewhere
 * never gets it) and the credentials the request carries (a connection a vendor authenticated with
 * one is never lent to a request without it).
 */
interface PinnedOptions {
  pin: string;
}
const pinnedName = (name: string, options: unknown): string => `${name}|${(options as Partial<PinnedOptions>).pin ?? ''}`;

class PinnedHttpAgent extends http.Agent {
  override getName(options?: import('node:http').ClientRequestArgs): string {
    return pinnedName(super.getName(options), options);
  }
}

class PinnedHttpsAgent extends https.Agent {
  override getName(options?: import('node:https').RequestOptions): string {
    return pinnedName(super.getName(options), options);
  }
}

const agentOptions = { keepAlive: true, timeout: KEEP_ALIVE_MS, maxFreeSockets: MAX_FREE_PER_NAME, scheduling: 'lifo' as const };
let agents: { http: import('node:http').Agent; https: import('node:https').Agent } | undefined;

/** Methods a request may be sent again for when a kept connection turned out closed before it was answered (RFC 9110 §9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

/** Resolves a hostname to every address it has. Injected so tests can make a name resolve anywhere. */
export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** How long a name's addresses are used before it is resolved again (as long as a kept connection waits for its next request). */
const RESOLVED_MS = KEEP_ALIVE_MS;
/** Names remembered per resolver at most (the oldest goes first). */
const MAX_RESOLVED_NAMES = 256;
type Addresses = ReadonlyArray<Readonly<{ address: string; family: number }>>;
type Resolved = { at: number; addresses: Promise<Addresses> };
const resolvedNames = new WeakMap<Resolver, Map<string, Resolved>>();

/**
 * The name's addresses from `resolver`, asked again once RESOLVED_MS have passed (a redirect hop to
 * the same host and the next request to it do not wait for DNS; lookups at the same time share
 * one). Only the lookup is kept: every use classifies the addresses again and the connection is
 * pinned to the one checked, so a cached answer is checked exactly as a fresh one. A failed or
 * empty lookup is not kept.
 */
function lookup(resolver: Resolver, hostname: string): Promise<Addresses> {
  let names = resolvedNames.get(resolver);
  if (!names) resolvedNames.set(resolver, (names = new Map()));
  const now = performance.now();
  const kept = names.get(hostname);
  if (kept && now - kept.at < RESOLVED_MS) return kept.addresses;
  if (kept) names.delete(hostname);
  // Frozen: callers at the same time share the one answer.
  const addresses: Promise<Addresses> = resolver(hostname).then((list) => Object.freeze(list.map((a) => Object.freeze({ address: a.address, family: a.family }))));
  const entry: Resolved = { at: now, addresses };
  names.set(hostname, entry);
  if (names.size > MAX_RESOLVED_NAMES) names.delete(names.keys().next().value!);
  addresses.then(
    (list) => {
      if (list.length === 0 && names.get(hostname) === entry) names.delete(hostname);
    },
    () => {
      if (names.get(hostname) === entry) names.delete(hostname);
    },
  );
  return addresses;
}

/** What a credential adds to a request that is allowed to carry it. */
export interface CredentialInjection {
  name: string;
  hosts: HostPattern[];
  header?: [string, string];
  query?: [string, string];
  secret: string;
  /** An OAuth credential's: a newer token after the host answered 401 to this one. */
  refresh?: () => Promise<CredentialInjection>;
}

export interface FetchPolicy {
  allowedHosts: readonly string[];
  maxResponseBytes: number;
  /** Resolves a credential the function asked for, or throws (credential_refused, keychain_unavailable). */
  credential: (name: string) => Promise<CredentialInjection>;
  resolver: Resolver;
  signal: AbortSignal;
  /** Called once per hop, and once per refusal. */
  trace: (entry: TraceEntry) => void;
  /**
   * Replaces the data folder's stored secrets in every response (its body as it streams in, its
   * header values, status text and URL) before the function is given it. Asked once a response
   * arrives; when it rejects (the keychain cannot be read) the response is not given.
   */
  redaction?: (() => Promise<Redactor>) | undefined;
  /**
   * The run's ctx.secret() placeholders: swapped for their secret in header values and query
   * parameter values of requests to their credential's hosts (read through `credential`), and
   * refused anywhere else before anything is sent.
   */
  placeholders?: RunPlaceholders | undefined;
  /** Given the final response as it arrives (its head, then its body redacted chunk by chunk, within the limit). */
  stream?: ResponseSink | undefined;
}

/** What a refused placeholder did not get to do. */
const NOT_SENT = 'nothing was sent';

const MANAGED_HEADERS = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'expect',
]);
const MAX_REDIRECTS = 10;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** A function's allowedHosts parsed, once per list (a loaded function keeps its list until the catalog changes). */
const parsedLists = new WeakMap<readonly string[], HostPattern[]>();
function allowList(hosts: readonly string[]): HostPattern[] {
  let patterns = parsedLists.get(hosts);
  if (!patterns) parsedLists.set(hosts, (patterns = hosts.map((h) => parseHostPattern(h)).filter((p): p is HostPattern => !isHostPatternError(p))));
  return patterns;
}

/**
 * The one way out of the sandbox. Every hop is checked against the allow-list, resolved here,
 * classified, and the connection is pinned to the checked address; credentials are added here and
 * only towards their own hosts. Refusals are `egress_refused` errors; a body over the limit is
 * `response_too_large`.
 */
export async function guardedFetch(request: OutgoingRequest, policy: FetchPolicy): Promise<IncomingResponse> {
  const patterns = allowList(policy.allowedHosts);
  const method = request.method.toUpperCase();
  if (!/^[A-Z]{1,20}$/.test(method)) throw refusedEarly(policy, request, `"${request.method}" is not an HTTP method`);
  const headers: Array<[string, string]> = [];
  for (const [name, value] of request.headers) {
    const lower = name.toLowerCase();
    // SDKs (stripe) set Content-Length themselves; like undici, one that is exactly the body's length is accepted and the host writes its own.
    if (lower === 'content-length') {
      const length = request.body?.byteLength ?? 0;
      if (value.trim() === String(length)) continue;
      throw refusedEarly(policy, request, `the "${name}" header says ${JSON.stringify(value)} but the body is ${length} bytes; remove the header (the host sets it) or make it match`);
    }
    if (MANAGED_HEADERS.has(lower) || lower.startsWith('proxy-')) {
      throw refusedEarly(policy, request, `the "${name}" header is set by the host, not by the function; remove it`);
    }
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || /[\r\n\0]/.test(value)) {
      throw refusedEarly(policy, request, `header "${name}" has an invalid name or value`);
    }
    headers.push([name, value]);
  }
  const misplaced = policy.placeholders && requestProblem(policy.placeholders, headers, request.body);
  if (misplaced) throw refusedEarly(policy, request, placeholderRefusal(misplaced.found, misplaced.place, NOT_SENT).message);
  let held = request.credential === undefined ? undefined : await policy.credential(request.credential);
  let refreshed = false;

  let url = request.url;
  let currentMethod = method;
  let body = request.body;
  let redirectFrom: string | undefined;
  let carryAuthorization = true;
  for (let hop = 0; ; hop++) {
    const started = performance.now();
    const injection = held;
    const target = checkUrl(url, patterns, policy, request, redirectFrom);
    if (injection && !injection.hosts.some((h) => hostMatches(h, target.hostname, target.port, target.defaultPort))) {
      if (hop === 0) {
        throw refused(policy, request, target.display, redirectFrom, `credential "${injection.name}" may only be sent to ${injection.hosts.map(describePattern).join(', ')}`);
      }
    }
    const inUrl = policy.placeholders && urlProblem(policy.placeholders, target.url);
    if (inUrl) throw refused(policy, request, target.display, redirectFrom, placeholderRefusal(inUrl.found, inUrl.place, NOT_SENT).message);
    const address = await resolveChecked(target, policy, request, redirectFrom);
    const swapped = policy.placeholders ? await swapPlaceholders(policy.placeholders, headers, target, hop, policy, request, redirectFrom) : undefined;
    const sendCredential = injection !== undefined && injection.hosts.some((h) => hostMatches(h, target.hostname, target.port, target.defaultPort));
    // A copy only when this hop changes the URL (a placeholder swapped in the query, a credential's parameter).
    const changesUrl = (swapped !== undefined && swapped.search !== target.url.search) || (sendCredential && injection.query !== undefined);
    const outUrl = changesUrl ? new URL(target.url.href) : target.url;
    if (swapped && changesUrl) outUrl.search = swapped.search;
    const outHeaders: Record<string, string> = {};
    for (const [name, value] of swapped?.headers ?? headers) {
      if (!carryAuthorization && (name.toLowerCase() === 'authorization' || name.toLowerCase() === 'cookie')) continue;
      outHeaders[name.toLowerCase()] = outHeaders[name.toLowerCase()] === undefined ? value : `${outHeaders[name.toLowerCase()]}, ${value}`;
    }
    if (sendCredential && injection.header) outHeaders[injection.header[0].toLowerCase()] = injection.header[1];
    if (sendCredential && injection.query) outUrl.searchParams.set(injection.query[0], injection.query[1]);
    outHeaders['accept-encoding'] ??= 'gzip, deflate, br';
    outHeaders['user-agent'] ??= 'CallableStudio/0.1';
    if (body !== undefined) outHeaders['content-length'] = String(body.byteLength);

    const entry: TraceEntry = {
      method: currentMethod,
      url: target.display,
      ms: 0,
      bytesOut: body?.byteLength ?? 0,
      bytesIn: 0,
      ...(sendCredential || swapped?.used.length ? { credential: [...(sendCredential ? [injection.name] : []), ...(swapped?.used ?? [])].join(', ') } : {}),
      ...(redirectFrom ? { redirectFrom } : {}),
    };
    // Only a response that is the last hop streams: a redirect to follow or a 401 that may be retried is read whole.
    const last = (status: number, location: boolean) => status !== 401 && !(REDIRECT_STATUSES.has(status) && location && request.redirect !== 'manual');
    const streamTo = policy.stream && { to: policy.stream, last, url: target.display, redirected: hop > 0, given: false };
    let response: RawResponse;
    try {
      const pinned = { address: address.address, family: address.family, credentials: entry.credential ?? '', servername: target.literal ? undefined : target.hostname };
      response = await send(outUrl, currentMethod, outHeaders, body, pinned, policy, streamTo);
    } catch (error) {
      entry.ms = round(performance.now() - started);
      if (error instanceof StudioError) {
        entry.error = error.message;
        policy.trace(entry);
        throw error;
      }
      // An abort with a reason of its own (the function aborted this request) says so; any other is the run's end.
      const reason: unknown = policy.signal.reason;
      const ended = streamTo?.given ? 'the run ended before the response body arrived in full' : 'the run ended before the response arrived';
      const message = !policy.signal.aborted ? `request failed: ${(error as Error).message}` : reason instanceof StudioError ? reason.message : ended;
      entry.error = message;
      policy.trace(entry);
      // Socket errors name the address connected to ("connect ECONNREFUSED 10.0.0.5:443"): only the trace keeps it.
      const told = target.literal ? message : withoutAddresses(message, [address.address]);
      throw new StudioError('fetch_failed', `${currentMethod} ${target.display}: ${told}`);
    }
    entry.status = response.status;
    entry.bytesIn = response.bytesIn;
    entry.ms = round(performance.now() - started);
    policy.trace(entry);

    // A 401 to an OAuth token the host sent: one refresh, then the same request once more.
    if (response.status === 401 && !refreshed) {
      const used = [...(sendCredential ? [injection] : []), ...(await Promise.all((swapped?.used ?? []).map((name) => policy.credential(name))))];
      const refreshable = used.filter((i) => i.refresh !== undefined);
      if (refreshable.length > 0) {
        refreshed = true;
        for (const stale of refreshable) {
          const fresh = await stale.refresh!();
          if (stale === injection) held = fresh;
        }
        hop--;
        continue;
      }
    }

    const location = response.headers.find(([k]) => k === 'location')?.[1];
    if (!REDIRECT_STATUSES.has(response.status) || location === undefined || request.redirect === 'manual') {
      const shown = response.redactor ? response.redactor.text(target.display) : target.display;
      return { status: response.status, statusText: response.statusText, headers: response.headers, url: shown, redirected: hop > 0, body: response.body };
    }
    if (request.redirect === 'error') {
      throw new StudioError('fetch_failed', `${currentMethod} ${target.display} redirected to ${location} and the request said redirect: "error"`);
    }
    if (hop + 1 > MAX_REDIRECTS) throw new StudioError('fetch_failed', `${policy.placeholders?.mask(request.url) ?? request.url}: more than ${MAX_REDIRECTS} redirects`);
    let next: URL;
    try {
      next = new URL(location, target.url);
    } catch {
      throw new StudioError('fetch_failed', `${target.display} redirected to an invalid URL`);
    }
    if (next.origin !== target.url.origin) carryAuthorization = false;
    if (response.status === 303 || ((response.status === 301 || response.status === 302) && currentMethod === 'POST')) {
      currentMethod = currentMethod === 'HEAD' ? 'HEAD' : 'GET';
      body = undefined;
    }
    redirectFrom = target.display;
    url = next.href;
  }
}

/** One hop's headers and query with the run's placeholders swapped for their secrets, read as ctx.fetch's `credential:` is (listed, granted). */
async function swapPlaceholders(
  placeholders: RunPlaceholders,
  headers: ReadonlyArray<[string, string]>,
  target: CheckedUrl,
  hop: number,
  policy: FetchPolicy,
  request: OutgoingRequest,
  redirectFrom: string | undefined,
): Promise<{ headers: Array<[string, string]>; search: string; used: string[] }> {
  const plan = hopPlan(placeholders, headers, target.url, hop);
  if (plan.refused) throw refused(policy, request, target.display, redirectFrom, placeholderRefusal(plan.refused.found, plan.refused.place, NOT_SENT).message);
  if (plan.used.length === 0) return { headers: plan.headers, search: target.url.search, used: [] };
  const secrets = new Map<string, string>();
  for (const name of plan.used) secrets.set(name, (await policy.credential(name)).secret);
  const secretOf = (name: string) => secrets.get(name)!;
  return {
    headers: plan.headers.map(([name, value]) => [name, swapHeader(placeholders, value, secretOf)]),
    search: swapQuery(placeholders, target.url.search, secretOf),
    used: plan.used,
  };
}

interface CheckedUrl {
  url: URL;
  hostname: string;
  port: number;
  defaultPort: number;
  /** The URL as it may appear in traces and messages. */
  display: string;
  /** The host is an IP address, not a name. */
  literal: boolean;
  namedLiteral: boolean;
}

function checkUrl(raw: string, patterns: HostPattern[], policy: FetchPolicy, request: OutgoingRequest, redirectFrom: string | undefined): CheckedUrl {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refused(policy, request, String(raw).slice(0, 200), redirectFrom, `"${String(raw).slice(0, 200)}" is not an absolute URL`);
  }
  const written = `${url.protocol}//${url.host}${url.pathname}${url.search}`;
  const display = policy.placeholders ? policy.placeholders.mask(written) : written;
  if (url.username !== '' || url.password !== '') {
    throw refused(policy, request, display, redirectFrom, 'URLs with a user name or password are refused; use a credential instead');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw refused(policy, request, display, redirectFrom, `only https is allowed (got ${url.protocol})`);
  }
  const defaultPort = url.protocol === 'https:' ? 443 : 80;
  const port = url.port === '' ? defaultPort : Number(url.port);
  const hostname = url.hostname;
  const matching = patterns.filter((p) => hostMatches(p, hostname, port, defaultPort));
  if (matching.length === 0) {
    throw refused(policy, request, display, redirectFrom, notAllowedHostReason(url.host, patterns.map(describePattern)));
  }
  const literal = isIpLiteral(hostname);
  const namedLiteral = literal && matching.some((p) => p.literal && p.host === hostname);
  if (url.protocol === 'http:' && !namedLiteral) {
    throw refused(policy, request, display, redirectFrom, 'plain http is only allowed to a literal local address named in allowedHosts (e.g. 127.0.0.1:8080); use https');
  }
  return { url, hostname, port, defaultPort, display, literal, namedLiteral };
}

async function resolveChecked(target: CheckedUrl, policy: FetchPolicy, request: OutgoingRequest, redirectFrom: string | undefined): Promise<{ address: string; family: 4 | 6 }> {
  if (target.literal) {
    const verdict = classifyAddress(unbracket(target.hostname), target.namedLiteral);
    if (!verdict.allowed) throw refused(policy, request, target.display, redirectFrom, verdict.reason);
    return verdict;
  }
  let addresses: Addresses;
  try {
    addresses = await lookup(policy.resolver, target.hostname);
  } catch (error) {
    throw refused(policy, request, target.display, redirectFrom, `${target.hostname} could not be resolved (${(error as NodeJS.ErrnoException).code ?? 'DNS error'})`);
  }
  if (addresses.length === 0) throw refused(policy, request, target.display, redirectFrom, `${target.hostname} has no address`);
  let first: { address: string; family: 4 | 6 } | undefined;
  for (const { address } of addresses) {
    const verdict = classifyAddress(address, false);
    if (!verdict.allowed) {
      // The trace keeps the address; the function (and so an MCP client) is not told what the name resolves to.
      throw refused(policy, request, target.display, redirectFrom, `${target.hostname} resolves to ${verdict.reason}`, `${target.hostname} resolves to ${withoutAddresses(verdict.reason, [address, verdict.address])}`);
    }
    first ??= verdict;
  }
  return first!;
}

interface RawResponse {
  status: number;
  statusText: string;
  headers: Array<[string, string]>;
  body: Uint8Array;
  /** The body's size as the vendor sent it (decompressed), before redaction. */
  bytesIn: number;
  redactor: Redactor | undefined;
}

/** Content codings the host decodes; zstd where this Node has it. */
const DECODERS: Record<string, (() => Transform) | undefined> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
  zstd: (zlib as { createZstdDecompress?: () => Transform }).createZstdDecompress,
};

/** How far ahead of the function a streamed body is read from the vendor. */
const STREAM_WINDOW_BYTES = 1024 * 1024;
/** The largest frame of a streamed body sent at once (more waits for the next frame). */
const FRAME_BYTES = 256 * 1024;

/** Stacked content codings decoded at most (as undici's fetch): each is a decoder's memory and work. */
const MAX_CODINGS = 5;

/** The content codings of a Content-Encoding, outermost last. */
function codingsOf(header: string | undefined): string[] {
  return String(header ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
}

/** The decoders for `codings`, in the order to apply them; undefined for a coding the host cannot decode. */
function decodersFor(codings: string[]): Array<() => Transform> | undefined {
  const out: Array<() => Transform> = [];
  for (const coding of [...codings].reverse()) {
    const make = Object.hasOwn(DECODERS, coding) ? DECODERS[coding] : undefined;
    if (!make) return undefined;
    out.push(make);
  }
  return out;
}

function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: Uint8Array | undefined,
  pinned: { address: string; family: 4 | 6; credentials: string; servername: string | undefined },
  policy: FetchPolicy,
  streamTo?: { to: ResponseSink; last: (status: number, location: boolean) => boolean; url: string; redirected: boolean; given: boolean },
): Promise<RawResponse> {
  // The socket connects to the address that was checked, whatever DNS says now (no rebinding); a kept
  // connection is lent only under that address's name (PinnedOptions).
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  };
  const secure = url.protocol === 'https:';
  agents ??= { http: new PinnedHttpAgent(agentOptions), https: new PinnedHttpsAgent(agentOptions) };
  const pin: PinnedOptions = { pin: `${pinned.address}|${pinned.credentials}` };
  return new Promise<RawResponse>((resolve, reject) => {
    const attempt = (retried: boolean): void => {
      if (policy.signal.aborted) {
        reject(new Error('aborted'));
        return;
      }
      const options = { method, headers, lookup, agent: secure ? agents!.https : agents!.http, signal: policy.signal, servername: pinned.servername, ...pin };
      const req = secure ? https.request(url, options) : http.request(url, options);
      let answered = false;
      req.on('error', (error: NodeJS.ErrnoException) => {
        // A kept connection the vendor closed as the request went out: sent again once, on a new one, when that is safe.
        if (!answered && !retried && req.reusedSocket && IDEMPOTENT.has(method) && (error.code === 'ECONNRESET' || error.code === 'EPIPE') && !policy.signal.aborted) attempt(true);
        else reject(error);
      });
      req.on('response', (res) => {
        answered = true;
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > policy.maxResponseBytes) {
          res.destroy();
          reject(tooLarge(policy.maxResponseBytes, url));
          return;
        }
        const redaction = policy.redaction ? policy.redaction() : Promise.resolve(undefined);
        redaction.then(
          (redactor) => read(res, redactor),
          (error: unknown) => {
            res.destroy();
            reject(error as Error);
          },
        );
      });
      if (body !== undefined) req.end(body);
      else req.end();
    };
    const read = (res: IncomingMessage, redactor: Redactor | undefined): void => {
      const encoding = res.headers['content-encoding'];
      const codings = codingsOf(encoding);
      if (codings.length > MAX_CODINGS) {
        res.destroy();
        reject(new StudioError('fetch_failed', `${method} ${url.protocol}//${url.host}${url.pathname}: the response has ${codings.length} content codings stacked; the host decodes at most ${MAX_CODINGS}`));
        return;
      }
      const makers = decodersFor(codings);
      // A body the host cannot decode cannot be searched for secrets either: it is not given when there are secrets to look for.
      if (makers === undefined && redactor?.active) {
        res.destroy();
        reject(new StudioError('fetch_failed', `${method} ${url.protocol}//${url.host}${url.pathname}: the response is encoded as "${encoding}", which the host cannot decode to check it for secrets; send accept-encoding: gzip, deflate, br (or none)`));
        return;
      }
      const decoders = (makers ?? []).map((make) => make());
      const overLimit = () => {
        res.destroy();
        for (const decoder of decoders) decoder.destroy();
        reject(tooLarge(policy.maxResponseBytes, url));
      };
      let stream: Readable = res;
      for (const decoder of decoders) {
        decoder.on('error', reject);
        // A layer decoding past the limit is stopped even if the next would shrink it: the limit bounds the work.
        if (stream !== res) {
          let layer = 0;
          stream.on('data', (chunk: Buffer) => {
            layer += chunk.byteLength;
            if (layer > policy.maxResponseBytes) overLimit();
          });
        }
        stream = stream.pipe(decoder);
      }
      const redact = redactor?.active ? redactor.stream() : undefined;
      const shown = (text: string) => (redact ? redactor!.text(text) : text);
      const headersOut = (lengthChanged: boolean): Array<[string, string]> => {
        const out: Array<[string, string]> = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const raw = res.rawHeaders[i]!;
          const name = raw.toLowerCase();
          // A header name cannot hold [redacted:NAME] (it is not a token): a header named with a secret is left out.
          if (shown(raw) !== raw || shown(name) !== name) continue;
          if (decoders.length > 0 && name === 'content-encoding') continue;
          if ((decoders.length > 0 || lengthChanged) && name === 'content-length') continue;
          out.push([name, shown(res.rawHeaders[i + 1]!)]);
        }
        return out;
      };
      const sink = streamTo?.last(res.statusCode ?? 0, res.headers.location !== undefined) ? streamTo.to : undefined;
      // Streamed bytes the function has not taken yet: past the window the vendor is not read (a paused decoder holds back the socket too).
      let ahead = 0;
      let paused = false;
      // A streamed body goes to the sink in frames: what arrived in one turn of the event loop (up to
      // FRAME_BYTES) crosses as one message. The head waits for the end of the first turn: a body
      // complete by then is given whole, in one message, not streamed at all.
      let frame: Buffer[] = [];
      let frameBytes = 0;
      let flushing: NodeJS.Immediate | undefined;
      let ended = false;
      const flush = (): void => {
        if (flushing) clearImmediate(flushing);
        flushing = undefined;
        if (!sink || !streamTo || ended) return;
        if (!streamTo.given) {
          streamTo.given = true;
          const url = redactor ? redactor.text(streamTo.url) : streamTo.url;
          // Streamed, the head goes before redaction knows whether the length changes: it has no Content-Length when there are secrets to look for.
          sink.head(
            { status: res.statusCode ?? 0, statusText: shown(res.statusMessage ?? ''), headers: headersOut(redact !== undefined), url, redirected: streamTo.redirected },
            {
              taken: (bytes) => {
                ahead -= bytes;
                if (paused && ahead <= STREAM_WINDOW_BYTES) {
                  paused = false;
                  stream.resume();
                }
              },
            },
          );
        }
        if (frameBytes === 0) return;
        // Not copied: the channel writes a large frame's bytes as they are, and nothing writes to these buffers again.
        sink.chunk(frame.length === 1 ? frame[0]! : Buffer.concat(frame, frameBytes));
        ahead += frameBytes;
        frame = [];
        frameBytes = 0;
        if (ahead > STREAM_WINDOW_BYTES && !paused) {
          paused = true;
          stream.pause();
        }
      };
      if (sink) flushing = setImmediate(flush);
      const chunks: Buffer[] = [];
      const keep = (chunk: Buffer) => {
        chunks.push(chunk);
        if (!sink || chunk.byteLength === 0) return;
        frame.push(chunk);
        frameBytes += chunk.byteLength;
        if (frameBytes >= FRAME_BYTES) flush();
        else flushing ??= setImmediate(flush);
      };
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.byteLength;
        if (size > policy.maxResponseBytes) {
          if (flushing) clearImmediate(flushing);
          ended = true;
          overLimit();
          return;
        }
        keep(redact ? redact.push(chunk) : chunk);
      });
      res.on('error', (error) => {
        if (flushing) clearImmediate(flushing);
        ended = true;
        reject(error);
      });
      stream.on('end', () => {
        if (redact) keep(redact.end());
        // Streaming already: the rest goes as its last frame. Not yet: the whole response is the answer.
        if (streamTo?.given) flush();
        if (flushing) clearImmediate(flushing);
        ended = true;
        const replaced = redact?.replaced === true;
        resolve({ status: res.statusCode ?? 0, statusText: shown(res.statusMessage ?? ''), headers: headersOut(replaced), body: joined(chunks), bytesIn: size, redactor });
      });
    };
    attempt(false);
  });
}

/** The chunks in one new Uint8Array of its own (never a view of Node's shared pool): one copy. */
function joined(chunks: Buffer[]): Uint8Array {
  let size = 0;
  for (const c of chunks) size += c.byteLength;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

function tooLarge(limit: number, url: URL): StudioError {
  return new StudioError('response_too_large', `the response from ${url.host} is larger than the response body limit (${limit} bytes); raise limits.responseBytes if that is expected`, {
    limit: 'responseBytes',
  });
}

/** `text` with each of `addresses` replaced, for messages the function sees (the trace keeps them). */
function withoutAddresses(text: string, addresses: string[]): string {
  // A verdict starts with its address ("10.0.0.5 is a private-network address (…e.g. 127.0.0.1:8080)"):
  // only that address goes, not the advice's example.
  for (const a of addresses) {
    if (text.startsWith(`${a} is `)) return text.slice(a.length + 4);
    if (text.startsWith(`"${a}" is `)) return `a value that is ${text.slice(a.length + 6)}`;
  }
  let out = text;
  for (const a of addresses) if (a !== '') out = out.split(`[${a}]`).join('the address').split(a).join('the address');
  return out;
}

/** `toFunction` is the reason as the function is told it, when it must leave out what the trace keeps. */
function refused(policy: FetchPolicy, request: OutgoingRequest, display: string, redirectFrom: string | undefined, reason: string, toFunction = reason): StudioError {
  policy.trace({
    method: request.method.toUpperCase(),
    url: display,
    ms: 0,
    bytesOut: 0,
    bytesIn: 0,
    refused: reason,
    ...(request.credential ? { credential: request.credential } : {}),
    ...(redirectFrom ? { redirectFrom } : {}),
  });
  return new StudioError('egress_refused', `${request.method.toUpperCase()} ${display} refused: ${toFunction}`);
}

function refusedEarly(policy: FetchPolicy, request: OutgoingRequest, reason: string): StudioError {
  let display = String(request.url).slice(0, 200);
  try {
    const u = new URL(request.url);
    display = `${u.protocol}//${u.host}${u.pathname}${u.search}`;
  } catch {
    /* keep the raw text */
  }
  if (policy.placeholders) display = policy.placeholders.mask(display);
  return refused(policy, request, display, undefined, reason);
}

function describePattern(p: HostPattern): string {
  return `${p.wildcard ? '*.' : ''}${p.host}${p.port === undefined ? '' : `:${p.port}`}`;
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
