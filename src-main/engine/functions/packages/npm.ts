// The npm CLI that ships with Node installs a function's packages: it reads the user's npm config
// (.npmrc, npm_config_* variables, proxy variables) exactly as their own `npm` does, keeps a
// content-addressed cache (cacache) that checks every tarball's integrity on each read, and writes
// the standard package-lock.json.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { StudioError } from '../../model/index.ts';

/** How long one npm command may take before it is stopped (a registry that never answers). */
const NPM_TIMEOUT_MS = 180_000;

/** npm's own entry script: beside the Node that runs the engine (nodejs.org's layout), else the npm that started us, else `npm` on PATH. */
export function findNpm(env: NodeJS.ProcessEnv): { command: string; args: string[] } | undefined {
  const nodeDir = dirname(process.execPath);
  const beside = process.platform === 'win32' ? join(nodeDir, 'node_modules', 'npm', 'bin', 'npm-cli.js') : join(nodeDir, '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
  if (existsSync(beside)) return { command: process.execPath, args: [beside] };
  if (env.npm_execpath && /npm-cli\.js$/.test(env.npm_execpath) && existsSync(env.npm_execpath)) return { command: process.execPath, args: [env.npm_execpath] };
  const exe = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  for (const dir of (env.PATH ?? env.Path ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, exe))) return { command: join(dir, exe), args: [] };
  }
  return undefined;
}

export interface NpmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs npm in `cwd` with the user's environment; never throws for npm's own failure (see `code`). */
export function runNpm(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<NpmResult> {
  const npm = findNpm(env);
  if (!npm) {
    throw new StudioError('bad_input', 'installing packages needs npm, and none was found beside Node or on PATH; install Node.js with npm (https://nodejs.org), then try again');
  }
  return new Promise((resolve, reject) => {
    const child = spawn(npm.command, [...npm.args, ...args], { cwd, env: npmEnv(env), stdio: ['ignore', 'pipe', 'pipe'], timeout: NPM_TIMEOUT_MS, windowsHide: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), stdout, stderr: signal === 'SIGTERM' && code === null ? `${stderr}\nnpm error code ETIMEDOUT` : stderr }));
  });
}

/**
 * The user's environment without what an enclosing `npm run` (`npm start`, `npm test`) exported
 * for its own project's scripts: its package fields and its prefix would point npm at that project.
 */
function npmEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(env)) {
    if (/^npm_(lifecycle_|package_|config_(local_prefix|prefix|global|cache)$)/i.test(key)) continue;
    out[key] = value;
  }
  return { ...out, npm_config_update_notifier: 'false' };
}

/** The registry npm uses for `name` under this environment (a scope's own registry first). */
export async function registryOf(name: string, cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  const scope = /^(@[^/]+)\//.exec(name)?.[1];
  const read = async (key: string): Promise<string> => {
    const r = await runNpm(['config', 'get', key], cwd, env);
    const value = r.code === 0 ? r.stdout.trim() : '';
    return value === 'undefined' ? '' : value;
  };
  return (scope ? await read(`${scope}:registry`) : '') || (await read('registry')) || 'https://registry.npmjs.org/';
}
