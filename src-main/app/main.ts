// Electron glue only: lifecycle, the window, and relaying the bridge to the engine process, which
// holds everything else (src-main/engineProcess/main.ts). Electron main loads no native module. Every
// security decision is a pure function in windowPolicy.ts (tested in plain Node); this file wires them.
import { app, BrowserWindow, dialog, ipcMain, Menu, protocol, session, shell, type IpcMainInvokeEvent, type WebContents } from 'electron';
import { dirname, join, resolve } from 'node:path';
import { EVENT_NAMES, METHOD_NAMES, type EventName } from '../../src-preload/contract.ts';
import { serveAppRequest } from './appProtocol.ts';
import { EngineProcess } from './engineProcess.ts';
import { FAULT_WINDOW_MS, FaultCounter, FaultLog, formatFault, installFaultHandlers, logsDir, rendererGoneDecision } from './faults.ts';
import { engineEntry, resolveNodeRuntime } from './nodeRuntime.ts';
import { isTrustedSender } from './senders.ts';
import {
  APP_INDEX_URL,
  APP_SCHEME,
  buildMenuTemplate,
  devicePermissionDecision,
  externalUrlDecision,
  isOwnRendererUrl,
  navigationDecision,
  permissionDecision,
} from './windowPolicy.ts';

const diagnostic = (message: string): void => void process.stderr.write(`callable studio: ${message}\n`);
const FORBIDDEN = { ok: false, error: { code: 'forbidden', message: 'this window may not use the studio bridge' } } as const;

// Before ready: the app: scheme's privileges (a standard, secure origin for 'self' in the CSP, module
// scripts and workers), the data folder as Electron's userData, and the fault handlers.
protocol.registerSchemesAsPrivileged([{ scheme: APP_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true, codeCache: true } }]);
const dataDir = argValue('--data-dir');
if (dataDir) app.setPath('userData', resolve(dataDir));
const faultLog = new FaultLog(logsDir(app.getPath('userData')), { fallback: (message) => void process.stderr.write(message) });
installFaultHandlers(process, {
  log: faultLog,
  relaunch: () => {
    diagnostic(`faults keep coming in the main process; restarting (see ${faultLog.path})`);
    app.relaunch();
    app.quit();
  },
});

// The built renderer is served from app://studio/; `electron-vite dev` gives its dev server's URL,
// which only an unpackaged app follows.
const rendererDir = join(import.meta.dirname, '../renderer');
const rendererUrl = (!app.isPackaged && process.env.ELECTRON_RENDERER_URL) || APP_INDEX_URL;
let shuttingDown = false;

if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  void start();
}

async function start(): Promise<void> {
  await app.whenReady();
  protocol.handle(APP_SCHEME, async (request) => {
    const answer = await serveAppRequest({ method: request.method, url: request.url }, rendererDir);
    return new Response(answer.body === null ? null : typeof answer.body === 'string' ? answer.body : new Uint8Array(answer.body), { status: answer.status, headers: answer.headers });
  });
  lockDownSession();
  app.on('web-contents-created', (_event, contents) => lockDownContents(contents));
  Menu.setApplicationMenu(
    Menu.buildFromTemplate(
      buildMenuTemplate({ packaged: app.isPackaged, platform: process.platform, appName: app.name, openExternal, openLogs: () => void shell.openPath(dirname(faultLog.path)) }),
    ),
  );

  const engine = new EngineProcess({
    node: resolveNodeRuntime({ resourcesPath: app.isPackaged ? process.resourcesPath : undefined }),
    entry: engineEntry(app.getAppPath()),
    args: dataDir ? ['--data-dir', dataDir] : [],
    diagnostic,
    // An OAuth sign-in page the relay checked against the credential's authorization endpoint.
    openExternal: (url) => shell.openExternal(url),
  });
  // Its status reaches the window as the engine:status event.
  engine.start().catch(() => {});

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

  window = createWindow();
  // A (re)loaded page may have missed the engine's last change of state.
  window.webContents.on('did-finish-load', () => send('engine:status', engine.status));
  app.on('second-instance', () => {
    if (window?.isMinimized()) window.restore();
    window?.focus();
  });
  app.on('window-all-closed', () => app.quit());
  app.on('before-quit', (event) => {
    if (shuttingDown) return;
    shuttingDown = true;
    event.preventDefault();
    void engine.close().finally(() => app.exit(0));
  });
}

