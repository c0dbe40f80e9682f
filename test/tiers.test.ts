import { globSync, readFileSync } from 'node:fs';
import { join, matchesGlob } from 'node:path';
import { describe, expect, it } from 'vitest';
import config, { TEST_FILES, UNIT_FILES } from '../vitest.config.ts';

/**
 * The test tiers of vitest.config.ts: every test file runs in exactly one of its projects, the unit
 * tier holds only files that start nothing, and `npm test` runs every tier while each test:TIER
 * script runs one: the projects named TIER and TIER:PART.
 */
const ROOT = join(import.meta.dirname, '..');

interface Project {
  name: string;
  tier: string;
  include: string[];
  exclude: string[];
  maxWorkers: unknown;
  groupOrder: number;
  isolate: boolean;
}
const projects: Project[] = (config.test?.projects ?? []).map((project) => {
  if (typeof project !== 'object' || !('test' in project) || !project.test?.name) throw new Error('each project is inline, with a name');
  const { name: named, include = [], exclude = [], maxWorkers, sequence, isolate = true } = project.test;
  const name = typeof named === 'string' ? named : named.label;
  return { name, tier: name.split(':')[0]!, include, exclude, maxWorkers, groupOrder: sequence?.groupOrder ?? 0, isolate };
});
const tiers = [...new Set(projects.map((p) => p.tier))];
const matches = (file: string, globs: string[]): boolean => globs.some((glob) => matchesGlob(file, glob));
const testFiles = globSync(TEST_FILES, { cwd: ROOT, exclude: ['**/node_modules/**'] }).map((f) => f.split('\\').join('/'));

describe('test tiers', () => {
  it('put every test file in exactly one tier', () => {
    expect(tiers).toEqual(['unit', 'integration', 'e2e']);
    expect(testFiles.length).toBeGreaterThan(50);
    const misplaced = testFiles
      .map((file) => ({ file, in: projects.filter((p) => matches(file, p.include) && !matches(file, p.exclude)).map((p) => p.name) }))
      .filter((f) => f.in.length !== 1);
    expect(misplaced).toEqual([]);
    expect(UNIT_FILES.filter((file) => !testFiles.includes(file)), 'unit files that do not exist').toEqual([]);
  });

  it('keep the unit tier to files that import nothing that spawns, serves, or opens a database or keychain', () => {
    const starts = /^(?:node:(?:child_process|net|http|https|worker_threads)|better-sqlite3|@napi-rs\/keyring|isolated-vm|.*\/support\/(?:callable|conformance|engine|fsFaults|keyring|mcpClients|petShelter|process|rawHttp|scratch|tmp|vendor)\.ts)$/;
    const offending = UNIT_FILES.flatMap((file) =>
      [...readFileSync(join(ROOT, file), 'utf8').matchAll(/^import [^;]*?from '([^']+)';/gms)].map((m) => m[1]!).filter((from) => starts.test(from)).map((from) => `${file}: ${from}`),
    );
    expect(offending).toEqual([]);
  });

  it('are each run by a test:TIER script, and all of them by npm test', () => {
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    for (const tier of tiers) {
      const flags = projects.filter((p) => p.tier === tier).map((p) => ` --project ${p.name}`);
      expect(scripts[`test:${tier}`], `test:${tier}`).toMatch(new RegExp(`\\bvitest run${flags.join('')}$`));
    }
    // One vitest run with no project or file filter runs every tier, after the lint, the type check
    // and the build (which the e2e tier loads) have all passed.
    expect(scripts.test).toMatch(/^npm run check -- --no-cache --build && vitest run$/);
  });

  it('that run file after file in one process change nothing process-wide that a later file would see', () => {
    const shared = testFiles.filter((file) => projects.some((p) => !p.isolate && matches(file, p.include) && !matches(file, p.exclude)));
    expect(shared.length).toBeGreaterThan(50);
    const changes = shared.flatMap((file) => {
      const text = readFileSync(join(ROOT, file), 'utf8');
      const kept = [...text.matchAll(/\b(vi\.(?:mock|doMock|stubGlobal|stubEnv|useFakeTimers)|process\.(?:chdir|umask|setMaxListeners))\(/g)].map((m) => m[1]);
      // The environment a file sets, it puts back after each test.
      const env = [...text.matchAll(/process\.env\.(\w+) = /g)].map((m) => m[1]!).filter((name) => !new RegExp(`afterEach\\(\\(\\) => \\{[^}]*process\\.env\\.${name} = `).test(text));
      return [...kept, ...env.map((name) => `process.env.${name}`)].map((what) => `${file}: ${what}`);
    });
    expect(changes).toEqual([]);
  });

  it('each run as many files at once as the README says, and those with different counts in different groups (vitest refuses the run otherwise)', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const words = ['zero', 'one', 'two', 'three', 'four', 'five', 'six'];
    for (const { name, tier, maxWorkers } of projects) {
      expect(Number.isInteger(maxWorkers), `${name}: an explicit count (vitest's default is one fewer than the cores)`).toBe(true);
      const said = new RegExp(`^- \`npm run test:${tier}\`:[^]*?(?=^- |^$)`, 'm').exec(readme)?.[0];
      expect(said, `the README's line on test:${tier}`).toBeDefined();
      if (tier !== 'unit') expect(said!.replace(/\s+/g, ' '), name).toMatch(new RegExp(`\\b${words[maxWorkers as number]} (files )?at a time`));
    }
    for (const a of projects) for (const b of projects) if (a !== b && a.maxWorkers !== b.maxWorkers) expect(a.groupOrder, `${a.name} and ${b.name}`).not.toBe(b.groupOrder);
  });
});
