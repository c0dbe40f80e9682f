// The window's security decisions (src-main/app/windowPolicy.ts, senders.ts and the choices of
// faults.ts) as pure functions: every refusal crossed. Serving real files and faults in real
// processes and on a full filesystem are in windowPolicy.test.ts; Electron wires these in main.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MenuItemConstructorOptions } from 'electron';
import { describe, expect, it } from 'vitest';
import { FaultCounter, formatFault, MAX_MAIN_FAULTS, mainFaultDecision, rendererGoneDecision } from '../../src-main/app/faults.ts';
import { isTrustedSender } from '../../src-main/app/senders.ts';
import {
  APP_INDEX_URL,
  authorizationUrlDecision,
  buildMenuTemplate,
  CONTENT_SECURITY_POLICY,
  devicePermissionDecision,
  EXTERNAL_HOSTS,
  externalUrlDecision,
  GRANTED_PERMISSIONS,
  HELP_LINKS,
  isAllowedExternalUrl,
  isOwnRendererUrl,
  navigationDecision,
  permissionDecision,
  resolveAppProtocolPath,
} from '../../src-main/app/windowPolicy.ts';

const REPO = join(import.meta.dirname, '../..');

describe('links that leave the app (window.open, link clicks, Help menu)', () => {
  it.each([
    ['https://modelcontextprotocol.io/', 'https://modelcontextprotocol.io/'],
    ['https://nodejs.org/en/download', 'https://nodejs.org/en/download'],
    ['https://www.deepl.com/your-account/keys', 'https://www.deepl.com/your-account/keys'],
    ['HTTPS://OCR.SPACE/OCRAPI', 'https://ocr.space/OCRAPI'],
    ['https://replicate.com/account/api-tokens?x=1#top', 'https://replicate.com/account/api-tokens?x=1#top'],
  ])('opens %s, handing the OS the normalized URL', (url, normalized) => {
    expect(externalUrlDecision(url)).toEqual({ allow: true, url: normalized });
    expect(isAllowedExternalUrl(url)).toBe(true);
  });

  it.each([
    ['plain http to a listed host', 'http://nodejs.org/', 'http: links are not opened, only https'],
    ['javascript:', 'javascript:alert(document.cookie)', 'javascript: links are not opened'],
    ['file:', 'file:///etc/passwd', 'file: links are not opened'],
    ['data:', 'data:text/html,<script>alert(1)</script>', 'data: links are not opened'],
    ['our own app: page', APP_INDEX_URL, 'app: links are not opened'],
    ['a custom OS handler', 'ms-settings:privacy', 'ms-settings: links are not opened'],
    ['https to a host not on the list', 'https://evil.example.com/', 'evil.example.com is not on the list'],
    ['a listed name as user info', 'https://nodejs.org@evil.com/', 'a user name or password'],
    ['user info before a listed host', 'https://docs.example@nodejs.org/', 'a user name or password'],
    ['an empty user info', 'https://@nodejs.org/', 'a user name or password'],
    ['a user and password', 'https://user:pw@nodejs.org/', 'a user name or password'],
    ['a subdomain of a listed host', 'https://evil.nodejs.org/', 'evil.nodejs.org is not on the list'],
    ['a listed host as a prefix', 'https://nodejs.org.evil.com/', 'nodejs.org.evil.com is not on the list'],
    ['a trailing dot', 'https://nodejs.org./', 'nodejs.org. is not on the list'],
    ['an IDN look-alike (Cyrillic o)', 'https://n\u043edejs.org/', 'xn--ndejs-jye.org is not on the list'],
    ['its punycode form', 'https://xn--ndejs-jye.org/', 'xn--ndejs-jye.org is not on the list'],
    ['a look-alike with a digit', 'https://www.deep1.com/', 'www.deep1.com is not on the list'],
    ['a port', 'https://nodejs.org:8443/', 'a port in the URL'],
    ['a backslash (parsers disagree)', 'https://evil.com\\@nodejs.org/', 'a backslash'],
    ['a newline', 'https://nodejs.org/\nhttps://evil.com', 'control character'],
    ['a null byte', 'https://nodejs.org/\u0000', 'control character'],
    ['leading whitespace', ' https://nodejs.org/', 'whitespace'],
    ['a relative URL', '/index.html', 'not a URL'],
    ['an empty string', '', 'not a URL'],
    ['an overlong URL', `https://nodejs.org/${'a'.repeat(2100)}`, 'longer than 2048 characters'],
  ])('refuses %s', (_label, url, reason) => {
    const decision = externalUrlDecision(url);
    expect(decision).toEqual({ allow: false, reason: expect.stringContaining(reason) });
    expect(isAllowedExternalUrl(url)).toBe(false);
  });

  it('refuses what is not a string', () => {
    for (const value of [undefined, null, 42, { href: 'https://nodejs.org/' }]) expect(externalUrlDecision(value)).toEqual({ allow: false, reason: 'not a URL' });
  });

  it('lists exact https host names only', () => {
    for (const host of EXTERNAL_HOSTS) {
      expect(new URL(`https://${host}/`).hostname).toBe(host);
      expect(host).not.toMatch(/[*:/]|^xn--|\.xn--/);
    }
  });
});

