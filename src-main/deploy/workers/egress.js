// @ts-check
// The egress Worker: every request a function's isolate makes arrives here (through the gateway's
// Outbound entrypoint, which names the function in x-callable-function). It applies the function's
// allowedHosts with the engine's own matching rules (model/hosts.ts) and address classification
// (net/addresses.ts), adds a credential from this Worker's own secret bindings towards that
// credential's hosts only, follows and re-checks redirects, caps the response body, and returns
// one trace entry per hop. Every secret this Worker holds is redacted from what goes back, in each
// form the engine recognises (credentials/redact.ts). Bundled by `callable deploy`; the secrets never leave this Worker.
import { hostMatches, isHostPatternError, parseHostPattern } from '../../engine/model/hosts.ts';
import { classifyAddress, isIpLiteral, unbracket } from '../../engine/net/addresses.ts';
import { notAllowedHostReason } from '../../engine/model/toolResults.ts';
import { Redactor } from '../../engine/credentials/redact.ts';
import { hopPlan, placeholderRefusal, requestProblem, RunPlaceholders, swapHeader, swapQuery, urlProblem } from '../../engine/credentials/placeholders.ts';
import { POLICIES, CREDENTIALS } from 'callable:egress';

const MANAGED = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length', 'cookie2']);
const MAX_REDIRECTS = 5;
/** An access token this close to its expiry is replaced before it is sent (one that lives less than twice this: at half its life), as the local engine does. */
const REFRESH_BEFORE_MS = 60_000;

/**
 * Access tokens this Worker obtained for OAuth client credentials grants, by credential, shared by
 * the requests this isolate serves; `pending` makes concurrent requests wait for one token request.
 * @type {Map<string, { token: string, refreshAt: number, pending?: Promise<string> }>}
 */
const oauthTokens = new Map();

/**
 * The access token of an OAuth client credentials credential: the one held until it is due for
 * refresh, else a new one from the token endpoint. `refused` is a token a host just answered 401
 * to: it is replaced, unless another request replaced it already.
 * @param {CredentialSpec} spec @param {Record<string, unknown>} env @param {string} [refused] @returns {Promise<string>}
 */
function accessToken(spec, env, refused) {
  const held = oauthTokens.get(spec.name);
  if (held?.pending) return held.pending;
  if (held && held.token !== refused && Date.now() < held.refreshAt) return Promise.resolve(held.token);
  const pending = requestToken(spec, env).then(
    ({ token, refreshAt }) => {
      oauthTokens.set(spec.name, { token, refreshAt });
      return token;
    },
    (error) => {
      oauthTokens.delete(spec.name);
      throw error;
    },
  );
  oauthTokens.set(spec.name, { token: held?.token ?? '', refreshAt: 0, pending });
  return pending;
}

/**
 * One client credentials token request (RFC 6749 4.4) with the client secret of the credential's binding.
 * @param {CredentialSpec} spec @param {Record<string, unknown>} env @returns {Promise<{ token: string, refreshAt: number }>}
 */
async function requestToken(spec, env) {
  const oauth = /** @type {OAuthClient} */ (spec.oauth);
  const secret = env[spec.binding];
  if (typeof secret !== 'string' || secret === '') throw new Error(`it has no client secret in this deployment (binding ${spec.binding})`);
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (oauth.scopes.length > 0) form.set('scope', oauth.scopes.join(' '));
  /** @type {Record<string, string>} */
  const headers = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  if (oauth.clientAuth === 'post') {
    form.set('client_id', oauth.clientId);
    form.set('client_secret', secret);
  } else headers.authorization = `Basic ${btoa(`${encodeURIComponent(oauth.clientId)}:${encodeURIComponent(secret)}`)}`;
  let response;
  try {
    // Bounded by the call: the gateway ends it at the function's deadline.
    response = await fetch(oauth.tokenUrl, { method: 'POST', headers, body: form.toString() });
  } catch (error) {
    throw new Error(`the token request to ${oauth.tokenUrl} failed: ${/** @type {Error | undefined} */ (error)?.message ?? String(error)}`);
  }
  const body = /** @type {Record<string, unknown>} */ (await response.json().catch(() => ({})));
  if (!response.ok || typeof body.access_token !== 'string') {
    const code = typeof body.error === 'string' ? body.error : `HTTP ${response.status}`;
    throw new Error(`${code}${typeof body.error_description === 'string' ? `: ${body.error_description}` : ''} (from ${oauth.tokenUrl})`);
  }
  const lifetime = typeof body.expires_in === 'number' ? body.expires_in * 1000 : undefined;
  return { token: body.access_token, refreshAt: lifetime === undefined ? Infinity : Date.now() + Math.max(lifetime - REFRESH_BEFORE_MS, lifetime / 2) };
}

