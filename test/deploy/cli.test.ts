import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { CALLABLE_BIN, CALLABLE_COMMAND } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { defineFunction } from '../support/engine.ts';
import { tempDir } from '../support/tmp.ts';
import { vendorServer } from '../support/vendor.ts';
import { connect } from '../support/mcpClients.ts';
import { freePort, processAlive, processGone, startDeployServe } from './support.ts';

const textOf = (result: { content: Array<{ text?: string }> }): string => result.content.map((c) => c.text ?? '').join('');

/** `callable deploy` as a command: what it writes for each target, and every bad input it refuses. */
const SECRET = `sk-cf-${process.pid}-deadbeef`;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'callable-deploy-cli-'));
  const engine = createEngine({ dataDir });
  try {
    await engine.credentials.set({ name: 'deepl', hosts: ['api-free.deepl.com'], placement: { kind: 'header', header: 'Authorization', template: 'DeepL-Auth-Key {secret}' } }, SECRET);
    await defineFunction(
      engine,
      { name: 'translate', description: 'Translates', allowedHosts: ['api-free.deepl.com'], credentials: ['deepl'], inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
      `export default async ({ text }, ctx) => (await ctx.fetch('https://api-free.deepl.com/v2/translate', { credential: 'deepl', json: { text: [text] } })).json()`,
    );
    await defineFunction(engine, { name: 'echo', description: 'Echoes' }, 'export default ({ text }) => ({ echo: text })');
    await defineFunction(engine, { name: 'spin', description: 'Keeps the CPU busy', timeoutMs: 500 }, 'export default () => { for (;;) {} }');
    await defineFunction(engine, { name: 'danger', description: 'Deletes things', annotations: { destructiveHint: true } }, "export default () => 'gone'");
    await defineFunction(engine, { name: 'careful', description: 'Asks first', askBeforeCall: true }, "export default () => 'done'");
    await defineFunction(engine, { name: 'musing', description: 'Asks the model', sampling: { maxCalls: 1 } }, "export default async (a, ctx) => (await ctx.sample('hi')).content");
    await defineFunction(engine, { name: 'tick', description: 'Answers', timeoutMs: 500 }, "export default () => 'tick'");
    engine.profiles.set({ name: 'just_echo', functions: ['echo'], metaTools: false });
  } finally {
    engine.close();
  }
});

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => statSync(join(dir, name)).isFile()).sort();
}

