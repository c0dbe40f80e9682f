// @ts-check
// ctx.fetch, ctx.elicit and ctx.sample: loaded with the first call of one (ctx.js), so a call
// that uses none never makes them; its top level takes every intrinsic from intrinsics.js.
import {
  ObjectCreate,
  ObjectFreeze,
  ObjectKeys,
  ArrayIsArray,
  ArrayJoin,
  JSONStringify,
  JSONParse,
  RegExpTest,
  PromiseCtor,
  PromiseResolve,
  PromiseThen,
  TypeErrorCtor,
  ArrayBufferIsView,
  TypedArrayBuffer,
  call,
  str,
  isArrayBuffer,
  copyBytes,
  append,
} from './intrinsics.js';
import { start } from './host.js';
import { utf8Encode, utf8Decode, toBytes } from './encoding.js';

// Headers, URLSearchParams, Blob, File and FormData are loaded on first use (index.js): a plain
// call never loads them here either.
/** @returns {typeof import('./headers.js')} */
const headersModule = () => require('./headers.js');
/** @returns {typeof import('./url.js')} */
const url = () => require('./url.js');
/** @returns {typeof import('./web/blob.js')} */
const blobs = () => require('./web/blob.js');
/** @returns {typeof import('./web/formData.js')} */
const forms = () => require('./web/formData.js');

/** @typedef {{ status: number, statusText: string, url: string, redirected: boolean, headers: [string, string][], body: Uint8Array }} RawResponse */

/** @param {unknown} headers */
const headerPairs = (headers) => {
  if (headers === undefined || headers === null) return [];
  const { Headers, headerList } = headersModule();
  return headerList(new Headers(headers));
};

/** @param {RawResponse} raw */
const makeResponse = (raw) => {
  const body = raw.body;
  // Made when first read: the Headers class (and its module, in a fresh context) costs more than the
  // rest of the answer, and many functions read only the body.
  /** @type {import('./headers.js').Headers | undefined} */
  let headers;
  const text = () => PromiseResolve(utf8Decode(body));
  return ObjectFreeze({
    status: raw.status,
    statusText: raw.statusText,
    ok: raw.status >= 200 && raw.status < 300,
    url: raw.url,
    redirected: raw.redirected,
    get headers() {
      return (headers ??= new (headersModule().Headers)(raw.headers));
    },
    text,
    json: () => call(PromiseThen, text(), /** @param {string} t */ (t) => JSONParse(t)),
    arrayBuffer: () => PromiseResolve(call(TypedArrayBuffer, copyBytes(body))),
    bytes: () => PromiseResolve(copyBytes(body)),
  });
};
// Request bodies: at most one of these options. `form` and a URLSearchParams body are encoded
// here; `multipart` crosses as plain parts and the host encodes it.
const BODY_OPTIONS = ['json', 'body', 'form', 'multipart'];
const FORM_TYPE = 'application/x-www-form-urlencoded';
/** @param {unknown} v */
const kindOf = (v) => (v === null ? 'null' : ArrayIsArray(v) ? 'an array' : typeof v);
/** @type {(v: unknown) => v is string | number | boolean} */
const isField = (v) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
/**
 * Calls visit(name, value, label) for each field of `fields` (an array value is the field repeated, in order).
 * @param {any} fields @param {string} what @param {(name: string, value: any, label: string) => void} visit
 */
