import { StudioError, type CredentialPlacement, type FunctionSpecInput, type OAuthGrant } from '../../model/index.ts';
import type { SaveInput } from '../repository.ts';

/**
 * The shared half of `callable new --from-curl | --from-har | --from-openapi`: a request described
 * once, whatever it came from, turned into a function (source using ctx.fetch, inputSchema,
 * allowedHosts, credential reference, annotations, description). Pure: no file, no network.
 */

/** One value the request sends that becomes an argument of the function. */
export interface RequestParam {
  /** The name on the wire (query parameter, path placeholder, body field). */
  name: string;
  /** JSON Schema of the argument (from the spec, or inferred from `value`). */
  schema: Record<string, unknown>;
  required: boolean;
  /** The value the curl command / HAR entry sent: the argument's default and example. */
  value?: unknown;
  description?: string;
  /** A multipart field's content type and file name (curl -F "name=value;type=…;filename=…"). */
  part?: { contentType?: string; filename?: string };
  /** What the printed example passes for a value that was not kept (a secret): never a default. */
  placeholder?: unknown;
}

export type RequestBody =
  /** A JSON object whose top-level fields are arguments. */
  | { kind: 'json-fields'; fields: RequestParam[] }
  /** A JSON value taken whole as one argument (`body`). */
  | { kind: 'json'; param: RequestParam }
  /** An application/x-www-form-urlencoded body whose fields are arguments. */
  | { kind: 'form'; fields: RequestParam[] }
  /** A multipart/form-data body of text fields (curl -F), each an argument. */
  | { kind: 'multipart'; fields: RequestParam[] }
  /** Any other body, as text in one argument (`body`), sent with this content type. */
  | { kind: 'text'; contentType: string; param: RequestParam };

/** Where the request's secret went: a credential the function names, stored by the user. */
export interface CredentialSuggestion {
  name: string;
  hosts: string[];
  placement: CredentialPlacement;
  /** What the secret was found in, for the message ("the Authorization header"). */
  from: string;
  /** For basic auth: the secret to store is base64("user:password"). */
  basic?: boolean;
  /** An OAuth 2 / OpenID Connect scheme: the credential is defined with this server, connected later. */
  oauth?: { issuer?: string; authorizeUrl?: string; tokenUrl?: string; deviceUrl?: string; scopes: string[]; grant: OAuthGrant };
}

export interface RequestDescription {
  method: string;
  /** Absolute URL without query; `{name}` in the path stands for a path parameter. */
  url: string;
  pathParams: RequestParam[];
  query: RequestParam[];
  /** Headers sent as written (never a secret: those become the credential). */
  headers: Array<[string, string]>;
  body?: RequestBody;
  credential?: CredentialSuggestion;
  title?: string;
  description: string;
  outputSchema?: Record<string, unknown>;
  /** Where it came from, for the comment at the top of the source ("a curl command"). */
  origin: string;
  /** Schemas the argument schemas point at (`#/$defs/Name`), kept at the inputSchema's root. */
  defs?: Record<string, unknown>;
}

/** A generated function and what the user should be told about it. */
export interface Scaffold {
  input: SaveInput;
  credential?: CredentialSuggestion;
  /** Arguments that reproduce the original request (every value it sent). */
  exampleArgs: Record<string, unknown>;
  /** Things the user should know: headers left out, a scheme changed. */
  notes: string[];
  /** How the function turns the response into its result ("json" when an outputSchema wraps a non-object as { result }). */
  wrapsResult: boolean;
}

/** Headers a function may not or need not set: hop-by-hop, Host, and what the fetch computes itself. */
const DROPPED_HEADERS = new Set([
  'host',
  'content-length',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'accept-encoding',
  'expect',
]);

/** Headers a browser adds that say nothing about the API (HAR). */
const BROWSER_HEADERS = /^(sec-|user-agent$|referer$|origin$|priority$|pragma$|cache-control$|dnt$|upgrade-insecure-requests$|accept-language$|if-none-match$|if-modified-since$)/i;

