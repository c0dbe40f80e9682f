import type { FormParam } from 'curlconverter/dist/src/curl/form.js';
import { StudioError } from '../../model/index.ts';
import {
  basicCredential,
  bodyFromText,
  hostOf,
  jsonBody,
  queryCredential,
  secretReason,
  sortHeaders,
  splitUrl,
  textParam,
  type CredentialSuggestion,
  type RequestBody,
  type RequestDescription,
  type RequestParam,
} from './generate.ts';

/** What curlconverter's toJsonObject gives (the fields used here). */
interface CurlJson {
  url: string;
  raw_url: string;
  method: string;
  headers?: Record<string, string | null>;
  cookies?: Record<string, string>;
  auth?: { user: string; password: string };
  auth_type?: string;
}

/** The longest curl command read (a pasted command, not a file). */
export const MAX_CURL_CHARS = 200_000;

/**
 * A curl command (as copied from a vendor's docs: quoting, line continuations, -H, -d, --data-raw,
 * --data-urlencode, -F, --json, -u, -X, -G) as a request description. curlconverter parses the shell and curl's options;
 * the query is read back from the full URL so values with `+` or `,` keep their meaning.
 */
export async function describeCurl(command: string): Promise<{ description: RequestDescription; notes: string[] }> {
  if (command.length > MAX_CURL_CHARS) throw new StudioError('bad_input', `the curl command is ${command.length} characters, over the ${MAX_CURL_CHARS} read; paste the command only`);
  // A prompt copied along with the command ("$ curl …") is not part of it.
  const text = command.trim().replace(/^\$\s+/, '');
  if (!/^curl(\s|$)/.test(text)) throw new StudioError('bad_input', `the command must start with "curl" (it starts with "${text.split(/\s/)[0]?.slice(0, 40) ?? ''}")`);
  const { toJsonObjectWarn } = await import('curlconverter');
  let parsed: CurlJson;
  let warnings: Array<[string, string]>;
  try {
    [parsed, warnings] = toJsonObjectWarn(text) as [CurlJson, Array<[string, string]>];
  } catch (error) {
    // curlconverter's messages quote the command under the first line (it may hold a key): the first line only.
    const first = ((error as Error).message ?? String(error)).split('\n')[0]!.trim().slice(0, 300);
    const line = /^Bash parsing error on line (\d+):?$/.exec(first)?.[1];
    throw new StudioError('bad_input', line ? `the curl command could not be read: it is not valid shell syntax (line ${line}); check its quotes and line continuations` : `the curl command could not be read: ${first.replace(/:$/, '')}`);
  }
  const notes = warnings.map(([, message]) => message.split('\n')[0]!).filter((m) => !/is not a supported option$/.test(m) && !/^found environment variable/.test(m));
  // The body as curl puts it on the wire (-d pieces joined, --data-urlencode encoded) and -F's parts
  // in order: the JSON view above decodes forms and keeps one value per name.
  const { parse } = await import('curlconverter/dist/src/parse.js');
  const wire = parse(text, undefined, [])[0];
  if (parsed.auth_type && parsed.auth_type !== 'basic') throw new StudioError('bad_input', `the curl command uses ${parsed.auth_type} authentication; only basic auth (-u) and header or query keys become credentials`);
  const { url, notes: urlNotes } = splitUrl(parsed.raw_url || parsed.url);
  notes.push(...urlNotes);
  const host = hostOf(url);
  const headers = Object.entries(parsed.headers ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string');
  const sorted = sortHeaders(headers, host);
  notes.push(...sorted.notes);
  if (parsed.cookies && Object.keys(parsed.cookies).length > 0 && !headers.some(([h]) => h.toLowerCase() === 'cookie')) {
    notes.push('the cookies (-b) were left out: cookies are session secrets and are not saved');
  }
  let credential: CredentialSuggestion | undefined = sorted.credential;
  if (parsed.auth) {
    if (credential) notes.push(`-u was left out: ${credential.from} carries the credential`);
    else credential = basicCredential(host, '-u (basic auth)');
  }
  const { query, credential: withQuery } = queryParams(url, host, credential, notes);
  credential = withQuery;
  const contentType = sorted.kept.find(([h]) => h.toLowerCase() === 'content-type')?.[1];
  let body: RequestBody | undefined;
  if (wire?.multipartUploads && wire.multipartUploads.length > 0) body = multipartBody(wire.multipartUploads);
  else if (wire?.data !== undefined) {
    if (wire.dataReadsFile !== undefined) throw new StudioError('bad_input', `the curl command reads its body from a file (@${wire.dataReadsFile}); paste the body into the command instead`);
    let data = wire.data.toString();
    const isForm = (contentType ?? '').startsWith('application/x-www-form-urlencoded');
    if (isForm) {
      // curl -d sends "+" as it is, which a form reads as a space; a phone number in vendors' docs means the plus.
      data = data.replace(/(^|&)([^=&]+)=\+(\d+)(?=&|$)/g, (_, sep: string, name: string, digits: string) => {
        notes.push(`${name}: curl -d sends "+${digits}" unencoded, which a form reads as " ${digits}"; the function sends the plus (%2B)`);
        return `${sep}${name}=%2B${digits}`;
      });
    }
    body = bodyFromText(data, contentType, notes);
    // curl -d sends JSON as a form unless told otherwise; vendors' docs mean JSON.
    if (body?.kind === 'text' && isForm && /^\s*\{/.test(data)) {
      try {
        body = jsonBody(JSON.parse(data));
        notes.push('the body is JSON but curl -d would send it as a form (its default type): the function sends it as application/json');
      } catch {
        // not JSON after all: sent as text
      }
    }
  }
  if (body) body = bodySecretsLeftOut(body, notes);
  const description = describeRequest({ method: parsed.method, url, host, query, headers: sorted.kept, body, credential }, 'a curl command');
  return { description, notes };
}

/** What the printed example and a HAR entry's test case pass for a secret body field: never the key. */
export const SECRET_PLACEHOLDER = 'YOUR_KEY';

/**
 * A body field (form, multipart text, top-level JSON) that looks like a secret, by the query
 * parameters' rule, keeps no value: a credential is only ever put in a header or a query parameter,
 * so the field becomes a required argument without default, and a note says what to do.
 */
export function bodySecretsLeftOut(body: RequestBody, notes: string[]): RequestBody {
  if (body.kind !== 'form' && body.kind !== 'multipart' && body.kind !== 'json-fields') return body;
  const fields = body.fields.map((field) => {
    const first = [field.value].flat()[0];
    if (field.part?.filename !== undefined || (typeof first !== 'string' && typeof first !== 'number')) return field;
    const found = secretReason(field.name, String(first));
    if (!found) return field;
    notes.push(
      `the body field ${field.name} was not saved: ${found.reason}, and a credential can only be sent in a header or a query parameter; it is a required argument without default, so each call passes the key (recorded with the run's arguments). If the API also takes the key in a header or a query parameter, send it that way and run callable new again: it then becomes a credential kept in the keychain`,
    );
    const { value: _secret, ...rest } = field;
    return { ...rest, required: true, placeholder: Array.isArray(field.value) ? [SECRET_PLACEHOLDER] : SECRET_PLACEHOLDER };
  });
  return { ...body, fields };
}

/**
 * curl -F fields as a multipart body: one argument per name (a repeated name is a list, in order).
 * A part read from a file cannot be generated: the one line says what to do instead.
 */
function multipartBody(parts: FormParam[]): RequestBody {
  const fields = new Map<string, RequestParam>();
  for (const part of parts) {
    const name = part.name.toString();
    if ('contentFile' in part) {
      const file = part.contentFile.toString();
      throw new StudioError(
        'bad_input',
        part.filename !== undefined
          ? `the curl command uploads the file ${file} (-F ${name}=@${file}), which a function cannot read; leave that field out of the command, then add an argument holding the file's content as base64 and send it from the source as multipart: { ${JSON.stringify(name)}: { data: bytes, filename: ${JSON.stringify(file)} } }`
          : `the curl command reads the field ${name} from the file ${file} (-F ${name}=<${file}); put the text in the command instead (-F ${name}=TEXT)`,
      );
    }
    const value = part.content.toString();
    const filename = part.filename?.toString();
    const contentType = part.contentType?.toString() ?? (filename === undefined ? undefined : curlGuessedType(filename));
    const known = fields.get(name);
    if (known) {
      const values = [known.value, value].flat() as string[];
      fields.set(name, { ...textParam(name, values), ...(known.part ? { part: known.part } : {}) });
    } else fields.set(name, { ...textParam(name, [value]), ...(contentType || filename ? { part: { ...(contentType ? { contentType } : {}), ...(filename ? { filename } : {}) } } : {}) });
  }
  return { kind: 'multipart', fields: [...fields.values()] };
}

/** The content type curl gives a part with a file name and no ;type= (by the name's extension, as curl's own table does). */
function curlGuessedType(filename: string): string {
  const types: Record<string, string> = { gif: 'image/gif', jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', svg: 'image/svg+xml', txt: 'text/plain', htm: 'text/html', html: 'text/html', pdf: 'application/pdf', xml: 'application/xml' };
  return types[/\.([^.]+)$/.exec(filename)?.[1]?.toLowerCase() ?? ''] ?? 'application/octet-stream';
}

/** A request read from curl or a HAR entry, as the generator takes it: no path parameters, the query as arguments. */
export function describeRequest(
  request: { method: string; url: URL; host: string; query: RequestParam[]; headers: Array<[string, string]>; body: RequestBody | undefined; credential: CredentialSuggestion | undefined },
  origin: 'a curl command' | 'a HAR entry',
): RequestDescription {
  const { url, query, body, credential } = request;
  const method = request.method.toUpperCase();
  const where = `${url.origin}${url.pathname}`;
  const made = origin === 'a curl command' ? 'Made from a curl command.' : 'Made from a browser HAR entry.';
  return {
    method,
    url: where,
    pathParams: [],
    query,
    headers: request.headers,
    ...(body ? { body } : {}),
    ...(credential ? { credential } : {}),
    title: `${method} ${request.host}${url.pathname}`,
    description: `Calls ${method} ${where}${query.length > 0 ? ` (query: ${query.map((q) => q.name).join(', ')})` : ''}. ${made}${credential ? ` Needs the credential "${credential.name}".` : ''}`,
    origin,
  };
}

/**
 * The URL's query as arguments. A parameter that looks like a secret (by its name, or by its value
 * when the name says nothing) becomes the credential unless one is already chosen; the strongest
 * sign wins, and every other secret-looking parameter is left out, never kept as a default.
 */
export function queryParams(url: URL, host: string, credential: CredentialSuggestion | undefined, notes: string[]): { query: RequestParam[]; credential: CredentialSuggestion | undefined } {
  const grouped = new Map<string, string[]>();
  for (const [k, v] of url.searchParams) grouped.set(k, [...(grouped.get(k) ?? []), v]);
  const secrets = new Map<string, { reason: string; strength: number }>();
  for (const [k, vs] of grouped) {
    const found = secretReason(k, vs[0]!);
    if (found) secrets.set(k, found);
  }
  let chosen: string | undefined;
  if (!credential) {
    for (const [k, found] of secrets) if (chosen === undefined || found.strength > secrets.get(chosen)!.strength) chosen = k;
    if (chosen !== undefined) {
      credential = queryCredential(chosen, host);
      notes.push(`the query parameter ${chosen} became the credential: ${secrets.get(chosen)!.reason}`);
    }
  }
  const query: RequestParam[] = [];
  for (const [k, vs] of grouped) {
    if (k === chosen) continue;
    const secret = secrets.get(k);
    if (secret?.strength === 1 && secrets.get(chosen ?? '')?.strength === 2) {
      notes.push(`the query parameter ${k} stays an argument: beside ${chosen} it names the account, not the key`);
      query.push(textParam(k, vs));
      continue;
    }
    if (secret) {
      notes.push(`the query parameter ${k} was left out: ${secret.reason}, and ${credential!.from} carries the credential; if the API needs it, add it in the source`);
      continue;
    }
    query.push(textParam(k, vs));
  }
  return { query, credential };
}
