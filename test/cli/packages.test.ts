// callable add / remove / show with npm packages, against a real npm and a registry stand-in on 127.0.0.1.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.ts';
import { fixtureRegistry, machineRegistry, type FixtureRegistry } from '../support/registry.ts';
import { tempDir } from '../support/tmp.ts';

let registry: FixtureRegistry;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  registry = await fixtureRegistry([
    { name: 'pad-left', version: '1.0.0', files: { 'index.js': "module.exports = (s, n) => String(s).padStart(n, '.');" } },
    { name: 'pad-left', version: '1.1.0', files: { 'index.js': "module.exports = (s, n) => String(s).padStart(n, '_');" } },
    { name: 'pad-right', version: '2.0.0', files: { 'index.js': "module.exports = (s, n) => String(s).padEnd(n, '-');" } },
    { name: 'tiny-fs', version: '0.1.0', files: { 'index.js': "module.exports = require('node:fs').readFileSync;" } },
  ]);
  // No retries: the refusals below would otherwise wait out npm's back-off.
  env = { ...process.env, npm_config_registry: registry.url, npm_config_fetch_retries: '0' };
});
afterAll(() => registry.close());

const PADDER = "import pad from 'pad-left';\nexport default ({ text }) => pad(text, 6);\n";

/** A data folder holding `padder` (PADDER), not yet given its package. */
async function dataWithPadder(): Promise<string> {
  const data = tempDir();
  const src = tempDir();
  mkdirSync(join(src, 'padder'));
  writeFileSync(join(src, 'padder', 'function.json'), JSON.stringify({ name: 'padder', description: 'pads', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }));
  writeFileSync(join(src, 'padder', 'index.js'), 'export default ({ text }) => text;\n');
  expect((await cli(['import', src, '--data-dir', data], { env })).code).toBe(0);
  return data;
}

/** Changes padder's source as a user does (export, edit, import); returns the import's outcome. */
async function editSource(data: string, source: string, expectCode = 0) {
  const dir = tempDir();
  expect((await cli(['export', dir, '--name', 'padder', '--data-dir', data], { env })).code).toBe(0);
  writeFileSync(join(dir, 'padder', 'index.js'), source);
  const imported = await cli(['import', join(dir, 'padder'), '--data-dir', data], { env });
  expect(imported.code, imported.stderr).toBe(expectCode);
  return imported;
}

describe('callable add, show and remove', () => {
  it('adds a package the function then imports, shows the locked version, and removes it', async () => {
    const data = await dataWithPadder();
    const added = await cli(['add', 'padder', 'pad-left@^1.0.0', '--data-dir', data], { env });
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^added pad-left 1\.1\.0 \(\^1\.0\.0\) to padder\npadder is at revision 2; 1 package locked, bundle \d+\.\d kB\n$/);
    await editSource(data, PADDER);
    const run = await cli(['run', 'padder', '--args', '{"text":"ab"}', '--data-dir', data], { env });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toBe('____ab');

    const show = await cli(['show', 'padder', '--data-dir', data], { env });
    expect(show.stdout).toMatch(/--- packages \(package\.json, package-lock\.json\) ---\npad-left \^1\.0\.0 → 1\.1\.0\n1 package locked; bundle \d+\.\d kB\n$/);
    const json = JSON.parse((await cli(['show', 'padder', '--json', '--data-dir', data], { env })).stdout) as { packages: unknown };
    expect(json.packages).toMatchObject({ dependencies: { 'pad-left': '^1.0.0' }, versions: { 'pad-left': '1.1.0' }, locked: 1 });

    // Still imported: removing it is refused at save, and nothing changes.
    const refused = await cli(['remove', 'padder', 'pad-left', '--data-dir', data], { env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/"pad-left" is not one of this function's packages: add it with "callable add padder pad-left"/);
    await editSource(data, 'export default ({ text }) => text;\n');
    const removed = await cli(['remove', 'padder', 'pad-left', '--data-dir', data], { env });
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/^removed pad-left from padder \(revision \d+\); it imports no package now\n$/);
    expect((await cli(['show', 'padder', '--data-dir', data], { env })).stdout).not.toContain('--- packages');
  });

  it('adds and removes several packages in one command, installed together', async () => {
    const data = await dataWithPadder();
    const added = await cli(['add', 'padder', 'pad-left@1.0.0', 'pad-right', '--data-dir', data], { env });
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^added pad-left 1\.0\.0 \(1\.0\.0\) to padder\nadded pad-right 2\.0\.0 \(\^2\.0\.0\) to padder\npadder is at revision 2; 2 packages locked, bundle \d+\.\d kB\n$/);
    await editSource(data, "import pad from 'pad-left';\nimport padEnd from 'pad-right';\nexport default ({ text }) => padEnd(pad(text, 4), 6);\n");
    const run = await cli(['run', 'padder', '--args', '{"text":"ab"}', '--data-dir', data], { env });
    expect(JSON.parse(run.stdout), run.stderr).toBe('..ab--');
    await editSource(data, 'export default ({ text }) => text;\n');
    const removed = await cli(['remove', 'padder', 'pad-left', 'pad-right', '--data-dir', data], { env });
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/^removed pad-left, pad-right from padder \(revision \d+\); it imports no package now\n$/);
  });

  it('gives one line and exit 2 for a bad name, an unknown package, one it does not have, and a package needing a Node built-in', async () => {
    const data = await dataWithPadder();
    const bad = await cli(['add', 'padder', 'Not_A_Name', '--data-dir', data], { env });
    expect([bad.code, bad.stderr]).toEqual([2, 'callable add: "Not_A_Name" is not an npm package name (lower case letters, digits, - . _ ~, optionally @scope/); check the spelling\n']);
    const git = await cli(['add', 'padder', 'pad-left@github:someone/pad-left', '--data-dir', data], { env });
    expect(git.code).toBe(2);
    expect(git.stderr).toMatch(/^callable add: "pad-left@github:someone\/pad-left": give a version, a range \(\^1\.2\.0\) or a tag \(latest\) from the registry; git, file, URL and alias specs are not supported\n$/);
    const unknown = await cli(['add', 'padder', 'no-such-pkg', '--data-dir', data], { env });
    expect([unknown.code, unknown.stderr]).toEqual([2, `callable add: padder: the package "no-such-pkg" is not in the registry ${registry.url}; check its name (callable remove padder no-such-pkg drops it)\n`]);
    const version = await cli(['add', 'padder', 'pad-left@^7', '--data-dir', data], { env });
    expect(version.code).toBe(2);
    expect(version.stderr).toMatch(/^callable add: padder: No matching version found for pad-left@\^7 in the registry http:\/\/127\.0\.0\.1:\d+\/; ask for a version it has \(npm view pad-left versions\)\n$/);
    const notThere = await cli(['remove', 'padder', 'zod', '--data-dir', data], { env });
    expect([notThere.code, notThere.stderr]).toEqual([2, `callable remove: "zod" is not one of padder's packages (it has none); nothing was changed\n`]);
    const usage = await cli(['add', 'padder', '--data-dir', data], { env });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('give the function and at least one package');
    // Only what the function's bundle reaches is checked: the refusal comes when the source imports it.
    expect((await cli(['add', 'padder', 'tiny-fs', '--data-dir', data], { env })).code).toBe(0);
    const fs = await editSource(data, "import read from 'tiny-fs';\nexport default () => typeof read;\n", 2);
    expect(fs.stderr).toMatch(/^callable import: \S+padder: padder: the package "tiny-fs" imports the Node built-in "fs" \(\S*index\.js → tiny-fs\/index\.js → node:fs\), which the sandbox does not provide; use a package made for browsers or workers, or remove it\n$/);
    expect((await cli(['show', 'padder', '--data-dir', data], { env })).stdout).toContain('export default ({ text }) => text;');
  });
});