const eachField = (fields, what, visit) => {
  if (fields === null || typeof fields !== 'object' || ArrayIsArray(fields)) {
    throw new TypeErrorCtor(`ctx.fetch: ${what} must be an object of name: value (or [values]), not ${kindOf(fields)}`);
  }
  const names = ObjectKeys(fields);
  for (let i = 0; i < names.length; i++) {
    const name = /** @type {string} */ (names[i]);
    const value = fields[name];
    if (!ArrayIsArray(value)) visit(name, value, name);
    else for (let j = 0, n = value.length; j < n; j++) visit(name, value[j], `${name}[${j}]`);
  }
};
/** @param {unknown} form */
const formBody = (form) => {
  const pairs = /** @type {[string, string][]} */ ([]);
  eachField(form, 'form', (name, value, label) => {
    if (!isField(value)) throw new TypeErrorCtor(`ctx.fetch: form field "${label}" must be a string, number or boolean (or an array of them), not ${kindOf(value)}`);
    append(pairs, [name, str(value)]);
  });
  return url().formText(pairs);
};
/** @param {unknown} multipart */
const multipartParts = (multipart) => {
  const parts = /** @type {unknown[]} */ ([]);
  eachField(multipart, 'multipart', (name, value, label) => {
    const part = ObjectCreate(null);
    part.name = name;
    if (isField(value)) part.text = str(value);
    else if (value !== null && typeof value === 'object' && !ArrayIsArray(value)) {
      const { data, filename, contentType } = value;
      const blob = typeof data === 'string' || ArrayBufferIsView(data) || isArrayBuffer(data) || !blobs().isBlob(data) ? undefined : data;
      if (typeof data === 'string') part.data = utf8Encode(data);
      else if (blob !== undefined) part.data = blobs().blobBytes(blob);
      else if (ArrayBufferIsView(data) || isArrayBuffer(data)) part.data = copyBytes(toBytes(data, 'ctx.fetch'));
      else throw new TypeErrorCtor(`ctx.fetch: multipart part "${label}" needs data: a string, Uint8Array or ArrayBuffer, not ${kindOf(data)}`);
      if (filename !== undefined) {
        if (typeof filename !== 'string') throw new TypeErrorCtor(`ctx.fetch: multipart part "${label}": filename must be a string, not ${kindOf(filename)}`);
        part.filename = filename;
      }
      if (contentType !== undefined) {
        if (typeof contentType !== 'string' || call(RegExpTest, /[\r\n]/, contentType)) {
          throw new TypeErrorCtor(`ctx.fetch: multipart part "${label}": contentType must be a one-line string such as "image/png"`);
        }
        part.contentType = contentType;
      }
      // A File or Blob as data brings its name and type unless the part gives its own.
      if (blob !== undefined) {
        const { isFile, fileName, blobType } = blobs();
        if (filename === undefined && isFile(blob)) part.filename = fileName(blob);
        if (contentType === undefined && blobType(blob) !== '') part.contentType = blobType(blob);
      }
    } else {
      throw new TypeErrorCtor(`ctx.fetch: multipart part "${label}" must be a string, number, boolean or { data, filename?, contentType? }, not ${kindOf(value)}`);
    }
    append(parts, part);
  });
  return parts;
};
/** @param {unknown} input @param {any} [init] */
export const fetchFn = (input, init) => {
  try {
    const options = init === undefined || init === null ? {} : init;
    const request = ObjectCreate(null);
    request.url = str(input);
    const given = /** @type {string[]} */ ([]);
    const chosen = ObjectCreate(null);
    for (let i = 0; i < BODY_OPTIONS.length; i++) {
      const key = /** @type {string} */ (BODY_OPTIONS[i]);
      const value = options[key];
      if (value !== undefined && (key === 'json' || value !== null)) {
        append(given, key);
        chosen[key] = value;
      }
    }
    if (given.length > 1) throw new TypeErrorCtor(`ctx.fetch: give one of json, body, form or multipart, not ${call(ArrayJoin, given, ' and ')}`);
    request.method = options.method === undefined ? (given.length > 0 ? 'POST' : 'GET') : str(options.method);
    const headers = headerPairs(options.headers);
    const hasType = () => {
      for (let i = 0; i < headers.length; i++) if (/** @type {[string, string]} */ (headers[i])[0] === 'content-type') return true;
      return false;
    };
    let body;
    /** @type {string | undefined} */
    let params;
    if (given[0] === 'json') {
      body = utf8Encode(JSONStringify(chosen.json));
      if (!hasType()) append(headers, ['content-type', 'application/json']);
    } else if (given[0] === 'form') {
      body = utf8Encode(formBody(chosen.form));
      if (!hasType()) append(headers, ['content-type', FORM_TYPE]);
    } else if (given[0] === 'multipart') {
      if (hasType()) throw new TypeErrorCtor('ctx.fetch: multipart sets its own content-type (with the boundary); remove the content-type header');
      request.multipart = multipartParts(chosen.multipart);
    } else if (given[0] === 'body') {
      const b = chosen.body;
      if (typeof b === 'string') body = utf8Encode(b);
      else if (ArrayBufferIsView(b) || isArrayBuffer(b)) body = copyBytes(toBytes(b, 'ctx.fetch body'));
      else if ((params = url().paramsText(b)) !== undefined) {
        body = utf8Encode(params);
        if (!hasType()) append(headers, ['content-type', FORM_TYPE]);
      } else if (blobs().isBlob(b)) {
        const { blobBytes, blobType } = blobs();
        body = blobBytes(b);
        if (!hasType() && blobType(b) !== '') append(headers, ['content-type', blobType(b)]);
      } else if (forms().isFormData(b)) {
        // Encoded by the host, as `multipart` is.
        if (hasType()) throw new TypeErrorCtor('ctx.fetch: a FormData body sets its own content-type (with the boundary); remove the content-type header');
        request.multipart = forms().formParts(b);
      } else body = copyBytes(toBytes(b, 'ctx.fetch body'));
    }
    request.headers = headers;
    if (body !== undefined) request.body = body;
    if (options.credential !== undefined) request.credential = str(options.credential);
    request.redirect = options.redirect === undefined ? 'follow' : str(options.redirect);
    return call(PromiseThen, start('fetch', request), makeResponse);
  } catch (error) {
    return new PromiseCtor((_, reject) => reject(error));
  }
};

// ctx.elicit / ctx.sample: questions the engine puts to a person or the client's model ----
// Only JSON text crosses out (the host parses it; nothing the guest built is passed by reference),
// and the answer comes back as a fresh copy.
/** @param {unknown} error @returns {Promise<never>} */
const rejected = (error) => new PromiseCtor((_, reject) => reject(error));
/** @param {unknown} message @param {unknown} [requestedSchema] */
export const elicitFn = (message, requestedSchema) => {
  try {
    const payload = ObjectCreate(null);
    payload.message = message === undefined || message === null ? '' : str(message);
    payload.schema = JSONStringify(requestedSchema === undefined ? { type: 'object', properties: {} } : requestedSchema);
    return start('elicit', payload);
  } catch (error) {
    return rejected(error);
  }
};
/** @param {unknown} messages @param {unknown} [options] */
export const sampleFn = (messages, options) => {
  try {
    const payload = ObjectCreate(null);
    payload.messages = JSONStringify(messages);
    if (options !== undefined && options !== null) payload.options = JSONStringify(options);
    return start('sample', payload);
  } catch (error) {
    return rejected(error);
  }
};
