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
 * and priority change nothing; credentials 'include' and a non-empty integrity are refused.
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