/** Header names that carry a secret. */
const SECRET_HEADER = /(authorization|api[-_]?key|apikey|token|secret|password|signature|^x-auth|^auth$|session)/i;
/** Query parameter names vendors give their keys (compared without case, "-" or "_"). */
const KEY_NAMES = new Set(['key', 'apikey', 'appkey', 'accesskey', 'accesstoken', 'authkey', 'authtoken', 'apitoken', 'privatetoken', 'token', 'secret', 'secretkey', 'clientsecret', 'subscriptionkey', 'hapikey', 'licensekey', 'xapikey', 'devkey', 'password', 'auth', 'signature', 'sig', 'appid']);
/** Of those, the one that names the account, not the key, when a key-named parameter is sent too (app_id beside app_key). */
const ACCOUNT_NAMES = new Set(['appid']);
/** Parameters that hold opaque server values (paging cursors, versions), whatever they look like. */
const OPAQUE_NAMES = /(cursor|page|pagetoken|after|before|since|until|next|continu|offset|marker|etag|hash|sha|ref|id|ids|uuid|state|version)$/i;

/**
 * Why a query parameter looks like the request's secret, or undefined: its name is one vendors use
 * for keys, or its value is long and random (the entropy of a generated key, not of words or an id).
 */
export function secretReason(name: string, value: string): { reason: string; strength: number } | undefined {
  const bare = name.toLowerCase().replace(/[-_]/g, '');
  // A flag or a count under such a name (auth=true, sig=1) is not a key.
  if (KEY_NAMES.has(bare) && !/^(true|false|\d{0,5})$/i.test(value)) return { reason: 'it is a name vendors give API keys', strength: ACCOUNT_NAMES.has(bare) ? 1 : 2 };
  if (OPAQUE_NAMES.test(bare) || !looksRandom(value)) return undefined;
  return { reason: `its value looks like a key (${value.length} random characters)`, strength: 0 };
}

/** Long, no spaces, letters and digits mixed, and near-uniform characters (a generated key, not a word, date or counter). */
function looksRandom(value: string): boolean {
  if (value.length < 24 || value.length > 512 || !/^[\w.~+/=:-]+$/.test(value) || !/\d/.test(value) || !/[A-Za-z]/.test(value)) return false;
  const counts = new Map<string, number>();
  for (const c of value) counts.set(c, (counts.get(c) ?? 0) + 1);
  let entropy = 0;
  for (const n of counts.values()) entropy -= (n / value.length) * Math.log2(n / value.length);
  // Random base-62 keys of 24+ characters measure 4.2 bits a character or more; hex ids, dates and words fall below.
  return entropy >= 4.2;
}

/**
 * Sorts the headers of a request into those kept in the source, the one secret that becomes the
 * credential (Authorization first, then an API-key-like header), and those left out (with why).
 */
export function sortHeaders(
  headers: Array<[string, string]>,
  host: string,
  options: { browser?: boolean } = {},
): { kept: Array<[string, string]>; credential?: CredentialSuggestion; notes: string[] } {
  const kept: Array<[string, string]> = [];
  const notes: string[] = [];
  let credential: CredentialSuggestion | undefined;
  const secrets = headers.filter(([name]) => SECRET_HEADER.test(name) && !/^x-[\w-]*-version$/i.test(name));
  const chosen = secrets.find(([name]) => name.toLowerCase() === 'authorization') ?? secrets[0];
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    if (lower.startsWith(':') || DROPPED_HEADERS.has(lower)) continue;
    if (options.browser && BROWSER_HEADERS.test(lower)) continue;
    if (lower === 'cookie') {
      notes.push('the Cookie header was left out: cookies are session secrets and are not saved; a function that needs one should use a credential');
      continue;
    }
    if (chosen && name === chosen[0] && value === chosen[1]) {
      credential = headerCredential(name, value, host);
      continue;
    }
    if (secrets.some(([n]) => n === name)) {
      notes.push(`the ${name} header was left out: it looks like a secret and a request carries one credential (${chosen?.[0]} became it)`);
      continue;
    }
    kept.push([name, value]);
  }
  return { kept, credential, notes };
}