/** Opens an https link in the user's browser when it is on the allow-list; logs the refusal otherwise. */
function openExternal(url: string): void {
  const decision = externalUrlDecision(url);
  if (!decision.allow) {
    diagnostic(`did not open a link (${decision.reason}): ${url.slice(0, 200)}`);
    return;
  }
  shell.openExternal(decision.url).catch((error: unknown) => diagnostic(`could not open ${decision.url}: ${String(error)}`));
}

/** Permissions, devices, screen capture and Bluetooth for web content: only what windowPolicy grants. */
function lockDownSession(): void {
  const ses = session.defaultSession;
  ses.setPermissionRequestHandler((_contents, permission, callback, details) =>
    callback(permissionDecision(permission, { requestingUrl: details.requestingUrl, isMainFrame: details.isMainFrame }, rendererUrl)),
  );
  ses.setPermissionCheckHandler((_contents, permission, requestingOrigin, details) =>
    permissionDecision(permission, { requestingUrl: details.requestingUrl, requestingOrigin, isMainFrame: details.isMainFrame, embeddingOrigin: details.embeddingOrigin }, rendererUrl),
  );
  ses.setDevicePermissionHandler((details) => devicePermissionDecision(details));
  ses.setDisplayMediaRequestHandler((_request, callback) => callback(null));
  ses.setBluetoothPairingHandler((_details, callback) => callback({ confirmed: false }));
  // Device pickers are cancelled (left alone, some would pick the first device).
  ses.on('select-hid-device', (event, _details, callback) => {
    event.preventDefault();
    callback(null);
  });
  ses.on('select-serial-port', (event, _ports, _contents, callback) => {
    event.preventDefault();
    callback('');
  });
  ses.on('select-usb-device', (event, _details, callback) => {
    event.preventDefault();
    callback();
  });
  ses.on('will-download', (event) => event.preventDefault());
}

/** For every web contents: no new windows, no navigation away, no webviews, no DevTools when packaged. */
function lockDownContents(contents: WebContents): void {
  contents.setWindowOpenHandler(({ url }) => {
    openExternal(url);
    return { action: 'deny' };
  });
  contents.on('will-frame-navigate', (event) => {
    if (event.isMainFrame) {
      if (event.isSameDocument && isOwnRendererUrl(event.url, rendererUrl)) return;
      const decision = navigationDecision(event.url, contents.getURL());
      if (decision.action === 'allow') return;
      event.preventDefault();
      if (decision.action === 'open-external') openExternal(decision.url);
    } else if (!isOwnRendererUrl(event.url, rendererUrl)) {
      event.preventDefault();
    }
  });
  contents.on('will-redirect', (event) => {
    if (!isOwnRendererUrl(event.url, rendererUrl)) event.preventDefault();
  });
  contents.on('will-attach-webview', (event) => event.preventDefault());
  contents.on('select-bluetooth-device', (event, _devices, callback) => {
    event.preventDefault();
    callback('');
  });
  if (app.isPackaged) contents.on('devtools-opened', () => contents.closeDevTools());
}

function createWindow(): BrowserWindow {
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
      webviewTag: false,
      spellcheck: false,
      devTools: !app.isPackaged,
    },
  });
  window.once('ready-to-show', () => window.show());
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
  // A crashed page is reloaded once; if it crashes again within a minute, the user decides.
  const crashes = new FaultCounter(FAULT_WINDOW_MS);
  const load = (): void => void window.loadURL(rendererUrl).catch((error: unknown) => faultLog.write(formatFault('window load failed', error)));
  window.webContents.on('render-process-gone', (_event, details) => {
    if (shuttingDown || window.isDestroyed()) return;
    const decision = rendererGoneDecision(details.reason, details.reason === 'clean-exit' ? 0 : crashes.record(Date.now()));
    faultLog.write(formatFault('render-process-gone', `the window's page is gone: ${details.reason} (exit code ${details.exitCode}); ${decision}`));
    if (decision === 'reload') load();
    if (decision === 'ask') {
      void dialog
        .showMessageBox(window, {
          type: 'error',
          buttons: ['Reload', 'Quit'],
          defaultId: 0,
          cancelId: 1,
          message: 'The studio window stopped again.',
          detail: `Its page ended (${details.reason}) twice within a minute. Saved functions are safe in the engine. Details are in ${faultLog.path}.`,
        })
        .then(({ response }) => {
          if (response !== 0) return app.quit();
          crashes.reset();
          load();
        });
    }
  });
  load();
  return window;
}

function argValue(flag: string): string | undefined {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
