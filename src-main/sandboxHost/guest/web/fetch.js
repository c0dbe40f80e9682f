// @ts-check
// fetch, Request and Response (WHATWG Fetch) on the same guarded host operation as ctx.fetch: the
// host checks the allow-list, addresses, credentials and every limit, redirects hop by hop, and
// records the trace; this module only builds plain requests and reads plain responses.
//
// Where a server differs from a browser (as in workerd): there is no cookie jar and no HTTP cache;
// redirect: 'manual' gives the 3xx response itself (status and Location readable), not an opaque
// one; a response's body streams from the host as the function reads it (each read asks the host
// for what has arrived), except with `integrity`, whose body is checked in full before fetch() resolves.
import {
  ObjectCreate,
  ObjectDefineProperty,
  ArrayBufferIsView,
  JSONStringify,
  JSONParse,
  PromiseCtor,
  PromiseResolve,
  PromiseThen,
  RegExpTest,
  StringToLowerCase,
  StringReplace,
  TypeErrorCtor,
  RangeErrorCtor,
  TypedArrayBuffer,
  TypedArrayName,
  TypedArrayByteLength,
  TypedArrayByteOffset,
  ArrayBufferSlice,
  DataViewBuffer,
  DataViewByteOffset,
  DataViewByteLength,
  DataViewCtor,
  TypedArrayCtors,
  Uint8ArrayCtor,
  SymbolToStringTag,
  call,
  str,
  isBytes,
  isArrayBuffer,
  bareList,
  append,
  viewOf,
} from '../intrinsics.js';
import { sync, start } from '../host.js';
import { utf8Encode } from '../encoding.js';
import { loaded } from '../globals.js';
import { Headers, headerList, freezeHeaders, headersFrozen } from '../headers.js';
import { streams } from './streams.js';
import { concatBytes, copyRange, decodeText, viewBytes } from './bytes.js';

// What only some requests use loads when one does: a fetch() in a fresh context loads none of
// Blob, File, FormData, URLSearchParams, the events, WebCrypto or structuredClone, and a body read
// with text(), json() or the like makes no ReadableStream (nor loads the streams library).
/** @returns {typeof import('./blob.js')} */
const blobs = () => require('./blob.js');
/** @returns {typeof import('./formData.js')} */
const forms = () => require('./formData.js');
/** @returns {typeof import('../url.js')} */
const urls = () => require('../url.js');
/** @returns {typeof import('./events.js')} */
const events = () => require('./events.js');
/** A Blob or File (none exists before blob.js loaded). @param {unknown} v */
const isBlob = (v) => loaded.blob === true && blobs().isBlob(v);
/** A FormData (none exists before formData.js loaded). @param {unknown} v */
const isFormData = (v) => loaded.formData === true && forms().isFormData(v);
/** A URLSearchParams' form text, or undefined for anything else (none exists before url.js loaded). @param {unknown} v @returns {string | undefined} */
const paramsText = (v) => (loaded.url === true ? urls().paramsText(v) : undefined);
/** @param {any} signal */
const signalAborted = (signal) => events().signalAborted(signal);
/** @param {any} signal */
const signalReason = (signal) => events().signalReason(signal);
/** @param {any} signal @param {() => void} fn @returns {() => void} */
const whenAborted = (signal, fn) => events().onAbort(signal, fn);

/** The largest request body sent (the host refuses more too): a stream body is read up to this. */
const MAX_REQUEST_BYTES = 50 * 1024 * 1024;
const NULL_BODY_STATUSES = [101, 103, 204, 205, 304];
const REDIRECT_STATUSES = [301, 302, 303, 307, 308];
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REASON_PHRASE = /^[\t\x20-\x7e\x80-\xff]*$/;
const TEXT_TYPE = 'text/plain;charset=UTF-8';
const FORM_TYPE = 'application/x-www-form-urlencoded;charset=UTF-8';

/** @param {number[]} list @param {number} n */
const among = (list, n) => {
  for (let i = 0; i < list.length; i++) if (list[i] === n) return true;
  return false;
};
/** @param {unknown} error @returns {Promise<never>} */
const rejected = (error) => new PromiseCtor((_, reject) => reject(error));

// ---- bodies ----

/**
 * A body: its bytes when they are known, or the stream it is read from; `used` once read. A fetched
 * body whose request was aborted before it was read has `aborted` (the signal's reason) and
 * `controller`, its stream's, once it has one. A body the host streams has `host`, its fetch's
 * operation id, until a stream or a read takes it; `reading` fails the read of it in progress.
 * @typedef {{ bytes: Uint8Array | null, stream: any, used: boolean, aborted?: { reason: unknown }, controller?: any, host?: number, reading?: (reason: unknown) => void }} Body
 */

/** @param {unknown} v */
const isStream = (v) => v !== null && typeof v === 'object' && typeof (/** @type {any} */ (v).getReader) === 'function' && v instanceof streams().ReadableStream;
/** @param {any} stream True once something read from or cancelled the stream (the streams standard's "disturbed"). */
const disturbed = (stream) => stream !== null && stream._disturbed === true;
/** @param {Body | null} body */
const bodyUsed = (body) => body !== null && (body.used || disturbed(body.stream));

/**
 * The standard's "extract a body": the body and the Content-Type it implies (null for none).
 * @param {any} init @param {string} who
 * @returns {{ body: Body, type: string | null }}
 */