describe('export, import and saved tests with the lock', () => {
  it('exports package.json and package-lock.json, imports them with the registry gone, and replays saved tests on the locked version', async () => {
    // A registry of its own, stopped half way: the lock names where each tarball came from.
    const own = await fixtureRegistry([{ name: 'pad-left', version: '1.0.0', files: { 'index.js': "module.exports = (s, n) => String(s).padStart(n, '.');" } }]);
    const online = { ...env, npm_config_registry: own.url };
    const data = await dataWithPadder();
    expect((await cli(['add', 'padder', 'pad-left@1.0.0', '--data-dir', data], { env: online })).code).toBe(0);
    await editSource(data, PADDER);
    const saved = await cli(['run', 'padder', '--args', '{"text":"ab"}', '--save-test', 'dots', '--data-dir', data], { env: online });
    expect(saved.code, saved.stderr).toBe(0);
    expect(JSON.parse(saved.stdout)).toBe('....ab');
    const out = tempDir();
    expect((await cli(['export', out, '--data-dir', data], { env: online })).code).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'padder', 'package.json'), 'utf8'))).toMatchObject({ dependencies: { 'pad-left': '1.0.0' } });
    expect(JSON.parse(readFileSync(join(out, 'padder', 'package-lock.json'), 'utf8')).packages['node_modules/pad-left']).toMatchObject({ version: '1.0.0', integrity: own.integrity('pad-left', '1.0.0') });

    await own.close();
    const offline = online;
    const back = await cli(['import', join(out, 'padder'), '--data-dir', data], { env: offline });
    expect(back.code, back.stderr).toBe(0);
    const replay = await cli(['test', 'padder', '--data-dir', data], { env: offline });
    expect(replay.code, replay.stdout + replay.stderr).toBe(0);
    expect(replay.stdout).toMatch(/^PASS {4}padder › dots/);

    // Another data folder has none of it cached: one line naming the package and what to do.
    const elsewhere = tempDir();
    const failed = await cli(['import', join(out, 'padder'), '--data-dir', elsewhere], { env: offline });
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(/^callable import: \S+padder: padder: the package "pad-left" is not in the package cache and the registry http:\/\/127\.0\.0\.1:\d+\/ cannot be reached \(ECONNREFUSED\); connect to the network \(or set npm's registry or proxy\), then try again\n$/);
    expect(existsSync(join(elsewhere, 'packages', 'installs'))).toBe(false);
  });
});

const { url: REGISTRY, reachable } = await machineRegistry();

describe.skipIf(!reachable)(`the machine's own npm registry (${REGISTRY}; skipped when it cannot be reached from here)`, () => {
  it('adds the real "ms" package and runs it', async () => {
    const data = await dataWithPadder();
    const own = { ...process.env };
    const added = await cli(['add', 'padder', 'ms@^2.1.0', '--data-dir', data], { env: own });
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^added ms 2\.\d+\.\d+ \(\^2\.1\.0\) to padder\n/);
    await editSource(data, "import ms from 'ms';\nexport default () => ms('2 days');\n");
    const run = await cli(['run', 'padder', '--args', '{}', '--data-dir', data], { env: own });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toBe(172_800_000);
    const shown = JSON.parse((await cli(['show', 'padder', '--json', '--data-dir', data], { env: own })).stdout) as { packages: { versions: { ms: string }; locked: number } };
    expect(shown.packages.locked).toBe(1);
    expect(added.stdout).toContain(`added ms ${shown.packages.versions.ms} `);
  });
});
