// Typings of the Callable Studio sandbox: what a function can use. The editor loads this file;
// functions may also `import type { Ctx } from 'callable'` (type-only imports are erased).

declare module 'callable' {
  export interface FetchInit {
    method?: string;
    headers?: Record<string, string> | Array<[string, string]> | Headers;
    /** A string, bytes, URLSearchParams (sent as a form), a Blob (with its type) or FormData (multipart). */
    body?: string | Uint8Array | ArrayBuffer | URLSearchParams | Blob | FormData;
    /** Sent as JSON with content-type application/json. */
    json?: unknown;
    /** A credential this function lists: injected on the host, only towards its own hosts. */
    credential?: string;
    redirect?: 'follow' | 'manual' | 'error';
  }

  export interface FetchResponse {
    readonly status: number;
    readonly statusText: string;
    readonly ok: boolean;
    readonly url: string;
    readonly redirected: boolean;
    readonly headers: Headers;
    text(): Promise<string>;
    json<T = any>(): Promise<T>;
    arrayBuffer(): Promise<ArrayBuffer>;
    bytes(): Promise<Uint8Array>;
  }

  export interface Content {
    readonly type: 'text' | 'image' | 'audio' | 'resource';
  }

  export interface Log {
    (...values: unknown[]): void;
    debug(...values: unknown[]): void;
    info(...values: unknown[]): void;
    warn(...values: unknown[]): void;
    error(...values: unknown[]): void;
  }

  /** A property of an elicitation form: a string (optionally an enum), a number, an integer, a boolean, or a multi-select array. */
  export type ElicitField = { type: 'string' | 'number' | 'integer' | 'boolean' | 'array'; title?: string; description?: string; default?: unknown; [keyword: string]: unknown };

  /** MCP's restricted form schema: a flat object of primitive properties. */
  export interface ElicitSchema {
    type: 'object';
    properties: Record<string, ElicitField>;
    required?: string[];
  }

  export interface ElicitAnswer<T = Record<string, unknown>> {
    action: 'accept' | 'decline' | 'cancel';
    /** Only with `accept`; already checked against the schema. */
    content?: T;
  }

  export type SampleMessage = { role: 'user' | 'assistant'; content: string | { type: 'text'; text: string } };

  export interface SampleOptions {
    /** Default 1000. */
    maxTokens?: number;
    systemPrompt?: string;
    temperature?: number;
    stopSequences?: string[];
    modelPreferences?: Record<string, unknown>;
  }

  export interface SampleAnswer {
    role: 'assistant' | 'user';
    content: { type: 'text'; text: string } | { type: string; [key: string]: unknown };
    model: string;
    stopReason?: string;
  }

  export interface Ctx {
    /** HTTP through the host's guarded fetch: only to the function's allowedHosts. */
    fetch(url: string | URL, init?: FetchInit): Promise<FetchResponse>;
    /**
     * Asks the user through the MCP client (elicitation, form mode), or the studio when the client
     * cannot; rejects when nobody can be asked. The run's timeoutMs still applies while waiting.
     */
    elicit<T = Record<string, unknown>>(message: string, requestedSchema: ElicitSchema): Promise<ElicitAnswer<T>>;
    /**
     * Asks the client's model for a completion (MCP sampling). Only for functions whose settings
     * have `"sampling": { "maxCalls": N }`; a string is one user message.
     */
    sample(messages: string | SampleMessage[], options?: SampleOptions): Promise<SampleAnswer>;
    log: Log;
    /** Reports progress to the caller (MCP progress notifications). */
    progress(done: number, total?: number, message?: string): void;
    /** A placeholder for a credential this function lists and was granted, valid in this run only: replaced by the secret only in header values and query parameters of requests to the credential's hosts, refused anywhere else. */
    secret(name: string): string;
    /** Return one of these (or an array of them) for MCP content other than JSON. */
    content: {
      text(text: string): Content;
      image(data: Uint8Array | ArrayBuffer | string, mimeType: string): Content;
      audio(data: Uint8Array | ArrayBuffer | string, mimeType: string): Content;
      resource(resource: { uri: string; mimeType?: string; text?: string; blob?: Uint8Array | string }): Content;
    };
    readonly functionName: string;
    readonly runId: string;
    /** Epoch milliseconds at which the run is stopped. */
    readonly deadline: number;
  }
}

