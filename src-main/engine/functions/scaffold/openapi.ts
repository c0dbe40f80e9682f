import { StudioError } from '../../model/index.ts';
import { bodyParams, credentialNameFor, hostOf, splitUrl, type CredentialSuggestion, type RequestBody, type RequestDescription, type RequestParam } from './generate.ts';

type Json = Record<string, unknown>;

/** One operation of a spec, as `--all` lists it. */
export interface OpenApiOperation {
  /** The operationId, or "METHOD /path" when the spec gives none. */
  id: string;
  method: string;
  path: string;
  summary: string;
}

/** A parsed, dereferenced OpenAPI 3 document. */
export interface OpenApiDocument {
  file: string;
  api: Json;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * Reads an OpenAPI 3.x spec (JSON or YAML) with swagger-parser and resolves its `$ref`s (local
 * files only: a spec that points at http references is refused rather than fetched). Anything that
 * is not an OpenAPI 3 document is one bad_input line.
 */
export async function loadOpenApi(path: string, file = path): Promise<OpenApiDocument> {
  const { default: SwaggerParser } = await import('@apidevtools/swagger-parser');
  let api: Json;
  try {
    api = (await SwaggerParser.dereference(path, { resolve: { http: false }, dereference: { circular: 'ignore' } })) as unknown as Json;
  } catch (error) {
    const e = error as NodeJS.ErrnoException & { message?: string };
    const message = String(e.message ?? error).split('\n')[0]!.slice(0, 300);
    if (/ENOENT/.test(message)) throw new StudioError('bad_input', `cannot read the OpenAPI spec ${file}: no such file`);
    throw new StudioError('bad_input', `${file} could not be read as an OpenAPI spec (JSON or YAML): ${message.replace(/"[^"]*" is not a valid JSON Schema/, 'it is not a JSON or YAML document')}`);
  }
  if (typeof api.swagger === 'string') throw new StudioError('bad_input', `${file} is Swagger ${api.swagger}; only OpenAPI 3 specs are read (convert it first, e.g. with swagger2openapi)`);
  if (typeof api.openapi !== 'string' || !api.openapi.startsWith('3.')) throw new StudioError('bad_input', `${file} is not an OpenAPI 3 spec (it has no "openapi": "3.x" field)`);
  return { file, api };
}

/** Every operation of the spec, in the order of its paths. */
export function listOperations(doc: OpenApiDocument): OpenApiOperation[] {
  const out: OpenApiOperation[] = [];
  for (const [path, item] of Object.entries((doc.api.paths ?? {}) as Record<string, Json>)) {
    for (const method of METHODS) {
      const op = item?.[method] as Json | undefined;
      if (!op || typeof op !== 'object') continue;
      out.push({ id: typeof op.operationId === 'string' ? op.operationId : `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), path, summary: oneLine(op.summary ?? op.description ?? '') });
    }
  }
  return out;
}

/** Every operation of the spec; a spec without any is one bad_input line. */
export function operationsOf(doc: OpenApiDocument): OpenApiOperation[] {
  const ops = listOperations(doc);
  if (ops.length === 0) throw new StudioError('bad_input', `${doc.file} describes no operations (its "paths" is empty or missing)`);
  return ops;
}

function oneLine(text: unknown): string {
  return String(text).split('\n')[0]!.trim();
}

/**
 * The operation `id` (an operationId, or "METHOD /path") as a request description: parameters and
 * requestBody become arguments, the success response the outputSchema, the servers the host, the
 * security schemes the credential. `server` replaces the spec's base URL (a local stand-in, another
 * region).
 */
export function describeOperation(doc: OpenApiDocument, id: string, options: { server?: string } = {}): { description: RequestDescription; notes: string[] } {
  const ops = operationsOf(doc);
  const found = ops.find((o) => o.id === id) ?? ops.find((o) => `${o.method} ${o.path}`.toLowerCase() === id.trim().toLowerCase());
  if (!found) {
    const some = ops.slice(0, 8).map((o) => o.id).join(', ');
    // Said the same way in the studio and the CLI: each caller adds where to see them all (details.operation marks it).
    throw new StudioError('not_found', `${doc.file} has no operation "${id}"; it has ${ops.length}: ${some}${ops.length > 8 ? ', …' : ''}`, { operation: id });
  }
  const notes: string[] = [];
  const item = (doc.api.paths as Record<string, Json>)[found.path]!;
  const op = item[found.method.toLowerCase()] as Json;
  const base = options.server ?? serverUrl(doc, (op.servers ?? item.servers ?? doc.api.servers) as Json[] | undefined);
  const { url: baseUrl, notes: urlNotes } = splitUrl(base);
  notes.push(...urlNotes);
  const host = hostOf(baseUrl);
  const url = `${baseUrl.origin}${baseUrl.pathname.replace(/\/$/, '')}${found.path}`;

  const pathParams: RequestParam[] = [];
  const query: RequestParam[] = [];
  const params = mergeParameters((item.parameters ?? []) as Json[], (op.parameters ?? []) as Json[]);
  const credential = credentialOf(doc, op, host, baseUrl, notes);
  for (const p of params) {
    const name = String(p.name);
    const schema = convertSchema(paramSchema(p), doc, 'readOnly');
    if (p.example !== undefined && schema.examples === undefined) schema.examples = [p.example];
    const param: RequestParam = { name, schema, required: p.in === 'path' || p.required === true, ...(typeof p.description === 'string' && p.description !== '' ? { description: p.description } : {}) };
    if (p.in === 'path') pathParams.push(param);
    else if (p.in === 'query') {
      if (credential?.placement.kind === 'query' && credential.placement.param === name) continue;
      query.push(param);
    } else if (p.in === 'header' && credential?.placement.kind === 'header' && credential.placement.header.toLowerCase() === name.toLowerCase()) continue;
    else notes.push(`the ${String(p.in)} parameter ${name} is not an argument of the function (only path and query parameters and the body are); add it in the source if the API needs it`);
  }
  const body = bodyOf(op, doc, notes);
  // Schemas a circular reference left as $ref live at the inputSchema's root.
  const defs: Json = {};
  for (const p of [...pathParams, ...query, ...bodyParams(body)]) {
    const { $defs, ...rest } = p.schema;
    if ($defs) Object.assign(defs, $defs);
    p.schema = rest;
    // The suggested first run sends the spec's own examples, so that it is a call the API accepts.
    const example = exampleOf(p.schema);
    if (example !== undefined && p.schema.examples === undefined && p.schema.default === undefined) p.schema.examples = [example];
  }
  const outputSchema = successSchema(op, doc);
  // The summary, where it is, then the operation's own description (what a model reads to choose the tool).
  const summary = oneLine(op.summary ?? '');
  const title = summary || undefined;
  const long = typeof op.description === 'string' ? op.description.trim() : '';
  const first = summary || oneLine(long);
  const where = `(${String((doc.api.info as Json | undefined)?.title ?? 'OpenAPI')}: ${found.method} ${found.path}${found.id.includes(' ') ? '' : `, operation ${found.id}`})`;
  const head = [first, where, credential ? `Needs the credential "${credential.name}".` : ''].filter(Boolean).join(' ');
  const text = long !== '' && long !== first ? `${head}\n\n${long}` : head;
  return {
    description: {
      method: found.method,
      url,
      pathParams,
      query,
      headers: [['Accept', 'application/json']],
      ...(body ? { body } : {}),
      ...(credential ? { credential: { ...credential } } : {}),
      ...(title ? { title: title.replace(/\.$/, '') } : {}),
      description: text,
      ...(outputSchema ? { outputSchema } : {}),
      origin: `the OpenAPI operation ${found.id}`,
      ...(Object.keys(defs).length > 0 ? { defs } : {}),
    },
    notes,
  };
}

/** The first server's URL with its variables at their defaults; a relative one needs --server. */
function serverUrl(doc: OpenApiDocument, servers: Json[] | undefined): string {
  const server = servers?.[0];
  if (!server || typeof server.url !== 'string') throw new StudioError('bad_input', `${doc.file} names no server; give the API's base URL with --server https://…`);
  const vars = (server.variables ?? {}) as Record<string, Json>;
  const url = server.url.replace(/\{([^}]+)\}/g, (_, name: string) => String(vars[name]?.default ?? `{${name}}`));
  if (!/^https?:\/\//i.test(url)) throw new StudioError('bad_input', `${doc.file}: the server URL "${server.url}" is not absolute; give the API's base URL with --server https://…`);
  return url;
}

function mergeParameters(pathLevel: Json[], opLevel: Json[]): Json[] {
  const key = (p: Json): string => `${String(p.in)}:${String(p.name)}`;
  const merged = new Map<string, Json>();
  for (const p of [...pathLevel, ...opLevel]) if (p && typeof p === 'object' && typeof p.name === 'string') merged.set(key(p), p);
  return [...merged.values()];
}

function paramSchema(p: Json): Json {
  if (p.schema && typeof p.schema === 'object') return p.schema as Json;
  const content = p.content as Record<string, Json> | undefined;
  const first = content ? Object.values(content)[0] : undefined;
  return (first?.schema as Json | undefined) ?? { type: 'string' };
}

function bodyOf(op: Json, doc: OpenApiDocument, notes: string[]): RequestBody | undefined {
  const requestBody = op.requestBody as Json | undefined;
  const content = requestBody?.content as Record<string, Json> | undefined;
  if (!content || Object.keys(content).length === 0) return undefined;
  const required = requestBody?.required === true;
  const types = Object.keys(content);
  const type = types.find((t) => /^application\/([\w.-]+\+)?json\b/i.test(t)) ?? types.find((t) => t.startsWith('application/x-www-form-urlencoded')) ?? types[0]!;
  const schema = convertSchema((content[type]?.schema as Json | undefined) ?? {}, doc, 'readOnly');
  // The media type's own example (or the first of its examples) is the most faithful call the spec shows.
  const media = content[type] ?? {};
  const named = media.examples && typeof media.examples === 'object' ? (Object.values(media.examples as Record<string, Json>)[0]?.value as unknown) : undefined;
  const example = media.example !== undefined ? media.example : named;
  if (example !== undefined && schema.examples === undefined) schema.examples = [example];
  const isJson = /json/i.test(type);
  const isForm = type.startsWith('application/x-www-form-urlencoded');
  if ((isJson || isForm) && schema.type === 'object' && schema.properties && typeof schema.properties === 'object') {
    const needed = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
    const whole = Array.isArray(schema.examples) && schema.examples[0] && typeof schema.examples[0] === 'object' ? (schema.examples[0] as Json) : {};
    const fields = Object.entries(schema.properties as Record<string, Json>).map(([name, s]): RequestParam => ({
      name,
      // A field of the body's example is that field's example (a readOnly one was left out above).
      schema: whole[name] !== undefined && s.examples === undefined ? { ...s, examples: [whole[name]] } : s,
      required: required && needed.has(name),
    }));
    if (schema.$defs && fields[0]) fields[0].schema = { ...fields[0].schema, $defs: schema.$defs };
    if (fields.length > 0) return isJson ? { kind: 'json-fields', fields } : { kind: 'form', fields };
  }
  if (isJson) return { kind: 'json', param: { name: 'body', schema, required } };
  if (types.length > 1 || isForm) notes.push(`the body is sent as ${type}`);
  return { kind: 'text', contentType: type, param: { name: 'body', schema: { type: 'string', ...(typeof schema.description === 'string' ? { description: schema.description } : {}) }, required } };
}

/** The JSON schema of the first 2xx response with a JSON body. */
function successSchema(op: Json, doc: OpenApiDocument): Json | undefined {
  const responses = (op.responses ?? {}) as Record<string, Json>;
  const codes = Object.keys(responses)
    .filter((c) => /^2(\d\d|XX)$/i.test(c))
    .sort();
  for (const code of codes) {
    const content = responses[code]?.content as Record<string, Json> | undefined;
    if (!content) continue;
    const type = Object.keys(content).find((t) => /json/i.test(t));
    const schema = type ? (content[type]?.schema as Json | undefined) : undefined;
    if (schema) return convertSchema(schema, doc, 'writeOnly');
  }
  return undefined;
}

/**
 * The credential the operation's security asks for: the first alternative that a credential can
 * express (an API key in a header or the query, HTTP bearer or basic, an OAuth2 / OpenID Connect
 * credential connected later, whose access token is sent as a bearer token).
 */
function credentialOf(doc: OpenApiDocument, op: Json, host: string, baseUrl: URL, notes: string[]): CredentialSuggestion | undefined {
  const requirements = (op.security ?? doc.api.security) as Array<Record<string, unknown>> | undefined;
  if (!Array.isArray(requirements) || requirements.length === 0) return undefined;
  if (requirements.some((r) => Object.keys(r).length === 0)) return undefined;
  const schemes = ((doc.api.components as Json | undefined)?.securitySchemes ?? {}) as Record<string, Json>;
  const skipped: string[] = [];
  for (const requirement of requirements) {
    for (const name of Object.keys(requirement)) {
      const s = schemes[name];
      if (!s) continue;
      const base = { name: credentialNameFor(host), hosts: [host], from: `the security scheme ${name}` };
      if (s.type === 'apiKey' && s.in === 'header' && /^[A-Za-z0-9-]{1,100}$/.test(String(s.name))) return { ...base, placement: { kind: 'header', header: String(s.name), template: '{secret}' } };
      if (s.type === 'apiKey' && s.in === 'query' && /^[A-Za-z0-9_.-]{1,100}$/.test(String(s.name))) return { ...base, placement: { kind: 'query', param: String(s.name) } };
      if (s.type === 'http' && String(s.scheme).toLowerCase() === 'bearer') return { ...base, placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } };
      if (s.type === 'http' && String(s.scheme).toLowerCase() === 'basic') return { ...base, placement: { kind: 'header', header: 'Authorization', template: 'Basic {secret}' }, basic: true };
      if (s.type === 'oauth2' || s.type === 'openIdConnect') {
        const wanted = Array.isArray(requirement[name]) ? (requirement[name] as unknown[]).map(String) : [];
        const oauth = oauthOf(s, wanted, baseUrl);
        if (oauth) return { ...base, placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' }, oauth };
        notes.push(`the security scheme ${name} is ${String(s.type)} with no authorization code, device or client credentials flow: store an access token as the credential's secret (it is sent as "Bearer <token>")`);
        return { ...base, placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } };
      }
      skipped.push(`${name} (${String(s.type)}${s.in ? ` in ${String(s.in)} ${String(s.name)}` : ''})`);
    }
  }
  if (skipped.length > 0) notes.push(`no credential was made: the security scheme ${skipped.join(', ')} cannot be expressed as one; add the key in the source`);
  return undefined;
}

/**
 * The OAuth server of an oauth2 scheme (its authorization code flow first, then device, then client
 * credentials; URLs relative to the API's base) or an openIdConnect one (its issuer, for discovery).
 * The scopes are those the operation asks for, else all the flow lists.
 */
function oauthOf(scheme: Json, wanted: string[], baseUrl: URL): CredentialSuggestion['oauth'] {
  const url = (value: unknown): string | undefined => {
    if (typeof value !== 'string' || value === '') return undefined;
    try {
      return new URL(value, baseUrl).href;
    } catch {
      return undefined;
    }
  };
  if (scheme.type === 'openIdConnect') {
    const discovery = url(scheme.openIdConnectUrl);
    if (!discovery) return undefined;
    return { issuer: discovery.replace(/\/\.well-known\/openid-configuration$/, ''), scopes: wanted.length > 0 ? wanted : ['openid'], grant: 'code' };
  }
  const flows = (scheme.flows ?? {}) as Record<string, Json | undefined>;
  const scopesOf = (flow: Json): string[] => (wanted.length > 0 ? wanted : Object.keys((flow.scopes ?? {}) as Json));
  const code = flows.authorizationCode;
  if (code && url(code.authorizationUrl) && url(code.tokenUrl)) return { authorizeUrl: url(code.authorizationUrl)!, tokenUrl: url(code.tokenUrl)!, scopes: scopesOf(code), grant: 'code' };
  const device = flows.deviceAuthorization;
  if (device && url(device.deviceAuthorizationUrl) && url(device.tokenUrl)) return { deviceUrl: url(device.deviceAuthorizationUrl)!, tokenUrl: url(device.tokenUrl)!, scopes: scopesOf(device), grant: 'device' };
  const client = flows.clientCredentials;
  if (client && url(client.tokenUrl)) return { tokenUrl: url(client.tokenUrl)!, scopes: scopesOf(client), grant: 'client_credentials' };
  return undefined;
}

/** OpenAPI 3.0 keywords JSON Schema does not have (or that mean nothing to a validator). */
const DROPPED_KEYWORDS = new Set(['nullable', 'example', 'xml', 'discriminator', 'externalDocs']);

/**
 * An OpenAPI 3.0 schema object as JSON Schema 2020-12: `nullable` becomes a `null` type,
 * `example` becomes `examples`, boolean `exclusiveMinimum`/`exclusiveMaximum` become numbers, and
 * `xml`, `discriminator` and `x-` extensions go. A `$ref` left by a circular reference points into
 * `$defs` of the returned root. Never modifies the input (the dereferenced spec shares objects).
 * `drop` leaves out the properties marked so: readOnly ones from what is sent, writeOnly ones from
 * what comes back (and from `required`).
 */
export function convertSchema(schema: Json, doc: OpenApiDocument, drop?: 'readOnly' | 'writeOnly'): Json {
  const defs: Record<string, Json> = {};
  const pending: string[] = [];
  const componentSchemas = ((doc.api.components as Json | undefined)?.schemas ?? {}) as Record<string, Json>;
  const convert = (s: unknown): unknown => {
    if (Array.isArray(s)) return s.map(convert);
    if (!s || typeof s !== 'object') return s;
    const input = s as Json;
    const out: Json = {};
    for (const [key, value] of Object.entries(input)) {
      if (DROPPED_KEYWORDS.has(key) || key.startsWith('x-')) continue;
      if (key === '$ref' && typeof value === 'string') {
        const m = /^#\/components\/schemas\/(.+)$/.exec(value);
        if (m) {
          const name = decodeURIComponent(m[1]!);
          if (!(name in defs) && !pending.includes(name)) pending.push(name);
          out.$ref = `#/$defs/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`;
          continue;
        }
      }
      if (key === 'properties' || key === 'patternProperties' || key === '$defs' || key === 'definitions') {
        const props: Json = {};
        for (const [k, v] of Object.entries((value ?? {}) as Json)) {
          if (key === 'properties' && drop && (v as Json | null)?.[drop] === true) continue;
          props[k] = convert(v);
        }
        out[key] = props;
      } else if (['items', 'additionalProperties', 'not', 'allOf', 'anyOf', 'oneOf', 'prefixItems', 'contains'].includes(key)) out[key] = convert(value);
      else if (key === 'exclusiveMinimum' || key === 'exclusiveMaximum') {
        if (typeof value === 'number') out[key] = value;
        else if (value === true) {
          const bound = key === 'exclusiveMinimum' ? 'minimum' : 'maximum';
          if (typeof input[bound] === 'number') out[key] = input[bound];
        }
      } else out[key] = value;
    }
    if (drop && Array.isArray(out.required) && out.properties) {
      const dropped = Object.entries((input.properties ?? {}) as Json).filter(([, v]) => (v as Json | null)?.[drop] === true).map(([k]) => k);
      if (dropped.length > 0) out.required = (out.required as string[]).filter((k) => !dropped.includes(k));
    }
    if (input.exclusiveMinimum === true && typeof input.minimum === 'number') delete out.minimum;
    if (input.exclusiveMaximum === true && typeof input.maximum === 'number') delete out.maximum;
    if (input.example !== undefined && out.examples === undefined) out.examples = [input.example];
    if (input.nullable === true) {
      if (typeof out.type === 'string') out.type = [out.type, 'null'];
      else if (Array.isArray(out.type) && !out.type.includes('null')) out.type = [...(out.type as unknown[]), 'null'];
      if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...(out.enum as unknown[]), null];
      if (out.type === undefined && out.$ref !== undefined) return { anyOf: [out, { type: 'null' }] };
    }
    return out;
  };
  const root = convert(schema) as Json;
  while (pending.length > 0) {
    const name = pending.shift()!;
    defs[name] = (convert(componentSchemas[name] ?? {}) as Json) ?? {};
  }
  if (Object.keys(defs).length > 0) root.$defs = { ...((root.$defs as Json | undefined) ?? {}), ...defs };
  return root;
}

/**
 * A value the schema shows: its first example or default, the first of an enum, or an object or
 * list built from what its parts show.
 */
function exampleOf(schema: Json, depth = 0): unknown {
  if (depth > 8 || !schema || typeof schema !== 'object') return undefined;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  if (schema.properties && typeof schema.properties === 'object') {
    const out: Json = {};
    for (const [k, v] of Object.entries(schema.properties as Record<string, Json>)) {
      const value = exampleOf(v, depth + 1);
      if (value !== undefined) out[k] = value;
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }
  if (schema.items && typeof schema.items === 'object' && !Array.isArray(schema.items)) {
    const item = exampleOf(schema.items as Json, depth + 1);
    return item === undefined ? undefined : [item];
  }
  return undefined;
}
