// @ts-check
// The module a function's own isolate runs (loaded by the gateway's Worker Loader, once per call).
// It gives the compiled function the same `ctx` as the local sandbox: ctx.fetch goes out through
// this isolate's global fetch, which workerd routes to the gateway's Outbound entrypoint and from
// there to the egress Worker (the only way out); ctx.log and ctx.progress are reported as they
// happen to the gateway's Reporter entrypoint (env.REPORTER), which sends them to the client.
// Nothing here sees a secret.
import { WorkerEntrypoint } from 'cloudflare:workers';
import fn from './function.js';
import { credentialNotListedMessage, logLimitMessage, resultTooLargeMessage } from '../../engine/model/toolResults.ts';

/** The longest progress message passed on, as in the local sandbox (src-main/sandboxHost/bridge.ts). */
const PROGRESS_MESSAGE_CHARS = 1000;
/**
 * The functions a run reports through and fails with.
 * @typedef {(method: keyof ReporterStub, ...values: any[]) => void} Report
 * @typedef {{ fail: (code: string, message: string) => void }} Run
 * @typedef {import('@modelcontextprotocol/server').ContentBlock} ContentBlock
 */

/** @type {WeakSet<object>} */
const brand = new WeakSet();
/** @template {object} T @param {T} value @returns {Readonly<T>} */
const branded = (value) => {
  const frozen = Object.freeze(value);
  brand.add(frozen);
  return frozen;
};
/** @param {unknown} data @param {string} what */
const base64Of = (data, what) => {
  if (typeof data === 'string') return data;
  if (data instanceof Uint8Array || data instanceof ArrayBuffer) {
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    let text = '';
    for (const b of bytes) text += String.fromCharCode(b);
    return btoa(text);
  }
  throw new TypeError(`${what}: expected bytes or base64 text`);
};
const content = Object.freeze({
  text: /** @param {unknown} text */ (text) => branded({ type: 'text', text: String(text) }),
  image: /** @param {unknown} data @param {unknown} mimeType */ (data, mimeType) => branded({ type: 'image', data: base64Of(data, 'ctx.content.image'), mimeType: String(mimeType) }),
  audio: /** @param {unknown} data @param {unknown} mimeType */ (data, mimeType) => branded({ type: 'audio', data: base64Of(data, 'ctx.content.audio'), mimeType: String(mimeType) }),
  resource: /** @param {any} r */ (r) => {
    if (!r || typeof r !== 'object') throw new TypeError('ctx.content.resource: expected { uri, mimeType?, text? | blob? }');
    /** @type {{ uri: string, mimeType?: string, text?: string, blob?: string }} */
    const resource = { uri: String(r.uri), ...(r.mimeType === undefined ? {} : { mimeType: String(r.mimeType) }) };
    if (r.text !== undefined) resource.text = String(r.text);
    else if (r.blob !== undefined) resource.blob = base64Of(r.blob, 'ctx.content.resource');
    else throw new TypeError('ctx.content.resource: give text or blob');
    return branded({ type: 'resource', resource });
  },
});

/** @param {unknown[]} args */
const format = (args) => args.map((a) => (typeof a === 'string' ? a : safeJson(a))).join(' ');
/** @param {unknown} value */
function safeJson(value) {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A refusal the function gets, as the local sandbox gives it: an Error with the refusal's code. */
/** @param {string} code @param {string} message */
function hostError(code, message) {
  return Object.assign(new Error(message), { code });
}

/** Refusals that end the run, whether or not the function catches them (as locally). */
const RUN_ENDING = new Set(['fetch_limit', 'response_too_large']);

/** Headers that frame the body: workerd sets them from the body, so the function may not. */
const FRAMING = new Set(['content-length', 'transfer-encoding']);
const BODY_OPTIONS = ['json', 'body', 'form', 'multipart'];

const FORM_TYPE = 'application/x-www-form-urlencoded';
/** @param {unknown} v */
const kindOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);
/** @type {(v: unknown) => v is string | number | boolean} */
const isField = (v) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/**
 * Calls visit(name, value, label) for each field of `fields` (an array value is the field repeated, in order), as the local sandbox does.
 * @param {unknown} fields @param {string} what @param {(name: string, value: any, label: string) => void} visit
 */