const extractBody = (init, who) => {
  if (typeof init === 'string') return { body: { bytes: utf8Encode(init), stream: null, used: false }, type: TEXT_TYPE };
  if (isBlob(init)) {
    const type = blobs().blobType(init);
    return { body: { bytes: blobs().blobBytes(init), stream: null, used: false }, type: type === '' ? null : type };
  }
  if (isArrayBuffer(init) || ArrayBufferIsView(init)) {
    const view = isArrayBuffer(init) ? new Uint8ArrayCtor(init) : viewOf(init);
    return { body: { bytes: copyRange(view, 0, view.length), stream: null, used: false }, type: null };
  }
  const params = paramsText(init);
  if (params !== undefined) return { body: { bytes: utf8Encode(params), stream: null, used: false }, type: FORM_TYPE };
  if (isFormData(init)) {
    // Encoded by the host as ctx.fetch's multipart is: the same boundary for the same parts.
    const encoded = sync('multipart', forms().formParts(init));
    return { body: { bytes: encoded.body, stream: null, used: false }, type: encoded.contentType };
  }
  if (isStream(init)) {
    if (init.locked || disturbed(init)) throw new TypeErrorCtor(`${who}: the body stream has already been read or is locked`);
    return { body: { bytes: null, stream: init, used: false }, type: null };
  }
  return { body: { bytes: utf8Encode(str(init)), stream: null, used: false }, type: TEXT_TYPE };
};

/**
 * The body's bytes, read in full (at most `limit`); the body is used from then on.
 * @param {Body | null} body @param {string} who @param {number} [limit]
 * @returns {Promise<Uint8Array>}
 */
const consume = (body, who, limit) => {
  if (body === null) return PromiseResolve(new Uint8Array(0));
  if (body.aborted !== undefined) return rejected(body.aborted.reason);
  if (bodyUsed(body)) return rejected(new TypeErrorCtor(`${who}: the body has already been read`));
  if (body.stream === null && body.host !== undefined) {
    body.used = true;
    return readHost(body);
  }
  if (body.stream === null) {
    body.used = true;
    return PromiseResolve(/** @type {Uint8Array} */ (body.bytes));
  }
  if (body.stream.locked) return rejected(new TypeErrorCtor(`${who}: the body stream is locked by a reader`));
  body.used = true;
  return readAll(body.stream, who, limit === undefined ? Infinity : limit);
};

/** @param {any} stream @param {string} who @param {number} limit @returns {Promise<Uint8Array>} */
const readAll = (stream, who, limit) =>
  new PromiseCtor((resolve, reject) => {
    const reader = stream.getReader();
    const chunks = /** @type {Uint8Array[]} */ (/** @type {unknown} */ (bareList()));
    let total = 0;
    /** @param {unknown} error */
    const fail = (error) => {
      call(PromiseThen, PromiseResolve(reader.cancel(error)), undefined, () => {});
      reject(error);
    };
    const next = () =>
      call(
        PromiseThen,
        reader.read(),
        /** @param {{ done: boolean, value: unknown }} r */ (r) => {
          if (r.done) {
            resolve(concatBytes(chunks));
            return;
          }
          const chunk = r.value;
          if (!isBytes(chunk)) {
            fail(new TypeErrorCtor(`${who}: a body stream must give Uint8Array chunks`));
            return;
          }
          total += chunk.length;
          if (total > limit) {
            fail(new TypeErrorCtor(`${who}: the body is over ${limit} bytes, the most a request may send`));
            return;
          }
          append(chunks, copyRange(chunk, 0, chunk.length));
          next();
        },
        reject,
      );
    next();
  });

/**
 * A body the host streams, read in full without a ReadableStream: each read asks the host for the
 * bytes that have arrived since, as the stream's pulls would.
 * @param {Body} body @returns {Promise<Uint8Array>}
 */
const readHost = (body) =>
  new PromiseCtor((resolve, reject) => {
    const id = /** @type {number} */ (body.host);
    body.host = undefined;
    const chunks = /** @type {Uint8Array[]} */ (/** @type {unknown} */ (bareList()));
    let over = false;
    /** @param {unknown} reason */
    const fail = (reason) => {
      if (over) return;
      over = true;
      body.reading = undefined;
      reject(reason);
    };
    body.reading = fail;
    const next = () =>
      call(
        PromiseThen,
        start('fetchRead', id),
        /** @param {Uint8Array | null} bytes */ (bytes) => {
          if (over) return;
          if (bytes !== null) {
            append(chunks, bytes);
            next();
            return;
          }
          over = true;
          body.reading = undefined;
          resolve(chunks.length === 1 ? /** @type {Uint8Array} */ (chunks[0]) : concatBytes(chunks));
        },
        /** @param {unknown} error */ (error) => fail(networkError(error)),
      );
    next();
  });

/** @param {Body | null} body */
const streamOf = (body) => {
  if (body === null) return null;
  if (body.stream === null && body.aborted !== undefined) {
    const reason = body.aborted.reason;
    body.stream = new (streams().ReadableStream)({
      /** @param {any} controller */
      start(controller) {
        controller.error(reason);
      },
    });
  } else if (body.stream === null && body.host !== undefined) {
    body.stream = hostBodyStream(body.host, body);
    body.host = undefined;
  } else if (body.stream === null && body.used) {
    // Read without a stream: its stream is one that was read (locked and disturbed), as if the read went through it.
    const stream = blobs().bytesStream(new Uint8ArrayCtor(0));
    call(PromiseThen, stream.getReader().read(), undefined, () => {});
    body.stream = stream;
  } else if (body.stream === null) {
    const bytes = /** @type {Uint8Array} */ (body.bytes);
    body.stream = blobs().bytesStream(
      bytes,
      () => {
        body.used = true;
      },
      (controller) => {
        body.controller = controller;
      },
    );
  }
  return body.stream;
};

