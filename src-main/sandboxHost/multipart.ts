// ctx.fetch's `multipart`: the parts the prelude copied out, checked and encoded as
// multipart/form-data the way Node's own FormData is (undici: names escaped, text values with CRLF
// line breaks, a file part's filename and content type).
import { createHash } from 'node:crypto';

export type MultipartPart = { name: string; text: string } | { name: string; data: Uint8Array; filename?: string | undefined; contentType?: string | undefined };

const MAX_PARTS = 10_000;

/** The parts of a request's `multipart`, or what is wrong with them. */
export function readParts(value: unknown): MultipartPart[] | string {
  if (!Array.isArray(value) || value.length > MAX_PARTS) return `multipart must be at most ${MAX_PARTS} parts`;
  const parts: MultipartPart[] = [];
  for (const p of value as unknown[]) {
    if (!p || typeof p !== 'object') return 'bad multipart part';
    const { name, text, data, filename, contentType } = p as Record<string, unknown>;
    if (typeof name !== 'string') return 'a multipart part name must be a string';
    if (typeof text === 'string' && data === undefined) parts.push({ name, text });
    else if (data instanceof Uint8Array && text === undefined) {
      if (filename !== undefined && typeof filename !== 'string') return `multipart part "${name}": filename must be a string`;
      if (contentType !== undefined && (typeof contentType !== 'string' || /[\r\n]/.test(contentType))) return `multipart part "${name}": contentType must be a one-line string`;
      parts.push({ name, data, filename, contentType });
    } else return `multipart part "${name}" must be text or bytes`;
  }
  return parts;
}

const escape = (s: string) => s.replace(/\n/g, '%0A').replace(/\r/g, '%0D').replace(/"/g, '%22');
const crlf = (s: string) => s.replace(/\r?\n|\r/g, '\r\n');

/**
 * The body and content type of `parts`. The boundary is derived from the parts, so the same parts
 * give the same bytes (a saved test compares them on replay); no part can hold a hash of itself.
 */
export function encodeMultipart(parts: readonly MultipartPart[]): { body: Uint8Array; contentType: string } {
  const hash = createHash('sha256');
  for (const p of parts) {
    hash.update(JSON.stringify('text' in p ? [p.name, p.text] : [p.name, p.filename ?? null, p.contentType ?? null, p.data.byteLength]));
    if ('data' in p) hash.update(p.data);
  }
  const boundary = `----CallableFormBoundary${hash.digest('hex').slice(0, 32)}`;
  const chunks: Uint8Array[] = [];
  for (const p of parts) {
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="${escape(crlf(p.name))}"`;
    if ('text' in p) {
      chunks.push(Buffer.from(`${head}\r\n\r\n${crlf(p.text)}\r\n`));
    } else {
      const file = p.filename === undefined ? '' : `; filename="${escape(p.filename)}"`;
      chunks.push(Buffer.from(`${head}${file}\r\nContent-Type: ${p.contentType || 'application/octet-stream'}\r\n\r\n`), p.data, Buffer.from('\r\n'));
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: new Uint8Array(Buffer.concat(chunks)), contentType: `multipart/form-data; boundary=${boundary}` };
}