/** A header holding a secret as a credential: `Bearer abc` → template "Bearer {secret}". */
function headerCredential(name: string, value: string, host: string): CredentialSuggestion {
  const scheme = /^(\S+)\s+\S/.exec(value.trim())?.[1];
  const template = scheme && name.toLowerCase() === 'authorization' ? `${scheme} {secret}` : '{secret}';
  const header = canonicalHeaderName(name);
  return { name: credentialNameFor(host), hosts: [host], placement: { kind: 'header', header, template }, from: `the ${header} header`, ...(scheme?.toLowerCase() === 'basic' ? { basic: true } : {}) };
}

function canonicalHeaderName(name: string): string {
  return name
    .split('-')
    .map((part) => (part.length === 0 ? part : part[0]!.toUpperCase() + part.slice(1)))
    .join('-')
    .replace(/[^A-Za-z0-9-]/g, '');
}

/** Basic auth (`curl -u user:password`, HAR's `Authorization: Basic …`) as a credential. */
export function basicCredential(host: string, from: string): CredentialSuggestion {
  return { name: credentialNameFor(host), hosts: [host], placement: { kind: 'header', header: 'Authorization', template: 'Basic {secret}' }, from, basic: true };
}

export function queryCredential(param: string, host: string): CredentialSuggestion {
  return { name: credentialNameFor(host), hosts: [host], placement: { kind: 'query', param }, from: `the query parameter ${param}` };
}

/**
 * A credential name after the vendor's host: api.stripe.com → stripe, api-free.deepl.com → deepl,
 * slack.com → slack; an address (a local stand-in) → local.
 */
export function credentialNameFor(host: string): string {
  const hostname = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  if (/^[\d.]+$/.test(hostname) || hostname.includes(':') || hostname === 'localhost') return 'local';
  const labels = hostname.toLowerCase().split('.').filter(Boolean);
  // The label before the public suffix; two-part suffixes such as co.uk skip one more.
  let index = labels.length - 2;
  if (index > 0 && /^(co|com|org|net|gov|ac|edu)$/.test(labels[index]!) && labels[labels.length - 1]!.length === 2) index--;
  const label = labels[Math.max(0, index)] ?? 'vendor';
  const name = label.replace(/[^a-z0-9_-]/g, '_').replace(/^[^a-z]+/, '');
  return (name === '' ? 'vendor' : name).slice(0, 64);
}

/** JSON Schema of a value the request sent (types only; the value itself is the default). */
export function inferSchema(value: unknown): Record<string, unknown> {
  if (value === null) return { type: 'null' };
  if (Array.isArray(value)) {
    const items = value.length > 0 ? inferSchema(value[0]) : {};
    return value.every((v) => JSON.stringify(inferSchema(v)) === JSON.stringify(items)) ? { type: 'array', items } : { type: 'array' };
  }
  if (typeof value === 'object') {
    const properties: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) properties[k] = inferSchema(v);
    return { type: 'object', properties };
  }
  if (typeof value === 'number') return { type: Number.isInteger(value) ? 'integer' : 'number' };
  if (typeof value === 'boolean') return { type: 'boolean' };
  return { type: 'string' };
}

/** A query or form value as sent (always text) as an argument: numbers and booleans typed as such. */
export function textParam(name: string, values: string[]): RequestParam {
  const typed = values.map(typedText);
  const value = typed.length === 1 ? typed[0] : typed;
  return { name, schema: inferSchema(value), required: false, value };
}

function typedText(text: string): unknown {
  if (/^-?(0|[1-9]\d{0,14})$/.test(text)) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}

/**
 * Splits an absolute URL into the parts a function needs. http to a host that is not a local
 * address is changed to https (ctx.fetch is https only there), with a note.
 */
export function splitUrl(raw: string): { url: URL; notes: string[] } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new StudioError('bad_input', `"${raw.slice(0, 200)}" is not an absolute URL (https://host/path)`);
  }
  const notes: string[] = [];
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new StudioError('bad_input', `${url.protocol} URLs cannot be called: ctx.fetch speaks https (and http to a local address)`);
  if (url.username !== '' || url.password !== '') {
    url.username = '';
    url.password = '';
  }
  if (url.protocol === 'http:' && !isLocalAddress(url.hostname)) {
    url.protocol = 'https:';
    notes.push(`the URL was changed to https (ctx.fetch calls hosts other than local addresses over https only): ${url.origin}`);
  }
  return { url, notes };
}

