import type { Message, Metafile, Plugin } from 'esbuild';
import { createHash } from 'node:crypto';
import { isAbsolute, sep } from 'node:path';
import { StudioError, type Language } from '../model/index.ts';
import { builtinOf, builtinResolution, COMPAT_GLOBALS, isCompatModule, optionalDependencyOf, packageName, refuseBuiltins, shortName, UNAVAILABLE_BUILTIN, unavailableBuiltinModule } from './packages/bundle.ts';
import type { FunctionPackages, InstalledPackages } from './packages/install.ts';

export interface CompiledFunction {
  /** A classic script whose completion value is the module's exports object. */
  code: string;
  hash: string;
  /** The npm packages bundled into `code`, as asked for and as locked; absent for a function without any. */
  packages?: FunctionPackages & { versions: Record<string, string>; count: number };
}

export interface CompileProblem {
  message: string;
  line: number;
  column: number;
  lineText?: string;
}

const NO_IMPORTS =
  'imports are not available inside a function: the sandbox has no modules. Use ctx.fetch for HTTP, and the built-ins (URL, TextEncoder, crypto.randomUUID…)';

/**
 * Compiles a function's TypeScript or JavaScript source to a script for the sandbox. Type-only
 * imports are erased; the only other imports allowed are the function's own npm `packages` by bare
 * name, bundled in for a worker-like platform (export conditions worker, browser, import, default);
 * a package that reaches a Node built-in is refused with the chain of imports that reached it. A
 * missing default export is a compile error. Errors carry 1-based line and column, and name
 * `sourcePath` (the file on disk, when the source was read from one) or else `<name>.<language>`.
 */
export async function compileFunction(source: string, language: Language, name: string, sourcePath?: string, packages?: InstalledPackages): Promise<CompiledFunction> {
  // Loaded on first save: serving and running functions never needs the compiler.
  const { build, transform } = await import('esbuild');
  const sourcefile = sourcePath ?? `${name}.${language}`;
  let esm: string;
  let exports: string[];
  let metafile: Metafile;
  try {
    const result = await build({
      stdin: { contents: source, loader: language, sourcefile, resolveDir: packages?.root ?? '/' },
      ...(packages ? { absWorkingDir: packages.root } : {}),
      bundle: true,
      write: false,
      format: 'esm',
      // 'browser' rather than 'neutral' so packages' `browser` field maps (a Node file swapped for a
      // web one, `"fs": false`) apply; no Node built-in is provided either way.
      platform: 'browser',
      conditions: ['worker', 'browser', 'import', 'default'],
      mainFields: ['browser', 'module', 'main'],
      // Packages written for bundlers read this, and the sandbox has no `process`.
      define: { 'process.env.NODE_ENV': '"production"' },
      // A browser-like `process` for packages that use it without importing it.
      ...(packages ? { inject: [COMPAT_GLOBALS] } : {}),
      target: 'es2023',
      metafile: true,
      logLevel: 'silent',
      plugins: [functionImports(name, packages)],
    });
    esm = result.outputFiles[0]!.text;
    exports = Object.values(result.metafile.outputs)[0]?.exports ?? [];
    metafile = result.metafile;
  } catch (error) {
    throw compileError(sourcefile, (error as { errors?: Message[] }).errors, error);
  }
  refuseBuiltins(metafile, name);
  if (!exports.includes('default')) {
    throw new StudioError('compile_error', `${sourcefile}: the module has no default export; write "export default async function (args, ctx) { … }"`, {
      problems: [{ message: 'no default export', line: 1, column: 1 }],
    });
  }
  const iife = await transform(esm, { format: 'iife', globalName: '__callable_exports', target: 'es2023', loader: 'js' });
  const code = `(function () {\n${iife.code}\nreturn __callable_exports;\n})()`;
  const hash = createHash('sha256').update(code).digest('hex').slice(0, 16);
  if (!packages) return { code, hash };
  const { dependencies, lock, versions, count } = packages;
  return { code, hash, packages: { dependencies, lock, versions, count } };
}

