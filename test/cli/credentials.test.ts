import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CALLABLE_COMMAND, startServe } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { vendorServer } from '../support/vendor.ts';

/** The environment of a headless machine: CALLABLE_SECRETS=env, and only the given secrets. */
function envMode(vars: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('CALLABLE_SECRET_') && key !== 'CALLABLE_MCP_TOKEN'));
  return { ...env, CALLABLE_SECRETS: 'env', ...vars };
}

describe('credentials with CALLABLE_SECRETS=env', () => {
  it('"credentials set" with no input saves the metadata and names the variable the secret comes from', async () => {
    const data = tempDir();
    const set = await cli(['credentials', 'set', 'my-api', '--host', 'api.example.com', '--data-dir', data], { env: envMode() });
    expect(set).toMatchObject({ code: 0, stderr: '' });
    expect(set.stdout).toContain('saved credential my-api (metadata only: with CALLABLE_SECRETS=env the secret comes from CALLABLE_SECRET_MY_API; it is not set in this environment yet)');

    const unset = await cli(['credentials', 'list', '--data-dir', data], { env: envMode() });
    expect(unset.stdout).toContain('my-api  api.example.com  header Authorization: Bearer {secret}  (NO SECRET)  granted to no function');
    const withSecret = await cli(['credentials', 'list', '--data-dir', data], { env: envMode({ CALLABLE_SECRET_MY_API: 'sk-from-env' }) });
    expect(withSecret.stdout).toContain('my-api  api.example.com  header Authorization: Bearer {secret}  (secret set)  granted to no function');
    expect(withSecret.stdout).not.toContain('sk-from-env');
  });

  it('"credentials set ... </dev/null" works from a shell, as the README shows', () => {
    const data = tempDir();
    const out = spawnSync(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'credentials', 'set', 'my-api', '--host', 'api.example.com', '--data-dir', data], {
      env: envMode(),
      stdio: ['ignore', 'pipe', 'pipe'],
      encoding: 'utf8',
    });
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toContain('saved credential my-api (metadata only: with CALLABLE_SECRETS=env the secret comes from CALLABLE_SECRET_MY_API;');
  });

  it('a run sends the secret from CALLABLE_SECRET_<NAME> for a credential set up without one', async () => {
    const data = tempDir();
    const vendor = await vendorServer((req, res) => res.end(JSON.stringify({ saw: req.headers.authorization ?? null })));
    const fnDir = tempDir();
    mkdirSync(join(fnDir, 'call_vendor'));
    writeFileSync(
      join(fnDir, 'call_vendor/function.json'),
      JSON.stringify({ name: 'call_vendor', description: 'x', allowedHosts: [`127.0.0.1:${vendor.port}`], credentials: ['ci-key'] }),
    );
    writeFileSync(join(fnDir, 'call_vendor/index.js'), `export default async (a, ctx) => (await ctx.fetch('http://127.0.0.1:${vendor.port}/', { credential: 'ci-key' })).json();`);
    expect((await cli(['import', fnDir, '--data-dir', data], { env: envMode() })).code).toBe(0);
    expect((await cli(['credentials', 'set', 'ci-key', '--host', `127.0.0.1:${vendor.port}`, '--data-dir', data], { env: envMode() })).code).toBe(0);
    expect((await cli(['credentials', 'grant', 'ci-key', 'call_vendor', '--data-dir', data], { env: envMode() })).code).toBe(0);

    const run = await cli(['run', 'call_vendor', '--data-dir', data], { env: envMode({ CALLABLE_SECRET_CI_KEY: 'sk-ci-secret' }) });
    expect(run.code, run.stderr).toBe(0);
    expect(vendor.seen.at(-1)!.headers.authorization).toBe('Bearer sk-ci-secret');
  });

  it('"credentials set" refuses a piped secret, says to put it in the environment, and saves nothing', async () => {
    const data = tempDir();
    const set = await cli(['credentials', 'set', 'my-api', '--host', 'api.example.com', '--data-dir', data], { env: envMode(), stdin: 'sk-piped-secret\n' });
    expect(set.code).toBe(2);
    expect(set.stderr).toContain('CALLABLE_SECRETS=env stores no secrets, and nothing was saved: put the secret in CALLABLE_SECRET_MY_API');
    expect(set.stdout + set.stderr).not.toContain('sk-piped-secret');
    expect((await cli(['credentials', 'list', '--data-dir', data], { env: envMode() })).stdout).toContain('No credentials yet');
  });

  it('"callable token" prints CALLABLE_MCP_TOKEN, and --regenerate says to change the variable', async () => {
    const data = tempDir();
    expect(await cli(['token', '--data-dir', data], { env: envMode({ CALLABLE_MCP_TOKEN: 'ci-token-123' }) })).toMatchObject({ code: 0, stdout: 'ci-token-123\n' });
    const regenerate = await cli(['token', '--regenerate', '--data-dir', data], { env: envMode({ CALLABLE_MCP_TOKEN: 'ci-token-123' }) });
    expect(regenerate.code).toBe(2);
    expect(regenerate.stderr).toContain('the token is CALLABLE_MCP_TOKEN; change that variable to replace it');
  });

  it('"callable serve" refuses to start without CALLABLE_MCP_TOKEN, and says how to fix it', async () => {
    const refused = await cli(['serve', '--port', '0', '--data-dir', tempDir()], { env: envMode() });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('CALLABLE_SECRETS=env: set CALLABLE_MCP_TOKEN to the HTTP bearer token, or serve with --no-auth');
  });

  it('"callable serve --no-auth" starts without CALLABLE_MCP_TOKEN', async () => {
    const saved = process.env;
    process.env = envMode();
    const starting = startServe(tempDir(), ['--no-auth']);
    process.env = saved;
    const serve = await starting;
    await serve.stop();
    expect(serve.stderr()).toContain('no auth');
  });

  it('"callable serve" accepts the CALLABLE_MCP_TOKEN bearer token and refuses any other', async () => {
    const data = tempDir();
    const saved = process.env;
    // startServe spawns with process.env, read when it is called.
    process.env = envMode({ CALLABLE_MCP_TOKEN: 'ci-token-456' });
    const starting = startServe(data);
    process.env = saved;
    const serve = await starting;
    try {
      const status = (authorization: string) =>
        new Promise<number>((resolve, reject) => {
          const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization };
          const req = request(serve.url, { method: 'POST', headers }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          req.on('error', reject);
          req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'ci', version: '0' } } }));
        });
      expect(await status('Bearer ci-token-456')).toBe(200);
      expect(await status('Bearer something-else')).toBe(401);
    } finally {
      await serve.stop();
    }
  });
});