function isLocalAddress(hostname: string): boolean {
  return /^127\.\d+\.\d+\.\d+$/.test(hostname) || hostname === '[::1]' || hostname === 'localhost';
}

/** The allowedHosts entry for a URL: the host, with its port when it is not the default. */
export function hostOf(url: URL): string {
  return url.port === '' ? url.hostname : `${url.hostname}:${url.port}`;
}

const ANNOTATIONS: Record<string, Record<string, boolean>> = {
  GET: { readOnlyHint: true },
  HEAD: { readOnlyHint: true },
  OPTIONS: { readOnlyHint: true },
  DELETE: { destructiveHint: true },
  PUT: { idempotentHint: true },
};

/** Argument names: the wire names, made unique across path, query and body (a clash gets the place as prefix). */
function argumentNames(description: RequestDescription): Map<RequestParam, string> {
  const names = new Map<RequestParam, string>();
  const taken = new Set<string>();
  const groups: Array<[string, RequestParam[]]> = [
    ['path', description.pathParams],
    ['query', description.query],
    ['body', bodyParams(description.body)],
  ];
  for (const [place, params] of groups) {
    for (const p of params) {
      let name = p.name;
      if (taken.has(name)) name = `${place}_${p.name}`;
      for (let n = 2; taken.has(name); n++) name = `${place}_${p.name}_${n}`;
      taken.add(name);
      names.set(p, name);
    }
  }
  return names;
}

export function bodyParams(body: RequestBody | undefined): RequestParam[] {
  if (!body) return [];
  if (body.kind === 'json-fields' || body.kind === 'form' || body.kind === 'multipart') return body.fields;
  return [body.param];
}

/** The generated function: spec and source. */
export function generateFunction(name: string, description: RequestDescription, notes: string[] = []): Scaffold {
  const method = description.method.toUpperCase();
  const host = hostOf(new URL(description.url.replace(/\{([^}/]+)\}/g, 'x')));
  const names = argumentNames(description);
  const all = [...names.keys()];
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  const exampleArgs: Record<string, unknown> = {};
  for (const p of all) {
    const arg = names.get(p)!;
    const schema: Record<string, unknown> = { ...p.schema };
    if (p.description && schema.description === undefined) schema.description = p.description;
    if (p.value !== undefined) {
      if (schema.default === undefined && !p.required) schema.default = p.value;
      if (schema.examples === undefined) schema.examples = [p.value];
      exampleArgs[arg] = p.value;
    } else if (p.placeholder !== undefined) exampleArgs[arg] = p.placeholder;
    else if (schema.default !== undefined) exampleArgs[arg] = schema.default;
    else if (Array.isArray(schema.examples) && schema.examples.length > 0) exampleArgs[arg] = schema.examples[0];
    properties[arg] = schema;
    if (p.required) required.push(arg);
  }
  const inputSchema: Record<string, unknown> = { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
  if (description.defs && Object.keys(description.defs).length > 0) inputSchema.$defs = description.defs;
  let outputSchema: Record<string, unknown> | undefined;
  let wrapsResult = false;
  if (description.outputSchema) {
    if (description.outputSchema.type === 'object') outputSchema = description.outputSchema;
    else if (isObjectSchema(description.outputSchema, description.outputSchema)) outputSchema = { type: 'object', ...description.outputSchema };
    else {
      // MCP wants an object: a list or a plain value comes back as { result }.
      const { $defs, ...inner } = description.outputSchema;
      outputSchema = { type: 'object', properties: { result: inner }, required: ['result'], ...($defs ? { $defs } : {}) };
      wrapsResult = true;
    }
  }
  const spec: FunctionSpecInput = {
    name,
    ...(description.title ? { title: description.title.slice(0, 200) } : {}),
    description: description.description.slice(0, 10_000),
    language: 'ts',
    inputSchema: inputSchema as FunctionSpecInput['inputSchema'],
    ...(outputSchema ? { outputSchema: outputSchema as FunctionSpecInput['outputSchema'] } : {}),
    annotations: { ...ANNOTATIONS[method], openWorldHint: true },
    allowedHosts: [host],
    credentials: description.credential ? [description.credential.name] : [],
  };
  const source = sourceOf(description, method, names, wrapsResult, host);
  return { input: { spec, source }, credential: description.credential, exampleArgs, notes, wrapsResult };
}