/** Whether `stream` is a byte stream (only those give a BYOB reader); it is left unlocked. @param {any} stream */
const isByteStream = (stream) => {
  try {
    stream.getReader({ mode: 'byob' }).releaseLock();
    return true;
  } catch {
    return false;
  }
};


/** A structured clone of a stream chunk; a view keeps its kind, offset and length in a copy of its whole buffer (the library would keep only the viewed bytes). @param {unknown} chunk */
const cloneChunk = (chunk) => {
  /** @type {(value: unknown) => unknown} */
  const structuredCloneFn = /** @type {typeof import('./misc.js')} */ (require('./misc.js')).structuredCloneFn;
  if (!ArrayBufferIsView(chunk)) return structuredCloneFn(chunk);
  const kind = call(TypedArrayName, chunk);
  if (kind === undefined) {
    return new DataViewCtor(call(ArrayBufferSlice, call(DataViewBuffer, chunk)), call(DataViewByteOffset, chunk), call(DataViewByteLength, chunk));
  }
  const View = TypedArrayCtors[kind];
  if (View === undefined) return structuredCloneFn(chunk);
  const length = call(TypedArrayByteLength, chunk) / /** @type {any} */ (View).BYTES_PER_ELEMENT;
  return new View(call(ArrayBufferSlice, call(TypedArrayBuffer, chunk)), call(TypedArrayByteOffset, chunk), length);
};

/** A stream that reads `read()`'s results one pull at a time (nothing ahead), giving `pick` of each. @param {any} reader @param {(value: any) => unknown} pick */
const pullingFrom = (reader, pick) =>
  new (streams().ReadableStream)(
    {
      /** @param {any} controller */
      pull(controller) {
        return call(PromiseThen, reader.read(), /** @param {{ done: boolean, value: unknown }} result */ (result) => {
          if (result.done) controller.close();
          else controller.enqueue(pick(result.value));
        });
      },
      /** @param {unknown} reason */
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );

/**
 * Fetch tees a body so that the second branch gets structured clones of the chunks (a byte stream's
 * tee already copies them): each chunk is cloned as it is read from the source, so changing a chunk
 * read from one body never changes the other's.
 * @param {any} stream @returns {[any, any]}
 */
const teeBody = (stream) => {
  if (isByteStream(stream)) return stream.tee();
  const source = stream.getReader();
  const pairs = pullingFrom(source, (chunk) => {
    try {
      return [chunk, cloneChunk(chunk)];
    } catch (error) {
      call(PromiseThen, source.cancel(error), undefined, () => {});
      throw error;
    }
  });
  const [a, b] = pairs.tee();
  return [pullingFrom(a.getReader(), (pair) => pair[0]), pullingFrom(b.getReader(), (pair) => pair[1])];
};

/** A second body with the same bytes (a stream is teed). @param {Body | null} body @param {string} who @returns {Body | null} */
const cloneBody = (body, who) => {
  if (body === null) return null;
  if (bodyUsed(body)) throw new TypeErrorCtor(`${who}: the body has already been read`);
  if (body.stream === null && body.host !== undefined) streamOf(body);
  if (body.stream === null) return { bytes: body.bytes, stream: null, used: false };
  const [a, b] = teeBody(body.stream);
  body.stream = a;
  return { bytes: null, stream: b, used: false };
};

/** @param {Headers} headers */
const mimeOf = (headers) => {
  const type = headers.get('content-type');
  return type === null ? '' : type;
};


/** The body read as FormData (multipart/form-data or application/x-www-form-urlencoded). @param {Uint8Array} bytes @param {string} type @param {string} who */
const parseForm = (bytes, type, who) => {
  const essence = call(StringToLowerCase, call(StringReplace, type, /;.*$/s, '')).trim();
  if (essence === 'application/x-www-form-urlencoded') {
    const entries = /** @type {import('./formData.js').Entry[]} */ (/** @type {unknown} */ (bareList()));
    for (const [name, value] of /** @type {Iterable<[string, string]>} */ (/** @type {unknown} */ (new (urls().URLSearchParams)(decodeText(bytes))))) append(entries, [name, value]);
    return forms().makeFormData(entries);
  }
  if (essence === 'multipart/form-data') {
    const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(type);
    const boundary = match === null ? undefined : match[1] !== undefined ? match[1] : match[2];
    if (boundary === undefined) throw new TypeErrorCtor(`${who}: the multipart/form-data content type has no boundary`);
    const entries = parseMultipart(bytes, boundary);
    if (entries === null) throw new TypeErrorCtor(`${who}: the body is not valid multipart/form-data`);
    return forms().makeFormData(entries);
  }
  throw new TypeErrorCtor(`${who}: the body is neither multipart/form-data nor application/x-www-form-urlencoded (content-type: "${type}")`);
};

/** Where `needle` first occurs in `bytes` at or after `from`, or -1. @param {Uint8Array} bytes @param {Uint8Array} needle @param {number} from */
const indexOfBytes = (bytes, needle, from) => {
  const first = needle[0];
  const last = bytes.length - needle.length;
  outer: for (let i = from; i <= last; i++) {
    if (bytes[i] !== first) continue;
    for (let j = 1; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
};
/** @param {string} s */
const unescapeName = (s) => call(StringReplace, s, /%(22|0D|0A)/gi, /** @param {string} _ @param {string} h */ (_, h) => (h === '22' ? '"' : h === '0D' || h === '0d' ? '\r' : '\n'));

/** The entries of a multipart/form-data body, or null when it is not one. @param {Uint8Array} bytes @param {string} boundary */
const parseMultipart = (bytes, boundary) => {
  const delimiter = utf8Encode(`--${boundary}`);
  const next = utf8Encode(`\r\n--${boundary}`);
  const blank = utf8Encode('\r\n\r\n');
  const entries = /** @type {import('./formData.js').Entry[]} */ (/** @type {unknown} */ (bareList()));
  let at = indexOfBytes(bytes, delimiter, 0);
  if (at < 0) return null;
  at += delimiter.length;
  for (;;) {
    if (bytes[at] === 0x2d && bytes[at + 1] === 0x2d) return entries;
    if (bytes[at] !== 0x0d || bytes[at + 1] !== 0x0a) return null;
    at += 2;
    const headEnd = indexOfBytes(bytes, blank, at);
    if (headEnd < 0) return null;
    const head = decodeText(viewBytes(bytes, at, headEnd));
    const end = indexOfBytes(bytes, next, headEnd + 4);
    if (end < 0) return null;
    /** @type {string | undefined} */
    let name;
    /** @type {string | undefined} */
    let filename;
    let contentType = '';
    for (const line of head.split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const field = call(StringToLowerCase, line.slice(0, colon)).trim();
      const value = line.slice(colon + 1).trim();
      if (field === 'content-disposition') {
        const n = /;\s*name="([^"]*)"/i.exec(value) ?? /;\s*name=([^;\s]+)/i.exec(value);
        const f = /;\s*filename="([^"]*)"/i.exec(value) ?? /;\s*filename=([^;\s]+)/i.exec(value);
        if (n !== null) name = unescapeName(/** @type {string} */ (n[1]));
        if (f !== null) filename = unescapeName(/** @type {string} */ (f[1]));
      } else if (field === 'content-type') contentType = value;
    }
    if (name === undefined) return null;
    const data = viewBytes(bytes, headEnd + 4, end);
    append(entries, filename === undefined ? [name, decodeText(data)] : [name, blobs().makeFile(copyRange(data, 0, data.length), filename, contentType === '' ? 'text/plain' : contentType)]);
    at = end + next.length;
  }
};

