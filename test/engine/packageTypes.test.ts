// The declaration files the editor is given for a function's packages, read from a real install folder.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { collectTypes } from '../../src-main/engine/functions/packages/types.ts';
import { tempDir } from '../support/tmp.ts';

/** Writes `files` (path → text) under `dir`. */
function write(dir: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
}

function install(files: Record<string, string>): { top: string; root: string } {
  const top = tempDir('callable-types-');
  const root = join(top, 'installs', 'abc');
  write(top, { 'outside/secret.d.ts': 'export declare const secret: "outside the install";' });
  write(root, files);
  return { top, root };
}

const manifest = (fields: Record<string, unknown>): string => JSON.stringify(fields);

describe('collectTypes', () => {
  it('follows the entry declaration through relative and bare imports, and leaves out what is not a .d.ts', () => {
    const { root } = install({
      'node_modules/greeter/package.json': manifest({ name: 'greeter', main: 'dist/index.js', types: 'dist/index.d.ts' }),
      'node_modules/greeter/dist/index.js': 'exports.greet = (n) => n;',
      'node_modules/greeter/dist/index.d.ts': "export * from './more.js';\nimport type { Dep } from 'dep';\nexport declare function greet(name: string): string;\nexport declare const d: Dep;\n",
      'node_modules/greeter/dist/more.d.ts': '/// <reference path="./globals.d.ts" />\nexport declare function wave(): void;\n',
      'node_modules/greeter/dist/globals.d.ts': 'declare const GREETER_GLOBAL: number;\n',
      'node_modules/greeter/dist/unused.d.ts': 'export declare const unused: 1;\n',
      'node_modules/dep/package.json': manifest({ name: 'dep', exports: { '.': { import: { types: './types/dep.d.mts', default: './dep.mjs' } } } }),
      'node_modules/dep/types/dep.d.mts': 'export interface Dep { n: number }\n',
      'node_modules/dep/dep.mjs': 'export {};',
    });
    const { files, skipped } = collectTypes(root, ['greeter']);
    expect(files.map((f) => f.path).sort()).toEqual([
      'node_modules/dep/package.json',
      'node_modules/dep/types/dep.d.mts',
      'node_modules/greeter/dist/globals.d.ts',
      'node_modules/greeter/dist/index.d.ts',
      'node_modules/greeter/dist/more.d.ts',
      'node_modules/greeter/package.json',
    ]);
    expect(skipped).toEqual([]);
    // The manifest the editor sees names the entry the exports condition chose.
    expect(JSON.parse(files.find((f) => f.path === 'node_modules/dep/package.json')!.content)).toEqual({ name: 'dep', types: './types/dep.d.mts' });
    expect(files.find((f) => f.path === 'node_modules/greeter/dist/index.d.ts')!.content).toContain('export declare function greet(name: string): string;');
  });

  it('reads nothing outside the install folder: a "types" of ../../etc/passwd, a path out of it, a symlink out of it, a relative import out of it', () => {
    const { root } = install({
      'node_modules/evil/package.json': manifest({ name: 'evil', types: '../../etc/passwd' }),
      'node_modules/deeper/package.json': manifest({ name: 'deeper', types: '../../../../../../../../etc/passwd' }),
      'node_modules/climber/package.json': manifest({ name: 'climber', typings: '../../../../outside/secret.d.ts' }),
      'node_modules/linky/package.json': manifest({ name: 'linky', types: 'index.d.ts' }),
      'node_modules/importer/package.json': manifest({ name: 'importer', types: 'index.d.ts' }),
      'node_modules/importer/index.d.ts': "export * from '../../../../outside/secret';\nexport declare const mine: 1;\n",
    });
    symlinkSync(join(root, '..', '..', 'outside', 'secret.d.ts'), join(root, 'node_modules/linky/index.d.ts'));
    const { files } = collectTypes(root, ['evil', 'deeper', 'climber', 'linky', 'importer']);
    expect(files.map((f) => f.path).sort()).toEqual(['node_modules/importer/index.d.ts', 'node_modules/importer/package.json']);
    expect(files.some((f) => f.content.includes('outside the install') && !f.content.includes('mine'))).toBe(false);
    expect(files.some((f) => f.content.includes('root:'))).toBe(false);
  });

  it('stays within the size bound, naming the files it left out', () => {
    const big = `export declare const big: "${'x'.repeat(40_000)}";\n`;
    const { root } = install({
      'node_modules/huge/package.json': manifest({ name: 'huge', types: 'index.d.ts' }),
      'node_modules/huge/index.d.ts': "export * from './a';\nexport * from './b';\nexport * from './c';\n",
      'node_modules/huge/a.d.ts': big,
      'node_modules/huge/b.d.ts': big.replace('big', 'bigger'),
      'node_modules/huge/c.d.ts': big.replace('big', 'biggest'),
    });
    const { files, skipped } = collectTypes(root, ['huge'], 100_000);
    const total = files.reduce((n, f) => n + Buffer.byteLength(f.content), 0);
    expect(total).toBeLessThanOrEqual(100_000);
    expect(files.map((f) => f.path)).toEqual(['node_modules/huge/package.json', 'node_modules/huge/index.d.ts', 'node_modules/huge/a.d.ts', 'node_modules/huge/b.d.ts']);
    expect(skipped).toEqual(['node_modules/huge/c.d.ts']);
  });

  it('sends at most 16 MiB by default, and no single file over 4 MiB', () => {
    const chunk = (name: string, size: number): string => `export declare const ${name}: "${'y'.repeat(size)}";\n`;
    const { root } = install({
      'node_modules/sdk/package.json': manifest({ name: 'sdk', types: 'index.d.ts' }),
      'node_modules/sdk/index.d.ts': ['a', 'b', 'c', 'd', 'e', 'huge'].map((n) => `export * from './${n}';`).join('\n'),
      ...Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((n) => [`node_modules/sdk/${n}.d.ts`, chunk(n, 3_900_000)])),
      'node_modules/sdk/huge.d.ts': chunk('huge', 4 * 1024 * 1024 + 1),
    });
    const { files, skipped } = collectTypes(root, ['sdk']);
    expect(files.reduce((n, f) => n + Buffer.byteLength(f.content), 0)).toBeLessThanOrEqual(16 * 1024 * 1024);
    expect(files.map((f) => f.path)).toEqual(['node_modules/sdk/package.json', 'node_modules/sdk/index.d.ts', ...['a', 'b', 'c', 'd'].map((n) => `node_modules/sdk/${n}.d.ts`)]);
    expect(skipped).toEqual(['node_modules/sdk/e.d.ts', 'node_modules/sdk/huge.d.ts']);
  });

  it('finds a package without "types" by index.d.ts, and @types/NAME beside it', () => {
    const { root } = install({
      'node_modules/plain/package.json': manifest({ name: 'plain', main: 'index.js' }),
      'node_modules/plain/index.d.ts': 'export declare const plain: 1;\n',
      'node_modules/untyped/package.json': manifest({ name: 'untyped', main: 'lib/untyped.js' }),
      'node_modules/@types/untyped/package.json': manifest({ name: '@types/untyped', types: 'index.d.ts' }),
      'node_modules/@types/untyped/index.d.ts': 'export declare function untyped(): void;\n',
    });
    const paths = collectTypes(root, ['plain', 'untyped']).files.map((f) => f.path);
    expect(paths).toContain('node_modules/plain/index.d.ts');
    expect(paths).toContain('node_modules/@types/untyped/index.d.ts');
  });
});
