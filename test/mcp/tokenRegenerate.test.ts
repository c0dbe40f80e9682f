import { spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALLABLE_COMMAND, startServe, type ServeProcess } from '../support/callable.ts';
import { tempDir } from '../support/tmp.ts';

const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'ci', version: '0' } } });

function status(url: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` };
    const req = request(url, { method: 'POST', headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(INIT);
  });
}

/** `callable token [...]` in its own process, as a user would run it beside a running server. */
function tokenCommand(dataDir: string, extra: string[] = []): string {
  const run = spawnSync(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'token', '--data-dir', dataDir, ...extra], { encoding: 'utf8', env: process.env, timeout: 30_000 });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout.trim();
}

describe('"callable token --regenerate" takes effect in a running "callable serve" within a second', () => {
  let dataDir: string;
  let serve: ServeProcess;

  beforeAll(async () => {
    dataDir = tempDir();
    serve = await startServe(dataDir);
  });

  afterAll(async () => {
    await serve?.stop();
  });

  it('refuses the old token and accepts the new one, without a restart', async () => {
    const old = tokenCommand(dataDir);
    expect(await status(serve.url, old)).toBe(200);

    const fresh = tokenCommand(dataDir, ['--regenerate']);
    expect(fresh).not.toBe(old);
    const regenerated = Date.now();
    // Bounded: polled for at most a second after the command returned.
    await expect.poll(() => status(serve.url, old), { timeout: 1000, interval: 50 }).toBe(401);
    expect(await status(serve.url, fresh)).toBe(200);
    expect(Date.now() - regenerated).toBeLessThan(1500);
    expect(tokenCommand(dataDir)).toBe(fresh);

    // Regenerated again: the previous one goes too.
    const third = tokenCommand(dataDir, ['--regenerate']);
    await expect.poll(() => status(serve.url, fresh), { timeout: 1000, interval: 50 }).toBe(401);
    expect(await status(serve.url, third)).toBe(200);
    expect(serve.child.exitCode).toBeNull();
  });
});
