import type { ImportKind, Metafile, OnResolveResult } from 'esbuild';
import { builtinModules, createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StudioError } from '../../model/index.ts';

const NODE_DIR = fileURLToPath(new URL('./node/', import.meta.url));

/**
 * Node built-ins the sandbox provides in its own safe form, by name → the module in ./node/ that
 * stands in for it inside the bundle: plain JavaScript computing in the function's own context,
 * with no host access of its own. Chosen by what vendor SDKs import (the README's table says which
 * and why each is safe); every other built-in is refused at save.
 */
export const COMPATIBLE_BUILTINS: Readonly<Record<string, string>> = Object.fromEntries(['buffer', 'crypto'].map((name) => [name, join(NODE_DIR, `${name}.cjs`)]));

/** The module whose export esbuild puts in place of the free name `process` (its `inject`). */
export const COMPAT_GLOBALS = join(NODE_DIR, 'process.mjs');

/** The folders of the npm packages the stand-ins are made of, and the stand-ins' own. */
const COMPAT_DIRS = ((): string[] => {
  const dirs = new Set<string>([NODE_DIR]);
  const visit = (name: string, from: string): void => {
    // The folder above the package's entry whose package.json names it (not every package exports its package.json).
    const named = (at: string): boolean => existsSync(join(at, 'package.json')) && (JSON.parse(readFileSync(join(at, 'package.json'), 'utf8')) as { name?: string }).name === name;
    // `buffer/`: the package, where `buffer` alone would be Node's own module.
    let dir = dirname(createRequire(from).resolve(builtinModules.includes(name) ? `${name}/` : name));
    while (!named(dir) && dirname(dir) !== dir) dir = dirname(dir);
    dir += sep;
    if (dirs.has(dir)) return;
    dirs.add(dir);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    for (const dependency of Object.keys(manifest.dependencies ?? {})) visit(dependency, join(dir, 'package.json'));
  };
  for (const name of ['buffer', '@noble/hashes']) visit(name, join(NODE_DIR, 'buffer.cjs'));
  return [...dirs];
})();

/**
 * Whether `file` is a stand-in for a built-in or part of a package it is made of: what it imports
 * resolves from the engine's own packages, not from the function's.
 */
export function isCompatModule(file: string): boolean {
  return COMPAT_DIRS.some((dir) => file.startsWith(dir));
}

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** `fs`, `node:fs`, `fs/promises` → `fs`; anything else → undefined. */
export function builtinOf(specifier: string): string | undefined {
  if (specifier.startsWith('node:')) return specifier.slice(5).split('/')[0];
  const base = specifier.split('/')[0]!;
  return BUILTINS.has(specifier) || BUILTINS.has(base) ? base : undefined;
}

/** The namespace of a built-in a package requires only inside try blocks: a module that throws when it runs. */
export const UNAVAILABLE_BUILTIN = 'callable-unavailable-builtin';

/**
 * How the bundle takes a built-in a package imports (after the package's own `browser` field had
 * its say): the sandbox's stand-in when there is one; a module that throws when required, when
 * every `require()` of it in `importer` sits inside a try block (a fallback the package catches);
 * else left external so the whole graph is known, and `refuseBuiltins` then names the first with
 * its chain.
 */
export function builtinResolution(specifier: string, kind?: ImportKind, importer?: string): OnResolveResult {
  const stand = COMPATIBLE_BUILTINS[builtinOf(specifier) ?? ''];
  if (stand !== undefined) return { path: stand };
  if (kind === 'require-call' && importer !== undefined && requiredOnlyInTry(importer, specifier)) return { path: specifier, namespace: UNAVAILABLE_BUILTIN };
  return { path: specifier, external: true };
}

/** The module a guarded `require(specifier)` gets: it throws one clear error when the package reaches it. */
export function unavailableBuiltinModule(specifier: string): string {
  const message = `require("${specifier}"): the sandbox does not provide the Node built-in "${builtinOf(specifier) ?? specifier}"`;
  return `const error = new Error(${JSON.stringify(message)});\nerror.code = 'MODULE_NOT_FOUND';\nthrow error;\n`;
}

/** Whether `file` requires `specifier` (as a string literal), and only ever inside a try block. */
function requiredOnlyInTry(file: string, specifier: string): boolean {
  try {
    return requiresInTry(readFileSync(file, 'utf8'), specifier);
  } catch {
    return false;
  }
}

const KEYWORDS_BEFORE_EXPRESSION = new Set(['return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void', 'throw', 'instanceof', 'yield', 'await']);

/**
 * A small scanner, not a parser: it follows braces (which open a `try` block), and skips comments,
 * strings, template literals and regular expressions so a brace or `require(` in them does not
 * count. Were it ever wrong, a built-in would be accepted at save and fail, clearly, only when run:
 * the sandbox provides it either way.
 */
function requiresInTry(source: string, specifier: string): boolean {
  const stack: Array<'try' | 'block' | 'template'> = [];
  let found = 0;
  let afterTry = false;
  let expressionNext = true;
  let i = 0;
  const template = (from: number): number => {
    for (let j = from; j < source.length; j++) {
      if (source[j] === '\\') j++;
      else if (source[j] === '`') return j + 1;
      else if (source[j] === '$' && source[j + 1] === '{') {
        stack.push('template');
        return j + 2;
      }
    }
    return source.length;
  };
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '/' && source[i + 1] === '/') {
      const end = source.indexOf('\n', i);
      i = end === -1 ? source.length : end;
    } else if (c === '/' && source[i + 1] === '*') {
      const end = source.indexOf('*/', i + 2);
      i = end === -1 ? source.length : end + 2;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < source.length && source[j] !== c && source[j] !== '\n') j += source[j] === '\\' ? 2 : 1;
      i = j + 1;
      afterTry = false;
      expressionNext = false;
    } else if (c === '`') {
      i = template(i + 1);
      afterTry = false;
      expressionNext = false;
    } else if (c === '/' && expressionNext) {
      let j = i + 1;
      let inClass = false;
      while (j < source.length && source[j] !== '\n' && (inClass || source[j] !== '/')) {
        if (source[j] === '\\') j++;
        else if (source[j] === '[') inClass = true;
        else if (source[j] === ']') inClass = false;
        j++;
      }
      i = j + 1;
      afterTry = false;
      expressionNext = false;
    } else if (/[A-Za-z_$0-9]/.test(c)) {
      const word = /[\w$]+/y;
      word.lastIndex = i;
      const name = word.exec(source)![0];
      if (name === 'require' && source[i - 1] !== '.') {
        const call = /require\s*\(\s*(["'`])([^"'`]*)\1\s*\)/y;
        call.lastIndex = i;
        if (call.exec(source)?.[2] === specifier) {
          if (!stack.includes('try')) return false;
          found++;
        }
      }
      i += name.length;
      afterTry = name === 'try';
      expressionNext = KEYWORDS_BEFORE_EXPRESSION.has(name);
    } else {
      if (c === '{') stack.push(afterTry ? 'try' : 'block');
      if (c === '}' && stack.pop() === 'template') {
        i = template(i + 1);
        afterTry = false;
        expressionNext = false;
        continue;
      }
      i++;
      afterTry = false;
      expressionNext = c !== ')' && c !== ']';
    }
  }
  return found > 0;
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