describe("an OAuth sign-in page the engine asks to open (the studio's Connect)", () => {
  const GOOGLE = 'https://accounts.google.com/o/oauth2/v2/auth';
  const request = (endpoint: string, extra = '') =>
    `${endpoint}?client_id=app&redirect_uri=${encodeURIComponent('http://127.0.0.1:53123/callback')}&response_type=code&code_challenge=abc&code_challenge_method=S256&state=xyz${extra}`;

  it.each([
    ['an https endpoint', GOOGLE],
    ['a loopback http endpoint (a local server)', 'http://127.0.0.1:4444/auth'],
    ['localhost', 'http://localhost:8080/oauth/authorize'],
  ])('opens an authorization code request on %s, handing the OS the normalized URL', (_what, endpoint) => {
    const url = request(endpoint, '&access_type=offline&prompt=consent');
    expect(authorizationUrlDecision(url, endpoint)).toEqual({ allow: true, url: new URL(url).href });
  });

  it.each([
    ['another host', request('https://evil.example.com/o/oauth2/v2/auth'), GOOGLE, "https://evil.example.com/o/oauth2/v2/auth is not the credential's authorization endpoint https://accounts.google.com/o/oauth2/v2/auth"],
    ['a subdomain of the host', request('https://x.accounts.google.com/o/oauth2/v2/auth'), GOOGLE, "is not the credential's authorization endpoint"],
    ['another path on the host', request('https://accounts.google.com/logout'), GOOGLE, "is not the credential's authorization endpoint"],
    ['another port', request('https://accounts.google.com:8443/o/oauth2/v2/auth'), GOOGLE, "is not the credential's authorization endpoint"],
    ['http to a remote endpoint', request('http://accounts.google.com/o/oauth2/v2/auth'), 'http://accounts.google.com/o/oauth2/v2/auth', 'is neither https nor on a loopback address'],
    ['http to an https endpoint', request('http://accounts.google.com/o/oauth2/v2/auth'), GOOGLE, 'http: sign-in pages are not opened, only https'],
    ['file:', 'file:///etc/passwd', GOOGLE, 'file: sign-in pages are not opened'],
    ['javascript:', 'javascript:alert(1)', GOOGLE, 'javascript: sign-in pages are not opened'],
    ['user info', request('https://accounts.google.com@evil.com/o/oauth2/v2/auth'), GOOGLE, 'a user name or password'],
    ['user info before the host', request('https://me@accounts.google.com/o/oauth2/v2/auth'), GOOGLE, 'a user name or password'],
    ['an implicit grant', request(GOOGLE).replace('response_type=code', 'response_type=token'), GOOGLE, 'not an authorization code request'],
    ['no redirect', `${GOOGLE}?client_id=app&response_type=code`, GOOGLE, 'redirect_uri is not the loopback callback'],
    ['a redirect to another site', request(GOOGLE).replace(encodeURIComponent('http://127.0.0.1:53123/callback'), encodeURIComponent('https://evil.example.com/callback')), GOOGLE, 'redirect_uri is not the loopback callback'],
    ['a newline', `${request(GOOGLE)}\n`, GOOGLE, 'contains whitespace'],
    ['a huge URL', request(GOOGLE, `&x=${'a'.repeat(9000)}`), GOOGLE, 'longer than 8192 characters'],
  ])('refuses %s, saying why', (_what, url, endpoint, reason) => {
    const decision = authorizationUrlDecision(url, endpoint);
    expect(decision.allow).toBe(false);
    expect(!decision.allow && decision.reason).toContain(reason);
  });

  it('refuses what is not a string', () => {
    expect(authorizationUrlDecision(undefined, GOOGLE)).toEqual({ allow: false, reason: 'not a URL' });
    expect(authorizationUrlDecision(request(GOOGLE), null)).toEqual({ allow: false, reason: 'not a URL' });
    expect(authorizationUrlDecision('not-a-url', GOOGLE)).toEqual({ allow: false, reason: 'not a URL' });
  });
});

