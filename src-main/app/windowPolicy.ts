// Every security decision the studio window depends on, as pure functions of plain values, so that
// plain Node tests can cross each refusal. main.ts only wires them to Electron's APIs.
import type { MenuItemConstructorOptions } from 'electron';
import { extname, isAbsolute, join, relative, sep } from 'node:path';

/** The custom scheme the packaged renderer is served from (never file://), and its one host. */
export const APP_SCHEME = 'app';
export const APP_HOST = 'studio';
export const APP_ORIGIN = `${APP_SCHEME}://${APP_HOST}`;
export const APP_INDEX_URL = `${APP_ORIGIN}/index.html`;

/**
 * The renderer's Content-Security-Policy, sent as a header by the app: protocol and kept identical
 * to the meta tag in src-renderer/index.html (a test compares them). Monaco needs inline styles and
 * blob workers; results may show data: images and audio.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; media-src 'self' data: blob:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Longest URL the window hands to the OS or resolves to a file. */
const MAX_URL_LENGTH = 2048;
// Whitespace, C0/C1 controls, backslashes: legal nowhere in a URL we accept, and where parsers disagree.
const UNSAFE_URL_CHARS = /[\s\u0000-\u001f\u007f-\u009f\\]/;

// ---------------------------------------------------------------------------------------------
// Links that leave the app

/**
 * The only hosts a link may open in the user's browser: documentation and the consoles where the
 * bundled examples' vendors hand out API keys. Exact names: no subdomain, no port, https only.
 */
export const EXTERNAL_HOSTS: readonly string[] = [
  'modelcontextprotocol.io', // MCP documentation
  'nodejs.org', // Node.js downloads (the engine needs Node 24)
  'www.deepl.com', // DeepL account: API keys (examples/deepl_translate)
  'ocr.space', // OCR.space API keys (examples/ocr_image)
  'replicate.com', // Replicate API tokens (examples/replicate_image)
];

export type ExternalUrlDecision = { allow: true; url: string } | { allow: false; reason: string };

/**
 * Whether `url` may be opened in the user's browser, and the normalized URL to hand to the OS (never
 * the raw string, so the OS and this check cannot read it differently).
 */
