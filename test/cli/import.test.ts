import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

function fn(root: string, folder: string, spec: string, source?: [string, string]): string {
  mkdirSync(join(root, folder));
  writeFileSync(join(root, folder, 'function.json'), spec);
  if (source) writeFileSync(join(root, folder, source[0]), source[1]);
  return join(root, folder);
}

describe('callable import of a folder with several bad functions', () => {
  it('reports every problem in one go and imports nothing', async () => {
    const data = tempDir();
    const dir = tempDir();
    fn(dir, 'a_good', '{"name":"good","description":"fine"}', ['index.js', 'export default () => 1']);
    const badJson = fn(dir, 'b_json', '{"name": "bad_json",', ['index.js', 'export default () => 1']);
    const noSource = fn(dir, 'c_nosource', '{"name":"no_source","description":"x"}');
    const badName = fn(dir, 'd_name', '{"name":"Bad-Name","description":"x"}', ['index.js', 'export default () => 1']);
    const badSchema = fn(dir, 'e_schema', '{"name":"bad_schema","description":"x","inputSchema":{"type":"object","properties":{"n":{"type":"nonsense"}}}}', ['index.js', 'export default () => 1']);
    const noCompile = fn(dir, 'f_compile', '{"name":"no_compile","description":"x"}', ['index.ts', 'export default () => {{{']);
    const twoProblems = fn(dir, 'g_both', '{"name":"both_bad","description":"x","outputSchema":{"type":"object","properties":{"x":{"type":"nonsense"}}}}', ['index.js', 'export const notDefault = 1']);
    const dupe = fn(dir, 'h_dupe', '{"name":"good","description":"again"}', ['index.js', 'export default () => 2']);

    const run = await cli(['import', dir, '--data-dir', data]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`7 problems in ${dir}, so nothing was imported`);
    expect(run.stderr).toContain(`${join(badJson, 'function.json')}: not valid JSON`);
    expect(run.stderr).toContain(`${noSource}: no index.ts or index.js`);
    expect(run.stderr).toContain(`${join(badName, 'function.json')}: `);
    expect(run.stderr).toMatch(new RegExp(`${badSchema}: inputSchema`));
    expect(run.stderr).toContain(`  - ${join(noCompile, 'index.ts')}:1:`);
    expect(run.stderr).toMatch(new RegExp(`${twoProblems}: outputSchema .*; ${join(twoProblems, 'index\\.js')}: the module has no default export`));
    expect(run.stderr).toContain(`${join(dir, 'a_good')} and ${dupe} both define the function "good"`);
    expect(run.stderr).not.toMatch(/^\s+at /m);
    expect((await cli(['list', '--data-dir', data])).stdout).toContain('No functions yet');
  });

  it('a single problem is still one line', async () => {
    const data = tempDir();
    const dir = tempDir();
    const noSource = fn(dir, 'only', '{"name":"only","description":"x"}');
    const run = await cli(['import', dir, '--data-dir', data]);
    expect(run).toMatchObject({ code: 2, stderr: `callable import: ${noSource}: no index.ts or index.js beside function.json\n` });
  });
});
