// The window's security decisions (src-main/app/windowPolicy.ts, appProtocol.ts, faults.ts) in plain
// Node: every refusal crossed, the app: protocol on real files, faults provoked in real processes
// and on a real full filesystem. Electron itself wires these in main.ts (see electron.spec.ts).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { extname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { MenuItemConstructorOptions } from 'electron';
import { afterEach, describe, expect, it } from 'vitest';
import { serveAppRequest } from '../../src-main/app/appProtocol.ts';
import { FAULT_WINDOW_MS, FaultCounter, FaultLog, formatFault, LOG_FILE, logsDir, MAX_MAIN_FAULTS, mainFaultDecision, rendererGoneDecision } from '../../src-main/app/faults.ts';
import { isTrustedSender } from '../../src-main/app/senders.ts';
import {
  APP_INDEX_URL,
  buildMenuTemplate,
  CONTENT_SECURITY_POLICY,
  devicePermissionDecision,
  EXTERNAL_HOSTS,
  externalUrlDecision,
  GRANTED_PERMISSIONS,
  HELP_LINKS,
  isAllowedExternalUrl,
  isOwnRendererUrl,
  MIME_TYPES,
  navigationDecision,
  permissionDecision,
  resolveAppProtocolPath,
} from '../../src-main/app/windowPolicy.ts';
import { REPO } from '../support/callable.ts';
import { scratch } from '../support/scratch.ts';

const s = scratch();

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