describe('navigation of the window', () => {
  const current = APP_INDEX_URL;
  it('lets the current page reload', () => {
    expect(navigationDecision(current, current)).toEqual({ action: 'allow' });
  });
  it('opens an allowed https link in the browser instead of the window', () => {
    expect(navigationDecision('https://nodejs.org/en/download', current)).toEqual({ action: 'open-external', url: 'https://nodejs.org/en/download' });
  });
  it.each(['https://evil.example.com/', 'http://nodejs.org/', 'app://studio/other.html', 'file:///etc/passwd', 'javascript:alert(1)', 'about:blank'])('refuses %s', (url) => {
    expect(navigationDecision(url, current)).toEqual({ action: 'deny' });
  });
  it('refuses everything when the page has no URL yet', () => {
    expect(navigationDecision('', '')).toEqual({ action: 'deny' });
  });
});

describe('which page is ours', () => {
  it('recognises the app: renderer by scheme and host, not by URL origin (which is "null" for custom schemes)', () => {
    expect(new URL(APP_INDEX_URL).origin).toBe('null');
    expect(isOwnRendererUrl('app://studio/index.html', APP_INDEX_URL)).toBe(true);
    expect(isOwnRendererUrl('app://studio/assets/x.js', APP_INDEX_URL)).toBe(true);
    for (const url of ['foo://studio/index.html', 'app://evil/index.html', 'app://studio@evil/index.html', 'app://studio:81/index.html', 'https://studio/index.html', 'file:///index.html', 'not a url', undefined]) {
      expect(isOwnRendererUrl(url, APP_INDEX_URL)).toBe(false);
    }
  });

  it('trusts bridge calls only from the app: page in our window', () => {
    const ours = { rendererUrl: APP_INDEX_URL, windowId: 1 };
    expect(isTrustedSender({ frameUrl: 'app://studio/index.html', isMainFrame: true, windowId: 1 }, ours)).toBe(true);
    expect(isTrustedSender({ frameUrl: 'foo://studio/index.html', isMainFrame: true, windowId: 1 }, ours)).toBe(false);
    expect(isTrustedSender({ frameUrl: 'app://other/index.html', isMainFrame: true, windowId: 1 }, ours)).toBe(false);
    expect(isTrustedSender({ frameUrl: 'app://studio/index.html', isMainFrame: false, windowId: 1 }, ours)).toBe(false);
  });
});