// The sandbox's globals (no Node, no DOM).
declare var console: { log(...v: unknown[]): void; info(...v: unknown[]): void; debug(...v: unknown[]): void; warn(...v: unknown[]): void; error(...v: unknown[]): void; trace(...v: unknown[]): void };
declare function setTimeout(fn: (...args: any[]) => void, ms?: number, ...args: any[]): number;
declare function clearTimeout(handle: number | undefined): void;
declare function queueMicrotask(fn: () => void): void;
declare function atob(data: string): string;
declare function btoa(data: string): string;
declare var crypto: { getRandomValues<T extends ArrayBufferView>(array: T): T; randomUUID(): string; readonly subtle: SubtleCrypto };
/** A name, or a WebCrypto parameters object: { name: 'HMAC', hash: 'SHA-256' }, { name: 'AES-GCM', iv }, … */
type AlgorithmIdentifier = string | ({ name: string } & Record<string, unknown>);
type KeyUsage = 'encrypt' | 'decrypt' | 'sign' | 'verify' | 'deriveKey' | 'deriveBits' | 'wrapKey' | 'unwrapKey';
type KeyFormat = 'raw' | 'spki' | 'pkcs8' | 'jwk';
interface JsonWebKey { kty?: string; use?: string; key_ops?: string[]; alg?: string; ext?: boolean; crv?: string; x?: string; y?: string; d?: string; n?: string; e?: string; p?: string; q?: string; dp?: string; dq?: string; qi?: string; oth?: Array<{ r?: string; d?: string; t?: string }>; k?: string }
/** A key held by the sandbox host for this run only; its material enters the function only through exportKey. */
declare class CryptoKey { private constructor(); readonly type: 'secret' | 'public' | 'private'; readonly extractable: boolean; readonly algorithm: { name: string } & Record<string, unknown>; readonly usages: KeyUsage[] }
interface CryptoKeyPair { publicKey: CryptoKey; privateKey: CryptoKey }
/** W3C WebCrypto, performed by the sandbox host. Per run: at most 1000 keys, 16 MB of input per call; PBKDF2 iterations × output blocks at most 2,000,000 per call; RSA keys generated up to 4096 bits, imported up to 8192. */
declare class SubtleCrypto {
  private constructor();
  digest(algorithm: AlgorithmIdentifier, data: ArrayBuffer | ArrayBufferView): Promise<ArrayBuffer>;
  encrypt(algorithm: AlgorithmIdentifier, key: CryptoKey, data: ArrayBuffer | ArrayBufferView): Promise<ArrayBuffer>;
  decrypt(algorithm: AlgorithmIdentifier, key: CryptoKey, data: ArrayBuffer | ArrayBufferView): Promise<ArrayBuffer>;
  sign(algorithm: AlgorithmIdentifier, key: CryptoKey, data: ArrayBuffer | ArrayBufferView): Promise<ArrayBuffer>;
  verify(algorithm: AlgorithmIdentifier, key: CryptoKey, signature: ArrayBuffer | ArrayBufferView, data: ArrayBuffer | ArrayBufferView): Promise<boolean>;
  generateKey(algorithm: AlgorithmIdentifier, extractable: boolean, keyUsages: KeyUsage[]): Promise<CryptoKey | CryptoKeyPair>;
  deriveKey(algorithm: AlgorithmIdentifier, baseKey: CryptoKey, derivedKeyType: AlgorithmIdentifier, extractable: boolean, keyUsages: KeyUsage[]): Promise<CryptoKey>;
  deriveBits(algorithm: AlgorithmIdentifier, baseKey: CryptoKey, length?: number | null): Promise<ArrayBuffer>;
  importKey(format: 'jwk', keyData: JsonWebKey, algorithm: AlgorithmIdentifier, extractable: boolean, keyUsages: KeyUsage[]): Promise<CryptoKey>;
  importKey(format: Exclude<KeyFormat, 'jwk'>, keyData: ArrayBuffer | ArrayBufferView, algorithm: AlgorithmIdentifier, extractable: boolean, keyUsages: KeyUsage[]): Promise<CryptoKey>;
  exportKey(format: 'jwk', key: CryptoKey): Promise<JsonWebKey>;
  exportKey(format: Exclude<KeyFormat, 'jwk'>, key: CryptoKey): Promise<ArrayBuffer>;
  wrapKey(format: KeyFormat, key: CryptoKey, wrappingKey: CryptoKey, wrapAlgorithm: AlgorithmIdentifier): Promise<ArrayBuffer>;
  unwrapKey(format: KeyFormat, wrappedKey: ArrayBuffer | ArrayBufferView, unwrappingKey: CryptoKey, unwrapAlgorithm: AlgorithmIdentifier, unwrappedKeyAlgorithm: AlgorithmIdentifier, extractable: boolean, keyUsages: KeyUsage[]): Promise<CryptoKey>;
}
declare class TextEncoder { readonly encoding: 'utf-8'; encode(input?: string): Uint8Array }
declare class TextDecoder { constructor(label?: 'utf-8'); readonly encoding: 'utf-8'; decode(input?: ArrayBuffer | ArrayBufferView): string }
declare class URLSearchParams implements Iterable<[string, string]> {
  constructor(init?: string | Record<string, string> | Iterable<[string, string]>);
  readonly size: number;
  append(name: string, value: string): void; delete(name: string, value?: string): void; get(name: string): string | null;
  getAll(name: string): string[]; has(name: string, value?: string): boolean; set(name: string, value: string): void; sort(): void;
  forEach(fn: (value: string, key: string, parent: URLSearchParams) => void): void;
  entries(): IterableIterator<[string, string]>; keys(): IterableIterator<string>; values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>; toString(): string;
}
declare class URL {
  constructor(url: string | URL, base?: string | URL);
  static canParse(url: string, base?: string): boolean; static parse(url: string, base?: string): URL | null;
  href: string; readonly origin: string; protocol: string; username: string; password: string; host: string; hostname: string;
  port: string; pathname: string; search: string; hash: string; readonly searchParams: URLSearchParams; toString(): string; toJSON(): string;
}
declare class Headers implements Iterable<[string, string]> {
  constructor(init?: Record<string, string> | Iterable<[string, string]>);
  append(name: string, value: string): void; delete(name: string): void; get(name: string): string | null; has(name: string): boolean;
  set(name: string, value: string): void; forEach(fn: (value: string, key: string, parent: Headers) => void): void;
  entries(): IterableIterator<[string, string]>; keys(): IterableIterator<string>; values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}

