import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');

function sources(dir: string): string[] {
  let out: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out = out.concat(sources(path));
    else if (/\.(ts|tsx|js|mjs)$/.test(name)) out.push(path);
  }
  return out;
}

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|require\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** Layers are executable: imports only go down (see DESIGN.md). */
describe('layering', () => {
  it('the engine never imports Electron, the app, the CLI, the preload or the renderer', () => {
    for (const file of sources(join(ROOT, 'src-main/engine'))) {
      for (const spec of imports(file)) {
        const where = relative(ROOT, file);
        expect(spec, where).not.toMatch(/^electron(\/|$)/);
        expect(spec, where).not.toMatch(/(^|\/)(app|cli)\//);
        expect(spec, where).not.toMatch(/src-(preload|renderer)/);
      }
    }
  });

  it('engine/model is pure: no node:* and no other engine layer', () => {
    for (const file of sources(join(ROOT, 'src-main/engine/model'))) {
      for (const spec of imports(file)) {
        expect(spec, relative(ROOT, file)).not.toMatch(/^node:|^(fs|path|os|crypto|child_process)$/);
        if (spec.startsWith('.')) expect(spec, relative(ROOT, file)).toMatch(/^\.\/[^/]+$/);
      }
    }
  });

  it('the CLI reaches the engine only through its facade and transports', () => {
    for (const file of sources(join(ROOT, 'src-main/cli'))) {
      for (const spec of imports(file)) {
        expect(spec, relative(ROOT, file)).not.toMatch(/^electron|src-renderer|src-preload|\/app\//);
      }
    }
  });

  it('the renderer reaches outside itself only through the preload contract and model', () => {
    for (const file of sources(join(ROOT, 'src-renderer'))) {
      for (const spec of imports(file)) {
        if (!spec.startsWith('.')) continue;
        const target = join(file, '..', spec);
        const rel = relative(ROOT, target);
        if (rel.startsWith('src-renderer')) continue;
        expect(rel, relative(ROOT, file)).toMatch(/^src-preload\/(contract|model)\.ts$/);
      }
    }
  });
});
