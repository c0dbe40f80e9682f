import type { Metafile, OnResolveResult } from 'esbuild';
import { builtinModules } from 'node:module';
import { readFileSync } from 'node:fs';
import { basename, join, sep } from 'node:path';
import { StudioError } from '../../model/index.ts';

/**
 * Node built-ins the sandbox provides in its own safe form, by specifier → the module that stands
 * in for it inside the bundle. Empty today: every built-in is refused at save. An entry added here
 * is bundled instead of refused (and must be documented in the README with why it is safe).
 */
export const COMPATIBLE_BUILTINS: Readonly<Record<string, string>> = {};

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** `fs`, `node:fs`, `fs/promises` → `fs`; anything else → undefined. */
export function builtinOf(specifier: string): string | undefined {
  if (specifier.startsWith('node:')) return specifier.slice(5).split('/')[0];
  const base = specifier.split('/')[0]!;
  return BUILTINS.has(specifier) || BUILTINS.has(base) ? base : undefined;
}

/**
 * How the bundle takes a built-in a package imports (after the package's own `browser` field had
 * its say): the sandbox's stand-in when there is one, else left external so the whole graph is
 * known, and `refuseBuiltins` then names the first with its chain.
 */
export function builtinResolution(specifier: string): OnResolveResult {
  const stand = COMPATIBLE_BUILTINS[builtinOf(specifier) ?? ''];
  return stand !== undefined ? { path: stand } : { path: specifier, external: true };
}

/**
 * Throws when the bundle still imports a Node built-in: one line naming the built-in and the chain
 * of imports from the function's source to it (packages by name, files inside them by path).
 */
export function refuseBuiltins(metafile: Metafile, who: string): void {
  const imported = new Set(Object.values(metafile.inputs).flatMap((input) => input.imports.map((i) => i.path)));
  // The function's source is the one input nothing imports; every input is searched all the same.
  const roots = [...Object.keys(metafile.inputs).filter((k) => !imported.has(k)), ...Object.keys(metafile.inputs)];
  const parents = new Map<string, string>();
  for (const root of roots) {
    if (parents.has(root)) continue;
    parents.set(root, '');
    const queue = [root];
    while (queue.length > 0) {
      const file = queue.shift()!;
      for (const entry of metafile.inputs[file]?.imports ?? []) {
        const builtin = entry.external ? builtinOf(entry.path) : undefined;
        if (builtin !== undefined) throw refusal(who, builtin, file, entry.original ?? entry.path, parents);
        if (!entry.external && !parents.has(entry.path)) {
          parents.set(entry.path, file);
          queue.push(entry.path);
        }
      }
    }
  }
}

function refusal(who: string, builtin: string, file: string, specifier: string, parents: Map<string, string>): StudioError {
  const chain = [specifier];
  for (let at = file; at !== ''; at = parents.get(at) ?? '') chain.unshift(shortName(at));
  const pkg = packageOf(file);
  return new StudioError(
    'bad_input',
    `${who}: ${pkg ? `the package "${pkg}"` : 'the function'} imports the Node built-in "${builtin}" (${chain.join(' → ')}), which the sandbox does not provide; use a package made for browsers or workers, or remove it`,
    { builtin, chain },
  );
}

/** Whether the package holding `file` declares `dependency` optional (an optional peer or optional dependency). */
export function optionalDependencyOf(file: string, dependency: string): boolean {
  const at = file.lastIndexOf(`node_modules${sep}`);
  const pkg = packageOf(file.split(sep).join('/'));
  if (at === -1 || pkg === undefined) return false;
  try {
    const manifest = JSON.parse(readFileSync(join(file.slice(0, at), 'node_modules', pkg, 'package.json'), 'utf8')) as {
      peerDependenciesMeta?: Record<string, { optional?: boolean }>;
      optionalDependencies?: Record<string, string>;
    };
    return manifest.peerDependenciesMeta?.[dependency]?.optional === true || dependency in (manifest.optionalDependencies ?? {});
  } catch {
    return false;
  }
}

/** The npm package a file on disk belongs to, for messages. */
export function packageName(file: string): string {
  return packageOf(file.split(sep).join('/')) ?? basename(file);
}

/** The npm package a bundled file belongs to (the innermost node_modules entry). */
function packageOf(file: string): string | undefined {
  const at = file.lastIndexOf('node_modules/');
  if (at === -1) return undefined;
  const rest = file.slice(at + 'node_modules/'.length).split('/');
  return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
}

/** A file of the bundle as a reader knows it: `pkg/lib/a.js` rather than `node_modules/pkg/lib/a.js`. */
export function shortName(file: string): string {
  const at = file.lastIndexOf('node_modules/');
  return at === -1 ? basename(file) : file.slice(at + 'node_modules/'.length);
}
