import type { Message } from 'esbuild';
import { createHash } from 'node:crypto';
import { StudioError, type Language } from '../model/index.ts';

export interface CompiledFunction {
  /** A classic script whose completion value is the module's exports object. */
  code: string;
  hash: string;
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
 * imports are erased; any other import is a compile error, as is a missing default export.
 * Errors carry 1-based line and column, and name `sourcePath` (the file on disk, when the source
 * was read from one) or else `<name>.<language>`.
 */
export async function compileFunction(source: string, language: Language, name: string, sourcePath?: string): Promise<CompiledFunction> {
  // Loaded on first save: serving and running functions never needs the compiler.
  const { build, transform } = await import('esbuild');
  const sourcefile = sourcePath ?? `${name}.${language}`;
  let esm: string;
  let exports: string[];
  try {
    const result = await build({
      stdin: { contents: source, loader: language, sourcefile, resolveDir: '/' },
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'neutral',
      target: 'es2023',
      metafile: true,
      logLevel: 'silent',
      plugins: [{ name: 'no-imports', setup: (b) => b.onResolve({ filter: /.*/ }, () => ({ errors: [{ text: NO_IMPORTS }] })) }],
    });
    esm = result.outputFiles[0]!.text;
    exports = Object.values(result.metafile.outputs)[0]?.exports ?? [];
  } catch (error) {
    throw compileError(sourcefile, (error as { errors?: Message[] }).errors, error);
  }
  if (!exports.includes('default')) {
    throw new StudioError('compile_error', `${sourcefile}: the module has no default export; write "export default async function (args, ctx) { … }"`, {
      problems: [{ message: 'no default export', line: 1, column: 1 }],
    });
  }
  const iife = await transform(esm, { format: 'iife', globalName: '__callable_exports', target: 'es2023', loader: 'js' });
  const code = `(function () {\n${iife.code}\nreturn __callable_exports;\n})()`;
  return { code, hash: createHash('sha256').update(code).digest('hex').slice(0, 16) };
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
  return new StudioError('compile_error', `${sourcefile}:${first.line}:${first.column}: ${first.message}${more}`, { problems });
}
