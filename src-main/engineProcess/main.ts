// The engine process of the desktop app: plain Node 24, started and supervised by Electron main
// (src-main/app/engineProcess.ts). It holds the engine, the HTTP MCP server and the studio API, and
// answers the bridge calls main relays over Node's IPC channel (src-main/engineProcess/protocol.ts). Its
// life is the channel's: when main exits or is killed, the channel closes and so does this process.
//
//   node --no-node-snapshot src-main/engineProcess/main.ts [--data-dir DIR] [--mcp-port N]
import { join } from 'node:path';
import { createEngine, defaultDataDir, type Engine, type EngineReport } from '../engine/index.ts';
import { McpHttpHost } from '../mcp/httpHost.ts';
import { decodeMessage, encodeMessage, ENGINE_EVENT_NAMES, MainToEngineSchema, PROTOCOL_VERSION, type EngineToMain } from './protocol.ts';
import { createStudioApi, type StudioApiServer } from './studioApi.ts';

const APP_ROOT = join(import.meta.dirname, '../..');
/** Stops waiting for the MCP server and the engine to close after this long. */
const SHUTDOWN_GRACE_MS = 3_000;

const diagnostic = (message: string): void => void process.stderr.write(`callable engine: ${message}\n`);
/** Who hears the engine's reports about its data (runs not recorded yet, a moved schema, a failed backup): the window. They are on stderr too. */
const noticeListeners = new Set<(report: EngineReport) => void>();
const oneLine = (error: unknown): string => (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 1000);

process.on('uncaughtException', (error) => {
  diagnostic(`stopped by an unexpected error: ${oneLine(error)}`);
  process.exit(1);
});
process.on('unhandledRejection', (error) => diagnostic(`unhandled rejection (kept running): ${oneLine(error)}`));

if (!process.send) {
  diagnostic('this is the desktop app\'s engine process; Callable Studio starts it (`npm start`). For a headless engine use `callable serve` or `callable mcp`.');
  process.exit(2);
}

function send(message: EngineToMain, onSent?: () => void): void {
  if (!process.connected) return;
  let encoded = encodeMessage(message);
  if (!encoded.ok && message.type === 'reply') {
    encoded = encodeMessage({ type: 'reply', id: message.id, envelope: { ok: false, error: { code: 'result_too_large', message: `the answer is too large for the bridge: ${encoded.message}` } } });
  }
  if (!encoded.ok) {
    diagnostic(`dropped a ${message.type} message: ${encoded.message}`);
    return;
  }
  process.send!(encoded.text, undefined, {}, () => onSent?.());
}

const options = parseArgs(process.argv.slice(2), process.env);
const opened = 'error' in options ? { fatal: options.error } : open(options.dataDir, options.mcpPort);
if ('fatal' in opened) {
  diagnostic(opened.fatal);
  // Main tells the user and does not restart: the same start would fail again.
  send({ type: 'fatal', message: opened.fatal }, () => process.exit(1));
  setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS).unref();
} else {
  await serve(opened);
}

interface Opened {
  engine: Engine;
  mcp: McpHttpHost;
  api: StudioApiServer;
}

function open(dataDir: string, mcpPort: number): Opened | { fatal: string } {
  try {
    const engine = createEngine({ dataDir, diagnostic, notice: (report) => noticeListeners.forEach((listener) => listener(report)) });
    const mcp = new McpHttpHost(engine, { port: mcpPort, diagnostic });
    const api = createStudioApi({ engine, mcp, resourcesDir: join(APP_ROOT, 'resources'), callableCommand: join(APP_ROOT, 'bin', 'callable.js'),
      diagnostic,
      openUrl: (request) => send({ type: 'open-url', ...request }),
      notices: (listener) => {
        noticeListeners.add(listener);
        return () => noticeListeners.delete(listener);
      },
    });
    return { engine, mcp, api };
  } catch (error) {
    return { fatal: `The engine could not open its data folder ${dataDir}: ${oneLine(error)}` };
  }
}

async function serve({ engine, mcp, api }: Opened): Promise<void> {
  const unsubscribe = ENGINE_EVENT_NAMES.map((name) => api.subscribe(name, (payload) => send({ type: 'event', name, payload })));

  process.on('message', (raw: unknown) => {
    const decoded = decodeMessage(MainToEngineSchema, raw);
    if (!decoded.ok) {
      diagnostic(`refused a message from main: ${decoded.reason}`);
      if (decoded.id !== undefined) send({ type: 'reply', id: decoded.id, envelope: { ok: false, error: { code: 'bad_input', message: `the engine refused the call: ${decoded.reason}` } } });
      return;
    }
    const { id, channel, payload } = decoded.message;
    // JSON drops an undefined value; the protocol wants one, so nothing travels as null.
    void api.dispatch(channel, payload).then((envelope) => send({ type: 'reply', id, envelope: envelope.ok ? { ok: true, value: envelope.value ?? null } : envelope }));
  });

  let closing = false;
  const shutdown = async (): Promise<void> => {
    if (closing) return;
    closing = true;
    setTimeout(() => process.exit(0), SHUTDOWN_GRACE_MS).unref();
    for (const u of unsubscribe) u();
    api.close();
    await mcp.stop().catch((error: unknown) => diagnostic(`stopping the MCP server: ${oneLine(error)}`));
    engine.close();
    process.exit(0);
  };
  // Main closes the channel to stop us, or the channel closes because main exited, however it did.
  process.on('disconnect', () => void shutdown());
  process.on('SIGTERM', () => void shutdown());
  // Ctrl+C in the terminal of `npm start` reaches main too: main decides, and the channel tells us.
  process.on('SIGINT', () => {});

  await mcp.start();
  if (!closing) send({ type: 'ready', version: PROTOCOL_VERSION, pid: process.pid });
}

function parseArgs(argv: string[], env: NodeJS.ProcessEnv): { dataDir: string; mcpPort: number } | { error: string } {
  const value = (flag: string): string | undefined => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const dataDir = value('--data-dir') ?? defaultDataDir(env);
  const portText = value('--mcp-port') ?? env.CALLABLE_MCP_PORT ?? '7777';
  const mcpPort = Number(portText);
  if (!/^\d{1,5}$/.test(portText) || mcpPort > 65535) return { error: `--mcp-port / CALLABLE_MCP_PORT must be a port number (0-65535), not "${portText.slice(0, 50)}"` };
  return { dataDir, mcpPort };
}
