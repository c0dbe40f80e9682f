import type { TestCaseResult, TestDifference } from '../engine/index.ts';
import { EXIT_FAILED, EXIT_OK, parse, withCommand, type Command } from './common.ts';

const LABEL: Record<TestCaseResult['status'], string> = { pass: 'PASS', fail: 'FAIL', error: 'FAIL', updated: 'UPDATED' };

const test: Command = {
  usage: 'test [NAME…] [--case CASE] [--update] [--json]',
  summary:
    'Replays saved test cases offline: each runs in the sandbox with ctx.fetch answered from its recording (no network, no keychain) and its result compared with the expected one. Exit 0 when all pass, 1 otherwise.',
  options: [
    ['NAME', 'only the cases of these functions (default: every function that has cases)'],
    ['--case CASE', 'only the case named CASE'],
    ['--update', 'rewrite the expectation of each case whose result changed (its requests must still match the recording)'],
    ['--json', 'the results (status, message, expected and actual, differences) as one JSON document'],
  ],
  examples: ['callable test', 'callable test translate_text --case hello', 'callable test translate_text --update'],
  async run(ctx) {
    const { positionals, values } = parseTest(ctx.args);
    const engine = ctx.engine();
    const summary = await engine.tests.runAll(positionals, { ...(values.case === undefined ? {} : { case: values.case }), update: values.update ?? false });
    if (values.json) {
      ctx.out(JSON.stringify(summary, null, 2));
      return summary.results.length > 0 && summary.failed === 0 ? EXIT_OK : EXIT_FAILED;
    }
    if (summary.results.length === 0) {
      const which = positionals.length > 0 ? `${positionals.join(', ')} ${positionals.length === 1 ? 'has' : 'have'} no saved test cases` : 'no function has saved test cases';
      ctx.err(`callable test: ${which}; save one from a run: ${ctx.callable} run NAME --args '{…}' --save-test CASE`);
      return EXIT_FAILED;
    }
    for (const r of summary.results) {
      ctx.out(`${LABEL[r.status].padEnd(7)} ${r.function} › ${r.case}  (${r.durationMs} ms)${r.message && r.status !== 'pass' ? `  ${withCommand(r.message, ctx.callable)}` : ''}`);
    }
    const parts = [`${summary.passed} passed`, `${summary.failed} failed`, ...(summary.updated > 0 ? [`${summary.updated} updated`] : [])];
    ctx.out(`\n${parts.join(', ')} (${summary.results.length} case${summary.results.length === 1 ? '' : 's'})`);
    for (const r of summary.results.filter((x) => x.status === 'fail' || x.status === 'error')) {
      ctx.out(`\n--- ${r.function} › ${r.case}: ${withCommand(r.message ?? 'failed', ctx.callable)}`);
      for (const d of r.differences ?? []) ctx.out(formatDifference(d));
    }
    return summary.failed === 0 ? EXIT_OK : EXIT_FAILED;
  },
};

function parseTest(args: string[]) {
  // Any number of function names: `parse` is told how many there are.
  return parse(args, { case: { type: 'string' }, update: { type: 'boolean' }, json: { type: 'boolean' } }, countPositionals(args));
}

/** How many arguments are not flags (and not the value of --case), so `parse` accepts them all. */
function countPositionals(args: string[]): number {
  let n = 0;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--case') i++;
    else if (!a.startsWith('-')) n++;
  }
  return n;
}

function formatDifference(d: TestDifference): string {
  const show = (v: unknown): string => (v === undefined ? '(absent)' : JSON.stringify(v));
  return [`  ${d.path}${d.note ? `  (${d.note})` : ''}`, `    - expected: ${show(d.expected)}`, `    + actual:   ${show(d.actual)}`].join('\n');
}

export const commands: Record<string, Command> = { test };