function eachField(fields, what, visit) {
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) {
    throw new TypeError(`ctx.fetch: ${what} must be an object of name: value (or [values]), not ${kindOf(fields)}`);
  }
  for (const [name, value] of Object.entries(fields)) {
    if (!Array.isArray(value)) visit(name, value, name);
    else value.forEach((v, i) => visit(name, v, `${name}[${i}]`));
  }
}

/**
 * ctx.fetch's `form`: urlencoded with the Workers' own URLSearchParams.
 * @param {unknown} form
 */
function formBody(form) {
  const params = new URLSearchParams();
  eachField(form, 'form', (name, value, label) => {
    if (!isField(value)) throw new TypeError(`ctx.fetch: form field "${label}" must be a string, number or boolean (or an array of them), not ${kindOf(value)}`);
    params.append(name, String(value));
  });
  return params.toString();
}

/**
 * ctx.fetch's `multipart`: multipart/form-data with the Workers' own FormData (which sets the boundary).
 * @param {unknown} multipart
 */
function multipartBody(multipart) {
  const data = new FormData();
  eachField(multipart, 'multipart', (name, value, label) => {
    // Text values with CRLF line breaks, as the local sandbox (and Node's FormData) sends them.
    if (isField(value)) return data.append(name, String(value).replace(/\r?\n|\r/g, '\r\n'));
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new TypeError(`ctx.fetch: multipart part "${label}" must be a string, number, boolean or { data, filename?, contentType? }, not ${kindOf(value)}`);
    }
    const { data: bytes, filename, contentType } = value;
    if (!(typeof bytes === 'string' || ArrayBuffer.isView(bytes) || bytes instanceof ArrayBuffer)) {
      throw new TypeError(`ctx.fetch: multipart part "${label}" needs data: a string, Uint8Array or ArrayBuffer, not ${kindOf(bytes)}`);
    }
    if (filename !== undefined && typeof filename !== 'string') throw new TypeError(`ctx.fetch: multipart part "${label}": filename must be a string, not ${kindOf(filename)}`);
    if (contentType !== undefined && (typeof contentType !== 'string' || /[\r\n]/.test(contentType))) {
      throw new TypeError(`ctx.fetch: multipart part "${label}": contentType must be a one-line string such as "image/png"`);
    }
    // FormData names a file part without a filename "blob".
    data.append(name, new Blob([bytes], { type: contentType || 'application/octet-stream' }), filename);
  });
  return data;
}

/**
 * ctx.fetch; `run.fail` records a refusal that ends the run.
 * @param {unknown} input @param {any} init @param {Run} run
 */
