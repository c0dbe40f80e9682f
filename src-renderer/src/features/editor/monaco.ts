// Monaco, bundled with the app: never loaded from a CDN, works offline.
import { loader } from '@monaco-editor/react';
import * as monaco from 'monaco-editor';
import EditorWorker from 'monaco-editor/editor/editor.worker?worker';
import JsonWorker from 'monaco-editor/language/json/json.worker?worker';
import TsWorker from 'monaco-editor/language/typescript/ts.worker?worker';

self.MonacoEnvironment = {
  getWorker(_id: string, label: string) {
    if (label === 'typescript' || label === 'javascript') return new TsWorker();
    if (label === 'json') return new JsonWorker();
    return new EditorWorker();
  },
};

loader.config({ monaco });

const compilerOptions = {
  target: monaco.typescript.ScriptTarget.ES2020,
  module: monaco.typescript.ModuleKind.ESNext,
  moduleResolution: monaco.typescript.ModuleResolutionKind.NodeJs,
  allowNonTsExtensions: true,
  strict: true,
  noEmit: true,
  lib: ['es2023'],
};
monaco.typescript.typescriptDefaults.setCompilerOptions(compilerOptions);
monaco.typescript.javascriptDefaults.setCompilerOptions({ ...compilerOptions, allowJs: true, checkJs: true, strict: false });

let runtimeLib: monaco.IDisposable[] = [];
let argsLib: monaco.IDisposable[] = [];
let packagesLib: monaco.IDisposable[] = [];

/** The sandbox's typings (`ctx`, built-ins), from resources/types/callable.d.ts. */
export function setRuntimeTypes(dts: string): void {
  for (const d of runtimeLib) d.dispose();
  runtimeLib = [monaco.typescript.typescriptDefaults.addExtraLib(dts, 'file:///callable.d.ts'), monaco.typescript.javascriptDefaults.addExtraLib(dts, 'file:///callable.d.ts')];
}

/** Global `Args` type and the handler's parameter types, derived from the function's inputSchema. */
export function setArgsTypes(dts: string): void {
  for (const d of argsLib) d.dispose();
  argsLib = [monaco.typescript.typescriptDefaults.addExtraLib(dts, 'file:///args.d.ts'), monaco.typescript.javascriptDefaults.addExtraLib(dts, 'file:///args.d.ts')];
}

/** The function's npm packages' own declarations, at file:///node_modules/PKG/… so a bare import resolves as it does on disk. */
export function setPackageTypes(files: ReadonlyArray<{ path: string; content: string }>): void {
  for (const d of packagesLib) d.dispose();
  packagesLib = files.flatMap(({ path, content }) => [
    monaco.typescript.typescriptDefaults.addExtraLib(content, `file:///${path}`),
    monaco.typescript.javascriptDefaults.addExtraLib(content, `file:///${path}`),
  ]);
}

export { monaco };
