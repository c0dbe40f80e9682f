// Adding and removing a function's packages: the rules `callable add`/`remove` and the studio's
// packages panel share (the engine saves the result as a new revision).
import { StudioError } from '../../model/index.ts';
import type { CompiledFunction } from '../compile.ts';
import { parseDependencySpec } from './install.ts';

/** A function's packages as the CLI and the studio show them. */
export interface PackageSummary {
  /** package.json's dependencies: name → the range asked for. */
  dependencies: Record<string, string>;
  /** The version each resolved to (package-lock.json). */
  versions: Record<string, string>;
  /** How many packages the lock holds, dependencies of dependencies included. */
  locked: number;
  /** The size of the bundled function, packages included. */
  bundleBytes: number;
}

export function packageSummary(compiled: CompiledFunction): PackageSummary & { lock: string | undefined } {
  const p = compiled.packages;
  return { dependencies: p?.dependencies ?? {}, versions: p?.versions ?? {}, locked: p?.count ?? 0, bundleBytes: Buffer.byteLength(compiled.code), lock: p?.lock };
}

/** `dependencies` with each `name[@range]` of `specs` added or changed (no range: `latest`, pinned as ^VERSION on install). */
export function withAdded(dependencies: Record<string, string>, specs: readonly string[]): Record<string, string> {
  const out = { ...dependencies };
  for (const { name, range } of specs.map(parseDependencySpec)) out[name] = range ?? 'latest';
  return out;
}

/** `dependencies` without `names`; a name the function does not have is one bad_input line and nothing changes. */
export function withRemoved(fn: string, dependencies: Record<string, string>, names: readonly string[]): Record<string, string> {
  const out = { ...dependencies };
  for (const pkg of names) {
    if (!Object.hasOwn(out, pkg)) {
      const has = Object.keys(dependencies);
      throw new StudioError('bad_input', `"${pkg}" is not one of ${fn}'s packages (${has.length > 0 ? `it has ${has.join(', ')}` : 'it has none'}); nothing was changed`);
    }
    delete out[pkg];
  }
  return out;
}