async function ctxFetch(input, init, run) {
  const options = init ?? {};
  const headers = new Headers(options.headers ?? undefined);
  const given = BODY_OPTIONS.filter((k) => options[k] !== undefined && (k === 'json' || options[k] !== null));
  if (given.length > 1) throw new TypeError(`ctx.fetch: give one of json, body, form or multipart, not ${given.join(' and ')}`);
  let body;
  if (given[0] === 'json') {
    body = JSON.stringify(options.json);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  } else if (given[0] === 'form' || (given[0] === 'body' && options.body instanceof URLSearchParams)) {
    body = given[0] === 'form' ? formBody(options.form) : options.body.toString();
    if (!headers.has('content-type')) headers.set('content-type', FORM_TYPE);
  } else if (given[0] === 'multipart') {
    if (headers.has('content-type')) throw new TypeError('ctx.fetch: multipart sets its own content-type (with the boundary); remove the content-type header');
    body = multipartBody(options.multipart);
  } else if (given[0] === 'body') body = options.body;
  const method = options.method === undefined ? (body !== undefined ? 'POST' : 'GET') : String(options.method);
  /** @param {string} reason */
  const refused = (reason) => {
    let shown = String(input);
    try {
      const u = new URL(shown);
      shown = `${u.protocol}//${u.host}${u.pathname}`;
    } catch {
      /* the egress Worker refuses a bad URL */
    }
    return hostError('egress_refused', `${method.toUpperCase()} ${shown} refused: ${reason}`);
  };
  for (const name of headers.keys()) {
    if (FRAMING.has(name) && name !== 'content-length') throw refused(`the "${name}" header is set by the host, not by the function; remove it`);
  }
  // SDKs (stripe) set Content-Length themselves: as locally, one that is exactly the body's length is
  // accepted and workerd writes its own; the body is read to bytes once to know that length.
  const declared = headers.get('content-length');
  if (declared !== null) {
    if (body !== undefined) {
      const encoded = new Response(body);
      // Only multipart's type (its boundary) comes from the encoding; other bodies keep the function's headers.
      if (body instanceof FormData) headers.set('content-type', /** @type {string} */ (encoded.headers.get('content-type')));
      body = new Uint8Array(await encoded.arrayBuffer());
    }
    const length = body === undefined ? 0 : body.byteLength;
    if (declared.trim() !== String(length)) {
      throw refused(`the "content-length" header says ${JSON.stringify(declared)} but the body is ${length} bytes; remove the header (the host sets it) or make it match`);
    }
    headers.delete('content-length');
  }
  if (options.credential !== undefined) headers.set('x-callable-credential', String(options.credential));
  headers.set('x-callable-redirect', options.redirect === undefined ? 'follow' : String(options.redirect));
  const res = await fetch(String(input), { method, headers, body, redirect: 'manual' });
  const refusal = res.headers.get('x-callable-error');
  if (refusal) {
    const message = await res.text();
    if (RUN_ENDING.has(refusal)) run.fail(refusal, message);
    throw hostError(refusal, message);
  }
  const bytes = new Uint8Array(await res.arrayBuffer());
  const out = new Headers(res.headers);
  out.delete('x-callable-final-url');
  out.delete('x-callable-redirected');
  const text = () => Promise.resolve(new TextDecoder().decode(bytes));
  return Object.freeze({
    status: res.status,
    statusText: res.statusText,
    ok: res.status >= 200 && res.status < 300,
    url: res.headers.get('x-callable-final-url') ?? String(input),
    redirected: res.headers.get('x-callable-redirected') === '1',
    headers: out,
    text,
    json: () => text().then((t) => JSON.parse(t)),
    arrayBuffer: () => Promise.resolve(bytes.slice().buffer),
    bytes: () => Promise.resolve(bytes.slice()),
  });
}

/** @extends {WorkerEntrypoint<{ REPORTER: ReporterStub }>} */
export default class extends WorkerEntrypoint {
  /**
   * Runs the function once; always resolves, with the outcome as the local sandbox shapes it.
   * @param {unknown} args @param {RunMeta} meta @returns {Promise<RunOutcome>}
   */
  async run(args, meta) {
    // Reports go out one after another, in the order the function made them, and all of them
    // before the outcome is returned (the gateway sends them to the client before the result).
    const reporter = this.env.REPORTER;
    let reported = Promise.resolve();
    let reports = 0;
    /** @type {Report} */
    const report = (method, ...values) => {
      if (++reports > meta.reports) return;
      reported = reported.then(() => /** @type {(...args: unknown[]) => Promise<void>} */ (reporter[method])(...values)).catch(() => {});
    };
    const outcome = await this.#attempt(args, meta, report);
    await reported;
    return outcome;
  }

