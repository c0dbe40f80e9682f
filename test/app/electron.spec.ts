import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { _electron as electron } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { CONTENT_SECURITY_POLICY } from '../../src-main/app/windowPolicy.ts';
import { REPO } from '../support/callable.ts';

// The Electron binary is downloaded on first `npm start`; machines without internet never have it.
// Look for it without require('electron'), which would try to download it.
const electronDir = join(REPO, 'node_modules/electron');
const pathTxt = join(electronDir, 'path.txt');
const binary = existsSync(pathTxt) ? join(electronDir, 'dist', readFileSync(pathTxt, 'utf8').trim()) : undefined;
const hasElectron = binary !== undefined && existsSync(binary);

// Skipped, with the suite's name saying why, where no Electron binary exists (`npm start` downloads it on first launch).
describe.skipIf(!hasElectron)('the desktop app in Electron (skipped where there is no Electron binary)', () => {

  /** Starts the app on a fresh data folder, runs `body` with it, and closes it. */
  async function withApp(body: (app: Awaited<ReturnType<typeof electron.launch>>, dataDir: string) => Promise<void>): Promise<void> {
    const dataDir = mkdtempSync(join(tmpdir(), 'callable-electron-'));
    const app = await electron.launch({ executablePath: binary, args: [REPO, '--data-dir', dataDir], env: { ...process.env, CALLABLE_MCP_PORT: '0' } });
    try {
      await body(app, dataDir);
    } finally {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }

  it('serves the window from app://, with the CSP header, and refuses what the window policy refuses', () =>
    withApp(async (app, dataDir) => {
      const page = await app.firstWindow();
      await page.getByRole('button', { name: 'New function' }).waitFor();
      expect(page.url()).toBe('app://studio/index.html');
      // The app: protocol: the CSP as a header, traversal refused.
      expect(await page.evaluate(() => fetch('app://studio/index.html').then((r) => r.headers.get('content-security-policy')))).toBe(CONTENT_SECURITY_POLICY);
      expect(await page.evaluate(() => fetch('app://studio/%2e%2e/%2e%2e/etc/passwd').then((r) => r.status))).toBe(400);
      // window.open is denied (a link not on the allow-list is not opened either) and no window appears.
      expect(await page.evaluate(() => globalThis.open('https://evil.example.com/') === null)).toBe(true);
      expect(await app.evaluate(({ BrowserWindow }) => BrowserWindow.getAllWindows().length)).toBe(1);
      // Navigation away is refused: the page stays ours.
      await page.evaluate(() => {
        location.href = 'https://evil.example.com/';
      });
      await page.getByRole('button', { name: 'New function' }).waitFor();
      expect(await app.evaluate(({ BrowserWindow }) => BrowserWindow.getAllWindows()[0]!.webContents.getURL())).toBe('app://studio/index.html');
      // Permissions the studio does not use are denied.
      expect(await page.evaluate(() => Notification.requestPermission())).toBe('denied');
      expect(await page.evaluate(() => navigator.mediaDevices.getUserMedia({ audio: true }).then(() => 'granted', (e: Error) => e.name))).toBe('NotAllowedError');
      // The default menu is replaced by ours; the data folder is Electron's userData, where the logs go.
      expect(await app.evaluate(({ Menu }) => Menu.getApplicationMenu()?.items.map((i) => i.label))).toEqual(expect.arrayContaining(['File', 'View', 'Help']));
      expect(await app.evaluate(({ app }) => app.getPath('userData'))).toBe(dataDir);
    }));

  it('reloads a crashed window once and logs it in the logs folder', () =>
    withApp(async (app, dataDir) => {
      const page = await app.firstWindow();
      await page.getByRole('button', { name: 'New function' }).waitFor();
      await app.evaluate(({ BrowserWindow }) => BrowserWindow.getAllWindows()[0]!.webContents.forcefullyCrashRenderer());
      await expect
        .poll(() => app.evaluate(({ BrowserWindow }) => ({ crashed: BrowserWindow.getAllWindows()[0]!.webContents.isCrashed(), url: BrowserWindow.getAllWindows()[0]!.webContents.getURL() })), { timeout: 20_000 })
        .toEqual({ crashed: false, url: 'app://studio/index.html' });
      await expect.poll(() => (existsSync(join(dataDir, 'logs/main.log')) ? readFileSync(join(dataDir, 'logs/main.log'), 'utf8') : ''), { timeout: 10_000 }).toMatch(/render-process-gone: .*; reload/);
    }));

  it('opens a locked-down window that lists functions through the bridge', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'callable-electron-'));
    const app = await electron.launch({ executablePath: binary, args: [REPO, '--data-dir', dataDir], env: { ...process.env, CALLABLE_MCP_PORT: '0' } });
    try {
      const window = await app.firstWindow();
      await window.getByRole('button', { name: 'New function' }).waitFor();
      // contextIsolation + sandbox + no nodeIntegration: the page sees no Node at all.
      expect(await window.evaluate(() => [typeof (globalThis as { require?: unknown }).require, typeof (globalThis as { process?: unknown }).process])).toEqual(['undefined', 'undefined']);
      expect(await app.evaluate(({ BrowserWindow }) => BrowserWindow.getAllWindows().length)).toBe(1);
      expect(await window.evaluate(() => Object.keys((window as unknown as { studio: object }).studio).sort())).toContain('functions');
    } finally {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
