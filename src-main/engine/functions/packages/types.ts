// The type declarations of a function's installed packages, for the studio's editor: each
// package's entry .d.ts (package.json "types"/"typings", or an exports "types" condition) and the
// declaration files those reference, read only from inside the install folder.
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';

/** One declaration file, at the path the editor gives it: `node_modules/PKG/…` relative to the install. */
export interface TypeFile {
  path: string;
  content: string;
}

export interface PackageTypes {
  files: TypeFile[];
  /** Files left out because the total would pass the bound (or one file alone is larger), by path. */
  skipped: string[];
}

/** What the editor is sent at most: far above an SDK's declarations (openai 7.59's are 3.3 MB in 193 files), far below the bridge's bound. */
export const TYPES_MAX_BYTES = 16 * 1024 * 1024;
const FILE_MAX_BYTES = 4 * 1024 * 1024;
const DECLARATION = /\.d\.[cm]?ts$/;

/**
 * Collects the declarations of `names` (direct dependencies) installed under `root`: each entry
 * file and, breadth first, the files it imports or references (other packages' too, resolved as
 * Node would from the importing file). Every file must be a declaration file whose real path is
 * inside `root`/node_modules; a manifest pointing elsewhere is ignored. Each package also gets a
 * small package.json naming its entry, so a bare import resolves in the editor.
 */