/** An object without saying `type: "object"`: properties only, or an allOf whose parts are all objects. */
function isObjectSchema(schema: Record<string, unknown>, root: Record<string, unknown>, depth = 0): boolean {
  if (depth > 10) return false;
  if (schema.type === 'object') return true;
  if (typeof schema.$ref === 'string') {
    const name = /^#\/\$defs\/(.+)$/.exec(schema.$ref)?.[1]?.replace(/~1/g, '/').replace(/~0/g, '~');
    const target = name === undefined ? undefined : (root.$defs as Record<string, Record<string, unknown>> | undefined)?.[name];
    return target !== undefined && isObjectSchema(target, root, depth + 1);
  }
  if (schema.type !== undefined || schema.anyOf !== undefined || schema.oneOf !== undefined) return false;
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) return schema.allOf.every((part) => part !== null && typeof part === 'object' && isObjectSchema(part as Record<string, unknown>, root, depth + 1));
  return schema.properties !== undefined && typeof schema.properties === 'object';
}

function sourceOf(description: RequestDescription, method: string, names: Map<RequestParam, string>, wrapsResult: boolean, host: string): string {
  const q = (value: unknown): string => JSON.stringify(value);
  const argOf = (p: RequestParam): string => {
    const access = `args[${q(names.get(p))}]`;
    return p.value !== undefined && !p.required ? `(${access} ?? ${q(p.value)})` : access;
  };
  const lines: string[] = [];
  lines.push(`// Made by callable new from ${description.origin}: ${method} ${description.url}`);
  lines.push('interface Args {');
  for (const [p, arg] of names) lines.push(`  ${q(arg)}${p.required ? '' : '?'}: ${tsType(p.schema)};`);
  lines.push('}');
  lines.push('');
  lines.push('export default async function (args: Args, ctx: any) {');
  // The URL: literal parts as written, path parameters encoded.
  const parts = description.url.split(/\{([^}/]+)\}/);
  const urlExpr = parts
    .map((part, i) => {
      if (i % 2 === 0) return part === '' ? undefined : q(part);
      const p = description.pathParams.find((pp) => pp.name === part);
      if (!p) throw new StudioError('bad_input', `the URL names the path parameter {${part}}, which has no value or definition`);
      return `encodeURIComponent(String(${argOf(p)}))`;
    })
    .filter((x): x is string => x !== undefined)
    .join(' + ');
  lines.push(`  const url = new URL(${urlExpr || q(description.url)});`);
  for (const p of description.query) lines.push(appendLine('url.searchParams', p, argOf(p)));
  const init: string[] = [`method: ${q(method)}`];
  if (description.credential) init.push(`credential: ${q(description.credential.name)}`);
  const headers = [...description.headers];
  const body = description.body;
  if (body?.kind === 'json-fields') {
    lines.push('  const json: Record<string, unknown> = {};');
    for (const f of body.fields) lines.push(`  if (${argOf(f)} !== undefined) json[${q(f.name)}] = ${argOf(f)};`);
    init.push('json');
  } else if (body?.kind === 'json') {
    init.push(`json: ${argOf(body.param)}`);
  } else if (body?.kind === 'form') {
    lines.push('  const form = new URLSearchParams();');
    for (const f of body.fields) lines.push(appendLine('form', f, argOf(f)));
    init.push('body: form');
  } else if (body?.kind === 'multipart') {
    lines.push('  const multipart: Record<string, unknown> = {};');
    for (const f of body.fields) {
      const value = argOf(f);
      const part = f.part ? (item: string): string => `{ data: String(${item}), ${Object.entries(f.part!).map(([k, v]) => `${k}: ${q(v)}`).join(', ')} }` : undefined;
      const sent = !part ? value : f.schema.type === 'array' ? `${value}.map((item) => (${part('item')}))` : part(value);
      const assign = `multipart[${q(f.name)}] = ${sent};`;
      lines.push(f.required || f.value !== undefined ? `  ${assign}` : `  if (${value} !== undefined) ${assign}`);
    }
    init.push('multipart');
  } else if (body?.kind === 'text') {
    if (!headers.some(([h]) => h.toLowerCase() === 'content-type')) headers.push(['Content-Type', body.contentType]);
    init.push(`body: String(${argOf(body.param)})`);
  }
  // The fetch sets content-type itself for json, form and multipart bodies (multipart's carries the boundary).
  const sent = headers.filter(([h]) => !(h.toLowerCase() === 'content-type' && body !== undefined && body.kind !== 'text'));
  if (sent.length > 0) init.push(`headers: {\n${sent.map(([h, v]) => `      ${q(h)}: ${q(v)},`).join('\n')}\n    }`);
  lines.push(`  const res = await ctx.fetch(url.href, {\n${init.map((i) => `    ${i},`).join('\n')}\n  });`);
  lines.push('  const text = await res.text();');
  lines.push(`  if (!res.ok) throw new Error(\`${host.replace(/[`$\\]/g, '')} answered \${res.status} \${res.statusText}: \${text.slice(0, 500)}\`);`);
  // An empty answer (204 No Content) is null, not "".
  lines.push('  let data: unknown = null;');
  lines.push("  if (text !== '') {");
  lines.push('    try {');
  lines.push('      data = JSON.parse(text);');
  lines.push('    } catch {');
  lines.push('      data = text;');
  lines.push('    }');
  lines.push('  }');
  lines.push(wrapsResult ? '  return { result: data };' : '  return data;');
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