describe('callable deploy --target cloudflare', () => {
  it('writes a Wrangler project of both Workers, prints the wrangler secret put lines, and holds no secret', async () => {
    const out = join(tempDir(), 'cf');
    const run = await cli(['deploy', '--target', 'cloudflare', '--out', out, '--data-dir', dataDir]);
    expect(run.code, run.stderr).toBe(0);
    expect(filesUnder(out)).toEqual(['DEPLOY.md', 'egress/index.js', 'egress/wrangler.jsonc', 'gateway/index.js', 'gateway/wrangler.jsonc']);
    const gateway = JSON.parse(readFileSync(join(out, 'gateway/wrangler.jsonc'), 'utf8')) as Record<string, unknown>;
    expect(gateway).toMatchObject({
      name: 'callable-gateway',
      main: 'index.js',
      compatibility_flags: ['nodejs_compat', 'enable_ctx_exports'],
      worker_loaders: [{ binding: 'LOADER' }],
      services: [{ binding: 'EGRESS', service: 'callable-egress' }],
    });
    expect(JSON.parse(readFileSync(join(out, 'egress/wrangler.jsonc'), 'utf8'))).toMatchObject({ name: 'callable-egress', main: 'index.js' });
    const lines = ['wrangler secret put MCP_TOKEN --name callable-gateway', 'wrangler secret put SECRET_DEEPL --name callable-egress'];
    for (const line of lines) {
      expect(run.stdout).toContain(`  ${line}\n`);
      expect(readFileSync(join(out, 'DEPLOY.md'), 'utf8')).toContain(line);
    }
    expect(run.stdout).toContain(`wrote 4 function(s) (echo, spin, tick, translate) to ${out} for cloudflare`);
    expect(run.stderr.split('\n')).toEqual([
      'callable deploy: not deployed: careful: it asks a person before every call (askBeforeCall or destructiveHint), and a deployed gateway has no one to ask',
      'callable deploy: not deployed: danger: it asks a person before every call (askBeforeCall or destructiveHint), and a deployed gateway has no one to ask',
      "callable deploy: not deployed: musing: it has the sampling setting (ctx.sample asks the client's model), which a deployed gateway does not offer",
      '',
    ]);
    for (const name of filesUnder(out)) expect(readFileSync(join(out, name), 'utf8').includes(SECRET), name).toBe(false);
  });

  it('--profile deploys only that profile\'s functions, and no credential it does not need', async () => {
    const out = join(tempDir(), 'cf');
    const run = await cli(['deploy', '--target', 'cloudflare', '--out', out, '--profile', 'just_echo', '--data-dir', dataDir]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('wrote 1 function(s) (echo)');
    expect(run.stdout).not.toContain('SECRET_DEEPL');
    expect(readFileSync(join(out, 'gateway/index.js'), 'utf8')).not.toContain('"translate"');
  });
});

describe('callable deploy --target workerd (without --serve)', () => {
  it('writes the workerd project and says how to run it; writing it again replaces it', async () => {
    const out = join(tempDir(), 'wd');
    const first = await cli(['deploy', '--target', 'workerd', '--out', out, '--port', '9999', '--data-dir', dataDir]);
    expect(first.code, first.stderr).toBe(0);
    expect(filesUnder(out)).toEqual(['README.md', 'config.capnp', 'egress.js', 'gateway.js']);
    expect(readFileSync(join(out, 'config.capnp'), 'utf8')).toContain('address = "127.0.0.1:9999"');
    expect(first.stdout).toContain(`run it: CALLABLE_MCP_TOKEN=<token> CALLABLE_SECRET_DEEPL=<secret> npx workerd serve --experimental ${join(out, 'config.capnp')}`);
    const again = await cli(['deploy', '--target', 'workerd', '--out', out, '--data-dir', dataDir]);
    expect(again.code, again.stderr).toBe(0);
    for (const name of filesUnder(out)) expect(readFileSync(join(out, name), 'utf8').includes(SECRET), name).toBe(false);
  });

  it('says which listed credentials are missing or not granted, and the command that fixes each, started the way the CLI was', async () => {
    const data = tempDir();
    const engine = createEngine({ dataDir: data, secrets: new MemorySecretStore() });
    try {
      await engine.credentials.set({ name: 'ungranted', hosts: ['api.example.com'], placement: { kind: 'query', param: 'key' } }, 'k');
      await engine.saveFunction({ spec: { name: 'needs_key', credentials: ['nokey', 'ungranted'] }, source: 'export default () => 1' });
    } finally {
      engine.close();
    }
    const run = spawnSync(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'deploy', '--target', 'workerd', '--out', join(data, 'out'), '--data-dir', data], { encoding: 'utf8', env: { ...process.env, CALLABLE_SECRETS: 'env' } });
    expect(run.status, run.stderr).toBe(0);
    const callable = `node ${realpathSync(CALLABLE_BIN)}`;
    expect(run.stderr).toBe(
      `callable deploy: needs_key lists credential "nokey", which does not exist: its requests with it will be refused; create and grant it, then deploy again: printf %s "$KEY" | ${callable} credentials set nokey --host HOST --grant needs_key\n` +
        `callable deploy: needs_key lists credential "ungranted", which is not granted to it: its requests with it will be refused; grant it, then deploy again: ${callable} credentials grant ungranted needs_key\n`,
    );
  });
});