export function collectTypes(root: string, names: readonly string[], maxBytes = TYPES_MAX_BYTES): PackageTypes {
  const base = realpathSync(join(root, 'node_modules'));
  const inside = (path: string): string | undefined => {
    try {
      const real = realpathSync(path);
      return real.startsWith(base + sep) && statSync(real).isFile() ? real : undefined;
    } catch {
      return undefined;
    }
  };
  const files: TypeFile[] = [];
  const skipped: string[] = [];
  const seen = new Set<string>();
  const packagesDone = new Set<string>();
  const queue: string[] = [];
  let total = 0;

  const pathOf = (real: string): string => relative(dirname(base), real).split(sep).join('/');
  const add = (real: string, content: string): boolean => {
    const bytes = Buffer.byteLength(content);
    if (bytes > FILE_MAX_BYTES || total + bytes > maxBytes) {
      skipped.push(pathOf(real));
      return false;
    }
    total += bytes;
    files.push({ path: pathOf(real), content });
    return true;
  };

  const enqueue = (real: string | undefined): void => {
    if (real === undefined || !DECLARATION.test(real) || seen.has(real)) return;
    seen.add(real);
    queue.push(real);
  };

  /** A package's folder as Node finds it from `fromDir` (nearest node_modules first), its entry declaration enqueued once. */
  const usePackage = (name: string, fromDir: string): void => {
    for (let dir = fromDir; dir.startsWith(base); dir = dirname(dir)) {
      const pkgDir = inside(join(dir === base ? dir : join(dir, 'node_modules'), name, 'package.json'));
      if (!pkgDir) continue;
      const folder = dirname(pkgDir);
      if (packagesDone.has(folder)) return;
      packagesDone.add(folder);
      const entry = entryOf(folder, inside);
      if (entry === undefined) return;
      const manifest = JSON.stringify({ name, types: `./${relative(folder, entry).split(sep).join('/')}` });
      add(join(folder, 'package.json'), manifest);
      enqueue(entry);
      return;
    }
    // No package of that name: the editor says so on the import, as it would for a missing one.
  };

  for (const name of names) {
    usePackage(name, base);
    if (!name.startsWith('@types/')) usePackage(`@types/${name.startsWith('@') ? name.slice(1).replace('/', '__') : name}`, base);
  }
  while (queue.length > 0) {
    const file = queue.shift()!;
    let content: string;
    try {
      if (statSync(file).size > FILE_MAX_BYTES) {
        skipped.push(pathOf(file));
        continue;
      }
      content = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    if (!add(file, content)) continue;
    for (const specifier of referencesOf(content)) {
      if (specifier.startsWith('.') || specifier.startsWith('/')) enqueue(resolveDeclaration(join(dirname(file), specifier), inside));
      else {
        const bare = /^(@[^/]+\/[^/]+|[^/]+)(\/.*)?$/.exec(specifier);
        if (!bare) continue;
        usePackage(bare[1]!, dirname(file));
        if (bare[2]) {
          const folder = findPackageDir(bare[1]!, dirname(file), base, inside);
          if (folder) enqueue(resolveDeclaration(join(folder, bare[2]), inside));
        }
      }
    }
  }
  return { files, skipped };
}

/** The entry declaration of the package in `folder`: "types"/"typings", an exports "types" condition, or index.d.ts. */
function entryOf(folder: string, inside: (path: string) => string | undefined): string | undefined {
  let manifest: { types?: unknown; typings?: unknown; exports?: unknown; main?: unknown };
  try {
    manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as typeof manifest;
  } catch {
    return undefined;
  }
  const candidates = [manifest.types, manifest.typings, typesCondition(manifest.exports), typeof manifest.main === 'string' ? manifest.main.replace(/\.[cm]?js$/, '') : undefined, 'index'];
  for (const candidate of candidates) {
    if (typeof candidate !== 'string' || candidate === '') continue;
    const found = resolveDeclaration(join(folder, candidate), inside);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The `types` condition for the package's root export ("." or the whole exports), looking through nested conditions. */
function typesCondition(exports: unknown): string | undefined {
  if (exports === null || typeof exports !== 'object' || Array.isArray(exports)) return undefined;
  const map = exports as Record<string, unknown>;
  const rootExport = '.' in map ? map['.'] : Object.keys(map).some((k) => k.startsWith('.')) ? undefined : map;
  const search = (value: unknown, depth: number): string | undefined => {
    if (depth > 5 || value === null || typeof value !== 'object') return undefined;
    const conditions = value as Record<string, unknown>;
    if (typeof conditions.types === 'string') return conditions.types;
    for (const key of ['import', 'default', 'require', 'browser', 'worker', 'node']) {
      const found = search(conditions[key], depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  return search(rootExport, 0);
}

/** A declaration file for a module path as TypeScript looks for it: `x.d.ts`, `x.js` → `x.d.ts`, `x/index.d.ts`. */
function resolveDeclaration(path: string, inside: (path: string) => string | undefined): string | undefined {
  const stem = path.replace(/\.(?:[cm]?js|tsx?)$/, '');
  const options = DECLARATION.test(path) ? [path] : [`${stem}.d.ts`, `${stem}.d.mts`, `${stem}.d.cts`, join(path, 'index.d.ts')];
  for (const option of options) {
    const real = inside(option);
    if (real !== undefined && DECLARATION.test(real)) return real;
  }
  return undefined;
}

function findPackageDir(name: string, fromDir: string, base: string, inside: (path: string) => string | undefined): string | undefined {
  for (let dir = fromDir; dir.startsWith(base); dir = dirname(dir)) {
    const manifest = inside(join(dir === base ? dir : join(dir, 'node_modules'), name, 'package.json'));
    if (manifest) return dirname(manifest);
  }
  return undefined;
}

/** The module specifiers a declaration file imports, re-exports or references. */
function referencesOf(content: string): string[] {
  const out = new Set<string>();
  const patterns = [
    /(?:^|[\s;])(?:import|export)\s[^'";]*?\sfrom\s*['"]([^'"\n]+)['"]/g,
    /(?:^|[\s;])import\s*['"]([^'"\n]+)['"]/g,
    /import\(\s*['"]([^'"\n]+)['"]\s*\)/g,
    /require\(\s*['"]([^'"\n]+)['"]\s*\)/g,
    /\/\/\/\s*<reference\s+path\s*=\s*['"]([^'"\n]+)['"]/g,
    /declare\s+module\s+['"](\.[^'"\n]+)['"]/g,
  ];
  for (const pattern of patterns) for (const match of content.matchAll(pattern)) out.add(match[1]!);
  for (const match of content.matchAll(/\/\/\/\s*<reference\s+types\s*=\s*['"]([^'"\n]+)['"]/g)) out.add(match[1]!);
  return [...out];
}
