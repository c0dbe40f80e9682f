// The app:// protocol's responses, from plain values and the files of the built renderer. Plain Node:
// main.ts turns the answer into a web Response inside protocol.handle.
import { readFile, realpath, stat } from 'node:fs/promises';
import { relative, isAbsolute, sep } from 'node:path';
import { CONTENT_SECURITY_POLICY, resolveAppProtocolPath } from './windowPolicy.ts';

export interface AppResponse {
  status: number;
  headers: Record<string, string>;
  /** null for HEAD. */
  body: Buffer | string | null;
}

const text = (status: number, message: string, extra: Record<string, string> = {}): AppResponse => ({
  status,
  headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff', ...extra },
  body: `${message}\n`,
});

const within = (root: string, path: string): boolean => {
  const rel = relative(root, path);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
};

/**
 * Answers one request to app://studio/…: the file it names under `rootDir` (the built renderer), with
 * its MIME type and the CSP as a header, or a plain-text refusal. GET and HEAD only; symlinks that
 * lead out of `rootDir` are refused like traversal.
 */
export async function serveAppRequest(request: { method: string; url: string }, rootDir: string): Promise<AppResponse> {
  if (request.method !== 'GET' && request.method !== 'HEAD') return text(405, `${request.method} is not allowed here; only GET and HEAD`, { allow: 'GET, HEAD' });
  const resolved = resolveAppProtocolPath(request.url, rootDir);
  if (!resolved.ok) return text(resolved.status, resolved.reason);
  let body: Buffer;
  try {
    const [root, real] = await Promise.all([realpath(rootDir), realpath(resolved.path)]);
    if (!within(root, real)) return text(400, 'the path leaves the renderer folder');
    if (!(await stat(real)).isFile()) return text(404, 'not found');
    body = await readFile(real);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return text(404, 'not found');
    return text(500, `could not read the file (${code ?? 'error'})`);
  }
  return {
    status: 200,
    headers: {
      'content-type': resolved.mimeType,
      'content-length': String(body.byteLength),
      'content-security-policy': CONTENT_SECURITY_POLICY,
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-cache',
    },
    body: request.method === 'HEAD' ? null : body,
  };
}