describe('callable deploy --serve', () => {
  it('stops workerd with itself when interrupted (exit 143)', async () => {
    const served = await startDeployServe(dataDir, ['--port', String(await freePort())], { ...process.env });
    try {
      for (let i = 0; i < 50 && !/workerd \(pid \d+\)/.test(served.stderr()); i++) await new Promise((r) => setTimeout(r, 100));
      const pid = Number(/workerd \(pid (\d+)\)/.exec(served.stderr())![1]);
      expect(processAlive(pid)).toBe(true);
      expect(await served.stop()).toBe(143);
      expect(await processGone(pid)).toBe(true);
      // --serve without --out wrote to a temporary folder, removed on the way out.
      expect(existsSync(served.outDir)).toBe(false);
    } finally {
      await served.stop();
      rmSync(served.outDir, { recursive: true, force: true });
    }
  });
});

describe('a name that resolves to a private address', () => {
  it('is refused by workerd\'s network: the allow-list passes localhost, the connection is never made', async () => {
    const data = tempDir();
    let connections = 0;
    const local: Server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const port = (local.address() as { port: number }).port;
    const engine = createEngine({ dataDir: data });
    try {
      await defineFunction(
        engine,
        { name: 'sneaky', description: 'Reaches localhost by name', allowedHosts: [`localhost:${port}`], inputSchema: { type: 'object', properties: {} } },
        `export default async (args, ctx) => (await ctx.fetch('https://localhost:${port}/')).status`,
      );
    } finally {
      engine.close();
    }
    const served = await startDeployServe(data, ['--port', String(await freePort())]);
    const client = await connect('2026-07-28', { transport: 'http', url: served.url, token: served.token });
    try {
      const result = await client.callTool('sneaky', {});
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain(`sneaky failed: Error: GET https://localhost:${port}/: request failed:`);
      expect(connections).toBe(0);
    } finally {
      await client.close().catch(() => {});
      await served.stop();
      rmSync(served.outDir, { recursive: true, force: true });
      await new Promise<void>((resolve) => local.close(() => resolve()));
    }
  });
});

