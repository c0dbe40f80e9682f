import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src-main/cli/index.ts';
import { cli } from '../support/cli.ts';

describe('callable COMMAND --help', () => {
  // Over the command table, so a command added without flags or an example fails here.
  for (const name of Object.keys(COMMANDS)) {
    it(`${name} --help gives a usage line, every flag of it, and an example`, async () => {
      const help = await cli([name, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: callable ${name}(\\s|$)`, 'm'));
      const [, options = ''] = /\nOptions:\n((?: {2}.*\n)+)/.exec(help.stdout) ?? [];
      const usage = /^Usage: (.*)$/m.exec(help.stdout)![1]!;
      for (const flag of new Set([...usage.matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0]))) {
        expect(options, `${flag} is in the usage line but not explained`).toMatch(new RegExp(`^ {2}(?:\\S+ )*\\[?${flag}\\b`, 'm'));
      }
      expect(options).toMatch(/^ {2}--data-dir DIR /m);
      const [, examples = ''] = /\nExamples?:\n((?: {2}.*\n?)+)/.exec(help.stdout) ?? [];
      expect(examples, 'an example').toMatch(new RegExp(`^ {2}.*\\bcallable ${name}\\b`, 'm'));
    });
  }

  it('-h is the same as --help', async () => {
    expect((await cli(['run', '-h'])).stdout).toBe((await cli(['run', '--help'])).stdout);
  });
});
