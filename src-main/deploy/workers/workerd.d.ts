// The parts of the Workers runtime (workerd) the deploy Workers use, declared by hand so that
// tsconfig.workers.json checks them against what workerd has: no DOM, no Node beyond nodejs_compat.
// Member lists are the subset used here; the shapes follow workerd's own types.

type BodyInit = string | ArrayBuffer | ArrayBufferView | Blob | FormData | URLSearchParams | ReadableStream<Uint8Array> | null;
type HeadersInit = Headers | Record<string, string> | Iterable<readonly [string, string]>;

interface ReadableStreamDefaultReader<T> {
  read(): Promise<{ done: true; value?: undefined } | { done: false; value: T }>;
  cancel(reason?: unknown): Promise<void>;
}
interface ReadableStream<R = unknown> {
  getReader(): ReadableStreamDefaultReader<R>;
  cancel(reason?: unknown): Promise<void>;
}

declare class Blob {
  constructor(parts?: Array<string | ArrayBuffer | ArrayBufferView | Blob>, options?: { type?: string });
  readonly size: number;
  readonly type: string;
}

declare class FormData {
  append(name: string, value: string): void;
  append(name: string, value: Blob, filename?: string): void;
}

declare class Headers implements Iterable<[string, string]> {
  constructor(init?: HeadersInit);
  append(name: string, value: string): void;
  delete(name: string): void;
  get(name: string): string | null;
  has(name: string): boolean;
  set(name: string, value: string): void;
  keys(): IterableIterator<string>;
  entries(): IterableIterator<[string, string]>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}

declare class URLSearchParams {
  constructor(init?: string | Record<string, string> | Iterable<readonly [string, string]>);
  append(name: string, value: string): void;
  get(name: string): string | null;
  set(name: string, value: string): void;
  toString(): string;
}

declare class URL {
  constructor(url: string | URL, base?: string | URL);
  hash: string;
  host: string;
  hostname: string;
  href: string;
  readonly origin: string;
  password: string;
  pathname: string;
  port: string;
  protocol: string;
  search: string;
  readonly searchParams: URLSearchParams;
  username: string;
  toString(): string;
}

interface RequestInit {
  method?: string;
  headers?: HeadersInit;
  body?: BodyInit | undefined;
  redirect?: 'follow' | 'manual' | 'error';
}

/** The body methods Request and Response share (workerd has no global of this name). */
interface Body {
  readonly body: ReadableStream<Uint8Array> | null;
  readonly bodyUsed: boolean;
  arrayBuffer(): Promise<ArrayBuffer>;
  text(): Promise<string>;
  json<T = unknown>(): Promise<T>;
}

interface Request extends Body {}
declare class Request {
  constructor(input: string | URL | Request, init?: RequestInit);
  readonly headers: Headers;
  readonly method: string;
  readonly url: string;
}

interface ResponseInit {
  status?: number;
  statusText?: string;
  headers?: HeadersInit;
}

interface Response extends Body {}
declare class Response {
  constructor(body?: BodyInit, init?: ResponseInit);
  readonly headers: Headers;
  readonly ok: boolean;
  readonly status: number;
  readonly statusText: string;
}

declare function fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;

declare class TextEncoder {
  encode(input?: string): Uint8Array;
}
declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
  decode(input?: ArrayBuffer | ArrayBufferView): string;
}

interface SubtleCrypto {
  /** workerd's own: compares two equal-length buffers in constant time. */
  timingSafeEqual(a: ArrayBuffer | ArrayBufferView, b: ArrayBuffer | ArrayBufferView): boolean;
}
declare const crypto: { readonly subtle: SubtleCrypto; getRandomValues<T extends ArrayBufferView>(array: T): T; randomUUID(): string };

/** nodejs_compat's global Buffer, as credentials/redact.ts uses it. */
type BufferEncoding = 'utf8' | 'latin1' | 'hex' | 'base64' | 'base64url';
declare class Buffer extends Uint8Array {
  static from(text: string, encoding?: BufferEncoding): Buffer;
  static from(data: Uint8Array | readonly number[]): Buffer;
  static from(buffer: ArrayBufferLike, byteOffset?: number, length?: number): Buffer;
  static alloc(size: number): Buffer;
  static allocUnsafe(size: number): Buffer;
  static concat(list: readonly Uint8Array[], totalLength?: number): Buffer;
  toString(encoding?: BufferEncoding): string;
  indexOf(value: number | string | Uint8Array, byteOffset?: number): number;
  includes(value: number | string | Uint8Array, byteOffset?: number): boolean;
  subarray(start?: number, end?: number): Buffer;
}

declare function btoa(data: string): string;
declare function atob(data: string): string;
declare function setTimeout(callback: (...args: any[]) => void, ms?: number): number;
declare function clearTimeout(handle: number | undefined): void;
declare const console: { log(...data: unknown[]): void; error(...data: unknown[]): void; warn(...data: unknown[]): void };

interface ImportMeta {
  readonly url: string;
}

/** nodejs_compat's node:module (functions/schemas.ts creates a require at load). */
declare module 'node:module' {
  export function createRequire(path: string | URL): (id: string) => any;
}