  /** @param {unknown} args @param {RunMeta} meta @param {Report} report @returns {Promise<RunOutcome>} */
  async #attempt(args, meta, report) {
    /** @type {Array<{ level: string, message: string }>} */
    const logs = [];
    let logBytes = 0;
    // The first limit crossed ends the run with its error, whatever the function does next.
    /** @type {RunOutcome | undefined} */
    let ended;
    /** @type {Run} */
    const run = { fail: (code, message) => void (ended ??= { ok: false, error: { code, message }, logs }) };
    /** @param {string} level @param {unknown[]} parts */
    const log = (level, parts) => {
      const message = format(parts);
      logBytes += message.length;
      if (logBytes > meta.logBytes) run.fail('log_limit', logLimitMessage(meta.logBytes));
      else {
        logs.push({ level, message });
        report('log', level, message);
      }
    };
    const ctxLog = /** @param {...unknown} a */ (...a) => log('info', a);
    ctxLog.debug = /** @param {...unknown} a */ (...a) => log('debug', a);
    ctxLog.info = /** @param {...unknown} a */ (...a) => log('info', a);
    ctxLog.warn = /** @param {...unknown} a */ (...a) => log('warn', a);
    ctxLog.error = /** @param {...unknown} a */ (...a) => log('error', a);
    const ctx = Object.freeze({
      fetch: /** @param {unknown} input @param {unknown} [init] */ (input, init) => ctxFetch(input, init, run),
      log: Object.freeze(ctxLog),
      progress: /** @param {any} progress @param {any} [total] @param {unknown} [message] */ (progress, total, message) => {
        const done = +progress;
        if (!Number.isFinite(done)) throw new TypeError('ctx.progress: progress must be a number');
        /** @type {ProgressUpdate} */
        const update = { progress: done };
        if (total !== undefined && Number.isFinite(+total)) update.total = +total;
        if (message !== undefined) update.message = String(message).slice(0, PROGRESS_MESSAGE_CHARS);
        report('progress', update);
      },
      // Nobody can be asked from a deployed gateway (no studio, no server-to-client request in a stateless gateway).
      elicit: () => Promise.reject(new Error('ctx.elicit is not available on a deployed gateway: there is no one to ask; run this function with callable mcp or callable serve')),
      sample: () => Promise.reject(new Error('ctx.sample is not available on a deployed gateway')),
      // The gateway minted the placeholders for this call; the egress Worker swaps them for the secrets.
      secret: /** @param {unknown} name */ (name) => {
        const entry = meta.secrets.find((s) => s.name === String(name));
        if (entry?.placeholder !== undefined) return entry.placeholder;
        throw hostError('credential_refused', `ctx.secret: ${entry?.refused ?? credentialNotListedMessage(String(name).slice(0, 200))}`);
      },
      content,
      functionName: meta.name,
      runId: meta.runId,
      deadline: meta.deadline,
    });
    const handler = fn && fn.default;
    if (typeof handler !== 'function') return { ok: false, error: { code: 'function_error', message: 'TypeError: the module has no default export function' }, logs };
    try {
      const value = await handler(args, ctx);
      if (ended) return ended;
      // The result is sized here, before it crosses to the gateway (an RPC message has a limit of its own).
      /** @param {RunOutcome} outcome @param {string} text @returns {RunOutcome} */
      const sized = (outcome, text) => {
        const bytes = new TextEncoder().encode(text).byteLength;
        return bytes > meta.resultBytes ? { ok: false, error: { code: 'result_too_large', message: resultTooLargeMessage(bytes, meta.resultBytes) }, logs } : outcome;
      };
      if (value !== null && typeof value === 'object' && brand.has(value)) return sized({ ok: true, content: [{ ...value }], logs }, JSON.stringify([value]));
      if (Array.isArray(value) && value.length > 0 && value.every((v) => v !== null && typeof v === 'object' && brand.has(v))) {
        return sized({ ok: true, content: value.map((v) => ({ ...v })), logs }, JSON.stringify(value));
      }
      let json;
      try {
        json = JSON.stringify(value === undefined ? null : value) ?? 'null';
      } catch (error) {
        return { ok: false, error: { code: 'function_error', message: `TypeError: the result is not JSON-serializable: ${/** @type {Error | undefined} */ (error)?.message}` }, logs };
      }
      return sized({ ok: true, json, logs }, json);
    } catch (error) {
      if (ended) return ended;
      const name = error && typeof error === 'object' ? String(/** @type {{ name?: unknown }} */ (error).name ?? 'Error') : 'Error';
      const message = error && typeof error === 'object' ? String(/** @type {{ message?: unknown }} */ (error).message ?? '') :
 `a non-Error value was thrown: ${safeJson(error)}`;
      return { ok: false, error: { code: 'function_error', message: `${name}: ${message}` }, logs };
    }
  }
}