/**
 * The body methods of Request and Response (the Body mixin), on `body()`'s current body.
 * @param {string} cls @param {(self: any) => Body | null} bodyOf @param {(self: any) => Headers} headersOf
 */
const bodyMethods = (cls, bodyOf, headersOf) => {
  /**
   * The body read in full, then `fn` of it; a body that cannot be read rejects at once (no extra
   * microtask), as the standard's consume-body does.
   * @param {any} self @param {string} method @param {(bytes: Uint8Array) => unknown} fn
   */
  const read = (self, method, fn) => {
    const body = bodyOf(self);
    const who = `${cls}.${method}`;
    if (body !== null && body.aborted !== undefined) return rejected(body.aborted.reason);
    if (bodyUsed(body)) return rejected(new TypeErrorCtor(`${who}: the body has already been read`));
    return call(PromiseThen, consume(body, who), fn);
  };
  return {
    /** @this {any} */
    arrayBuffer() {
      return read(this, 'arrayBuffer', (b) => call(TypedArrayBuffer, copyRange(b, 0, b.length)));
    },
    /** @this {any} */
    bytes() {
      return read(this, 'bytes', (b) => copyRange(b, 0, b.length));
    },
    /** @this {any} */
    blob() {
      const type = mimeOf(headersOf(this));
      return read(this, 'blob', (b) => blobs().makeBlob(copyRange(b, 0, b.length), type));
    },
    /** @this {any} */
    text() {
      return read(this, 'text', decodeText);
    },
    /** @this {any} */
    json() {
      return read(this, 'json', (b) => JSONParse(decodeText(b)));
    },
    /** @this {any} */
    formData() {
      const type = mimeOf(headersOf(this));
      return read(this, 'formData', (b) => parseForm(b, type, `${cls}.formData`));
    },
  };
};

const BODY_METHODS = ['arrayBuffer', 'bytes', 'blob', 'text', 'json', 'formData'];
/** @param {object} proto @param {object} methods */
const mixIn = (proto, methods) => {
  for (let i = 0; i < BODY_METHODS.length; i++) {
    const key = /** @type {string} */ (BODY_METHODS[i]);
    ObjectDefineProperty(proto, key, { value: /** @type {any} */ (methods)[key], writable: true, enumerable: true, configurable: true });
  }
};

// ---- Request ----

/** @param {unknown} value @param {string[]} allowed @param {string} what */
const member = (value, allowed, what) => {
  const s = str(value);
  for (let i = 0; i < allowed.length; i++) if (allowed[i] === s) return s;
  throw new TypeErrorCtor(`Request: ${what} must be one of ${allowed.join(', ')}, not "${s}"`);
};
/** The methods the standard upper-cases (PATCH stays as given, as in browsers). */
const NORMALIZED_METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT'];
/** @param {unknown} value */
const normalizeMethod = (value) => {
  const m = str(value);
  if (!call(RegExpTest, TOKEN, m)) throw new TypeErrorCtor(`Request: "${m}" is not a valid HTTP method`);
  const upper = m.toUpperCase();
  if (upper === 'CONNECT' || upper === 'TRACE' || upper === 'TRACK') throw new TypeErrorCtor(`Request: the ${upper} method is not allowed`);
  for (let i = 0; i < NORMALIZED_METHODS.length; i++) if (NORMALIZED_METHODS[i] === upper) return upper;
  return m;
};
/** An absolute URL's href; relative URLs have no base on a server. @param {unknown} input @param {string} who */
const parseHref = (input, who) => {
  /** @type {import('../url.js').UrlParts | undefined} */
  let parts;
  try {
    parts = sync('url', str(input));
  } catch {
    throw new TypeErrorCtor(`${who}: "${str(input)}" is not an absolute URL`);
  }
  return /** @type {any} */ (parts);
};

