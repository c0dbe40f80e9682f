import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CALLABLE_COMMAND, REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

const WORD_STATS = join(REPO, 'resources/examples/word_stats');

async function dataWithWordStats(): Promise<string> {
  const data = tempDir();
  expect((await cli(['import', WORD_STATS, '--data-dir', data])).code).toBe(0);
  return data;
}

describe('names that do not exist are named, not accepted', () => {
  it('`profiles set` refuses unknown functions, naming each, and saves nothing', async () => {
    const data = await dataWithWordStats();
    const set = await cli(['profiles', 'set', 'p', 'word_stats', 'nosuchfn', 'other_typo', '--data-dir', data]);
    expect(set.code).toBe(2);
    expect(set.stderr).toContain('no function named "nosuchfn", "other_typo"');
    expect((await cli(['profiles', 'list', '--data-dir', data])).stdout).toContain('No profiles yet');
    expect((await cli(['profiles', 'set', 'p', 'word_stats', '--data-dir', data])).code).toBe(0);
  });

  it('`mcp --profile nosuch` fails before it says it is serving', async () => {
    const data = await dataWithWordStats();
    const child = spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'mcp', '--profile', 'nosuch', '--data-dir', data], { stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    let out = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, err).toBe(2);
    expect(err).toContain('no profile named "nosuch"');
    expect(err).not.toContain('serving');
    expect(out).toBe('');
  });

  it('`runs --function nosuch` names the unknown function; a known function without runs says "No runs yet"', async () => {
    const data = await dataWithWordStats();
    const unknown = await cli(['runs', '--function', 'nosuch', '--data-dir', data]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no function named "nosuch"');
    expect(unknown.stdout).toBe('');
    const known = await cli(['runs', '--function', 'word_stats', '--data-dir', data]);
    expect(known).toMatchObject({ code: 0, stdout: 'No runs yet.\n' });
  });

  it('`runs --function` still shows the runs of a function deleted since', async () => {
    const data = await dataWithWordStats();
    await cli(['run', 'word_stats', '--args', '{"text":"a"}', '--data-dir', data]);
    await cli(['rm', 'word_stats', '--data-dir', data]);
    const runs = await cli(['runs', '--function', 'word_stats', '--data-dir', data]);
    expect(runs.code).toBe(0);
    expect(runs.stdout).toMatch(/word_stats {2}ok/);
  });
});