// The web platform (WinterTC Minimum Common API): DOMException, events and abort, timers, clock, cloning, streams.
declare function setInterval(fn: (...args: any[]) => void, ms?: number, ...args: any[]): number;
declare function clearInterval(handle: number | undefined): void;
/** A deep copy (Map, Set, Date, RegExp, typed arrays, errors, cycles); throws a DataCloneError DOMException for functions and symbols. */
declare function structuredClone<T>(value: T, options?: { transfer?: unknown[] }): T;
/** Logs `error` as an uncaught exception (console.error) without throwing. */
declare function reportError(error: unknown): void;
declare var navigator: { readonly userAgent: string };
/** now(): milliseconds since this call's context was made, in 100 µs steps. */
declare class Performance extends EventTarget { private constructor(); readonly timeOrigin: number; now(): number; toJSON(): { timeOrigin: number } }
declare var performance: Performance;
declare class DOMException extends Error {
  constructor(message?: string, options?: string | { name?: string; cause?: unknown });
  readonly name: string; readonly message: string; readonly code: number;
  static readonly INDEX_SIZE_ERR: 1; static readonly HIERARCHY_REQUEST_ERR: 3; static readonly INVALID_CHARACTER_ERR: 5; static readonly NOT_FOUND_ERR: 8;
  static readonly NOT_SUPPORTED_ERR: 9; static readonly INVALID_STATE_ERR: 11; static readonly SYNTAX_ERR: 12; static readonly INVALID_ACCESS_ERR: 15;
  static readonly SECURITY_ERR: 18; static readonly NETWORK_ERR: 19; static readonly ABORT_ERR: 20; static readonly QUOTA_EXCEEDED_ERR: 22;
  static readonly TIMEOUT_ERR: 23; static readonly DATA_CLONE_ERR: 25;
}
interface EventInit { bubbles?: boolean; cancelable?: boolean; composed?: boolean }
declare class Event {
  constructor(type: string, eventInitDict?: EventInit);
  readonly type: string; readonly target: EventTarget | null; readonly srcElement: EventTarget | null; readonly currentTarget: EventTarget | null;
  composedPath(): EventTarget[]; readonly eventPhase: number; stopPropagation(): void; cancelBubble: boolean; stopImmediatePropagation(): void;
  readonly bubbles: boolean; readonly cancelable: boolean; returnValue: boolean; preventDefault(): void; readonly defaultPrevented: boolean;
  readonly composed: boolean; readonly isTrusted: boolean; readonly timeStamp: number;
  static readonly NONE: 0; static readonly CAPTURING_PHASE: 1; static readonly AT_TARGET: 2; static readonly BUBBLING_PHASE: 3;
}
declare class CustomEvent<T = any> extends Event { constructor(type: string, eventInitDict?: EventInit & { detail?: T }); readonly detail: T }
type EventListenerOrEventListenerObject = ((event: Event) => void) | { handleEvent(event: Event): void };
interface AddEventListenerOptions { capture?: boolean; once?: boolean; passive?: boolean; signal?: AbortSignal }
declare class EventTarget {
  constructor();
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | { capture?: boolean }): void;
  dispatchEvent(event: Event): boolean;
}
declare class AbortSignal extends EventTarget {
  private constructor();
  static abort(reason?: any): AbortSignal;
  /** Aborts with a TimeoutError DOMException after `milliseconds`; never fires after the run's deadline. */
  static timeout(milliseconds: number): AbortSignal;
  static any(signals: Iterable<AbortSignal>): AbortSignal;
  readonly aborted: boolean; readonly reason: any; throwIfAborted(): void; onabort: ((this: AbortSignal, event: Event) => any) | null;
}
declare class AbortController { constructor(); readonly signal: AbortSignal; abort(reason?: any): void }
interface QueuingStrategy<T = any> { highWaterMark?: number; size?: (chunk: T) => number }
declare class CountQueuingStrategy implements QueuingStrategy { constructor(init: { highWaterMark: number }); readonly highWaterMark: number; readonly size: (chunk: any) => 1 }
declare class ByteLengthQueuingStrategy implements QueuingStrategy<ArrayBufferView> { constructor(init: { highWaterMark: number }); readonly highWaterMark: number; readonly size: (chunk: ArrayBufferView) => number }
type ReadableStreamReadResult<T> = { done: false; value: T } | { done: true; value: T | undefined };
interface UnderlyingSource<R = any> { start?(controller: ReadableStreamDefaultController<R>): any; pull?(controller: ReadableStreamDefaultController<R>): any; cancel?(reason?: any): any }
interface UnderlyingByteSource { type: 'bytes'; autoAllocateChunkSize?: number; start?(controller: ReadableByteStreamController): any; pull?(controller: ReadableByteStreamController): any; cancel?(reason?: any): any }
interface StreamPipeOptions { preventClose?: boolean; preventAbort?: boolean; preventCancel?: boolean; signal?: AbortSignal }
declare class ReadableStream<R = any> implements AsyncIterable<R> {
  constructor(underlyingSource: UnderlyingByteSource, strategy?: { highWaterMark?: number });
  constructor(underlyingSource?: UnderlyingSource<R>, strategy?: QueuingStrategy<R>);
  static from<R>(iterable: Iterable<R> | AsyncIterable<R>): ReadableStream<R>;
  readonly locked: boolean;
  cancel(reason?: any): Promise<void>;
  getReader(options: { mode: 'byob' }): ReadableStreamBYOBReader;
  getReader(): ReadableStreamDefaultReader<R>;
  pipeThrough<T>(transform: { writable: WritableStream<R>; readable: ReadableStream<T> }, options?: StreamPipeOptions): ReadableStream<T>;
  pipeTo(destination: WritableStream<R>, options?: StreamPipeOptions): Promise<void>;
  tee(): [ReadableStream<R>, ReadableStream<R>];
  values(options?: { preventCancel?: boolean }): AsyncIterableIterator<R>;
  [Symbol.asyncIterator](options?: { preventCancel?: boolean }): AsyncIterableIterator<R>;
}
declare class ReadableStreamDefaultReader<R = any> { constructor(stream: ReadableStream<R>); readonly closed: Promise<undefined>; cancel(reason?: any): Promise<void>; read(): Promise<ReadableStreamReadResult<R>>; releaseLock(): void }
declare class ReadableStreamBYOBReader {
  constructor(stream: ReadableStream<Uint8Array>); readonly closed: Promise<undefined>; cancel(reason?: any): Promise<void>;
  read<T extends ArrayBufferView>(view: T, options?: { min?: number }): Promise<ReadableStreamReadResult<T>>; releaseLock(): void;
}
declare class ReadableStreamDefaultController<R = any> { private constructor(); readonly desiredSize: number | null; close(): void; enqueue(chunk?: R): void; error(e?: any): void }
declare class ReadableByteStreamController { private constructor(); readonly byobRequest: ReadableStreamBYOBRequest | null; readonly desiredSize: number | null; close(): void; enqueue(chunk: ArrayBufferView): void; error(e?: any): void }
declare class ReadableStreamBYOBRequest { private constructor(); readonly view: ArrayBufferView | null; respond(bytesWritten: number): void; respondWithNewView(view: ArrayBufferView): void }
interface UnderlyingSink<W = any> { start?(controller: WritableStreamDefaultController): any; write?(chunk: W, controller: WritableStreamDefaultController): any; close?(): any; abort?(reason?: any): any }
declare class WritableStream<W = any> { constructor(underlyingSink?: UnderlyingSink<W>, strategy?: QueuingStrategy<W>); readonly locked: boolean; abort(reason?: any): Promise<void>; close(): Promise<void>; getWriter(): WritableStreamDefaultWriter<W> }
declare class WritableStreamDefaultWriter<W = any> {
  constructor(stream: WritableStream<W>); readonly closed: Promise<undefined>; readonly desiredSize: number | null; readonly ready: Promise<undefined>;
  abort(reason?: any): Promise<void>; close(): Promise<void>; releaseLock(): void; write(chunk?: W): Promise<void>;
}
declare class WritableStreamDefaultController { private constructor(); readonly signal: AbortSignal; error(e?: any): void }
interface Transformer<I = any, O = any> { start?(controller: TransformStreamDefaultController<O>): any; transform?(chunk: I, controller: TransformStreamDefaultController<O>): any; flush?(controller: TransformStreamDefaultController<O>): any; cancel?(reason?: any): any }
declare class TransformStream<I = any, O = any> { constructor(transformer?: Transformer<I, O>, writableStrategy?: QueuingStrategy<I>, readableStrategy?: QueuingStrategy<O>); readonly readable: ReadableStream<O>; readonly writable: WritableStream<I> }
declare class TransformStreamDefaultController<O = any> { private constructor(); readonly desiredSize: number | null; enqueue(chunk?: O): void; error(reason?: any): void; terminate(): void }
declare class TextEncoderStream { constructor(); readonly encoding: 'utf-8'; readonly readable: ReadableStream<Uint8Array>; readonly writable: WritableStream<string> }
declare class TextDecoderStream {
  constructor(label?: 'utf-8', options?: { fatal?: boolean; ignoreBOM?: boolean });
  readonly encoding: 'utf-8'; readonly fatal: boolean; readonly ignoreBOM: boolean; readonly readable: ReadableStream<string>; readonly writable: WritableStream<ArrayBuffer | ArrayBufferView>;
}
type CompressionFormat = 'gzip' | 'deflate' | 'deflate-raw';
declare class CompressionStream { constructor(format: CompressionFormat); readonly readable: ReadableStream<Uint8Array>; readonly writable: WritableStream<ArrayBuffer | ArrayBufferView> }
/** Decompressed data counts against the function's memoryMb: a bomb ends the run with an out-of-memory error. */
declare class DecompressionStream { constructor(format: CompressionFormat); readonly readable: ReadableStream<Uint8Array>; readonly writable: WritableStream<ArrayBuffer | ArrayBufferView> }