/**
 * The fields of a Request.
 * `signal` is the signal given (fetch watches it), `ownSignal` the request's own, made when asked for.
 * @typedef {{ url: string, method: string, headers: Headers, body: Body | null, signal: any, ownSignal: any, redirect: string, mode: string, credentials: string, cache: string, integrity: string, keepalive: boolean, referrer: string, referrerPolicy: string }} RequestState
 */
/** @type {RequestState | undefined} */
let adoptRequest;
/** @type {(value: unknown) => value is Request} */
let isRequest;
/** @type {(request: Request) => RequestState} */
let requestState;

/** The request's own signal: it follows the one it was given (if any). @param {any} given */
const followingSignal = (given) => {
  const controller = new (events().AbortController)();
  if (given !== null) {
    if (signalAborted(given)) controller.abort(signalReason(given));
    else whenAborted(given, () => controller.abort(signalReason(given)));
  }
  return controller.signal;
};

export class Request {
  /** @type {RequestState} */
  #s;
  /** @param {any} input @param {any} [init] */
  constructor(input, init = undefined) {
    if (adoptRequest !== undefined) {
      this.#s = adoptRequest;
      adoptRequest = undefined;
      return;
    }
    if (arguments.length < 1) throw new TypeErrorCtor('Request: give a URL or a Request');
    if (init !== undefined && init !== null && typeof init !== 'object' && typeof init !== 'function') throw new TypeErrorCtor('Request: the options must be an object');
    const o = init === undefined || init === null ? ObjectCreate(null) : init;
    // Each member is read once, in the order WebIDL reads a dictionary.
    const body = o.body;
    const cache = o.cache;
    const credentials = o.credentials;
    const duplex = o.duplex;
    const headers = o.headers;
    const integrity = o.integrity;
    const keepalive = o.keepalive;
    const method = o.method;
    const mode = o.mode;
    const priority = o.priority;
    const redirect = o.redirect;
    const referrer = o.referrer;
    const referrerPolicy = o.referrerPolicy;
    const signal = o.signal;
    const window = o.window;

    const from = isRequest(input) ? requestState(input) : undefined;
    /** @type {RequestState} */
    const s = from
      ? { ...from, headers: new Headers(headerList(from.headers)), body: null, ownSignal: null }
      : { url: '', method: 'GET', headers: new Headers(), body: null, signal: null, ownSignal: null, redirect: 'follow', mode: 'cors', credentials: 'same-origin', cache: 'default', integrity: '', keepalive: false, referrer: 'about:client', referrerPolicy: '' };
    if (!from) {
      const parts = parseHref(input, 'Request');
      if (parts.username !== '' || parts.password !== '') throw new TypeErrorCtor('Request: a URL with a user name or password is refused; send an Authorization header (or use a credential with ctx.fetch)');
      s.url = parts.href;
    }
    if (window !== undefined && window !== null) throw new TypeErrorCtor('Request: window must be null');
    if (referrer !== undefined) {
      const r = str(referrer);
      if (r === '' || r === 'about:client') s.referrer = r;
      else s.referrer = parseHref(r, 'Request: referrer').href;
    }
    if (referrerPolicy !== undefined) s.referrerPolicy = member(referrerPolicy, ['', 'no-referrer', 'no-referrer-when-downgrade', 'same-origin', 'origin', 'strict-origin', 'origin-when-cross-origin', 'strict-origin-when-cross-origin', 'unsafe-url'], 'referrerPolicy');
    if (mode !== undefined) {
      s.mode = member(mode, ['navigate', 'same-origin', 'no-cors', 'cors'], 'mode');
      if (s.mode === 'navigate') throw new TypeErrorCtor('Request: mode "navigate" is for browsers; leave mode out');
    }
    if (credentials !== undefined) s.credentials = member(credentials, ['omit', 'same-origin', 'include'], 'credentials');
    if (cache !== undefined) {
      s.cache = member(cache, ['default', 'no-store', 'reload', 'no-cache', 'force-cache', 'only-if-cached'], 'cache');
      if (s.cache === 'only-if-cached' && s.mode !== 'same-origin') throw new TypeErrorCtor('Request: cache "only-if-cached" needs mode "same-origin"');
    }
    if (redirect !== undefined) s.redirect = member(redirect, ['follow', 'error', 'manual'], 'redirect');
    if (integrity !== undefined) s.integrity = str(integrity);
    if (keepalive !== undefined) s.keepalive = !!keepalive;
    if (method !== undefined) s.method = normalizeMethod(method);
    if (s.mode === 'no-cors' && s.method !== 'GET' && s.method !== 'HEAD' && s.method !== 'POST') throw new TypeErrorCtor(`Request: mode "no-cors" allows only GET, HEAD and POST, not ${s.method}`);
    if (signal !== undefined) {
      if (signal !== null && !events().isAbortSignal(signal)) throw new TypeErrorCtor('Request: signal must be an AbortSignal');
      s.signal = signal;
      s.ownSignal = null;
    }
    if (priority !== undefined) member(priority, ['high', 'low', 'auto'], 'priority');
    if (duplex !== undefined) member(duplex, ['half'], 'duplex');
    if (headers !== undefined) s.headers = new Headers(headers);
    const inputBody = from ? from.body : null;
    if (((body !== undefined && body !== null) || inputBody !== null) && (s.method === 'GET' || s.method === 'HEAD')) {
      throw new TypeErrorCtor(`Request: a ${s.method} request cannot have a body`);
    }
    if (body !== undefined && body !== null) {
      const extracted = extractBody(body, 'Request');
      if (extracted.body.stream !== null && duplex !== 'half') throw new TypeErrorCtor("Request: a ReadableStream body needs duplex: 'half'");
      if (extracted.type !== null && !s.headers.has('content-type')) s.headers.append('content-type', extracted.type);
      s.body = extracted.body;
    } else if (inputBody !== null) {
      if (bodyUsed(inputBody)) throw new TypeErrorCtor("Request: the input request's body has already been read");
      if (inputBody.stream !== null && inputBody.stream.locked) throw new TypeErrorCtor("Request: the input request's body is locked by a reader");
      // The body moves to the new request (a stream through a proxy): the input's counts as read.
      s.body = inputBody.stream === null ? { bytes: inputBody.bytes, stream: null, used: false } : { bytes: null, stream: inputBody.stream.pipeThrough(new (streams().TransformStream)()), used: false };
      inputBody.used = true;
    }
    this.#s = s;
  }
  get method() { return this.#s.method; }
  get url() { return this.#s.url; }
  get headers() { return this.#s.headers; }
  get destination() { return ''; }
  get referrer() { return this.#s.referrer; }
  get referrerPolicy() { return this.#s.referrerPolicy; }
  get mode() { return this.#s.mode; }
  get credentials() { return this.#s.credentials; }
  get cache() { return this.#s.cache; }
  get redirect() { return this.#s.redirect; }
  get integrity() { return this.#s.integrity; }
  get keepalive() { return this.#s.keepalive; }
  get isReloadNavigation() { return false; }
  get isHistoryNavigation() { return false; }
  get signal() {
    if (this.#s.ownSignal === null) this.#s.ownSignal = followingSignal(this.#s.signal);
    return this.#s.ownSignal;
  }
  get duplex() { return 'half'; }
  get body() { return streamOf(this.#s.body); }
  get bodyUsed() { return bodyUsed(this.#s.body); }
  clone() {
    const s = this.#s;
    adoptRequest = { ...s, headers: new Headers(headerList(s.headers)), body: cloneBody(s.body, 'Request.clone'), ownSignal: null };
    return new Request(undefined);
  }
  static {
    isRequest = (value) => value !== null && typeof value === 'object' && #s in value;
    requestState = (request) => request.#s;
  }
}
mixIn(Request.prototype, bodyMethods('Request', (self) => requestState(self).body, (self) => requestState(self).headers));

// ---- Response ----

/**
 * The fields of a Response.
 * @typedef {{ type: string, url: string, redirected: boolean, status: number, statusText: string, headers: Headers, body: Body | null }} ResponseState
 */
/** @type {ResponseState | undefined} */
let adoptResponse;
/** @type {(response: Response) => ResponseState} */
let responseState;
/** @param {ResponseState} s */
const makeResponse = (s) => {
  adoptResponse = s;
  return new Response();
};

/** @param {any} init @param {ResponseState} s */
const initResponse = (init, s) => {
  if (init === undefined || init === null) return;
  if (typeof init !== 'object' && typeof init !== 'function') throw new TypeErrorCtor('Response: the options must be an object');
  const headers = init.headers;
  const status = init.status;
  const statusText = init.statusText;
  if (status !== undefined) {
    const n = +status;
    if (!(n >= 200 && n <= 599) || n !== Math.trunc(n)) throw new RangeErrorCtor(`Response: status must be an integer from 200 to 599, not ${str(status)}`);
    s.status = n;
  }
  if (statusText !== undefined) {
    const t = str(statusText);
    if (!call(RegExpTest, REASON_PHRASE, t)) throw new TypeErrorCtor('Response: statusText must be one line of visible characters');
    s.statusText = t;
  }
  if (headers !== undefined) s.headers = new Headers(headers);
};

/** @param {ResponseState} s @param {any} body */
const setResponseBody = (s, body) => {
  if (body === undefined || body === null) return;
  if (among(NULL_BODY_STATUSES, s.status)) throw new TypeErrorCtor(`Response: a ${s.status} response cannot have a body`);
  const extracted = extractBody(body, 'Response');
  if (extracted.type !== null && !s.headers.has('content-type')) s.headers.append('content-type', extracted.type);
  s.body = extracted.body;
};

export class Response {
  /** @type {ResponseState} */
  #s;
  /** @param {any} [body] @param {any} [init] */
  constructor(body = null, init = undefined) {
    if (adoptResponse !== undefined) {
      this.#s = adoptResponse;
      adoptResponse = undefined;
      return;
    }
    /** @type {ResponseState} */
    const s = { type: 'default', url: '', redirected: false, status: 200, statusText: '', headers: new Headers(), body: null };
    initResponse(init, s);
    setResponseBody(s, body);
    this.#s = s;
  }
  static error() {
    const headers = new Headers();
    freezeHeaders(headers);
    return makeResponse({ type: 'error', url: '', redirected: false, status: 0, statusText: '', headers, body: null });
  }
  /** @param {unknown} url @param {unknown} [status] */
  static redirect(url, status = 302) {
    const href = parseHref(url, 'Response.redirect').href;
    const n = +(/** @type {any} */ (status));
    if (!among(REDIRECT_STATUSES, n)) throw new RangeErrorCtor(`Response.redirect: status must be 301, 302, 303, 307 or 308, not ${str(status)}`);
    const headers = new Headers();
    headers.set('location', href);
    freezeHeaders(headers);
    return makeResponse({ type: 'default', url: '', redirected: false, status: n, statusText: '', headers, body: null });
  }
  /** @param {unknown} data @param {any} [init] */
  static json(data, init = undefined) {
    const text = JSONStringify(data);
    if (text === undefined) throw new TypeErrorCtor('Response.json: the data is not JSON-serializable');
    /** @type {ResponseState} */
    const s = { type: 'default', url: '', redirected: false, status: 200, statusText: '', headers: new Headers(), body: null };
    initResponse(init, s);
    if (among(NULL_BODY_STATUSES, s.status)) throw new TypeErrorCtor(`Response.json: a ${s.status} response cannot have a body`);
    s.body = { bytes: utf8Encode(text), stream: null, used: false };
    if (!s.headers.has('content-type')) s.headers.append('content-type', 'application/json');
    return makeResponse(s);
  }
  get type() { return this.#s.type; }
  get url() { return this.#s.url; }
  get redirected() { return this.#s.redirected; }
  get status() { return this.#s.status; }
  get ok() { return this.#s.status >= 200 && this.#s.status <= 299; }
  get statusText() { return this.#s.statusText; }
  get headers() { return this.#s.headers; }
  get body() { return streamOf(this.#s.body); }
  get bodyUsed() { return bodyUsed(this.#s.body); }
  clone() {
    const s = this.#s;
    const headers = new Headers(headerList(s.headers));
    if (headersFrozen(s.headers)) freezeHeaders(headers);
    return makeResponse({ ...s, headers, body: cloneBody(s.body, 'Response.clone') });
  }
  static {
    responseState = (response) => response.#s;
  }
}
mixIn(Response.prototype, bodyMethods('Response', (self) => responseState(self).body, (self) => responseState(self).headers));

ObjectDefineProperty(Request.prototype, SymbolToStringTag, { value: 'Request', configurable: true });
ObjectDefineProperty(Response.prototype, SymbolToStringTag, { value: 'Response', configurable: true });

// ---- fetch ----

const STRENGTH = ['sha256', 'sha384', 'sha512'];
/** @param {string} b64 A digest in base64 or base64url, padded or not, as one comparable form. */
const digestForm = (b64) => call(StringReplace, call(StringReplace, call(StringReplace, b64, /=+$/, ''), /-/g, '+'), /_/g, '/');
/**
 * Whether `bytes` match the request's integrity metadata (W3C Subresource Integrity): the strongest
 * algorithm named decides; metadata naming no known algorithm matches anything.
 * @param {Uint8Array} bytes @param {string} integrity @returns {Promise<boolean>}
 */
const matchesIntegrity = (bytes, integrity) => {
  /** @type {Array<[number, string]>} */
  const items = [];
  let strongest = -1;
  for (const token of integrity.split(/[\t\n\f\r ]+/)) {
    const dash = token.indexOf('-');
    if (dash < 0) continue;
    const rank = STRENGTH.indexOf(call(StringToLowerCase, token.slice(0, dash)));
    if (rank < 0) continue;
    const question = token.indexOf('?', dash);
    append(items, [rank, digestForm(question < 0 ? token.slice(dash + 1) : token.slice(dash + 1, question))]);
    if (rank > strongest) strongest = rank;
  }
  if (strongest < 0) return PromiseResolve(true);
  const name = ['SHA-256', 'SHA-384', 'SHA-512'][strongest];
  const { subtle } = /** @type {typeof import('./subtle.js')} */ (require('./subtle.js'));
  const { bytesToBase64 } = /** @type {typeof import('../base64.js')} */ (require('../base64.js'));
  return call(PromiseThen, subtle.digest({ name }, bytes), /** @param {ArrayBuffer} digest */ (digest) => {
    const actual = digestForm(bytesToBase64(new Uint8ArrayCtor(digest)));
    for (let i = 0; i < items.length; i++) {
      const [rank, expected] = /** @type {[number, string]} */ (items[i]);
      if (rank === strongest && expected === actual) return true;
    }
    return false;
  });
};

const BODY_CHUNK = 64 * 1024;
/** `stream`: the host streams the body (read with `fetchRead`), `body` is absent. @typedef {{ status: number, statusText: string, url: string, redirected: boolean, headers: [string, string][], body: Uint8Array, stream?: true }} RawResponse */

/**
 * The body of a response the host streams: each read asks the host for the bytes that have arrived
 * since (nothing is read ahead of the function); cancelling it closes the vendor connection.
 * @param {number} id the fetch's operation id @param {Body} body
 */
const hostBodyStream = (id, body) =>
  new (streams().ReadableStream)(
    {
      type: 'bytes',
      /** @param {any} controller */
      start(controller) {
        body.controller = controller;
      },
      /** @param {any} controller */
      pull(controller) {
        return call(
          PromiseThen,
          start('fetchRead', id),
          /** @param {Uint8Array | null} bytes */ (bytes) => {
            if (bytes === null) {
              controller.close();
              // A BYOB reader waiting for bytes is answered with none.
              const request = controller.byobRequest;
              if (request) request.respond(0);
              return;
            }
            // In chunks of at most 64 KiB, as a body read from memory is.
            for (let at = 0; at < bytes.length; at += BODY_CHUNK) controller.enqueue(copyRange(bytes, at, at + BODY_CHUNK < bytes.length ? at + BODY_CHUNK : bytes.length));
          },
          /** @param {unknown} error */ (error) => {
            throw networkError(error);
          },
        );
      },
      cancel() {
        try {
          sync('fetchAbort', id);
        } catch {
          // The run is over: its requests are closed with it.
        }
      },
    },
    { highWaterMark: 0 },
  );

/** The host's failure as fetch gives it: a TypeError (a network error), with the host's message and code. @param {any} error */
const networkError = (error) => {
  const e = /** @type {TypeError & { code?: string }} */ (new TypeErrorCtor(error && typeof error.message === 'string' ? error.message : 'fetch failed'));
  if (error && typeof error.code === 'string') e.code = error.code;
  return e;
};

/** @param {unknown} input @param {any} [init] @returns {Promise<Response>} */
export const fetchFn = (input, init = undefined) => {
  /** @type {RequestState} */
  let s;
  try {
    s = requestState(new Request(input, init));
  } catch (error) {
    return rejected(error);
  }
  const signal = s.signal;
  if (signal !== null && signalAborted(signal)) return rejected(signalReason(signal));
  if (s.credentials === 'include') {
    return rejected(new TypeErrorCtor('fetch: credentials "include" cannot be honoured: the sandbox keeps no cookies; send a Cookie or Authorization header yourself, or use ctx.fetch with a credential'));
  }
  const method = s.method;
  return new PromiseCtor((resolve, reject) => {
    let done = false;
    /** @type {number | undefined} */
    let id;
    /** @type {(() => void) | undefined} */
    let stopWatching;
    const onAbort = () => {
      if (done) return;
      done = true;
      // Closes the vendor connection; the host's late answer is dropped.
      if (id !== undefined) {
        try {
          sync('fetchAbort', id);
        } catch {
          // The run is over: its requests are closed with it.
        }
      }
      reject(signalReason(signal));
    };
    if (signal !== null) stopWatching = whenAborted(signal, onAbort);
    const finish = () => {
      done = true;
      if (stopWatching !== undefined) stopWatching();
    };
    call(
      PromiseThen,
      s.body === null ? PromiseResolve(undefined) : consume(s.body, 'fetch', MAX_REQUEST_BYTES),
      /** @param {Uint8Array | undefined} body */ (body) => {
        if (done) return;
        const request = ObjectCreate(null);
        request.url = s.url;
        request.method = method;
        request.headers = headerList(s.headers);
        if (body !== undefined) request.body = body;
        request.redirect = s.redirect;
        // A body checked against `integrity` is needed whole before the response is given: not streamed.
        if (s.integrity === '') request.stream = true;
        call(
          PromiseThen,
          start('fetch', request, /** @param {number} opId */ (opId) => {
            id = opId;
          }),
          /** @param {RawResponse} raw */ (raw) => {
            if (done) return;
            const empty = method === 'HEAD' || among(NULL_BODY_STATUSES, raw.status);
            const headers = new Headers(raw.headers);
            freezeHeaders(headers);
            /** @type {Body} */
            const responseBody = { bytes: raw.stream === true ? null : raw.body, stream: null, used: false };
            // Its stream is made when asked for: text(), json() and the like read the host directly.
            if (raw.stream === true && !empty && id !== undefined) responseBody.host = id;
            const response = makeResponse({
              type: 'basic',
              url: raw.url,
              redirected: raw.redirected,
              status: raw.status,
              statusText: raw.statusText,
              headers,
              body: empty ? null : responseBody,
            });
            // Aborted after the response arrived, a body not yet read in full errors with the signal's reason, as if it were still arriving.
            const received = responseState(response).body;
            if (signal !== null && received !== null) {
              whenAborted(signal, () => {
                // Read already, or nothing to read (an empty body's stream closes before it could error).
                if ((received.stream === null && received.used && received.reading === undefined) || (received.bytes !== null && received.bytes.length === 0)) return;
                received.aborted = { reason: signalReason(signal) };
                if (raw.stream === true && id !== undefined) {
                  try {
                    // Closes the vendor connection of a body still arriving.
                    sync('fetchAbort', id);
                  } catch {
                    // The run is over.
                  }
                }
                try {
                  if (received.controller !== undefined) received.controller.error(signalReason(signal));
                } catch {
                  // Read to its end already.
                }
                if (received.reading !== undefined) received.reading(signalReason(signal));
              });
            }
            if (s.integrity === '') {
              finish();
              resolve(response);
              return;
            }
            // The body has arrived in full: it is checked before the response is given.
            call(
              PromiseThen,
              matchesIntegrity(raw.body, s.integrity),
              /** @param {boolean} ok */ (ok) => {
                if (done) return;
                finish();
                if (ok) resolve(response);
                else reject(new TypeErrorCtor(`fetch: the response from ${raw.url} does not match the request's integrity`));
              },
              /** @param {unknown} error */ (error) => {
                if (done) return;
                finish();
                reject(error);
              },
            );
          },
          /** @param {unknown} error */ (error) => {
            if (done) return;
            finish();
            reject(networkError(error));
          },
        );
      },
      /** @param {unknown} error */ (error) => {
        if (done) return;
        finish();
        reject(error);
      },
    );
  });
};