describe('permissions and devices', () => {
  const main = { requestingUrl: 'app://studio/index.html', isMainFrame: true };
  it('grants the clipboard write the MCP page\'s Copy buttons use, to our page\'s main frame only', () => {
    expect(GRANTED_PERMISSIONS).toEqual(['clipboard-sanitized-write']);
    expect(permissionDecision('clipboard-sanitized-write', main, APP_INDEX_URL)).toBe(true);
    // Checks may carry only the origin.
    expect(permissionDecision('clipboard-sanitized-write', { requestingOrigin: 'app://studio', isMainFrame: true }, APP_INDEX_URL)).toBe(true);
  });

  it.each([
    ['an iframe', { requestingUrl: 'app://studio/index.html', isMainFrame: false }],
    ['a cross-origin subframe', { requestingUrl: 'app://studio/index.html', isMainFrame: true, embeddingOrigin: 'https://evil.example.com' }],
    ['a foreign page', { requestingUrl: 'https://evil.example.com/', isMainFrame: true }],
    ['a local file', { requestingUrl: 'file:///tmp/evil.html', isMainFrame: true }],
    ['another app: host', { requestingUrl: 'app://evil/index.html', isMainFrame: true }],
    ['nobody in particular', { isMainFrame: true }],
  ])('refuses the clipboard write to %s', (_label, details) => {
    expect(permissionDecision('clipboard-sanitized-write', details, APP_INDEX_URL)).toBe(false);
  });

  it.each([
    'media',
    'display-capture',
    'notifications',
    'geolocation',
    'clipboard-read',
    'deprecated-sync-clipboard-read',
    'hid',
    'serial',
    'usb',
    'fullscreen',
    'openExternal',
    'pointerLock',
    'keyboardLock',
    'midi',
    'midiSysex',
    'persistent-storage',
    'window-management',
    'idle-detection',
    'local-fonts',
    'storage-access',
    'fileSystem',
    'local-network-access',
    'unknown',
  ])('refuses %s even to our own page', (permission) => {
    expect(permissionDecision(permission, main, APP_INDEX_URL)).toBe(false);
  });

  it('follows the dev server when that is the renderer', () => {
    const dev = 'http://localhost:5173/';
    expect(permissionDecision('clipboard-sanitized-write', { requestingUrl: 'http://localhost:5173/index.html', isMainFrame: true }, dev)).toBe(true);
    expect(permissionDecision('clipboard-sanitized-write', { requestingUrl: 'http://localhost:5174/', isMainFrame: true }, dev)).toBe(false);
    expect(permissionDecision('clipboard-sanitized-write', main, dev)).toBe(false);
  });

  it('refuses every device', () => {
    for (const deviceType of ['hid', 'serial', 'usb']) expect(devicePermissionDecision({ deviceType, origin: 'app://studio' })).toBe(false);
  });
});

describe('the app: protocol maps URLs to the renderer folder', () => {
  const root = '/srv/renderer';
  it.each([
    ['app://studio/index.html', 'index.html', 'text/html; charset=utf-8'],
    ['app://studio/', 'index.html', 'text/html; charset=utf-8'],
    ['app://studio', 'index.html', 'text/html; charset=utf-8'],
    ['app://studio/assets/index-CHsA557P.js?v=1#x', 'assets/index-CHsA557P.js', 'text/javascript; charset=utf-8'],
    ['app://studio/assets/codicon-DF1abBS2.ttf', 'assets/codicon-DF1abBS2.ttf', 'font/ttf'],
    ['app://studio/assets/My%20Icon.SVG', 'assets/My Icon.SVG', 'image/svg+xml'],
    ['APP://STUDIO/index.html', 'index.html', 'text/html; charset=utf-8'],
  ])('%s → %s', (url, file, mimeType) => {
    expect(resolveAppProtocolPath(url, root)).toEqual({ ok: true, path: join(root, file), mimeType });
  });

  it.each([
    ['raw traversal', 'app://studio/../../etc/passwd', 400, 'leaves its folder'],
    ['traversal below a folder', 'app://studio/assets/../../etc/passwd', 400, 'leaves its folder'],
    ['encoded traversal', 'app://studio/%2e%2e/%2e%2e/etc/passwd', 400, 'leaves its folder'],
    ['upper-case encoded traversal', 'app://studio/%2E%2E/etc/passwd', 400, 'leaves its folder'],
    ['half-encoded traversal', 'app://studio/.%2e/etc/passwd', 400, 'leaves its folder'],
    ['a dot segment', 'app://studio/./index.html', 400, 'leaves its folder'],
    ['an encoded slash', 'app://studio/assets%2f..%2f..%2fetc%2fpasswd', 400, 'slash'],
    ['an encoded backslash', 'app://studio/..%5c..%5cetc%5cpasswd', 400, 'backslash'],
    ['a raw backslash', 'app://studio/..\\..\\etc\\passwd', 400, 'backslash'],
    ['an encoded null byte', 'app://studio/index.html%00.png', 400, 'control character'],
    ['a raw null byte', 'app://studio/index.html\u0000.png', 400, 'control character'],
    ['double encoding', 'app://studio/%252e%252e/etc/passwd', 400, 'percent sign'],
    ['an absolute path', 'app://studio//etc/passwd', 400, 'empty segment'],
    ['a drive letter', 'app://studio/C:/Windows/win.ini', 400, 'colon'],
    ['broken percent-encoding', 'app://studio/%E0%A4%A.js', 400, 'percent-encoding'],
    ['another host', 'app://evil/index.html', 404, 'only app://studio/'],
    ['a longer host', 'app://studio.evil.com/index.html', 404, 'only app://studio/'],
    ['user info', 'app://studio@evil/index.html', 404, 'only app://studio/'],
    ['a port', 'app://studio:8080/index.html', 404, 'only app://studio/'],
    ['another scheme', 'file:///etc/passwd', 404, 'only app://studio/'],
    ['https', 'https://studio/index.html', 404, 'only app://studio/'],
    ['a file type it does not serve', 'app://studio/secrets.env', 404, 'files of type ".env" are not served'],
    ['a file without a type', 'app://studio/LICENSE', 404, 'files of type "(none)" are not served'],
    ['an overlong URL', `app://studio/${'a'.repeat(2100)}.js`, 400, 'longer than 2048'],
  ])('refuses %s', (_label, url, status, reason) => {
    expect(resolveAppProtocolPath(url, root)).toEqual({ ok: false, status, reason: expect.stringContaining(reason) });
  });
});

