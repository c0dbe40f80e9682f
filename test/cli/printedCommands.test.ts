import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CALLABLE_BIN, REPO } from '../support/callable.ts';
import { cli, withCallableOnPath } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

// The commands the CLI prints are pasted by the user: they start the way the user started it.

async function bash(line: string, env: NodeJS.ProcessEnv): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)('bash', ['-c', line], { env, cwd: REPO, timeout: 60_000 });
}

/** The grant command that `import` prints for deepl_translate. */
function printedGrant(stdout: string): string {
  const line = stdout.split('\n').find((l) => l.startsWith('deepl_translate asks for credential deepl'));
  expect(line, stdout).toBeDefined();
  return line!.slice(line!.indexOf('): ') + 3);
}

describe('printed commands start the way the CLI was started', () => {
  const cases: Array<[how: string, start: (env: NodeJS.ProcessEnv) => NodeJS.ProcessEnv, prefix: string, expected: string]> = [
    ['npx callable', (env) => env, 'npx callable', 'npx callable credentials grant deepl deepl_translate'],
    ['node /path/bin/callable.js', (env) => env, `node ${CALLABLE_BIN}`, `node ${CALLABLE_BIN} credentials grant deepl deepl_translate`],
    ['callable on PATH (npm link)', (env) => withCallableOnPath(tempDir('callable-bin-'), env), 'callable', 'callable credentials grant deepl deepl_translate'],
  ];
  for (const [how, start, prefix, expected] of cases) {
    it(`${how}: the hint is "${expected.replace(CALLABLE_BIN, '…')}", and pasting it works`, async () => {
      const data = tempDir();
      // An npx in the test runner's environment must not count: only a start through npx's link does.
      const env = start({ ...process.env, CALLABLE_DATA_DIR: data, npm_lifecycle_event: 'npx', npm_command: 'exec' });
      const imported = await bash(`${prefix} import ${join(REPO, 'resources/examples')}`, env);
      const grant = printedGrant(imported.stdout);
      expect(grant).toBe(expected);
      const pasted = await bash(grant, env);
      expect(pasted.stdout).toBe(`granted credential deepl to deepl_translate\ncredential deepl does not exist yet; create it: ${prefix} credentials set deepl --host HOST\n`);
      const next = await bash(`${prefix} new my_stats`, env);
      expect(next.stdout).toContain(`next: ${prefix} run my_stats --args`);
    }, 120_000);
  }

  it('in-process (no command line to copy) the hints say callable', async () => {
    const data = tempDir();
    const imported = await cli(['import', join(REPO, 'resources/examples'), '--data-dir', data]);
    expect(printedGrant(imported.stdout)).toBe('callable credentials grant deepl deepl_translate');
  });
});

describe('a mistyped flag', () => {
  it('is one line naming the nearest flag, then the usage, exit 2', async () => {
    const data = tempDir();
    await cli(['import', join(REPO, 'resources/examples'), '--data-dir', data]);
    const run = await cli(['run', 'word_stats', '--arg', '{"text":"hi"}', '--data-dir', data]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe("callable run: Unknown option '--arg'; did you mean --args?\nUsage: callable run NAME [--args JSON | --args-file FILE] [--json] [--save-test CASE]\n");

    const list = await cli(['list', '--jsn', '--data-dir', data]);
    expect(list.stderr.split('\n')[0]).toBe("callable list: Unknown option '--jsn'; did you mean --json?");
    const none = await cli(['list', '--bogus', '--data-dir', data]);
    expect(none.stderr.split('\n')[0]).toBe("callable list: Unknown option '--bogus'; the options are --json");
    const lint = await cli(['lint', '--jsonn', '--data-dir', data]);
    expect(lint).toMatchObject({ code: 2 });
    expect(lint.stderr.split('\n')[0]).toBe("callable lint: Unknown option '--jsonn'; did you mean --json?");
    // Commands that parse their own flags name the nearest one from their usage line.
    expect((await cli(['new', 'x', '--from-curl', 'curl https://api.example.com/', '--entri', '2', '--data-dir', data])).stderr.split('\n')[0]).toBe(
      "callable new: Unknown option '--entri'; did you mean --entry?",
    );
    expect((await cli(['backup', '--lst', '--data-dir', data])).stderr.split('\n')[0]).toBe("callable backup: Unknown option '--lst'; did you mean --list?");
    expect((await cli(['runs', '--data-dir', data])).stdout).toBe('No runs yet.\n');
  });
});
