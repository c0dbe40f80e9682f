import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { StudioError, type Engine } from '../engine/index.ts';
import { parseAllowedOrigins } from '../mcp/httpOrigin.ts';
import type { DeployTarget } from '../deploy/generate.ts';
import { aborted, EXIT_FAILED, EXIT_OK, parse, signalExitCode, UsageError, withCommand, type Command, type CommandContext } from './common.ts';

const TARGETS: readonly DeployTarget[] = ['workerd', 'cloudflare'];
/** Files a deployment writes: a folder holding one of them may be written again. */
const MARKERS = ['config.capnp', 'DEPLOY.md'];

function checkOut(path: string): void {
  if (!existsSync(path)) return;
  if (!statSync(path).isDirectory()) throw new UsageError(`--out ${path} is a file; give a folder (it is created if missing)`);
  const entries = readdirSync(path);
  if (entries.length > 0 && !MARKERS.some((m) => entries.includes(m))) {
    throw new UsageError(`--out ${path} is not empty and holds no earlier deployment; give an empty or new folder`);
  }
}

/** Whether 127.0.0.1:port is taken by another program. */
function portTaken(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(true));
    server.listen(port, '127.0.0.1', () => server.close(() => done(false)));
  });
}

export const deploy: Command = {
  usage: 'deploy --target workerd|cloudflare [--out DIR] [--profile NAME] [--serve] [--port N] [--allow-origin ORIGIN]…',
  summary:
    'Writes the enabled functions (of a profile) as a workerd project (--target workerd) or a Wrangler project for Cloudflare Workers (--target cloudflare); --serve runs the workerd one here, with secrets from the keychain in its environment only.',
  options: [
    ['--target workerd|cloudflare', 'what to write'],
    ['--out DIR', 'where (created if missing; an earlier deployment there is replaced); --serve without it uses a temporary folder'],
    ['--profile NAME', 'deploy only the functions of this profile'],
    ['--serve', 'start it with the npm workerd binary and print the MCP URL and the token (workerd only; runs until interrupted)'],
    ['--port N', 'the port workerd listens on, on 127.0.0.1 (default 8787)'],
    ['--allow-origin ORIGIN', 'accept browser requests from this origin (repeatable; none by default)'],
  ],
  examples: ['callable deploy --target workerd --serve --port 8787', 'callable deploy --target cloudflare --out ./cf --profile writing'],
  createsDataDir: () => false,
  async run(ctx) {
    const { values } = parse(
      ctx.args,
      {
        target: { type: 'string' },
        out: { type: 'string' },
        profile: { type: 'string' },
        serve: { type: 'boolean' },
        port: { type: 'string' },
        'allow-origin': { type: 'string', multiple: true },
      },
      0,
    );
    if (values.target === undefined) throw new UsageError('--target is required: workerd or cloudflare');
    const target = values.target as DeployTarget;
    if (!TARGETS.includes(target)) throw new UsageError(`--target "${values.target}" is not a target: give workerd or cloudflare`);
    if (values.serve && target !== 'workerd') throw new UsageError('--serve runs workerd here; a cloudflare project is deployed with wrangler (see DEPLOY.md it writes)');
    if (values.port !== undefined && !values.serve && target !== 'workerd') throw new UsageError('--port is for --target workerd');
    const port = values.port === undefined ? 8787 : Number(values.port);
    if (!/^\d+$/.test(values.port ?? '8787') || !Number.isInteger(port) || port < 1 || port > 65535) throw new UsageError('--port must be a number from 1 to 65535');
    if (values.out === undefined && !values.serve) throw new UsageError('--out DIR is required (the folder to write the project to)');
    const allowed = parseAllowedOrigins(values['allow-origin'] ?? []);
    if ('error' in allowed) throw new UsageError(`--allow-origin: ${allowed.error}`);
    if (values.out !== undefined) checkOut(resolve(ctx.io.cwd, values.out));

    // workerd would fail to bind a taken port, and the wait for it to listen would see the other program instead.
    if (values.serve && (await portTaken(port))) throw new StudioError('conflict', `port ${port} is already in use on 127.0.0.1; pick another with --port`);
    const engine = ctx.engine();
    // --serve without --out: a temporary folder, removed when the command ends.
    const temporary = values.out === undefined;
    const outDir = temporary ? mkdtempSync(join(tmpdir(), 'callable-deploy-')) : resolve(ctx.io.cwd, values.out!);
    // (also on the way out when interrupted: the process may exit before this command returns)
    const cleanup = (): void => void (temporary && rmSync(outDir, { recursive: true, force: true }));
    process.once('exit', cleanup);
    try {
      return await deployTo(ctx, engine, { target, outDir, profile: values.profile, port, allowedOrigins: allowed.origins, serve: values.serve === true });
    } finally {
      process.off('exit', cleanup);
      cleanup();
    }
  },
};