/** Marks the resolution this plugin asks esbuild for itself, so it is not checked twice. */
const INNER = Symbol('inner resolve');

/**
 * What the function's own source may import: its packages by bare name, nothing else. Whatever
 * the packages import must resolve inside their install: esbuild would otherwise take a missing
 * package from any node_modules above the data folder.
 */
function functionImports(name: string, packages: InstalledPackages | undefined): Plugin {
  return {
    name: 'function-imports',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === INNER || isCompatModule(args.importer) || args.path === COMPAT_GLOBALS) return undefined;
        const fromPackage = args.importer.includes('node_modules');
        const bare = /^(?:@[^/]+\/)?[^./][^/]*/.exec(args.path)?.[0];
        if (!fromPackage && (bare === undefined || !packages || !(bare in packages.dependencies))) {
          if (builtinOf(args.path) !== undefined || bare === undefined) return { errors: [{ text: NO_IMPORTS }] };
          return { errors: [{ text: `"${bare}" is not one of this function's packages: add it with "callable add ${name} ${bare}" (or list it in package.json beside the function)` }] };
        }
        if (bare === undefined) {
          return undefined;
        }
        const resolved = await build.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: INNER });
        if (fromPackage && resolved.errors.length > 0 && (args.kind === 'dynamic-import' || optionalDependencyOf(args.importer, bare))) {
          // An import() or require() of what is not installed fails only if it runs (packages guard them); a static import would fail at load.
          if (args.kind === 'dynamic-import' || args.kind === 'require-call') return { path: args.path, external: true };
          return { errors: [{ text: `"${bare}" is an optional dependency of ${packageName(args.importer)} that it imports as it loads: add it with "callable add ${name} ${bare}"` }] };
        }
        const inside = (path: string): boolean => packages !== undefined && path.startsWith(packages.root + sep);
        if (fromPackage && builtinOf(args.path) !== undefined) {
          // Taken as the package's `browser` field maps it, or from an npm package of that name installed with it.
          const mapped = resolved.errors.length === 0 && (!isAbsolute(resolved.path) || inside(resolved.path));
          return mapped ? undefined : builtinResolution(args.path, args.kind, args.importer);
        }
        if (resolved.errors.length > 0 || resolved.external || !packages) return resolved.errors.length > 0 ? { errors: resolved.errors } : undefined;
        if (!inside(resolved.path)) {
          return { errors: [{ text: `"${bare}" is imported by ${args.importer.slice(args.importer.lastIndexOf('node_modules/') + 13)} but not installed with this function's packages (a missing or optional dependency of the package); add it with "callable add ${name} ${bare}"` }] };
        }
        return { path: resolved.path, ...(resolved.sideEffects === false ? { sideEffects: false } : {}) };
      });
      build.onLoad({ filter: /.*/, namespace: UNAVAILABLE_BUILTIN }, (args) => ({ contents: unavailableBuiltinModule(args.path), loader: 'js' }));
    },
  };
}

function compileError(sourcefile: string, errors: Message[] | undefined, cause: unknown): StudioError {
  if (!errors || errors.length === 0) {
    return new StudioError('compile_error', `${sourcefile}: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
  const problems: CompileProblem[] = errors.map((e) => ({
    message: e.text,
    line: e.location?.line ?? 1,
    column: (e.location?.column ?? 0) + 1,
    ...(e.location?.lineText ? { lineText: e.location.lineText } : {}),
  }));
  const first = problems[0]!;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
  // An error inside a package names the package's file, not the function's.
  const file = errors[0]!.location?.file ?? '';
  const where = file.includes('node_modules/') ? shortName(file) : sourcefile;
  return new StudioError('compile_error', `${where}:${first.line}:${first.column}: ${first.message}${more}`, { problems });
}
