import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

/** DIR/f: a function whose index.ts has a syntax error on line 2, column 13. */
function brokenFunction(): { dir: string; folder: string; file: string } {
  const dir = tempDir();
  const folder = join(dir, 'f');
  mkdirSync(folder);
  writeFileSync(join(folder, 'function.json'), '{"name":"broken","description":"does not compile"}\n');
  writeFileSync(join(folder, 'index.ts'), 'export default function () {\n  return 1 +;\n}\n');
  return { dir, folder, file: join(folder, 'index.ts') };
}

describe('a compile error of an imported function names its real file', () => {
  it('callable import DIR: the message has DIR/f/index.ts with line and column', async () => {
    const data = tempDir();
    const { dir, file } = brokenFunction();
    const run = await cli(['import', dir, '--data-dir', data]);
    expect(run).toMatchObject({ code: 2, stdout: '', stderr: `callable import: ${file}:2:13: Unexpected ";"\n` });
  });

  it('callable import of the function folder itself, with a relative path: the same absolute path', async () => {
    const data = tempDir();
    const { dir, file } = brokenFunction();
    const run = await cli(['import', 'f', '--data-dir', data], { cwd: dir });
    expect(run).toMatchObject({ code: 2, stderr: `callable import: ${file}:2:13: Unexpected ";"\n` });
  });
});
