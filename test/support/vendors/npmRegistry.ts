import { execFileSync } from 'node:child_process';
import { findNpm } from '../../../src-main/engine/functions/packages/npm.ts';

/** The npm registry this machine's npm config names, and whether it answers from here (for skipIf). */
export async function machineRegistry(): Promise<{ url: string; reachable: boolean }> {
  const npm = findNpm(process.env);
  const url = npm ? execFileSync(npm.command, [...npm.args, 'config', 'get', 'registry'], { encoding: 'utf8', timeout: 20_000 }).trim() : 'https://registry.npmjs.org/';
  const reachable = await fetch(new URL('ms', url), { signal: AbortSignal.timeout(8000) }).then(
    (r) => r.ok,
    () => false,
  );
  return { url, reachable };
}