describe('the Content-Security-Policy', () => {
  const metaOf = (html: string): string | undefined => /http-equiv="Content-Security-Policy"\s+content="([^"]+)"/.exec(html)?.[1];
  it('sent as a header is the one in the renderer\'s meta tag', () => {
    expect(metaOf(readFileSync(join(REPO, 'src-renderer/index.html'), 'utf8'))).toBe(CONTENT_SECURITY_POLICY);
  });
  it('allows no remote origin and no inline or eval script', () => {
    expect(CONTENT_SECURITY_POLICY).toContain("default-src 'none'");
    expect(CONTENT_SECURITY_POLICY).toMatch(/script-src 'self';/);
    expect(CONTENT_SECURITY_POLICY).not.toMatch(/https?:|\*|unsafe-eval/);
    expect(CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
  });
});

describe('the application menu', () => {
  const roles = (items: MenuItemConstructorOptions[]): string[] =>
    items.flatMap((item) => [...(item.role ? [item.role] : []), ...(Array.isArray(item.submenu) ? roles(item.submenu) : [])]);
  const opened: string[] = [];
  const menu = (packaged: boolean, platform: NodeJS.Platform) => buildMenuTemplate({ packaged, platform, appName: 'Callable Studio', openExternal: (url) => opened.push(url), openLogs: () => opened.push('logs') });

  it.each(['linux', 'win32', 'darwin'] as const)('has no DevTools and no reload in a packaged build (%s)', (platform) => {
    const all = roles(menu(true, platform));
    for (const role of ['toggleDevTools', 'reload', 'forceReload', 'viewMenu']) expect(all).not.toContain(role);
    expect(all).toEqual(expect.arrayContaining(['editMenu', 'windowMenu', 'zoomIn', 'togglefullscreen']));
  });

  it('adds DevTools and reload in development', () => {
    expect(roles(menu(false, 'linux'))).toEqual(expect.arrayContaining(['toggleDevTools', 'reload', 'forceReload']));
  });

  it('follows the platform: an app menu and Close on macOS, Quit elsewhere', () => {
    const mac = menu(true, 'darwin');
    expect(mac[0]).toMatchObject({ role: 'appMenu', label: 'Callable Studio' });
    expect(roles(mac)).toContain('close');
    expect(roles(menu(true, 'linux'))).not.toContain('appMenu');
    expect(roles(menu(true, 'linux'))).toContain('quit');
  });

  it('opens only allow-listed Help links, through the given opener', () => {
    opened.length = 0;
    const help = menu(true, 'linux').find((item) => item.role === 'help')!.submenu as MenuItemConstructorOptions[];
    for (const item of help) (item.click as (() => void) | undefined)?.();
    expect(opened).toEqual([...HELP_LINKS.map((l) => l.url), 'logs']);
    for (const { url } of HELP_LINKS) expect(isAllowedExternalUrl(url), url).toBe(true);
  });
});