/** @param {string} code @param {string} message @param {TraceEntry[]} trace */
function refuse(code, message, trace) {
  return new Response(message, { status: 502, headers: { 'x-callable-error': code, 'x-callable-trace': JSON.stringify(trace) } });
}

/** @param {string[]} list */
function patternsOf(list) {
  return list.map((h) => parseHostPattern(h)).filter(/** @returns {p is HostPattern} */ (p) => !isHostPatternError(p));
}

/**
 * Why `url` may not be fetched by a function with these patterns, or undefined.
 * @param {URL} url @param {HostPattern[]} patterns @param {string[]} allowedHosts @returns {string | undefined}
 */
function checkUrl(url, patterns, allowedHosts) {
  // The reasons are the local engine's (net/guardedFetch.ts), so a refusal reads the same deployed.
  if (url.username !== '' || url.password !== '') return 'URLs with a user name or password are refused; use a credential instead';
  const defaultPort = url.protocol === 'https:' ? 443 : url.protocol === 'http:' ? 80 : 0;
  if (defaultPort === 0) return `only https is allowed (got ${url.protocol})`;
  const port = url.port === '' ? defaultPort : Number(url.port);
  const hostname = url.hostname.toLowerCase();
  const named = patterns.some((p) => hostMatches(p, hostname, port, defaultPort));
  if (!named) {
    return notAllowedHostReason(url.host, allowedHosts);
  }
  const literal = isIpLiteral(hostname);
  const exact = literal && patterns.some((p) => p.literal && !p.wildcard && p.host === hostname && (p.port ?? defaultPort) === port);
  if (literal) {
    // A loopback or private literal passes only when the allow-list names it exactly (local mock servers).
    const verdict = classifyAddress(unbracket(hostname), exact);
    if (!verdict.allowed) return verdict.reason;
  }
  if (url.protocol === 'http:' && !(exact && !classifyAddress(unbracket(hostname), false).allowed)) {
    return 'plain http is only allowed to a literal local address named in allowedHosts (e.g. 127.0.0.1:8080); use https';
  }
  return undefined;
}

/**
 * Reads a body up to `limit` bytes; undefined when it is larger.
 * @param {ReadableStream<Uint8Array> | null} body @param {number} limit
 */
