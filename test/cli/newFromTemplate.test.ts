import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

const EXAMPLES = join(REPO, 'resources/examples');
const TEMPLATES = readdirSync(EXAMPLES).sort();

/** Splits a printed command line into words (plain words and single-quoted ones, as the CLI prints them). */
function words(line: string): string[] {
  return [...line.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1].replace(/'\\''/g, "'") : m[2]!));
}

describe('callable new NAME [--template T]', () => {
  it('creates the function from word_stats by default, and the next steps it prints work as printed', async () => {
    const data = tempDir();
    const created = await cli(['new', 'my_stats', '--data-dir', data]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('created my_stats from the template word_stats (revision 1)');

    const runLine = /^next: (callable run my_stats .*)$/m.exec(created.stdout)?.[1];
    expect(runLine).toBeDefined();
    const run = await cli(words(runLine!).slice(1));
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ words: 4, sentences: 2, topWords: [{ word: 'hello', count: 2 }, { word: 'again', count: 1 }, { word: 'world', count: 1 }] });

    const showLine = /^\s+(callable show my_stats(?: --data-dir \S+)?)/m.exec(created.stdout)?.[1];
    const show = await cli(words(showLine!).slice(1));
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(readFileSync(join(EXAMPLES, 'word_stats/index.ts'), 'utf8').trimEnd());
    expect(show.stdout).toContain('"name": "my_stats"');
    // The default template needs no network and no credential.
    const { spec } = JSON.parse((await cli(['show', 'my_stats', '--json', ...words(showLine!).slice(3)])).stdout);
    expect(spec).toMatchObject({ allowedHosts: [], credentials: [] });
  });

  it('--template picks another folder of resources/examples; its --help names every one', async () => {
    const data = tempDir();
    const created = await cli(['new', 'my_translate', '--template', 'deepl_translate', '--data-dir', data]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('created my_translate from the template deepl_translate (revision 1)');
    expect(created.stdout).toContain('first: it uses the credential deepl; store it once (callable credentials --help)');
    expect(created.stdout).toMatch(/^next: callable run my_translate --args '\{"text":"[^"]+","target":"DE"\}'/m);
    const list = await cli(['list', '--data-dir', data]);
    expect(list.stdout).toMatch(/^my_translate\s+enabled\s+r1\s/m);
    const show = await cli(['show', 'my_translate', '--data-dir', data]);
    expect(show.stdout).toContain(readFileSync(join(EXAMPLES, 'deepl_translate/index.ts'), 'utf8').trimEnd());

    const help = await cli(['new', '--help']);
    for (const template of TEMPLATES) expect(help.stdout).toContain(template);
  });

  it('refuses an unknown template in one line that names the templates there are (exit 2)', async () => {
    const data = tempDir();
    const run = await cli(['new', 'my_fn', '--template', 'nope', '--data-dir', data]);
    expect(run).toMatchObject({ code: 2, stdout: '', stderr: `callable new: no template "nope"; the templates are ${TEMPLATES.join(', ')}\n` });
    expect((await cli(['list', '--data-dir', data])).stdout).toContain('No functions yet');
  });

  it('refuses a name that is taken in one line (exit 2), leaving the function as it was', async () => {
    const data = tempDir();
    expect((await cli(['new', 'taken', '--data-dir', data])).code).toBe(0);
    const again = await cli(['new', 'taken', '--template', 'deepl_translate', '--data-dir', data]);
    expect(again).toMatchObject({ code: 2, stdout: '', stderr: 'callable new: a function named "taken" already exists; pick another name\n' });
    expect((await cli(['history', 'taken', '--data-dir', data])).stdout.trim().split('\n')).toHaveLength(1);
  });

  it('refuses a name that is not a valid function name, saying what one looks like (exit 2)', async () => {
    const data = tempDir();
    const run = await cli(['new', 'My-Fn', '--data-dir', data]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^callable new: "My-Fn" is not a valid function name: a function name starts with a lower-case letter.*\n$/);
  });

  it('is a command that writes: it creates a missing data folder and says so once', async () => {
    const data = join(tempDir(), 'fresh');
    const created = await cli(['new', 'my_stats', '--data-dir', data]);
    expect(created.code).toBe(0);
    expect(created.stderr).toBe(`callable: created the data folder ${data}\n`);
    expect(existsSync(join(data, 'callable.db'))).toBe(true);
    expect((await cli(['new', 'other', '--data-dir', data])).stderr).toBe('');
  });
});
