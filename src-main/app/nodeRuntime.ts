// Which Node runs the engine process, decided in this one place. Plain Node: no Electron here.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** isolated-vm 7 and running the engine's TypeScript sources need Node 24. */
export const MIN_NODE_MAJOR = 24;

export type NodeRuntime = { ok: true; path: string; version: string } | { ok: false; message: string };

/** The folder, under a packaged app's resources, that holds its Node (electron-builder.config.ts puts it there). */
export const BUNDLED_NODE_DIR = 'node';
/** The engine process's entry, relative to the app's folder. */
export const ENGINE_ENTRY = 'src-main/engineProcess/main.ts';

/** The bundled Node binary under `resourcesPath`, in the layout of nodejs.org's archives. */
export function bundledNodePath(resourcesPath: string, platform: NodeJS.Platform): string {
  return platform === 'win32' ? join(resourcesPath, BUNDLED_NODE_DIR, 'node.exe') : join(resourcesPath, BUNDLED_NODE_DIR, 'bin', 'node');
}

/**
 * The engine entry of the app at `appPath` (Electron's app.getAppPath()). A packaged app's is
 * app.asar, which only Electron can read: the engine's files are shipped unpacked beside it.
 */
export function engineEntry(appPath: string): string {
  return join(/\.asar$/.test(appPath) ? `${appPath}.unpacked` : appPath, ENGINE_ENTRY);
}

export interface NodeRuntimeOptions {
  env?: NodeJS.ProcessEnv;
  /** A packaged app's resources folder (Electron's `process.resourcesPath`), where its Node is bundled. */
  resourcesPath?: string | undefined;
  platform?: NodeJS.Platform;
}

const FIX = `Install Node.js ${MIN_NODE_MAJOR} from https://nodejs.org (or run \`npm install -g node@${MIN_NODE_MAJOR}\`), or set CALLABLE_NODE to the path of a Node ${MIN_NODE_MAJOR} binary, then start Callable Studio again.`;
const NEED = `Callable Studio runs its engine on Node.js ${MIN_NODE_MAJOR} or newer`;

/**
 * The Node binary for the engine process, in this order: CALLABLE_NODE when set; the runtime
 * bundled in a packaged app; the Node that runs npm (`npm start` sets npm_node_execpath); `node`
 * on PATH. The first one present decides, and it must be Node 24 or newer.
 */
export function resolveNodeRuntime(options: NodeRuntimeOptions = {}): NodeRuntime {
  const env = options.env ?? process.env;
  const platform = options.platform ?? process.platform;
  const exe = platform === 'win32' ? 'node.exe' : 'node';
  const candidate: { path: string | undefined; from: string } = env.CALLABLE_NODE
    ? { path: env.CALLABLE_NODE, from: 'CALLABLE_NODE' }
    : options.resourcesPath
      ? { path: bundledNodePath(options.resourcesPath, platform), from: 'the runtime bundled with the app' }
      : env.npm_node_execpath
        ? { path: env.npm_node_execpath, from: 'npm_node_execpath, the Node that runs npm' }
        : { path: findOnPath(exe, env.PATH ?? env.Path ?? '', platform), from: 'PATH' };
  if (candidate.path === undefined) return { ok: false, message: `${NEED} and found no \`node\` on PATH. ${FIX}` };

  const probe = spawnSync(candidate.path, ['-p', 'process.versions.node'], { env, encoding: 'utf8', timeout: 15_000, windowsHide: true });
  if (probe.error || probe.status !== 0) {
    const why = probe.error?.message ?? (probe.stderr.trim().split('\n')[0] || `it exited with ${probe.signal ?? `code ${probe.status}`}`);
    return { ok: false, message: `${NEED}; ${candidate.path} (from ${candidate.from}) did not run: ${why}. ${FIX}` };
  }
  const version = probe.stdout.trim().replace(/^v/, '');
  const major = Number(/^(\d+)\.\d+/.exec(version)?.[1] ?? NaN);
  if (!(major >= MIN_NODE_MAJOR)) {
    return { ok: false, message: `${NEED} and found Node ${version.slice(0, 40) || '(no version)'} at ${candidate.path} (from ${candidate.from}). ${FIX}` };
  }
  return { ok: true, path: candidate.path, version };
}

function findOnPath(exe: string, path: string, platform: NodeJS.Platform): string | undefined {
  for (const dir of path.split(platform === 'win32' ? ';' : delimiter)) {
    if (!dir) continue;
    const file = join(dir, exe);
    try {
      if (!statSync(file).isFile()) continue;
      if (platform !== 'win32') accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}
