import { serveMcpStdio } from '../engine/mcp/stdio.ts';
import { EXIT_OK, parse, UsageError, type Command } from './common.ts';

const mcp: Command = {
  usage: 'mcp [--profile NAME]',
  summary: 'Serves the enabled functions (of a profile) as MCP tools over stdio, for IDE agents. Stdout is protocol only; exits when stdin closes.',
  async run(ctx) {
    const { values } = parse(ctx.args, { profile: { type: 'string' } }, 0);
    const engine = ctx.engine();
    ctx.err(`callable mcp: serving ${values.profile ? `profile "${values.profile}"` : 'all enabled functions'} from ${ctx.dataDir} over stdio`);
    await serveMcpStdio(engine, { profile: values.profile, stdin: ctx.io.stdin, stdout: ctx.io.stdout, diagnostic: (m) => ctx.err(m) });
    return EXIT_OK;
  },
};

const serve: Command = {
  usage: 'serve [--port N] [--host 127.0.0.1] [--no-auth]',
  summary:
    'Serves Streamable HTTP MCP at http://HOST:PORT/mcp (and /mcp/<profile>). A bearer token is required unless --no-auth; "callable token" prints it. Runs until interrupted.',
  async run(ctx) {
    const { values } = parse(ctx.args, { port: { type: 'string' }, host: { type: 'string' }, 'no-auth': { type: 'boolean' } }, 0);
    const port = values.port === undefined ? 7777 : Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be a number from 0 to 65535');
    const host = values.host ?? '127.0.0.1';
    const engine = ctx.engine();
    const token = values['no-auth'] ? undefined : await engine.mcpToken();
    // The HTTP stack loads only for `serve`.
    const { startMcpHttpServer } = await import('../engine/mcp/http.ts');
    const server = await startMcpHttpServer(engine, { host, port, token, diagnostic: (m) => ctx.err(m) });
    const auth = token
      ? 'clients send "Authorization: Bearer <token>"; print the token with: callable token'
      : 'no auth: any local program may call your functions';
    ctx.err(`callable serve: ${auth}\ncallable serve: MCP on ${server.url}`);
    if (host !== '127.0.0.1' && host !== 'localhost' && host !== '::1') ctx.err(`callable serve: warning: listening on ${host}, not only this machine`);
    await new Promise<void>((resolve) => {
      const stop = (): void => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await server.close();
    return EXIT_OK;
  },
};

const token: Command = {
  usage: 'token [--regenerate]',
  summary: "Prints the HTTP MCP server's bearer token (kept in the OS keychain); --regenerate replaces it (connected clients must update).",
  async run(ctx) {
    const { values } = parse(ctx.args, { regenerate: { type: 'boolean' } }, 0);
    ctx.out(await ctx.engine().mcpToken({ regenerate: values.regenerate === true }));
    return EXIT_OK;
  },
};

const profiles: Command = {
  usage: 'profiles list | set NAME FUNCTION… [--meta-tools] | rm NAME',
  summary: 'Manages profiles: named subsets of functions served together ("callable mcp --profile NAME", or /mcp/NAME over HTTP).',
  async run(ctx) {
    const [sub, ...rest] = ctx.args;
    const engine = ctx.engine();
    if (sub === 'list') {
      parse(rest, {}, 0);
      const all = engine.profiles.list();
      if (all.length === 0) ctx.out('No profiles yet. Create one: callable profiles set writing deepl_translate word_stats');
      for (const p of all) ctx.out(`${p.name}  ${p.functions.join(', ') || '(empty)'}${p.metaTools ? '  +meta-tools' : ''}`);
      return EXIT_OK;
    }
    if (sub === 'set') {
      const parsed = parseArgsLoose(rest);
      const [name, ...functions] = parsed.positionals;
      if (name === undefined) throw new UsageError('give the profile name and its functions');
      engine.profiles.set({ name, functions, metaTools: parsed.metaTools });
      ctx.out(`saved profile ${name} (${functions.length} function(s)${parsed.metaTools ? ', meta-tools on' : ''})`);
      return EXIT_OK;
    }
    if (sub === 'rm') {
      const { positionals } = parse(rest, {}, 1);
      engine.profiles.delete(positionals[0]!);
      ctx.out(`deleted profile ${positionals[0]}`);
      return EXIT_OK;
    }
    throw new UsageError(sub === undefined ? 'missing subcommand' : `unknown subcommand "${sub}"`);
  },
};

function parseArgsLoose(args: string[]): { positionals: string[]; metaTools: boolean } {
  const positionals: string[] = [];
  let metaTools = false;
  for (const a of args) {
    if (a === '--meta-tools') metaTools = true;
    else if (a.startsWith('-')) throw new UsageError(`unknown option ${a}`);
    else positionals.push(a);
  }
  return { positionals, metaTools };
}

export const commands: Record<string, Command> = { mcp, serve, token, profiles };