async function deployTo(
  ctx: CommandContext,
  engine: Engine,
  options: { target: DeployTarget; outDir: string; profile: string | undefined; port: number; allowedOrigins: string[]; serve: boolean },
): Promise<number> {
  const { target, outDir, port } = options;
  // The deploy code loads only for this command.
  const [{ secretPutLines, writeDeployment }, { WorkerdSupervisor }] = await Promise.all([import('../deploy/generate.ts'), import('../deploy/supervisor.ts')]);
  const deployment = await writeDeployment(engine, { target, outDir, profile: options.profile, port, allowedOrigins: options.allowedOrigins });
  for (const k of deployment.skipped) ctx.err(`callable deploy: not deployed: ${k.function}: ${withCommand(k.reason, ctx.callable)}`);
  for (const u of deployment.ungranted) {
    const fix =
      engine.credentials.find(u.credential) === undefined
        ? `which does not exist: its requests with it will be refused; create and grant it, then deploy again: printf %s "$KEY" | ${ctx.callable} credentials set ${u.credential} --host HOST --grant ${u.function}`
        : `which is not granted to it: its requests with it will be refused; grant it, then deploy again: ${ctx.callable} credentials grant ${u.credential} ${u.function}`;
    ctx.err(`callable deploy: ${u.function} lists credential "${u.credential}", ${fix}`);
  }
  ctx.out(`wrote ${deployment.functions.length} function(s) (${deployment.functions.join(', ')}) to ${outDir} for ${target}`);
  if (target === 'cloudflare') {
    ctx.out(`deploy with wrangler as ${deployment.entry} says; then give the secrets (wrangler asks for each value):`);
    for (const line of secretPutLines(deployment.secrets)) ctx.out(`  ${line}`);
    return EXIT_OK;
  }
  if (!options.serve) {
    ctx.out(`run it: ${deployment.tokenVar}=<token> ${deployment.secrets.map((s) => `${s.envVar}=<secret> `).join('')}npx workerd serve --experimental ${deployment.entry}`);
    return EXIT_OK;
  }

  // --serve: the secrets go from the keychain into workerd's environment, and nowhere else.
  const token = await engine.mcpToken();
  const env: NodeJS.ProcessEnv = { PATH: ctx.io.env.PATH ?? '', [deployment.tokenVar]: token };
  for (const s of deployment.secrets) {
    // An OAuth client credentials grant: the Worker gets the client secret and asks for its own tokens.
    const secret = s.oauthClient ? await engine.credentials.oauth.storedClientSecret(s.credential) : (await engine.credentials.injection(s.credential, [s.credential])).secret;
    if (secret === undefined && s.oauthClient) {
      // Served without it, every call would fail in the Worker: say so now, before workerd starts.
      throw new StudioError('not_found', `the keychain holds no client secret for OAuth credential "${s.credential}": connect it again with "callable credentials connect ${s.credential} --grant client_credentials --client-secret-stdin"`);
    }
    if (secret !== undefined) env[s.envVar] = secret;
  }
  let tail = '';
  const supervisor = new WorkerdSupervisor({
    config: deployment.entry,
    cwd: outDir,
    port,
    env,
    timeouts: deployment.timeouts,
    output: (data) => {
      const text = data.toString();
      tail = (tail + text).slice(-2000);
      ctx.io.stderr.write(text);
    },
    notice: (line) => ctx.err(line),
  });
  // workerd ends with this command however it ends: interrupted (the abort fires before the process
  // exits, so workerd is stopped in time), or the process exiting for any other reason.
  const stopChild = (): void => void supervisor.stop();
  const killChild = (): void => supervisor.kill();
  ctx.interrupted.addEventListener('abort', stopChild, { once: true });
  process.once('exit', killChild);
  try {
    const ready = await supervisor.start(ctx.interrupted);
    if (ready === 'exited') {
      const last = tail.trim().split('\n').pop() ?? '';
      throw new StudioError('internal', `workerd exited before it listened${last ? `: ${last}` : ''}`);
    }
    if (ready === 'ready') {
      ctx.out(`MCP on http://127.0.0.1:${port}/mcp`);
      ctx.out(`token ${token}`);
      ctx.err(`callable deploy: serving ${deployment.functions.length} function(s) with workerd (pid ${supervisor.pid}); clients send "Authorization: Bearer <token>"`);
      const how = await Promise.race([supervisor.failed, aborted(ctx.interrupted).then(() => undefined)]);
      if (how !== undefined) {
        ctx.err(`callable deploy: workerd stopped (exit ${how})`);
        await supervisor.stop();
        return EXIT_FAILED;
      }
    }
    await supervisor.stop();
    return signalExitCode(ctx.interrupted.reason);
  } finally {
    process.off('exit', killChild);
  }
}

export const commands: Record<string, Command> = { deploy };