/** `target.append(name, value)` for one argument: each item of a list, nothing for a missing value. */
function appendLine(target: string, p: RequestParam, value: string): string {
  const name = JSON.stringify(p.name);
  if (p.schema.type === 'array' || Array.isArray(p.value)) return `  for (const item of ${value} ?? []) ${target}.append(${name}, String(item));`;
  if (p.required || p.value !== undefined) return `  ${target}.append(${name}, String(${value}));`;
  return `  if (${value} !== undefined && ${value} !== null) ${target}.append(${name}, String(${value}));`;
}

function tsType(schema: Record<string, unknown>): string {
  const type = schema.type;
  if (Array.isArray(type)) return type.map((t) => tsType({ ...schema, type: t })).join(' | ');
  if (Array.isArray(schema.enum) && schema.enum.every((e) => typeof e === 'string' || typeof e === 'number')) return schema.enum.map((e) => JSON.stringify(e)).join(' | ');
  switch (type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array': {
      const items = schema.items && typeof schema.items === 'object' && !Array.isArray(schema.items) ? tsType(schema.items as Record<string, unknown>) : 'unknown';
      return /^[\w<>, ]+$/.test(items) ? `${items}[]` : `Array<${items}>`;
    }
    case 'object':
      return 'Record<string, unknown>';
    default:
      return 'unknown';
  }
}

/**
 * The request the function sends for `args` (as ctx.fetch gets it): what a HAR entry's first test
 * case records. Mirrors the generated source: same URL building, same body encoding (a multipart
 * body, which only curl -F makes, is not recorded).
 */
