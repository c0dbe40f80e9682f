import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { _electron as electron } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/callable.ts';

// The Electron binary is downloaded on first `npm start`; machines without internet never have it.
// Look for it without require('electron'), which would try to download it.
const electronDir = join(REPO, 'node_modules/electron');
const pathTxt = join(electronDir, 'path.txt');
const binary = existsSync(pathTxt) ? join(electronDir, 'dist', readFileSync(pathTxt, 'utf8').trim()) : undefined;
const hasElectron = binary !== undefined && existsSync(binary);

describe('the desktop app in Electron', () => {
  if (!hasElectron) {
    it.skip('opens the studio window (skipped: no Electron binary on this machine; `npm start` downloads it on first launch)', () => {});
    return;
  }

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
