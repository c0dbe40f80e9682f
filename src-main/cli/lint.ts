import { EXIT_OK, parse, withCommand, type Command } from './common.ts';

const lint: Command = {
  usage: 'lint [NAME…] [--json]',
  summary:
    "Advice, each with its evidence, from what functions were seen doing (their recent recorded runs and their saved test cases) and from what common MCP clients accept: hosts on allowedHosts that no recorded run used, readOnlyHint when every request was a GET, a missing outputSchema (with one inferred from the recorded results), a tool name over 64 characters with the mcp__callable__ prefix, a description over 1024 characters, a timeoutMs over 60 s, more than 40 enabled tools. It changes nothing.",
  options: [
    ['NAME…', 'only these functions (default: every function)'],
    ['--json', 'the advice as JSON: function, kind, message, evidence and suggestion (the inferred outputSchema)'],
  ],
  examples: ['callable lint', 'callable lint word_stats --json'],
  async run(ctx) {
    const { positionals, values } = parse(ctx.args, { json: { type: 'boolean' } }, ctx.args.filter((a) => !a.startsWith('-')).length);
    const engine = ctx.engine();
    const advice = engine.advise(positionals);
    if (values.json) {
      ctx.out(JSON.stringify(advice, null, 2));
      return EXIT_OK;
    }
    const checked = positionals.length > 0 ? positionals.length : engine.functions.list().length;
    if (advice.length === 0) {
      ctx.out(`no advice (${checked} function${checked === 1 ? '' : 's'} checked)`);
      return EXIT_OK;
    }
    for (const a of advice) {
      ctx.out(`${a.function ?? 'all functions'}: ${withCommand(a.message, ctx.callable)}`);
      ctx.out(`    evidence: ${a.evidence}`);
      if (a.suggestion !== undefined) ctx.out(JSON.stringify(a.suggestion, null, 2).replace(/^/gm, '    '));
    }
    ctx.out(`${advice.length} piece${advice.length === 1 ? '' : 's'} of advice (${checked} function${checked === 1 ? '' : 's'} checked)`);
    return EXIT_OK;
  },
};

export const commands: Record<string, Command> = { lint };