describe('faults in main and in the window', () => {
  it('formats an entry: a timestamped first line, the stack indented below', () => {
    const error = new Error('boom');
    const entry = formatFault('uncaughtException', error, new Date('2026-01-02T03:04:05.000Z'));
    expect(entry.split('\n')[0]).toBe('[2026-01-02T03:04:05.000Z] uncaughtException: Error: boom');
    expect(entry.split('\n')[1]).toMatch(/^ {4}at /);
    expect(entry.endsWith('\n')).toBe(true);
    expect(formatFault('unhandledRejection', { code: 42 }, new Date(0))).toBe('[1970-01-01T00:00:00.000Z] unhandledRejection: { code: 42 }\n');
    expect(formatFault('render-process-gone', "the window's page is gone: oom", new Date(0))).toBe("[1970-01-01T00:00:00.000Z] render-process-gone: the window's page is gone: oom\n");
  });

  it('counts faults within a sliding window', () => {
    const counter = new FaultCounter(1000);
    expect([counter.record(0), counter.record(500), counter.record(999), counter.record(1500), counter.record(3000)]).toEqual([1, 2, 3, 2, 1]);
    counter.reset();
    expect(counter.record(3001)).toBe(1);
  });

  it('keeps main running until faults keep coming, then restarts', () => {
    expect(mainFaultDecision(1)).toBe('continue');
    expect(mainFaultDecision(MAX_MAIN_FAULTS)).toBe('continue');
    expect(mainFaultDecision(MAX_MAIN_FAULTS + 1)).toBe('relaunch');
  });

  it('reloads a crashed page once, asks when it crashes again, and leaves a clean exit alone', () => {
    expect(rendererGoneDecision('crashed', 1)).toBe('reload');
    expect(rendererGoneDecision('oom', 2)).toBe('ask');
    expect(rendererGoneDecision('killed', 3)).toBe('ask');
    expect(rendererGoneDecision('clean-exit', 0)).toBe('ignore');
    expect(rendererGoneDecision('clean-exit', 5)).toBe('ignore');
  });
});

describe('the IPC sender check', () => {
  const ours = { rendererUrl: 'file:///app/out/renderer/index.html', windowId: 1 };
  it('accepts our main frame only', () => {
    expect(isTrustedSender({ frameUrl: 'file:///app/out/renderer/index.html', isMainFrame: true, windowId: 1 }, ours)).toBe(true);
  });
  it.each([
    ['a foreign page', { frameUrl: 'https://evil.example.com/', isMainFrame: true, windowId: 1 }],
    ['another local file', { frameUrl: 'file:///tmp/evil.html', isMainFrame: true, windowId: 1 }],
    ['an iframe', { frameUrl: 'file:///app/out/renderer/index.html', isMainFrame: false, windowId: 1 }],
    ['another window', { frameUrl: 'file:///app/out/renderer/index.html', isMainFrame: true, windowId: 2 }],
    ['a frame without a URL', { frameUrl: undefined, isMainFrame: true, windowId: 1 }],
  ])('refuses %s', (_label, sender) => {
    expect(isTrustedSender(sender, ours)).toBe(false);
  });
  it('compares origins for the dev server', () => {
    const dev = { rendererUrl: 'http://localhost:5173/', windowId: 3 };
    expect(isTrustedSender({ frameUrl: 'http://localhost:5173/index.html', isMainFrame: true, windowId: 3 }, dev)).toBe(true);
    expect(isTrustedSender({ frameUrl: 'http://localhost:5174/', isMainFrame: true, windowId: 3 }, dev)).toBe(false);
  });
});