export function requestFor(description: RequestDescription, args: Record<string, unknown>): { method: string; url: string; headers: Array<[string, string]>; body: string | null } {
  const names = argumentNames(description);
  const valueOf = (p: RequestParam): unknown => {
    const given = args[names.get(p)!];
    return given === undefined && !p.required ? p.value : given;
  };
  const href = description.url.replace(/\{([^}/]+)\}/g, (_, name: string) => {
    const p = description.pathParams.find((pp) => pp.name === name)!;
    return encodeURIComponent(String(valueOf(p)));
  });
  const url = new URL(href);
  for (const p of description.query) for (const v of [valueOf(p)].flat()) if (v !== undefined && v !== null) url.searchParams.append(p.name, String(v));
  const headers: Array<[string, string]> = [];
  let body: string | null = null;
  const b = description.body;
  if (b?.kind === 'json-fields') {
    const json: Record<string, unknown> = {};
    for (const f of b.fields) if (valueOf(f) !== undefined) json[f.name] = valueOf(f);
    body = JSON.stringify(json);
  } else if (b?.kind === 'json') body = JSON.stringify(valueOf(b.param));
  else if (b?.kind === 'form') {
    const form = new URLSearchParams();
    for (const f of b.fields) for (const v of [valueOf(f)].flat()) if (v !== undefined && v !== null) form.append(f.name, String(v));
    body = form.toString();
  } else if (b?.kind === 'text') body = String(valueOf(b.param));
  for (const [h, v] of description.headers) {
    if (h.toLowerCase() === 'content-type' && b && b.kind !== 'text') continue;
    headers.push([h.toLowerCase(), v]);
  }
  if (b?.kind === 'json' || b?.kind === 'json-fields') headers.push(['content-type', 'application/json']);
  if (b?.kind === 'form') headers.push(['content-type', 'application/x-www-form-urlencoded;charset=UTF-8']);
  if (b?.kind === 'text' && !headers.some(([h]) => h === 'content-type')) headers.push(['content-type', b.contentType]);
  return { method: description.method.toUpperCase(), url: url.href, headers, body };
}

/** The parts of a body read from text (curl -d, HAR postData) with its content type. */
export function bodyFromText(text: string, contentType: string | undefined, notes: string[]): RequestBody | undefined {
  if (text === '') return undefined;
  const type = (contentType ?? '').toLowerCase();
  if (type.includes('json') || (!type && /^\s*[[{]/.test(text))) {
    try {
      return jsonBody(JSON.parse(text));
    } catch {
      notes.push('the body is not valid JSON although its type says so: it is sent as text');
      return { kind: 'text', contentType: contentType ?? 'application/json', param: { name: 'body', schema: { type: 'string' }, required: false, value: text } };
    }
  }
  if (type === '' || type.startsWith('application/x-www-form-urlencoded')) {
    if (/^[^=&]+=[^&]*(&[^=&]+=[^&]*)*$/.test(text)) {
      const form = new URLSearchParams(text);
      const grouped = new Map<string, string[]>();
      for (const [k, v] of form) grouped.set(k, [...(grouped.get(k) ?? []), v]);
      return { kind: 'form', fields: [...grouped].map(([k, vs]) => textParam(k, vs)) };
    }
  }
  return { kind: 'text', contentType: contentType ?? 'application/x-www-form-urlencoded', param: { name: 'body', schema: { type: 'string' }, required: false, value: text } };
}

export function jsonBody(value: unknown): RequestBody {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    return { kind: 'json-fields', fields: Object.entries(value as Record<string, unknown>).map(([k, v]) => ({ name: k, schema: inferSchema(v), required: false, value: v })) };
  }
  return { kind: 'json', param: { name: 'body', schema: inferSchema(value), required: false, value } };
}

/** What the user is told to store: the exact command (the secret itself is never printed). */
export function credentialCommand(credential: CredentialSuggestion, dataDirFlag = ''): string {
  if (credential.oauth) return `callable credentials connect ${credential.name} --client-id <your client id>${dataDirFlag}`;
  const hosts = credential.hosts.map((h) => `--host ${shellWord(h)}`).join(' ');
  const where = credential.placement.kind === 'query' ? `--query ${shellWord(credential.placement.param)}` : `--header ${credential.placement.header} --template ${shellWord(credential.placement.template)}`;
  const set = `callable credentials set ${credential.name} ${hosts} ${where}${dataDirFlag}`;
  return credential.basic ? `printf %s 'USER:PASSWORD' | base64 | tr -d '\\n' | ${set}` : set;
}

export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