type BlobPart = string | ArrayBuffer | ArrayBufferView | Blob;
interface BlobPropertyBag { type?: string; endings?: 'transparent' | 'native' }
declare class Blob {
  constructor(parts?: Iterable<BlobPart>, options?: BlobPropertyBag);
  readonly size: number; readonly type: string;
  slice(start?: number, end?: number, contentType?: string): Blob;
  text(): Promise<string>; arrayBuffer(): Promise<ArrayBuffer>; bytes(): Promise<Uint8Array>; stream(): ReadableStream<Uint8Array>;
}
declare class File extends Blob {
  constructor(parts: Iterable<BlobPart>, name: string, options?: BlobPropertyBag & { lastModified?: number });
  readonly name: string; readonly lastModified: number; readonly webkitRelativePath: string;
}
interface ProgressEventInit extends EventInit { lengthComputable?: boolean; loaded?: number; total?: number }
declare class ProgressEvent extends Event { constructor(type: string, init?: ProgressEventInit); readonly lengthComputable: boolean; readonly loaded: number; readonly total: number }
/** Reads a Blob with events (loadstart, progress, load or error, loadend); `await blob.text()` and friends do the same more simply. */
declare class FileReader extends EventTarget {
  readAsArrayBuffer(blob: Blob): void; readAsBinaryString(blob: Blob): void; readAsText(blob: Blob, encoding?: string): void; readAsDataURL(blob: Blob): void; abort(): void;
  static readonly EMPTY: 0; static readonly LOADING: 1; static readonly DONE: 2; readonly EMPTY: 0; readonly LOADING: 1; readonly DONE: 2;
  readonly readyState: 0 | 1 | 2; readonly result: string | ArrayBuffer | null; readonly error: DOMException | null;
  onloadstart: ((this: FileReader, ev: ProgressEvent) => any) | null; onprogress: ((this: FileReader, ev: ProgressEvent) => any) | null;
  onload: ((this: FileReader, ev: ProgressEvent) => any) | null; onabort: ((this: FileReader, ev: ProgressEvent) => any) | null;
  onerror: ((this: FileReader, ev: ProgressEvent) => any) | null; onloadend: ((this: FileReader, ev: ProgressEvent) => any) | null;
}
type FormDataEntryValue = string | File;
declare class FormData implements Iterable<[string, FormDataEntryValue]> {
  constructor();
  append(name: string, value: string | Blob): void; append(name: string, value: Blob, filename: string): void;
  set(name: string, value: string | Blob): void; set(name: string, value: Blob, filename: string): void;
  get(name: string): FormDataEntryValue | null; getAll(name: string): FormDataEntryValue[]; has(name: string): boolean; delete(name: string): void;
  forEach(callback: (value: FormDataEntryValue, key: string, parent: FormData) => void, thisArg?: unknown): void;
  entries(): IterableIterator<[string, FormDataEntryValue]>; keys(): IterableIterator<string>; values(): IterableIterator<FormDataEntryValue>;
  [Symbol.iterator](): IterableIterator<[string, FormDataEntryValue]>;
}
type BodyInit = string | ArrayBuffer | ArrayBufferView | Blob | URLSearchParams | FormData | ReadableStream<Uint8Array>;
type HeadersInit = Headers | Record<string, string> | Array<[string, string]>;
interface Body {
  readonly body: ReadableStream<Uint8Array> | null; readonly bodyUsed: boolean;
  arrayBuffer(): Promise<ArrayBuffer>; bytes(): Promise<Uint8Array>; blob(): Promise<Blob>; formData(): Promise<FormData>; json<T = any>(): Promise<T>; text(): Promise<string>;
}
/**
 * The sandbox has no cookie jar and no HTTP cache: mode, cache, keepalive, referrer, referrerPolicy
 * and priority change nothing; credentials 'include' is refused; integrity is checked (sha256, sha384, sha512).
 */