describe('bad input to callable deploy: one line, exit 2', () => {
  let taken: Server;
  let takenPort: number;
  beforeAll(async () => {
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    takenPort = (taken.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

  const cases: Array<[string, () => string[], string]> = [
    ['no --target', () => ['deploy', '--out', '/tmp/x'], 'callable deploy: --target is required: workerd or cloudflare'],
    ['an unknown target', () => ['deploy', '--target', 'aws', '--out', '/tmp/x'], 'callable deploy: --target "aws" is not a target: give workerd or cloudflare'],
    ['--serve for cloudflare', () => ['deploy', '--target', 'cloudflare', '--serve'], 'callable deploy: --serve runs workerd here; a cloudflare project is deployed with wrangler (see DEPLOY.md it writes)'],
    ['a port that is not one', () => ['deploy', '--target', 'workerd', '--serve', '--port', '70000'], 'callable deploy: --port must be a number from 1 to 65535'],
    ['a port that is text', () => ['deploy', '--target', 'workerd', '--serve', '--port', 'http'], 'callable deploy: --port must be a number from 1 to 65535'],
    ['no --out without --serve', () => ['deploy', '--target', 'workerd'], 'callable deploy: --out DIR is required (the folder to write the project to)'],
    ['an unknown flag', () => ['deploy', '--target', 'workerd', '--frobnicate'], "callable deploy: Unknown option '--frobnicate'"],
    ['an extra argument', () => ['deploy', '--target', 'workerd', 'now'], 'callable deploy: unexpected argument "now"'],
    ['a bad origin', () => ['deploy', '--target', 'workerd', '--out', '/tmp/x', '--allow-origin', '*'], 'callable deploy: --allow-origin: "*" is not accepted: list each origin'],
    ['an unknown profile', () => ['deploy', '--target', 'workerd', '--out', join(tmpdir(), `never-${process.pid}`), '--profile', 'nope'], 'callable deploy: no profile named "nope"; "callable profiles list" shows them'],
  ];
  it.each(cases)('%s', async (_what, argv, first) => {
    const run = await cli([...argv(), '--data-dir', dataDir]);
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toContain(first);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('a port another program holds', async () => {
    const run = await cli(['deploy', '--target', 'workerd', '--serve', '--port', String(takenPort), '--data-dir', dataDir]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`callable deploy: port ${takenPort} is already in use on 127.0.0.1; pick another with --port\n`);
  });

  it('--out that is a file, or a folder holding other things', async () => {
    const dir = tempDir();
    const file = join(dir, 'file');
    writeFileSync(file, 'x');
    const asFile = await cli(['deploy', '--target', 'workerd', '--out', file, '--data-dir', dataDir]);
    expect(asFile.code).toBe(2);
    expect(asFile.stderr.split('\n')[0]).toBe(`callable deploy: --out ${file} is a file; give a folder (it is created if missing)`);
    mkdirSync(join(dir, 'busy'));
    writeFileSync(join(dir, 'busy', 'notes.txt'), 'mine');
    const busy = await cli(['deploy', '--target', 'workerd', '--out', join(dir, 'busy'), '--data-dir', dataDir]);
    expect(busy.code).toBe(2);
    expect(busy.stderr.split('\n')[0]).toBe(`callable deploy: --out ${join(dir, 'busy')} is not empty and holds no earlier deployment; give an empty or new folder`);
    expect(readdirSync(join(dir, 'busy'))).toEqual(['notes.txt']);
  });

  it('a data folder that does not exist, or holds no function', async () => {
    const dir = tempDir();
    const missing = await cli(['deploy', '--target', 'workerd', '--out', join(dir, 'o'), '--data-dir', join(dir, 'nothing')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^callable deploy: no data folder at .*nothing \(nothing was created\)/);
    const empty = join(dir, 'empty');
    createEngine({ dataDir: empty }).close();
    const none = await cli(['deploy', '--target', 'workerd', '--out', join(dir, 'o'), '--data-dir', empty]);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe('callable deploy: there is no enabled function to deploy; import some first: callable import DIR\n');
  });
});

describe('callable deploy --serve with CALLABLE_SECRETS=env', () => {
  it('takes the token and each credential from the environment, and injects the credential towards its host', async () => {
    const vendor = await vendorServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ authorization: req.headers.authorization ?? null })));
    const here = `127.0.0.1:${vendor.port}`;
    const envDir = mkdtempSync(join(tmpdir(), 'callable-deploy-env-'));
    const env = { ...process.env, CALLABLE_SECRETS: 'env', CALLABLE_MCP_TOKEN: 'env-token-1234567890', CALLABLE_SECRET_ENV_KEY: 'from-the-environment' };
    try {
      expect((await cli(['credentials', 'set', 'env_key', '--host', here, '--data-dir', envDir], { env })).code).toBe(0);
      const engine = createEngine({ dataDir: envDir, env });
      try {
        await defineFunction(
          engine,
          { name: 'whoami', description: 'Asks the vendor what it was sent', allowedHosts: [here], credentials: ['env_key'], inputSchema: { type: 'object', properties: {} } },
          `export default async (args, ctx) => (await ctx.fetch('http://${here}/me', { credential: 'env_key' })).json()`,
        );
      } finally {
        engine.close();
      }
      const served = await startDeployServe(envDir, ['--port', String(await freePort())], env);
      const client = await connect('2026-07-28', { transport: 'http', url: served.url, token: served.token });
      try {
        expect(served.token).toBe('env-token-1234567890');
        // The vendor got the secret; the function saw only its redacted echo.
        expect(JSON.parse(textOf(await client.callTool('whoami', {})))).toEqual({ authorization: '[redacted:env_key]' });
        expect(vendor.seen.map((r) => r.headers.authorization)).toEqual(['Bearer from-the-environment']);
      } finally {
        await client.close().catch(() => {});
        await served.stop();
      }
    } finally {
      rmSync(envDir, { recursive: true, force: true });
    }
  });
});
