// Electron glue only: lifecycle, the window, and relaying the bridge to the engine process, which
// holds everything else (src-main/studio/main.ts). Electron main loads no native module.
import { app, BrowserWindow, dialog, ipcMain, session, shell, type IpcMainInvokeEvent } from 'electron';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EVENT_NAMES, METHOD_NAMES, type EventName } from '../../src-preload/contract.ts';
import { EngineProcess } from './engineProcess.ts';
import { resolveNodeRuntime } from './nodeRuntime.ts';
import { isTrustedSender } from './senders.ts';

const diagnostic = (message: string): void => void process.stderr.write(`callable studio: ${message}\n`);
const FORBIDDEN = { ok: false, error: { code: 'forbidden', message: 'this window may not use the studio bridge' } } as const;

if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  void start();
}

async function start(): Promise<void> {
  await app.whenReady();
  const dataDir = argValue('--data-dir');
  const engine = new EngineProcess({
    node: resolveNodeRuntime({ resourcesPath: app.isPackaged ? process.resourcesPath : undefined }),
    entry: join(app.getAppPath(), 'src-main/studio/main.ts'),
    args: dataDir ? ['--data-dir', dataDir] : [],
    diagnostic,
  });
  // Its status reaches the window as the engine:status event.
  engine.start().catch(() => {});

  // No permission is ever granted to web content (camera, notifications, …).
  session.defaultSession.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));

  const rendererUrl = process.env.ELECTRON_RENDERER_URL ?? pathToFileURL(join(import.meta.dirname, '../renderer/index.html')).href;
  let window: BrowserWindow | undefined;
  const trusted = (event: IpcMainInvokeEvent): boolean =>
    isTrustedSender(
      { frameUrl: event.senderFrame?.url, isMainFrame: event.senderFrame?.parent === null, windowId: BrowserWindow.fromWebContents(event.sender)?.id },
      { rendererUrl, windowId: window?.id },
    );
  for (const channel of METHOD_NAMES) {
    ipcMain.handle(channel, (event, payload: unknown) => (trusted(event) ? engine.invoke(channel, payload) : FORBIDDEN));
  }
  const send = (name: EventName, payload: unknown): void => {
    if (window && !window.isDestroyed()) window.webContents.send(name, payload);
  };
  for (const name of EVENT_NAMES) engine.subscribe(name, (payload) => send(name, payload));

  window = createWindow(rendererUrl);
  // A (re)loaded page may have missed the engine's last change of state.
  window.webContents.on('did-finish-load', () => send('engine:status', engine.status));
  app.on('second-instance', () => {
    if (window?.isMinimized()) window.restore();
    window?.focus();
  });
  app.on('window-all-closed', () => app.quit());
  let shuttingDown = false;
  app.on('before-quit', (event) => {
    if (shuttingDown) return;
    shuttingDown = true;
    event.preventDefault();
    void engine.close().finally(() => app.exit(0));
  });
}

function createWindow(rendererUrl: string): BrowserWindow {
  const window = new BrowserWindow({
    width: 1400,
    height: 900,
    title: 'Callable Studio',
    show: false,
    webPreferences: {
      preload: join(import.meta.dirname, '../preload/index.cjs'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      spellcheck: false,
    },
  });
  window.once('ready-to-show', () => window.show());
  // Navigation and new windows are refused; http(s) links open in the user's browser.
  window.webContents.on('will-navigate', (event, url) => {
    if (url !== window.webContents.getURL()) event.preventDefault();
  });
  window.webContents.setWindowOpenHandler(({ url }) => {
    if (/^https?:\/\//.test(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
  // The renderer blocks unload while there are unsaved changes; ask before discarding them.
  window.webContents.on('will-prevent-unload', (event) => {
    const choice = dialog.showMessageBoxSync(window, {
      type: 'question',
      buttons: ['Discard changes', 'Keep editing'],
      defaultId: 1,
      cancelId: 1,
      message: 'You have unsaved changes.',
      detail: 'Close anyway and lose them?',
    });
    if (choice === 0) event.preventDefault();
  });
  void window.loadURL(rendererUrl);
  return window;
}

function argValue(flag: string): string | undefined {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
