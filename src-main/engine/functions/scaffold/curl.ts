import { StudioError } from '../../model/index.ts';
import {
  basicCredential,
  bodyFromText,
  hostOf,
  jsonBody,
  queryCredential,
  SECRET_QUERY,
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
  data?: unknown;
  files?: Record<string, string>;
  auth?: { user: string; password: string };
  auth_type?: string;
}

/** The longest curl command read (a pasted command, not a file). */
export const MAX_CURL_CHARS = 200_000;

/**
 * A curl command (as copied from a vendor's docs: quoting, line continuations, -H, -d, --data-raw,
 * --json, -u, -X, -G) as a request description. curlconverter parses the shell and curl's options;
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
  if (parsed.files && Object.keys(parsed.files).length > 0) throw new StudioError('bad_input', 'the curl command uploads files (-F, multipart/form-data), which a generated function cannot do yet; start from a template instead');
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
  if (parsed.data !== undefined) {
    if (typeof parsed.data === 'string') {
      if (parsed.data.startsWith('@')) throw new StudioError('bad_input', `the curl command reads its body from a file (${parsed.data.split(/\s/)[0]}); paste the body into the command instead`);
      body = bodyFromText(parsed.data, contentType, notes);
      // curl -d sends JSON as a form unless told otherwise; vendors' docs mean JSON.
      if (body?.kind === 'text' && (contentType ?? '').startsWith('application/x-www-form-urlencoded') && /^\s*\{/.test(parsed.data)) {
        try {
          body = jsonBody(JSON.parse(parsed.data));
          notes.push('the body is JSON but curl -d would send it as a form (its default type): the function sends it as application/json');
        } catch {
          // not JSON after all: sent as text
        }
      }
    } else body = jsonBody(parsed.data);
  }
  const description = describeRequest({ method: parsed.method, url, host, query, headers: sorted.kept, body, credential }, 'a curl command');
  return { description, notes };
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

/** The URL's query as arguments; a key-like parameter becomes the credential (unless one is already chosen). */
export function queryParams(url: URL, host: string, credential: CredentialSuggestion | undefined, notes: string[]): { query: RequestParam[]; credential: CredentialSuggestion | undefined } {
  const grouped = new Map<string, string[]>();
  for (const [k, v] of url.searchParams) grouped.set(k, [...(grouped.get(k) ?? []), v]);
  const query: RequestParam[] = [];
  for (const [k, vs] of grouped) {
    if (SECRET_QUERY.test(k)) {
      if (credential) notes.push(`the query parameter ${k} was left out: it looks like a secret and ${credential.from} carries the credential`);
      else credential = queryCredential(k, host);
      continue;
    }
    query.push(textParam(k, vs));
  }
  return { query, credential };
}
