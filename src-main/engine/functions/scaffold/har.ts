import { StudioError, type RecordedResponse, type TestCaseInput } from '../../model/index.ts';
import { bodySecretsLeftOut, describeRequest, queryParams } from './curl.ts';
import { bodyFromText, hostOf, requestFor, sortHeaders, splitUrl, type RequestDescription, type Scaffold } from './generate.ts';

/** One entry of a HAR file as listed for choosing: its number (from 1), method, URL and status. */
export interface HarEntryInfo {
  entry: number;
  method: string;
  url: string;
  status: number;
}

interface HarHeader {
  name: string;
  value: string;
}

interface HarEntry {
  request: { method: string; url: string; headers?: HarHeader[]; postData?: { mimeType?: string; text?: string } };
  response?: { status: number; statusText?: string; headers?: HarHeader[]; content?: { mimeType?: string; text?: string; encoding?: string } };
}

/** The entries of a HAR document (browser DevTools' "Save all as HAR"). */
export function harEntries(text: string, file: string): HarEntryInfo[] {
  return entriesOf(text, file).map((e, i) => ({ entry: i + 1, method: String(e.request.method).toUpperCase(), url: String(e.request.url), status: e.response?.status ?? 0 }));
}

function entriesOf(text: string, file: string): HarEntry[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    throw new StudioError('bad_input', `${file} is not a HAR file: it is not valid JSON (${(error as Error).message.split('\n')[0]})`);
  }
  const entries = (doc as { log?: { entries?: unknown } } | null)?.log?.entries;
  if (!Array.isArray(entries)) throw new StudioError('bad_input', `${file} is not a HAR file: it has no log.entries list (save one from the browser's network panel: "Save all as HAR")`);
  if (entries.length === 0) throw new StudioError('bad_input', `${file} has no requests (log.entries is empty)`);
  entries.forEach((e: unknown, i) => {
    const request = (e as HarEntry | null)?.request;
    if (!request || typeof request.url !== 'string' || typeof request.method !== 'string') throw new StudioError('bad_input', `${file}: entry ${i + 1} has no request method and URL`);
  });
  return entries as HarEntry[];
}

/**
 * The request of entry `entry` (from 1) as a request description, and its response. With one entry
 * `entry` may be left out; with several it must be given (the error names how many there are).
 */
export function describeHar(text: string, file: string, entry?: number): { description: RequestDescription; notes: string[]; entry: number; response: HarEntry['response'] } {
  const entries = entriesOf(text, file);
  if (entry === undefined && entries.length > 1) throw new StudioError('bad_input', `${file} has ${entries.length} entries; choose one with --entry N (1-${entries.length})`);
  const n = entry ?? 1;
  if (!Number.isInteger(n) || n < 1 || n > entries.length) throw new StudioError('bad_input', `--entry ${n}: ${file} has ${entries.length} ${entries.length === 1 ? 'entry' : 'entries'} (1-${entries.length})`);
  const { request, response } = entries[n - 1]!;
  const notes: string[] = [];
  const { url, notes: urlNotes } = splitUrl(request.url);
  notes.push(...urlNotes);
  const host = hostOf(url);
  const headers = (request.headers ?? []).filter((h) => typeof h?.name === 'string' && typeof h.value === 'string').map((h): [string, string] => [h.name, h.value]);
  const sorted = sortHeaders(headers, host, { browser: true });
  notes.push(...sorted.notes);
  const { query, credential } = queryParams(url, host, sorted.credential, notes);
  const contentType = request.postData?.mimeType || sorted.kept.find(([h]) => h.toLowerCase() === 'content-type')?.[1];
  const read = request.postData?.text ? bodyFromText(request.postData.text, contentType, notes) : undefined;
  const body = read && bodySecretsLeftOut(read, notes);
  const description = describeRequest({ method: request.method, url, host, query, headers: sorted.kept, body, credential }, 'a HAR entry');
  return { description, notes, entry: n, response };
}

/** Response headers that are never kept in a case (session secrets). */
const SECRET_RESPONSE_HEADERS = new Set(['set-cookie', 'set-cookie2']);

/**
 * The entry's exchange as the function's first test case: the request the generated function sends
 * with the entry's values, the response the browser saw, and the result the function makes of it.
 * Undefined (with a note) when the HAR holds no response body.
 */
export function harTestCase(description: RequestDescription, scaffold: Scaffold, response: HarEntry['response'], recordedAt: string, notes: string[]): TestCaseInput | undefined {
  const content = response?.content;
  if (!response || content?.text === undefined) {
    notes.push('the HAR entry holds no response body, so no test case was saved from it');
    return undefined;
  }
  const bytes = content.encoding === 'base64' ? Buffer.from(content.text, 'base64') : Buffer.from(content.text, 'utf8');
  const text = bytes.toString('utf8');
  const isText = Buffer.from(text, 'utf8').equals(bytes);
  const recorded: RecordedResponse = {
    status: response.status,
    ...(response.statusText ? { statusText: response.statusText.slice(0, 200) } : {}),
    headers: (response.headers ?? []).filter((h) => !SECRET_RESPONSE_HEADERS.has(String(h.name).toLowerCase())).map((h): [string, string] => [String(h.name), String(h.value)]),
    ...(isText ? { body: text } : { body: null, bodyBase64: bytes.toString('base64') }),
  };
  const request = requestFor(description, scaffold.exampleArgs);
  let value: unknown = null;
  if (text !== '') {
    try {
      value = JSON.parse(text);
    } catch {
      value = text;
    }
  }
  const ok = response.status >= 200 && response.status < 300;
  return {
    version: 1,
    name: 'har',
    args: scaffold.exampleArgs,
    exchanges: [{ request, response: recorded }],
    expect: ok ? { ok: true, value: scaffold.wrapsResult ? { result: value } : value } : { ok: false, code: 'function_error' },
    recordedAt,
    source: 'har',
  };
}