export function externalUrlDecision(url: unknown): ExternalUrlDecision {
  if (typeof url !== 'string' || url.length === 0) return { allow: false, reason: 'not a URL' };
  if (url.length > MAX_URL_LENGTH) return { allow: false, reason: `longer than ${MAX_URL_LENGTH} characters` };
  if (UNSAFE_URL_CHARS.test(url)) return { allow: false, reason: 'contains whitespace, a control character or a backslash' };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { allow: false, reason: 'not a URL' };
  }
  if (parsed.protocol !== 'https:') return { allow: false, reason: `${parsed.protocol} links are not opened, only https` };
  if (parsed.username !== '' || parsed.password !== '' || /^https:\/\/[^/?#]*@/i.test(url)) return { allow: false, reason: 'a user name or password in the URL' };
  if (parsed.port !== '') return { allow: false, reason: 'a port in the URL' };
  if (!EXTERNAL_HOSTS.includes(parsed.hostname)) return { allow: false, reason: `${parsed.hostname} is not on the list of sites the studio opens` };
  return { allow: true, url: parsed.href };
}

export function isAllowedExternalUrl(url: unknown): boolean {
  return externalUrlDecision(url).allow;
}

/** An OAuth authorization URL carries a code challenge, scopes and provider parameters: longer than a link. */
const MAX_AUTHORIZE_URL_LENGTH = 8192;

const isLoopbackHost = (hostname: string): boolean => hostname === '127.0.0.1' || hostname === '[::1]' || hostname === 'localhost';

/**
 * Whether the engine's request to open an OAuth sign-in page may go to the user's browser: an
 * authorization-code request (response_type=code, redirecting to a loopback /callback) on the
 * credential's own authorization endpoint (same scheme, host, port and path), which is https, or
 * http on a loopback host. The allow-list is that one endpoint, not the studio's link list.
 */
export function authorizationUrlDecision(url: unknown, authorizationEndpoint: unknown): ExternalUrlDecision {
  if (typeof url !== 'string' || url.length === 0 || typeof authorizationEndpoint !== 'string') return { allow: false, reason: 'not a URL' };
  if (url.length > MAX_AUTHORIZE_URL_LENGTH) return { allow: false, reason: `longer than ${MAX_AUTHORIZE_URL_LENGTH} characters` };
  if (UNSAFE_URL_CHARS.test(url) || UNSAFE_URL_CHARS.test(authorizationEndpoint)) return { allow: false, reason: 'contains whitespace, a control character or a backslash' };
  let parsed: URL;
  let endpoint: URL;
  try {
    parsed = new URL(url);
    endpoint = new URL(authorizationEndpoint);
  } catch {
    return { allow: false, reason: 'not a URL' };
  }
  const secure = (u: URL): boolean => u.protocol === 'https:' || (u.protocol === 'http:' && isLoopbackHost(u.hostname));
  if (!secure(endpoint)) return { allow: false, reason: `the authorization endpoint ${endpoint.origin} is neither https nor on a loopback address` };
  if (!secure(parsed)) return { allow: false, reason: `${parsed.protocol} sign-in pages are not opened, only https (http only on a loopback address)` };
  if (parsed.username !== '' || parsed.password !== '' || /^[a-z]+:\/\/[^/?#]*@/i.test(url)) return { allow: false, reason: 'a user name or password in the URL' };
  if (parsed.origin !== endpoint.origin || parsed.pathname !== endpoint.pathname) {
    return { allow: false, reason: `${parsed.origin}${parsed.pathname} is not the credential's authorization endpoint ${endpoint.origin}${endpoint.pathname}` };
  }
  if (parsed.searchParams.get('response_type') !== 'code') return { allow: false, reason: 'not an authorization code request (response_type=code)' };
  const redirect = parsed.searchParams.get('redirect_uri');
  let back: URL | undefined;
  try {
    back = redirect === null ? undefined : new URL(redirect);
  } catch {
    back = undefined;
  }
  if (!back || back.protocol !== 'http:' || back.hostname !== '127.0.0.1' || back.pathname !== '/callback') {
    return { allow: false, reason: 'its redirect_uri is not the loopback callback http://127.0.0.1:PORT/callback' };
  }
  return { allow: true, url: parsed.href };
}

// ---------------------------------------------------------------------------------------------
// Which page is ours

/**
 * Whether `url` is a page of our own renderer, served from `rendererUrl`: same scheme, host and port
 * (compared directly: a custom scheme's URL origin is "null" for every host in Node), and for
 * file: the same file.
 */
export function isOwnRendererUrl(url: string | undefined, rendererUrl: string): boolean {
  if (url === undefined) return false;
  let actual: URL;
  let wanted: URL;
  try {
    actual = new URL(url);
    wanted = new URL(rendererUrl);
  } catch {
    return false;
  }
  if (actual.protocol !== wanted.protocol || actual.username !== '' || actual.password !== '') return false;
  if (wanted.protocol === 'file:') return actual.pathname === wanted.pathname;
  return actual.host !== '' && actual.host === wanted.host;
}

// ---------------------------------------------------------------------------------------------
// Navigation

export type NavigationDecision = { action: 'allow' } | { action: 'deny' } | { action: 'open-external'; url: string };

/**
 * A navigation of the window's page (`will-navigate`, `will-redirect`, frames): only a reload of the
 * current page stays in the window; an allowed https link opens in the browser; the rest is refused.
 */
export function navigationDecision(targetUrl: string, currentUrl: string): NavigationDecision {
  if (targetUrl === currentUrl && currentUrl !== '') return { action: 'allow' };
  const external = externalUrlDecision(targetUrl);
  return external.allow ? { action: 'open-external', url: external.url } : { action: 'deny' };
}

// ---------------------------------------------------------------------------------------------
// Permissions

/** What a permission request or check tells us about who is asking. */
export interface PermissionDetails {
  /** The asking frame's URL (requests; checks made for a document). */
  requestingUrl?: string | undefined;
  /** The asking frame's origin (checks). */
  requestingOrigin?: string | undefined;
  isMainFrame: boolean;
  /** Set when a cross-origin subframe asks. */
  embeddingOrigin?: string | undefined;
}

/** The one permission the studio uses: the MCP page's "Copy" buttons (navigator.clipboard.writeText). */
export const GRANTED_PERMISSIONS: readonly string[] = ['clipboard-sanitized-write'];

/**
 * Whether a permission request or check is granted: only the permissions the studio uses, only to the
 * main frame of our own renderer. Camera, microphone, screen, notifications, geolocation, clipboard
 * reading, devices (HID, serial, USB), fullscreen, openExternal, … are all refused.
 */
export function permissionDecision(permission: string, details: PermissionDetails, rendererUrl: string): boolean {
  if (!GRANTED_PERMISSIONS.includes(permission)) return false;
  if (!details.isMainFrame || details.embeddingOrigin) return false;
  const asking = details.requestingUrl ?? details.requestingOrigin;
  return isOwnRendererUrl(asking, rendererUrl);
}

/** Device access (WebHID, Web Serial, WebUSB, Bluetooth): the studio uses none. */
export function devicePermissionDecision(_details: { deviceType: string; origin: string }): false {
  return false;
}

// ---------------------------------------------------------------------------------------------
// The app: protocol

/** What the app: protocol serves, by extension; anything else is not served. */
export const MIME_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

export type AppPathResolution = { ok: true; path: string; mimeType: string } | { ok: false; status: 400 | 404; reason: string };

const refuse = (status: 400 | 404, reason: string): AppPathResolution => ({ ok: false, status, reason });

/**
 * The file under `rootDir` that an app://studio/… request names, or why it is refused. Read from the
 * raw URL, segment by segment: traversal (`..`, `%2e%2e`, `.%2E`), encoded or raw slashes and
 * backslashes, null bytes, empty segments (`//etc/passwd`), drive letters, other hosts, userinfo,
 * ports and unknown file types are refused, never normalized away. `app://studio/` is index.html.
 */
export function resolveAppProtocolPath(requestUrl: string, rootDir: string): AppPathResolution {
  if (requestUrl.length > MAX_URL_LENGTH) return refuse(400, `the URL is longer than ${MAX_URL_LENGTH} characters`);
  if (UNSAFE_URL_CHARS.test(requestUrl)) return refuse(400, 'the URL contains whitespace, a control character or a backslash');
  const prefix = `${APP_ORIGIN}`;
  if (requestUrl.slice(0, prefix.length).toLowerCase() !== prefix) return refuse(404, `only ${APP_ORIGIN}/ is served`);
  const rest = requestUrl.slice(prefix.length);
  if (rest !== '' && !/^[/?#]/.test(rest)) return refuse(404, `only ${APP_ORIGIN}/ is served`);
  const rawPath = rest.replace(/[?#].*$/s, '');
  const segments = rawPath === '' || rawPath === '/' ? ['index.html'] : rawPath.slice(1).split('/');
  const decoded: string[] = [];
  for (const segment of segments) {
    if (segment === '') return refuse(400, 'the path has an empty segment');
    let name: string;
    try {
      name = decodeURIComponent(segment);
    } catch {
      return refuse(400, 'the path is not valid percent-encoding');
    }
    if (name === '.' || name === '..' || segment === '.' || segment === '..') return refuse(400, 'the path leaves its folder (. or ..)');
    if (/[/\\:%]|[\u0000-\u001f\u007f]/.test(name)) return refuse(400, 'a path segment contains a slash, backslash, colon, percent sign or control character');
    decoded.push(name);
  }
  const path = join(rootDir, ...decoded);
  const inside = relative(rootDir, path);
  if (inside === '' || inside.startsWith(`..${sep}`) || inside === '..' || isAbsolute(inside)) return refuse(400, 'the path leaves the renderer folder');
  const mimeType = MIME_TYPES[extname(path).toLowerCase()];
  if (mimeType === undefined) return refuse(404, `files of type "${extname(path) || '(none)'}" are not served`);
  return { ok: true, path, mimeType };
}

// ---------------------------------------------------------------------------------------------
// The application menu

/** Help menu entries; each URL passes externalUrlDecision (a test checks). */
export const HELP_LINKS: readonly { label: string; url: string }[] = [
  { label: 'Model Context Protocol documentation', url: 'https://modelcontextprotocol.io/' },
  { label: 'Download Node.js', url: 'https://nodejs.org/en/download' },
];

export interface MenuOptions {
  packaged: boolean;
  platform: NodeJS.Platform;
  appName: string;
  /** Opens a Help link (main passes it through the external-URL allow-list). */
  openExternal: (url: string) => void;
  /** Opens the folder with the main process log. */
  openLogs?: () => void;
}

/**
 * The application menu, replacing Electron's default one. A packaged build has no DevTools and no
 * reload; a development build adds them under View.
 */
export function buildMenuTemplate(options: MenuOptions): MenuItemConstructorOptions[] {
  const mac = options.platform === 'darwin';
  const view: MenuItemConstructorOptions[] = [
    ...(options.packaged ? [] : ([{ role: 'reload' }, { role: 'forceReload' }, { role: 'toggleDevTools' }, { type: 'separator' }] as MenuItemConstructorOptions[])),
    { role: 'resetZoom' },
    { role: 'zoomIn' },
    { role: 'zoomOut' },
    { type: 'separator' },
    { role: 'togglefullscreen' },
  ];
  const help: MenuItemConstructorOptions[] = HELP_LINKS.map(({ label, url }) => ({ label, click: () => options.openExternal(url) }));
  if (options.openLogs) help.push({ type: 'separator' }, { label: 'Show Logs Folder', click: options.openLogs });
  return [
    ...(mac ? ([{ role: 'appMenu', label: options.appName }] as MenuItemConstructorOptions[]) : []),
    { label: 'File', submenu: [mac ? { role: 'close' } : { role: 'quit' }] },
    { role: 'editMenu' },
    { label: 'View', submenu: view },
    { role: 'windowMenu' },
    { role: 'help', submenu: help },
  ];
}
