import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

const WORD_STATS = join(REPO, 'resources/examples/word_stats');
const SPEC = readFileSync(join(WORD_STATS, 'function.json'), 'utf8');
const SOURCE = readFileSync(join(WORD_STATS, 'index.ts'), 'utf8');

/** A data folder where word_stats has three revisions: imported, edited (source and description), disabled. */
async function threeRevisions(): Promise<{ data: string; editedSource: string }> {
  const data = tempDir();
  expect((await cli(['import', WORD_STATS, '--data-dir', data])).code).toBe(0);
  const edited = join(tempDir(), 'word_stats');
  cpSync(WORD_STATS, edited, { recursive: true });
  const editedSource = `${SOURCE}\n// edited\n`;
  writeFileSync(join(edited, 'index.ts'), editedSource);
  writeFileSync(join(edited, 'function.json'), SPEC.replace('Counts words', 'Counts the words'));
  expect((await cli(['import', edited, '--data-dir', data])).code).toBe(0);
  expect((await cli(['disable', 'word_stats', '--data-dir', data])).code).toBe(0);
  return { data, editedSource };
}

describe('callable show NAME [--revision N]', () => {
  it('prints the settings as function.json (no bookkeeping) and the source', async () => {
    const data = tempDir();
    await cli(['import', WORD_STATS, '--data-dir', data]);
    const show = await cli(['show', 'word_stats', '--data-dir', data]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/^word_stats: revision 1 \(the current one\), saved \d{4}-\d\d-\d\dT/);
    expect(show.stdout).toContain(`--- function.json ---\n${SPEC.trimEnd()}\n--- index.ts ---\n${SOURCE.trimEnd()}\n`);
    for (const bookkeeping of ['"id"', '"revision"', '"createdAt"', '"updatedAt"', '"source"']) expect(show.stdout).not.toContain(bookkeeping);
  });

  it('--revision N prints the function as it was then; without it, as it is now', async () => {
    const { data, editedSource } = await threeRevisions();
    const first = await cli(['show', 'word_stats', '--revision', '1', '--data-dir', data]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^word_stats: revision 1 \(the current one is 3\)/);
    expect(first.stdout).toContain(`--- index.ts ---\n${SOURCE.trimEnd()}\n`);
    expect(first.stdout).toContain('"description": "Counts words');
    const now = await cli(['show', 'word_stats', '--data-dir', data]);
    expect(now.stdout).toContain(editedSource.trimEnd());
    expect(now.stdout).toContain('"description": "Counts the words');
    expect(now.stdout).toContain('"enabled": false');
    const json = JSON.parse((await cli(['show', 'word_stats', '--revision', '2', '--json', '--data-dir', data])).stdout);
    expect(json).toMatchObject({ name: 'word_stats', revision: 2, current: false, source: editedSource, spec: { name: 'word_stats', enabled: true } });
  });

  it('an unknown name or revision is one line, exit 2', async () => {
    const { data } = await threeRevisions();
    expect(await cli(['show', 'nosuch', '--data-dir', data])).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'callable show: no function named "nosuch"; "callable list" shows the functions there are\n',
    });
    expect(await cli(['show', 'word_stats', '--revision', '9', '--data-dir', data])).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'callable show: function "word_stats" has no revision 9; its revisions are 1 to 3\n',
    });
    const zero = await cli(['show', 'word_stats', '--revision', '0', '--data-dir', data]);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain('--revision must be a positive whole number');
  });
});

describe('callable history NAME', () => {
  it('lists the revisions newest first: number, date, and what changed', async () => {
    const { data, editedSource } = await threeRevisions();
    const history = await cli(['history', 'word_stats', '--data-dir', data]);
    expect(history.code, history.stderr).toBe(0);
    const lines = history.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    const lineCount = editedSource.trimEnd().split('\n').length;
    expect(lines[0]).toMatch(new RegExp(`^r3  \\d{4}-\\d\\d-\\d\\dT\\S+Z  current  changed disabled  \\(${lineCount} lines\\)$`));
    expect(lines[1]).toMatch(new RegExp(`^r2  \\S+Z {11}changed source, description  \\(${lineCount} lines\\)$`));
    expect(lines[2]).toMatch(/^r1 {2}\S+Z {11}created {2}\(\d+ lines\)$/);
    const json = JSON.parse((await cli(['history', 'word_stats', '--json', '--data-dir', data])).stdout);
    expect(json.map((r: { revision: number; current: boolean }) => [r.revision, r.current])).toEqual([[3, true], [2, false], [1, false]]);
  });

  it('says when a revision is the same as an earlier one (an edit undone)', async () => {
    const data = tempDir();
    await cli(['import', WORD_STATS, '--data-dir', data]);
    await cli(['disable', 'word_stats', '--data-dir', data]);
    await cli(['enable', 'word_stats', '--data-dir', data]);
    const lines = (await cli(['history', 'word_stats', '--data-dir', data])).stdout.trim().split('\n');
    expect(lines.map((l) => l.replace(/^(r\d)\s+\S+\s+(current)?\s*/, '$1 ').replace(/\s+\(\d+ lines\)$/, ''))).toEqual(['r3 same as r1', 'r2 changed disabled', 'r1 created']);
  });

  it('an unknown name is one line, exit 2', async () => {
    const data = tempDir();
    await cli(['import', WORD_STATS, '--data-dir', data]);
    expect(await cli(['history', 'nosuch', '--data-dir', data])).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'callable history: no function named "nosuch"; "callable list" shows the functions there are\n',
    });
  });
});

describe('show and history only read', () => {
  it('refuse a data folder that does not exist, creating nothing (exit 2)', async () => {
    const missing = join(tempDir(), 'typo');
    for (const argv of [['show', 'word_stats'], ['history', 'word_stats']]) {
      const run = await cli([...argv, '--data-dir', missing]);
      expect(run.code, argv.join(' ')).toBe(2);
      expect(run.stderr).toContain(`no data folder at ${missing}`);
      expect(existsSync(missing)).toBe(false);
    }
  });
});