describe('the app: protocol on real files', () => {
  function renderer(): { root: string; outside: string } {
    const base = s.dir('callable-app-protocol-');
    const root = join(base, 'renderer');
    mkdirSync(join(root, 'assets', 'folder.js'), { recursive: true });
    writeFileSync(join(root, 'index.html'), '<!doctype html><title>studio</title>');
    writeFileSync(join(root, 'assets', 'app.js'), 'console.log(1)');
    writeFileSync(join(base, 'secret.txt'), 'TOP-SECRET');
    return { root, outside: join(base, 'secret.txt') };
  }

  it('serves a file with its type, the CSP header and nosniff', async () => {
    const { root } = renderer();
    const answer = await serveAppRequest({ method: 'GET', url: 'app://studio/index.html' }, root);
    expect(answer.status).toBe(200);
    expect(answer.headers).toMatchObject({ 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CONTENT_SECURITY_POLICY, 'x-content-type-options': 'nosniff', 'content-length': '36' });
    expect(String(answer.body)).toBe('<!doctype html><title>studio</title>');
    expect(await serveAppRequest({ method: 'GET', url: 'app://studio/' }, root)).toMatchObject({ status: 200, body: answer.body });
  });

  it('answers HEAD without a body', async () => {
    const { root } = renderer();
    expect(await serveAppRequest({ method: 'HEAD', url: 'app://studio/assets/app.js' }, root)).toMatchObject({ status: 200, body: null, headers: { 'content-length': '14', 'content-type': 'text/javascript; charset=utf-8' } });
  });

  it('refuses other methods with 405', async () => {
    const { root } = renderer();
    const answer = await serveAppRequest({ method: 'POST', url: 'app://studio/index.html' }, root);
    expect(answer).toMatchObject({ status: 405, headers: { allow: 'GET, HEAD' }, body: 'POST is not allowed here; only GET and HEAD\n' });
  });

  it('answers 404 for a missing file and for a folder', async () => {
    const { root } = renderer();
    expect(await serveAppRequest({ method: 'GET', url: 'app://studio/missing.js' }, root)).toMatchObject({ status: 404, body: 'not found\n' });
    expect(await serveAppRequest({ method: 'GET', url: 'app://studio/assets/folder.js' }, root)).toMatchObject({ status: 404, body: 'not found\n' });
    expect(await serveAppRequest({ method: 'GET', url: 'app://studio/index.html/x.js' }, root)).toMatchObject({ status: 404 });
  });

  it('never reads a file next to the renderer folder, however the path is spelled', async () => {
    const { root } = renderer();
    for (const url of ['app://studio/../secret.txt', 'app://studio/%2e%2e/secret.txt', 'app://studio/..%2fsecret.txt', 'app://studio/..%5csecret.txt', 'app://studio/%252e%252e/secret.txt']) {
      const answer = await serveAppRequest({ method: 'GET', url }, root);
      expect(answer.status, url).toBe(400);
      expect(String(answer.body)).not.toContain('TOP-SECRET');
    }
  });

  it('refuses a symlink that leads out of the renderer folder, and follows one that stays inside', async () => {
    const { root, outside } = renderer();
    symlinkSync(outside, join(root, 'leak.txt'));
    symlinkSync(join(root, 'assets', 'app.js'), join(root, 'alias.js'));
    const leak = await serveAppRequest({ method: 'GET', url: 'app://studio/leak.txt' }, root);
    expect(leak).toMatchObject({ status: 400, body: 'the path leaves the renderer folder\n' });
    expect(await serveAppRequest({ method: 'GET', url: 'app://studio/alias.js' }, root)).toMatchObject({ status: 200, body: Buffer.from('console.log(1)') });
  });

  it('serves every file of the built renderer with a known type (needs `npx electron-vite build`, which npm test runs)', async () => {
    const built = join(REPO, 'out/renderer');
    if (!existsSync(join(built, 'index.html'))) throw new Error('the renderer is not built: run "npx electron-vite build" (npm test does)');
    const files = readdirSync(built, { recursive: true, encoding: 'utf8' }).filter((f) => statSync(join(built, f)).isFile());
    expect(files.length).toBeGreaterThan(2);
    for (const file of files) {
      const url = `app://studio/${relative(built, join(built, file)).split(/[\\/]/).map(encodeURIComponent).join('/')}`;
      const answer = await serveAppRequest({ method: 'HEAD', url }, built);
      expect(answer.status, `${file}: ${String(answer.body)}`).toBe(200);
      expect(answer.headers['content-type']).toBe(MIME_TYPES[extname(file).toLowerCase()]);
    }
    // Everything index.html references resolves to a file that is served.
    const index = readFileSync(join(built, 'index.html'), 'utf8');
    const refs = [...index.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect((await serveAppRequest({ method: 'GET', url: `app://studio/${ref}` }, built)).status, ref).toBe(200);
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

  it('writes the log in the logs folder of the data folder, creating it', () => {
    const data = s.dir('callable-faults-');
    const log = new FaultLog(logsDir(data));
    expect(log.path).toBe(join(data, 'logs', LOG_FILE));
    expect(log.write('first\n')).toBe(true);
    expect(log.write('second\n')).toBe(true);
    expect(readFileSync(log.path, 'utf8')).toBe('first\nsecond\n');
  });

  it('moves the log aside to main.log.1 before an entry takes it past its size', () => {
    const dir = s.dir('callable-faults-');
    const log = new FaultLog(dir, { maxBytes: 100 });
    for (let i = 0; i < 12; i++) log.write(`entry ${String(i).padStart(2, '0')} ${'x'.repeat(20)}\n`);
    // 30-byte entries: three fit, the fourth starts a new file.
    expect(readFileSync(log.path, 'utf8')).toMatch(/^entry 09 x+\nentry 10 x+\nentry 11 x+\n$/);
    expect(readFileSync(`${log.path}.1`, 'utf8')).toMatch(/^entry 06 x+\nentry 07 x+\nentry 08 x+\n$/);
  });

  it('never throws when the logs folder cannot be made: the entry goes to the fallback', () => {
    const data = s.dir('callable-faults-');
    writeFileSync(join(data, 'logs'), 'a file where the folder should be');
    const fallback: string[] = [];
    const log = new FaultLog(logsDir(data), { fallback: (m) => fallback.push(m) });
    expect(log.write('the entry\n')).toBe(false);
    expect(fallback).toHaveLength(1);
    expect(fallback[0]).toMatch(/^callable studio: could not write the log .*main\.log \((EEXIST|ENOTDIR)\); the entry was:\nthe entry\n$/);
  });

  describe('on a full filesystem', () => {
    const mounts: string[] = [];
    afterEach(() => {
      for (const m of mounts.splice(0)) execFileSync('umount', [m]);
    });

    it('hands the entry to the fallback and writes again once there is room', () => {
      const mount = s.dir('callable-full-');
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mount]);
      mounts.push(mount);
      const log = new FaultLog(join(mount, 'logs'));
      expect(log.write('before\n')).toBe(true);
      // Fill the filesystem for real.
      const filler = join(mount, 'filler');
      try {
        writeFileSync(filler, Buffer.alloc(1024 * 1024));
      } catch (error) {
        expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
      }
      const fallback: string[] = [];
      const full = new FaultLog(join(mount, 'logs'), { fallback: (m) => fallback.push(m) });
      expect(full.write(`${'y'.repeat(8192)}\n`)).toBe(false);
      expect(fallback[0]).toContain('(ENOSPC)');
      rmSync(filler);
      expect(full.write('after\n')).toBe(true);
      // What fitted of the refused entry may precede it; the fallback got it whole.
      expect(fallback[0]).toContain(`${'y'.repeat(8192)}\n`);
      expect(readFileSync(log.path, 'utf8')).toMatch(/^before\ny*\n?after\n$/);
    });
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

  /** Runs a Node process that installs the fault handlers, then runs `body`; returns its output and the log. */
  function runWithHandlers(body: string): { status: number | null; stdout: string; stderr: string; log: string } {
    const dir = s.dir('callable-faults-proc-');
    const script = `
      import { FaultLog, installFaultHandlers } from ${JSON.stringify(pathToFileURL(join(REPO, 'src-main/app/faults.ts')).href)};
      const log = new FaultLog(${JSON.stringify(dir)});
      installFaultHandlers(process, { log, relaunch: () => process.stdout.write('RELAUNCH\\n') });
      ${body}
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 15_000 });
    const logPath = join(dir, LOG_FILE);
    return { status: run.status, stdout: run.stdout, stderr: run.stderr, log: existsSync(logPath) ? readFileSync(logPath, 'utf8') : '' };
  }

  it('logs an uncaught exception and an unhandled rejection in a real process, which keeps running', () => {
    const run = runWithHandlers(`
      setTimeout(() => { throw new Error('boom in a timer'); }, 0);
      Promise.reject(new Error('a promise nobody awaited'));
      setTimeout(() => { process.stdout.write('still alive\\n'); }, 200);
    `);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('still alive\n');
    expect(run.log).toMatch(/^\[[^\]]+\] uncaughtException: Error: boom in a timer\n {4}at /m);
    expect(run.log).toMatch(/^\[[^\]]+\] unhandledRejection: Error: a promise nobody awaited\n {4}at /m);
  });

  it(`restarts once when more than ${MAX_MAIN_FAULTS} faults come within ${FAULT_WINDOW_MS / 1000} s`, () => {
    const run = runWithHandlers(`
      for (let i = 1; i <= ${MAX_MAIN_FAULTS + 3}; i++) setTimeout(() => { throw new Error('fault ' + i); }, i);
      setTimeout(() => { process.stdout.write('done\\n'); }, 300);
    `);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('RELAUNCH\ndone\n');
    expect(run.log.match(/uncaughtException: Error: fault \d+/g)).toHaveLength(MAX_MAIN_FAULTS + 3);
    expect(run.log).toContain(`(${MAX_MAIN_FAULTS + 1} faults within ${FAULT_WINDOW_MS / 1000} s: restarting the app)`);
  });
});