async function readCapped(body, limit) {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks = /** @type {Uint8Array[]} */ ([]);
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * A redactor of every credential secret this deployment holds, not only the one a request injects:
 * a vendor may echo any of them, and locally the engine redacts them all. An injected header's
 * whole value goes too, as the engine's run does.
 * @param {Record<string, unknown>} env @param {{ name: string, secret: string, template?: string } | undefined} injection
 */
function redactorOf(env, injection) {
  const redactor = new Redactor();
  for (const spec of Object.values(CREDENTIALS)) {
    const secret = env[spec.binding];
    if (typeof secret === 'string') redactor.add(spec.name, secret);
  }
  for (const [name, held] of oauthTokens) if (held.token !== '') redactor.add(name, held.token);
  if (injection?.template !== undefined) redactor.add(injection.name, headerValue(injection.template, injection.secret));
  return redactor;
}

/** @param {string} template @param {string} secret */
function headerValue(template, secret) {
  return template.split('{secret}').join(secret);
}

/** @typedef {import('../../engine/model/hosts.ts').HostPattern} HostPattern */

export default {
  /** @param {Request} request @param {Record<string, unknown>} env */
  async fetch(request, env) {
    const fnName = request.headers.get('x-callable-function');
    const policy = fnName === null ? undefined : POLICIES[fnName];
    const method = request.method.toUpperCase();
    // The call's ctx.secret placeholders (set by the gateway), for the credentials this function may use here.
    const placeholders = new RunPlaceholders();
    const display = /** @param {URL} u */ (u) => placeholders.mask(`${u.protocol}//${u.host}${u.pathname}`);
    if (!policy) return refuse('egress_refused', 'egress: the request does not come from a deployed function', []);
    const patterns = patternsOf(policy.allowedHosts);
    const headers = new Headers();
    /** @type {string | undefined} */
    let credentialName;
    let redirectMode = 'follow';
    /** The OAuth client credentials this request may send, whose access tokens it needs. */
    const oauthNames = new Set();
    for (const [name, value] of request.headers) {
      const lower = name.toLowerCase();
      if (lower === 'x-callable-function') continue;
      if (lower === 'x-callable-credential') {
        credentialName = value;
        continue;
      }
      if (lower === 'x-callable-redirect') {
        redirectMode = value;
        continue;
      }
      if (lower === 'x-callable-placeholders') {
        for (const [placeholder, name] of /** @type {Array<[string, string]>} */ (JSON.parse(value))) {
          const spec = CREDENTIALS[name];
          if (spec && policy.credentials.includes(name)) {
            placeholders.adopt(name, spec.hosts, placeholder);
            if (spec.oauth) oauthNames.add(name);
          }
        }
        continue;
      }
      // workerd adds these itself on the way from the isolate; they are not the function's. The
      // body's framing is set again from the body read below (the runtime refuses a function's own).
      if (lower === 'cf-connecting-ip' || lower === 'cf-worker' || lower === 'cf-ray' || lower === 'content-length' || lower === 'transfer-encoding') continue;
      if (MANAGED.has(lower) || lower.startsWith('proxy-')) {
        const url = new URL(request.url);
        return refuse('egress_refused', `${method} ${display(url)} refused: the "${name}" header is set by the host, not by the function; remove it`, []);
      }
      headers.append(name, value);
    }
    /** @type {({ name: string, binding: string, hostsText: string, secret: string, hosts: HostPattern[] } & CredentialPlacement) | undefined} */
    let injection;
    if (credentialName !== undefined && policy.credentials.includes(credentialName) && CREDENTIALS[credentialName]?.oauth) oauthNames.add(credentialName);
    /** The access token of each OAuth credential this request may send. @type {Map<string, string>} */
    const live = new Map();
    for (const name of oauthNames) {
      try {
        live.set(name, await accessToken(/** @type {CredentialSpec} */ (CREDENTIALS[name]), env));
      } catch (error) {
        return refuse('credential_refused', `credential "${name}": no access token; nothing was sent: ${/** @type {Error} */ (error).message}`, []);
      }
    }
    if (credentialName !== undefined) {
      if (!policy.credentials.includes(credentialName)) {
        return refuse('credential_refused', `this function may not use credential "${credentialName}": add it to the function's "credentials" list and grant it`, []);
      }
      const spec = /** @type {CredentialSpec} */ (CREDENTIALS[credentialName]);
      const secret = live.get(credentialName) ?? env[spec.binding];
      if (typeof secret !== 'string' || secret === '') {
        return refuse('credential_refused', `credential "${credentialName}" has no secret in this deployment (binding ${spec.binding})`, []);
      }
      injection = { ...spec, secret, hosts: patternsOf(spec.hosts) };
    }
    const body = method === 'GET' || method === 'HEAD' ? undefined : new Uint8Array(await request.arrayBuffer());
    const trace = /** @type {TraceEntry[]} */ ([]);
    /** A placeholder where it may not go: refused before anything is sent. @param {URL} u @param {{ found: import('../../engine/credentials/placeholders.ts').Found, place: string }} p */
    const misplaced = (u, p) => {
      const reason = placeholderRefusal(p.found, p.place, 'nothing was sent').message;
      trace.push({ method, url: display(u), ms: 0, bytesOut: 0, bytesIn: 0, refused: reason });
      return refuse('egress_refused', `${method} ${display(u)} refused: ${reason}`, trace);
    };
    const inRequest = requestProblem(placeholders, headers, body);
    if (inRequest) return misplaced(new URL(request.url), inRequest);
    let url = new URL(request.url);
    /** @type {string | undefined} */
    let redirectFrom;
    let retried = false;
    for (let hop = 0; ; hop++) {
      const why = checkUrl(url, patterns, policy.allowedHosts);
      if (why) {
        trace.push({ method, url: display(url), ms: 0, bytesOut: 0, bytesIn: 0, refused: why, ...(redirectFrom ? { redirectFrom } : {}) });
        return refuse('egress_refused', `${method} ${display(url)} refused: ${why}`, trace);
      }
      const defaultPort = url.protocol === 'https:' ? 443 : 80;
      const port = url.port === '' ? defaultPort : Number(url.port);
      const sendTo = injection !== undefined && injection.hosts.some((h) => hostMatches(h, url.hostname.toLowerCase(), port, defaultPort)) ? injection : undefined;
      if (injection && !sendTo && hop === 0) {
        const reason = `credential "${injection.name}" may only be sent to ${injection.hostsText}`;
        trace.push({ method, url: display(url), ms: 0, bytesOut: 0, bytesIn: 0, refused: reason, credential: injection.name });
        return refuse('egress_refused', `${method} ${display(url)} refused: ${reason}`, trace);
      }
      const inUrl = urlProblem(placeholders, url);
      if (inUrl) return misplaced(url, inUrl);
      const plan = hopPlan(placeholders, headers, url, hop);
      if (plan.refused) return misplaced(url, plan.refused);
      /** @param {string} name */
      const secretOf = (name) => live.get(name) ?? /** @type {string} */ (env[/** @type {CredentialSpec} */ (CREDENTIALS[name]).binding]);
      const missing = plan.used.find((name) => typeof secretOf(name) !== 'string' || secretOf(name) === '');
      if (missing !== undefined) return refuse('credential_refused', `credential "${missing}" has no secret in this deployment (binding ${/** @type {CredentialSpec} */ (CREDENTIALS[missing]).binding})`, trace);
      const out = new URL(url.href);
      out.search = swapQuery(placeholders, url.search, secretOf);
      const outHeaders = new Headers(plan.headers.map(([name, value]) => /** @type {[string, string]} */ ([name, swapHeader(placeholders, value, secretOf)])));
      if (sendTo && sendTo.header) outHeaders.set(sendTo.header, headerValue(sendTo.template, sendTo.secret));
      if (sendTo && sendTo.query) out.searchParams.set(sendTo.query, sendTo.secret);
      if (!outHeaders.has('user-agent')) outHeaders.set('user-agent', 'CallableStudio/0.1 (workerd)');
      const started = Date.now();
      const used = [...(sendTo ? [sendTo.name] : []), ...plan.used];
      /** @type {TraceEntry} */
      const entry = { method, url: display(url), ms: 0, bytesOut: body?.byteLength ?? 0, bytesIn: 0, ...(used.length > 0 ? { credential: used.join(', ') } : {}), ...(redirectFrom ? { redirectFrom } : {}) };
      let response;
      try {
        response = await fetch(out.href, { method, headers: outHeaders, body, redirect: 'manual' });
      } catch (error) {
        entry.ms = Date.now() - started;
        entry.error = `request failed: ${/** @type {Error | undefined} */ (error)?.message ?? String(error)}`;

        trace.push(entry);
        return refuse('fetch_failed', `${method} ${display(url)}: ${entry.error}`, trace);
      }
      entry.status = response.status;
      // A 401 to an OAuth access token (revoked or expired early): one new token, and the request once more, as locally.
      const refused = used.filter((name) => live.has(name));
      if (response.status === 401 && refused.length > 0 && !retried) {
        retried = true;
        await response.body?.cancel();
        entry.ms = Date.now() - started;
        trace.push(entry);
        try {
          for (const name of refused) {
            const token = await accessToken(/** @type {CredentialSpec} */ (CREDENTIALS[name]), env, live.get(name));
            live.set(name, token);
            if (injection?.name === name) injection.secret = token;
          }
        } catch (error) {
          return refuse('credential_refused', `${method} ${display(url)}: the host refused the access token and no new one came: ${/** @type {Error} */ (error).message}`, trace);
        }
        hop--;
        continue;
      }
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location !== null && redirectMode !== 'manual') {
        await response.body?.cancel();
        entry.ms = Date.now() - started;
        trace.push(entry);
        if (redirectMode === 'error') return refuse('fetch_failed', `${method} ${display(url)} redirected to ${redactorOf(env, injection).text(location)} and the request said redirect: "error"`, trace);
        if (hop + 1 > MAX_REDIRECTS) return refuse('fetch_failed', `${request.url}: more than ${MAX_REDIRECTS} redirects`, trace);
        redirectFrom = display(url);
        url = new URL(location, url);
        continue;
      }
      const bytes = await readCapped(response.body, policy.responseBytes);
      entry.ms = Date.now() - started;
      if (bytes === undefined) {
        entry.error = 'response too large';
        trace.push(entry);
        return refuse(
          'response_too_large',
          `the response from ${url.host} is larger than the response body limit (${policy.responseBytes} bytes); raise limits.responseBytes if that is expected`,
          trace,
        );
      }
      entry.bytesIn = bytes.byteLength;
      trace.push(entry);
      const redactor = redactorOf(env, injection);
      // The whole body is in hand (it was capped above), so one pass finds a secret wherever it lies.
      const stream = redactor.stream();
      const shown = Buffer.concat([stream.push(bytes), stream.end()]);
      const back = new Headers();
      for (const [name, value] of response.headers) {
        const lower = name.toLowerCase();
        // A header whose name holds a secret is dropped: there is no redacted name to give it.
        if (lower === 'content-length' || lower === 'content-encoding' || redactor.text(name) !== name) continue;
        back.append(name, redactor.text(value));
      }
      back.set('x-callable-trace', redactor.text(JSON.stringify(trace)));
      back.set('x-callable-final-url', redactor.text(url.href));
      if (hop > 0) back.set('x-callable-redirected', '1');
      return new Response(shown, { status: response.status, statusText: redactor.text(response.statusText), headers: back });
    }
  },
};