declare module 'cloudflare:workers' {
  /** A class-based entrypoint: `ctx` carries the props its caller gave; `env` the Worker's bindings. */
  export abstract class WorkerEntrypoint<Env = any, Props = any> {
    protected ctx: ExecutionContext<Props>;
    protected env: Env;
    constructor(ctx: ExecutionContext<Props>, env: Env);
  }
}

/** What a Worker's handlers get besides the request (with enable_ctx_exports: its own entrypoints). */
interface ExecutionContext<Props = any, Exports = Record<string, (options: { props: unknown }) => unknown>> {
  readonly props: Props;
  /** The Worker's own entrypoints, each a function of the props a stub carries. */
  readonly exports: Exports;
  waitUntil(promise: Promise<unknown>): void;
}

/** A service binding or loopback entrypoint stub. */
interface Fetcher {
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
}

// The modules `callable deploy` generates (deploy/generate.ts) and bundles in.

/** One deployed function, as the gateway knows it. */
interface CatalogEntry {
  name: string;
  title?: string;
  description: string;
  inputSchema: object;
  outputSchema?: object;
  annotations?: object;
  /** The compiled module, an expression. */
  code: string;
  limits: import('../../engine/model/limits.ts').EffectiveLimits;
  /** ctx.secret's answer for each credential the function lists: its hosts when it may use it, else why not. */
  secrets: Array<{ name: string; hosts?: string[]; refused?: string }>;
}

declare module 'callable:catalog' {
  export const CATALOG: CatalogEntry[];
  export const SETTINGS: { compatibilityDate: string; checkHost: boolean; allowedOrigins: string[]; instance: string };
  /** The bundled runtime.js, the module each call's isolate runs. */
  export const RUNTIME: string;
}

/** An ajv standalone validator. */
type CompiledValidator = ((data: unknown) => boolean) & { errors?: import('ajv').ErrorObject[] | null };

declare module 'callable:validators' {
  /** Per function: its arguments' validator and, when it has an outputSchema, its result's. */
  export const VALIDATORS: Record<string, { input: CompiledValidator; output: CompiledValidator | undefined }>;
}

/** A credential the egress Worker adds: in a header (through its template) or a query parameter. */
type CredentialSpec = { name: string; binding: string; hosts: string[]; hostsText: string; oauth?: OAuthClient } & CredentialPlacement;
/** An OAuth client credentials grant whose tokens the egress Worker obtains itself, with the client secret of its binding. */
type OAuthClient = { tokenUrl: string; clientId: string; scopes: string[]; clientAuth: 'basic' | 'post' };
type CredentialPlacement = { header: string; template: string; query?: undefined } | { query: string; header?: undefined; template?: undefined };

declare module 'callable:egress' {
  export const POLICIES: Record<string, { allowedHosts: string[]; credentials: string[]; responseBytes: number }>;
  export const CREDENTIALS: Record<string, CredentialSpec>;
}

/** One hop the egress Worker made or refused, as it reports them in x-callable-trace. */
interface TraceEntry {
  method: string;
  url: string;
  ms: number;
  bytesOut: number;
  bytesIn: number;
  status?: number;
  error?: string;
  refused?: string;
  credential?: string;
  redirectFrom?: string;
}

// Between the gateway and a call's isolate (runtime.js).

/** What the gateway tells the runtime about one call. */
interface RunMeta {
  name: string;
  runId: string;
  deadline: number;
  logBytes: number;
  resultBytes: number;
  /** How many log lines and progress updates the isolate may report. */
  reports: number;
  /** ctx.secret's answers: this call's placeholder for each credential the function may use, else why not. */
  secrets: Array<{ name: string; placeholder?: string; refused?: string }>;
}

interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}

interface RunFailure {
  code: string;
  message: string;
  problem?: string;
}

/** A call's outcome as the runtime returns it (the gateway adds `value`, parsed from `json`). */
type RunOutcome = { logs?: Array<{ level: string; message: string }> } & (
  | { ok: true; json?: string; value?: unknown; content?: import('@modelcontextprotocol/server').ContentBlock[] }
  | { ok: false; error: RunFailure }
);

/** The runtime's entrypoint, as the gateway reaches it over RPC. */
interface RuntimeEntrypoint {
  run(args: unknown, meta: RunMeta): Promise<RunOutcome>;
}

/** What the gateway's Reporter entrypoint offers a call's isolate (env.REPORTER there). */
interface ReporterStub {
  log(level: string, message: string): Promise<void>;
  progress(update: ProgressUpdate): Promise<void>;
}

/** workerd's Worker Loader binding (worker_loaders in config.capnp). */
interface WorkerLoader {
  get(id: string | null, code: () => WorkerCode | Promise<WorkerCode>): WorkerStub;
}
interface WorkerLimits {
  cpuMs?: number;
  subRequests?: number;
}
interface WorkerCode {
  compatibilityDate: string;
  compatibilityFlags?: string[];
  mainModule: string;
  modules: Record<string, string>;
  env?: Record<string, unknown>;
  globalOutbound?: unknown;
  limits?: WorkerLimits;
}
interface WorkerStub {
  getEntrypoint(name?: string, options?: { limits?: WorkerLimits }): unknown;
}
