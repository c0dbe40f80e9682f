import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * docs/ARCHITECTURE.md names paths, functions and constants of the code as it is; these fail when
 * one of them is renamed or moved without the document, and when code cites a document that is not
 * in the repository or a section of ARCHITECTURE.md that does not exist.
 */
const ROOT = join(import.meta.dirname, '..');
const DOC_PATH = 'docs/ARCHITECTURE.md';
const DOC = readFileSync(join(ROOT, DOC_PATH), 'utf8');
/** Backticked spans outside the document's tables of contents (it has none) and code blocks (it has none either). */
const spans = [...DOC.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);

/** Slash-separated names in backticks that are not repo paths: lint rules and MCP methods (npm scopes start with @). */
const NOT_PATHS = new Set(['import-x/no-cycle', 'local/layers', 'tools/call']);
const ROOT_FILE = /^[\w.-]+\.(?:ts|js|mjs|json|md)$/;

function filesUnder(dir: string, keep: (rel: string) => boolean): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const rel = relative(ROOT, join(entry.parentPath, entry.name)).split('\\').join('/');
    if (keep(rel)) found.push(rel);
  }
  return found;
}

const CODE = /\.(?:[cm]?[jt]sx?)$/;
const SOURCE_DIRS = ['src-main', 'src-preload', 'src-renderer', 'eslint-rules'];
const sources = new Map(SOURCE_DIRS.flatMap((dir) => filesUnder(dir, (rel) => CODE.test(rel))).map((rel) => [rel, readFileSync(join(ROOT, rel), 'utf8')]));
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A definition of `name` in code: a function, a method (also `#private`, `async`, `get`), or a const/property assigned a value. */
const definition = (name: string): RegExp => new RegExp(`(?:^|[\\s{,(])(?:async\\s+|readonly\\s+|static\\s+|get\\s+)*${escape(name)}\\s*(?:<[^>\\n]*>\\s*)?(?:\\(|=[^=>])`, 'm');

describe(DOC_PATH, () => {
  it('names only paths that exist', () => {
    const paths = spans.filter((s) => !/\s|:/.test(s) && ((s.includes('/') && !NOT_PATHS.has(s) && !/^[/@]/.test(s)) || ROOT_FILE.test(s)));
    expect(paths.length, 'the document names paths').toBeGreaterThan(50);
    // A glob names the folder before its first wildcard.
    const missing = paths.filter((p) => !existsSync(join(ROOT, p.split('*')[0]!)));
    expect(missing).toEqual([]);
  });

  it('names only functions and methods the code defines (Class.method() in the file that declares Class)', () => {
    const calls = spans.filter((s) => /^(?:[A-Z]\w*\.)?#?[A-Za-z_]\w*\(\)$/.test(s));
    expect(calls.length, 'the document names functions').toBeGreaterThan(30);
    const missing = calls.filter((call) => {
      const [owner, member] = call.includes('.') ? (call.slice(0, -2).split('.') as [string, string]) : [undefined, call.slice(0, -2)];
      const files = [...sources].filter(([, text]) => owner === undefined || new RegExp(`\\bclass ${owner}\\b`).test(text));
      return !files.some(([, text]) => definition(member).test(text));
    });
    expect(missing).toEqual([]);
  });

  it('names only identifiers that occur in the code', () => {
    const names = spans.filter((s) => /^#?[A-Za-z_$][\w$]*$/.test(s));
    const code = [...sources.values()].join('\n');
    const missing = names.filter((name) => !new RegExp(`(?:^|[^\\w$#])${escape(name)}(?![\\w$])`).test(code));
    expect(missing).toEqual([]);
  });
});

describe('documents the code cites', () => {
  // Everything but dependencies, build output and this file (which names what it looks for).
  const cited = ['src-main', 'src-preload', 'src-renderer', 'eslint-rules', 'test', 'scripts', 'bin', 'resources']
    .flatMap((dir) => filesUnder(dir, (rel) => rel !== 'test/docs.test.ts' && !rel.startsWith('test/fixtures/')))
    .concat(['README.md', 'eslint.config.js', 'vitest.config.ts', 'electron.vite.config.ts', 'electron-builder.config.ts'])
    .map((rel) => ({ rel, text: readFileSync(join(ROOT, rel), 'utf8') }));

  it('are in the repository', () => {
    const outside = ['DESIGN', 'STYLE'].map((name) => `${name}.md`);
    const citing = cited.filter(({ text }) => outside.some((doc) => text.includes(doc))).map(({ rel }) => rel);
    expect(citing).toEqual([]);
  });

  it('cite sections of docs/ARCHITECTURE.md that exist', () => {
    const headings = new Set([...DOC.matchAll(/^#{1,3} (.+)$/gm)].map((m) => m[1]!.trim()));
    const citations = cited.flatMap(({ rel, text }) => [...text.matchAll(/ARCHITECTURE\.md,?\s*(?:(?:\/\/|\*)\s*)?\(?"([^"\n]+)"/g)].map((m) => ({ rel, section: m[1]! })));
    expect(citations.length, 'the code cites the document').toBeGreaterThan(0);
    expect(citations.filter(({ section }) => !headings.has(section))).toEqual([]);
    expect(cited.find(({ rel }) => rel === 'README.md')!.text.includes(DOC_PATH), `README.md points to ${DOC_PATH}`).toBe(true);
  });
});
