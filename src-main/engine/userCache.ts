// The user's private cache folder, shared by the two processes that keep code there between runs:
// the engine (a saved function's validators) and the sandbox host (the guest script and V8's code
// cache for it). Code read from it runs, so a folder is used only when it is this user's and no one
// else may read or write it; never a shared temp folder, where another user could plant code.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** $XDG_CACHE_HOME (when absolute) or ~/.cache; undefined without a home folder. */
function cacheHome(env: NodeJS.ProcessEnv): string | undefined {
  const xdg = env.XDG_CACHE_HOME;
  try {
    return xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), '.cache');
  } catch {
    return undefined;
  }
}

/** $XDG_CACHE_HOME (when absolute) or ~/.cache, then callable-studio/`name`; undefined without a home folder. */
export function userCacheFolder(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const base = cacheHome(env);
  return base === undefined ? undefined : path.join(base, 'callable-studio', name);
}

/**
 * The environment that gives a child process (a sandbox host, which gets no other environment) the
 * same cache folder as this process: `XDG_CACHE_HOME` set to the folder this process resolved.
 */
export function cacheHomeEnv(env: NodeJS.ProcessEnv = process.env): { XDG_CACHE_HOME?: string } {
  const base = cacheHome(env);
  return base === undefined ? {} : { XDG_CACHE_HOME: base };
}

/** Whether `dir` is (or is now made) a folder of this user that no one else may read or write. */
export function privateDir(dir: string): boolean {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stat = fs.lstatSync(dir);
    if (!stat.isDirectory()) return false;
    // Windows has no mode bits; the folder is in the user's profile, private by its ACL.
    if (process.platform === 'win32') return true;
    return stat.uid === process.getuid?.() && (stat.mode & 0o077) === 0;
  } catch {
    return false;
  }
}