interface RequestInit {
  method?: string; headers?: HeadersInit; body?: BodyInit | null;
  /** 'manual' gives the 3xx response itself (status and Location), as on other servers. */
  redirect?: 'follow' | 'manual' | 'error';
  /** Aborting rejects with the signal's reason and closes the connection to the vendor. */
  signal?: AbortSignal | null;
  /** Required with a ReadableStream body, which is read in full before it is sent. */
  duplex?: 'half';
  mode?: 'cors' | 'no-cors' | 'same-origin'; credentials?: 'omit' | 'same-origin' | 'include';
  cache?: 'default' | 'no-store' | 'reload' | 'no-cache' | 'force-cache' | 'only-if-cached';
  keepalive?: boolean; integrity?: string; referrer?: string; referrerPolicy?: string; priority?: 'high' | 'low' | 'auto'; window?: null;
}
interface Request extends Body {}
declare class Request {
  constructor(input: string | URL | Request, init?: RequestInit);
  readonly method: string; readonly url: string; readonly headers: Headers; readonly signal: AbortSignal;
  readonly redirect: 'follow' | 'manual' | 'error'; readonly mode: string; readonly credentials: string; readonly cache: string;
  readonly integrity: string; readonly keepalive: boolean; readonly referrer: string; readonly referrerPolicy: string;
  readonly destination: ''; readonly duplex: 'half'; readonly isReloadNavigation: boolean; readonly isHistoryNavigation: boolean;
  clone(): Request;
}
interface ResponseInit { status?: number; statusText?: string; headers?: HeadersInit }
interface Response extends Body {}
declare class Response {
  constructor(body?: BodyInit | null, init?: ResponseInit);
  static error(): Response; static redirect(url: string | URL, status?: 301 | 302 | 303 | 307 | 308): Response; static json(data: unknown, init?: ResponseInit): Response;
  readonly type: 'basic' | 'default' | 'error'; readonly url: string; readonly redirected: boolean;
  readonly status: number; readonly ok: boolean; readonly statusText: string; readonly headers: Headers;
  clone(): Response;
}
/** The web fetch, through the same host checks, limits and trace as ctx.fetch; a refused request rejects with a TypeError carrying ctx.fetch's message and code. */
declare function fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
