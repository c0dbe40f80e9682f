import { build } from 'esbuild';
import { createReadStream, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { EngineProcess } from '../../src-main/app/engineProcess.ts';
import { resolveNodeRuntime } from '../../src-main/app/nodeRuntime.ts';
import { EVENT_NAMES, type MethodName, type RequestOf, type ResponseOf } from '../../src-preload/contract.ts';
import { REPO } from '../support/callable.ts';

export const RENDERER_DIR = join(REPO, 'out/renderer');
export const SCREENSHOTS = join(REPO, 'test-results/screenshots');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const TYPES: Record<string, string> = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.ttf': 'font/ttf',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.png': 'image/png',
};

/** Serves the built renderer from 127.0.0.1 (workers and 'self' in the CSP need an http origin). */
async function serveRenderer(): Promise<{ url: string; server: Server }> {
  if (!existsSync(join(RENDERER_DIR, 'index.html'))) throw new Error('the renderer is not built: run "npx electron-vite build" (npm test does)');
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
    const file = join(RENDERER_DIR, path === '/' ? 'index.html' : path);
    if (!file.startsWith(RENDERER_DIR) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/index.html`, server };
}

/** The preload's bridge builder, bundled for the page, talking to functions the test exposes. */
async function bridgeScript(): Promise<string> {
  const result = await build({
    stdin: {
      contents: `
        import { buildStudio } from './src-preload/bridge.ts';
        const listeners = new Map();
        window.__studioEmit = (channel, payload) => { for (const l of listeners.get(channel) ?? []) l(payload); };
        window.studio = buildStudio(
          (channel, payload) => window.__studioInvoke(channel, payload),
          (channel, listener) => {
            if (!listeners.has(channel)) listeners.set(channel, new Set());
            listeners.get(channel).add(listener);
            return () => listeners.get(channel).delete(listener);
          },
        );`,
      resolveDir: REPO,
      loader: 'ts',
    },
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

export interface Studio {
  /** The relay Electron main uses, bound to a real engine process on `dataDir`. */
  relay: EngineProcess;
  /** A bridge call as the page makes it, through the same relay; rejects with the error envelope. */
  call<M extends MethodName>(method: M, request: RequestOf<M>): Promise<ResponseOf<M>>;
  page: Page;
  dataDir: string;
  pageErrors: string[];
  close(): Promise<void>;
}

/** A real engine process (src-main/engineProcess/main.ts) on `dataDir`, run by this Node, behind the relay main uses. */
async function startEngine(dataDir: string, onStatus?: ConstructorParameters<typeof EngineProcess>[0]['onStatus'], openExternal?: (url: string) => void): Promise<EngineProcess> {
  const relay = new EngineProcess({
    node: resolveNodeRuntime({ env: { ...process.env, CALLABLE_NODE: process.execPath } }),
    entry: join(REPO, 'src-main/engineProcess/main.ts'),
    args: ['--data-dir', dataDir, '--mcp-port', '0'],
    onStatus,
    openExternal,
    diagnostic: (message) => process.stderr.write(`relay: ${message}\n`),
  });
  await relay.start();
  return relay;
}

/**
 * The real renderer in Debian's Chromium, with window.studio bound to a real engine process
 * (a temp data dir, or `dataDir`, removed by close(); the real keychain) through the relay Electron main uses.
 * `openExternal` stands in for the system browser main would open an OAuth sign-in page in.
 */
export async function openStudio(options: { dataDir?: string; openExternal?: (url: string) => void } = {}): Promise<Studio> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'callable-e2e-'));
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH`);
  const relay = await startEngine(dataDir, undefined, options.openExternal);
  const renderer = await serveRenderer();
  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.exposeFunction('__studioInvoke', (channel: string, payload: unknown) => relay.invoke(channel, payload));
  await page.addInitScript({ content: await bridgeScript() });
  const unsubscribe = EVENT_NAMES.map((event) =>
    relay.subscribe(event, (payload: unknown) => {
      page.evaluate(([e, p]) => (window as unknown as { __studioEmit: (e: string, p: unknown) => void }).__studioEmit(e as string, p), [event, payload] as const).catch(() => {});
    }),
  );
  await page.goto(renderer.url);
  return {
    relay,
    async call(method, request) {
      const envelope = await relay.invoke(method, request);
      if (!envelope.ok) throw Object.assign(new Error(`${method}: ${envelope.error.message}`), envelope.error);
      return envelope.value as never;
    },
    page,
    dataDir,
    pageErrors,
    async close() {
      for (const u of unsubscribe) u();
      await browser.close();
      await relay.close();
      await new Promise<void>((resolve) => renderer.server.close(() => resolve()));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
