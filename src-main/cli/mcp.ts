import { StudioError } from '../engine/index.ts';
import type { RunningHttpServer } from '../mcp/http.ts';
import { parseAllowedOrigins } from '../mcp/httpOrigin.ts';
import { aborted, EXIT_OK, parse, signalExitCode, UsageError, type Command } from './common.ts';

const mcp: Command = {
  usage: 'mcp [--profile NAME]',
  createsDataDir: () => true,
  summary: 'Serves the enabled functions (of a profile) as MCP tools over stdio, for IDE agents. Stdout is protocol only; exits when stdin closes.',
  options: [['--profile NAME', 'serve only the functions of this profile ("callable profiles list")']],
  // An IDE is given the config "callable mcp-config" prints: it names the Node 24 and the keychain's session.
  examples: ['callable mcp --profile writing', 'callable mcp-config --profile writing'],
  async run(ctx) {
    const { values } = parse(ctx.args, { profile: { type: 'string' } }, 0);
    const engine = ctx.engine();
    if (values.profile !== undefined) engine.profiles.get(values.profile);
    ctx.err(`callable mcp: serving ${values.profile ? `profile "${values.profile}"` : 'all enabled functions'} from ${ctx.dataDir} over stdio`);
    // The MCP SDK loads only for the servers: every other command starts without it.
    const { serveMcpStdio } = await import('../mcp/stdio.ts');
    await serveMcpStdio(engine, { profile: values.profile, stdin: ctx.io.stdin, stdout: ctx.io.stdout, diagnostic: (m) => ctx.err(m) });
    return EXIT_OK;
  },
};

const serve: Command = {
  usage: 'serve [--port N] [--host 127.0.0.1] [--no-auth] [--allow-origin ORIGIN]…',
  createsDataDir: () => true,
  summary:
    'Serves Streamable HTTP MCP at http://HOST:PORT/mcp (and /mcp/<profile>). A bearer token is required unless --no-auth; "callable token" prints it. Runs until interrupted.',
  options: [
    ['--port N', 'the port (default 7777; 0 picks a free one)'],
    ['--host ADDR', 'the address to listen on (default 127.0.0.1, this machine only)'],
    ['--no-auth', 'accept calls without the bearer token (any local program may call your functions)'],
    ['--allow-origin ORIGIN', 'accept browser requests from this origin, e.g. http://localhost:6274 (repeatable; by default only pages of the server\'s own loopback address and port)'],
  ],
  examples: ['callable serve --port 7777'],
  async run(ctx) {
    const { values } = parse(ctx.args, { port: { type: 'string' }, host: { type: 'string' }, 'no-auth': { type: 'boolean' }, 'allow-origin': { type: 'string', multiple: true } }, 0);
    const port = values.port === undefined ? 7777 : Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be a number from 0 to 65535');
    const allowed = parseAllowedOrigins(values['allow-origin'] ?? []);
    if ('error' in allowed) throw new UsageError(`--allow-origin: ${allowed.error}`);
    const host = values.host ?? '127.0.0.1';
    // Registered before the command's first await, so before the CLI's own stop handler: new requests
    // are refused and waiting calls answered before the engine stops the running ones.
    let running: RunningHttpServer | undefined;
    ctx.interrupted.addEventListener('abort', () => running?.shutdown(), { once: true });
    const engine = ctx.engine();
    const token = values['no-auth'] ? undefined : await engine.mcpToken();
    // The HTTP stack loads only for `serve`.
    const { startMcpHttpServer } = await import('../mcp/http.ts');
    // The token is read again as it changes, so "callable token --regenerate" takes effect here at once.
    const server = await startMcpHttpServer(engine, {
      host,
      port,
      token: token === undefined ? undefined : () => engine.mcpToken(),
      allowedOrigins: allowed.origins,
      diagnostic: (m) => ctx.err(m),
    }).catch((error: unknown) => {
      throw listenFailure(error, host, port);
    });
    running = server;
    const auth = token
      ? `clients send "Authorization: Bearer <token>"; print the token with: ${ctx.callable} token`
      : 'no auth: any local program may call your functions';
    ctx.err(`callable serve: ${auth}\ncallable serve: MCP on ${server.url}`);
    if (host !== '127.0.0.1' && host !== 'localhost' && host !== '::1') ctx.err(`callable serve: warning: listening on ${host}, not only this machine`);
    await aborted(ctx.interrupted);
    await server.close();
    return signalExitCode(ctx.interrupted.reason);
  },
};

const token: Command = {
  usage: 'token [--regenerate]',
  createsDataDir: () => true,
  summary:
    "Prints the HTTP MCP server's bearer token of this data folder (kept in the OS keychain; with CALLABLE_SECRETS=env it is CALLABLE_MCP_TOKEN); --regenerate replaces it (connected clients must update).",
  options: [['--regenerate', "replace this data folder's token (connected clients must update)"]],
  examples: ['callable token', 'callable token --regenerate'],
  async run(ctx) {
    const { values } = parse(ctx.args, { regenerate: { type: 'boolean' } }, 0);
    ctx.out(await ctx.engine().mcpToken({ regenerate: values.regenerate === true }));
    return EXIT_OK;
  },
};

const profiles: Command = {
  usage: 'profiles list | set NAME FUNCTION… [--meta-tools] | rm NAME',
  summary: 'Manages profiles: named subsets of functions served together ("callable mcp --profile NAME", or /mcp/NAME over HTTP).',
  options: [
    ['list', 'the profiles and their functions'],
    ['set NAME FUNCTION…', 'creates or replaces a profile serving these functions'],
    ['--meta-tools', 'also serve find_functions and call_function, for clients that ignore list-changed notifications'],
    ['rm NAME', 'deletes a profile (its functions stay)'],
  ],
  examples: ['callable profiles set writing deepl_translate word_stats', 'callable mcp --profile writing'],
  async run(ctx) {
    const [sub, ...rest] = ctx.args;
    const engine = ctx.engine();
    if (sub === 'list') {
      parse(rest, {}, 0);
      const all = engine.profiles.list();
      if (all.length === 0) ctx.out(`No profiles yet. Create one: ${ctx.callable} profiles set writing deepl_translate word_stats`);
      for (const p of all) ctx.out(`${p.name}  ${p.functions.join(', ') || '(empty)'}${p.metaTools ? '  +meta-tools' : ''}`);
      return EXIT_OK;
    }
    if (sub === 'set') {
      const parsed = parseArgsLoose(rest);
      const [name, ...functions] = parsed.positionals;
      if (name === undefined) throw new UsageError('give the profile name and its functions');
      // A mistyped name would make a profile that silently serves less; the studio may name functions to come.
      const unknown = functions.filter((f) => engine.functions.find(f) === undefined);
      if (unknown.length > 0) {
        throw new StudioError('not_found', `no function named ${unknown.map((f) => `"${f}"`).join(', ')}; profile ${name} was not saved ("callable list" shows the functions)`);
      }
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

function listenFailure(error: unknown, host: string, port: number): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') return new StudioError('bad_input', `port ${port} on ${host} is already in use (EADDRINUSE); choose another with --port N (--port 0 picks a free one)`);
  if (code === 'EACCES') return new StudioError('bad_input', `not allowed to listen on port ${port} (EACCES); ports below 1024 need privileges: choose another with --port N`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return new StudioError('bad_input', `cannot listen on ${host} (${code}): it is not an address of this machine; use --host 127.0.0.1`);
  return error;
}

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
