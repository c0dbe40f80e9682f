import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../../src-main/engine/index.ts';
import { CALLABLE_COMMAND } from '../support/callable.ts';
import { scratch } from '../support/scratch.ts';
import { until } from '../support/wait.ts';

const s = scratch();

/** A headless machine's environment: secrets from the environment, so no keychain is involved. */
const ENV: NodeJS.ProcessEnv = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CALLABLE_SECRET_'))), CALLABLE_SECRETS: 'env' };

/** The real `callable` command, in its own process, on `dataDir`, with nothing on stdin. */
function callable(dataDir: string, ...args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = s.child(spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, ...args, '--data-dir', dataDir], { env: ENV, stdio: ['ignore', 'ignore', 'pipe'] }));
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('credential changes made by another process', () => {
  it('reach onCredentialsChange: add, grant, revoke and remove each once; a change that changes nothing, none', async () => {
    const dataDir = s.dir('callable-credwatch-');
    const engine = s.engine(createEngine({ dataDir, env: ENV }));
    await engine.saveFunction({ spec: { name: 'uses_key', allowedHosts: ['api.example.com'], credentials: ['vendor-key'] }, source: 'export default () => 1' });
    let seen = 0;
    const off = engine.onCredentialsChange(() => seen++);
    const names = async (): Promise<string[]> => (await engine.credentials.list()).map((c) => `${c.name}:${c.grantedTo.join(',')}`);

    expect(await callable(dataDir, 'credentials', 'set', 'vendor-key', '--host', 'api.example.com')).toEqual({ code: 0, stderr: expect.any(String) });
    await until(() => seen === 1, 'the event for the added credential', 5_000);
    expect(await names()).toEqual(['vendor-key:']);

    expect(await callable(dataDir, 'credentials', 'grant', 'vendor-key', 'uses_key')).toEqual({ code: 0, stderr: expect.any(String) });
    await until(() => seen === 2, 'the event for the grant', 5_000);
    expect(await names()).toEqual(['vendor-key:uses_key']);

    // Granted again, or a revoke of what was never granted: nothing changed, so no event.
    expect(await callable(dataDir, 'credentials', 'grant', 'vendor-key', 'uses_key')).toEqual({ code: 0, stderr: expect.any(String) });
    expect((await callable(dataDir, 'credentials', 'revoke', 'other-key', 'uses_key')).stderr).toContain('has not been granted credential "other-key"');
    expect(await callable(dataDir, 'credentials', 'revoke', 'vendor-key', 'uses_key')).toEqual({ code: 0, stderr: expect.any(String) });
    await until(() => seen >= 3, 'the event for the revoke', 5_000);
    expect(seen).toBe(3);
    expect(await names()).toEqual(['vendor-key:']);

    expect(await callable(dataDir, 'credentials', 'rm', 'vendor-key')).toEqual({ code: 0, stderr: expect.any(String) });
    await until(() => seen === 4, 'the event for the removal', 5_000);
    expect(await names()).toEqual([]);

    // Unsubscribed: later changes are not reported.
    off();
    expect(await callable(dataDir, 'credentials', 'set', 'late-key', '--host', 'api.example.com')).toEqual({ code: 0, stderr: expect.any(String) });
    await new Promise((r) => setTimeout(r, 600));
    expect(seen).toBe(4);
  }, 120_000);

  it("the engine's own changes are reported too, and a refused save reports nothing", async () => {
    const dataDir = s.dir('callable-credwatch-');
    const engine = s.engine(createEngine({ dataDir, env: ENV }));
    let seen = 0;
    engine.onCredentialsChange(() => seen++);
    await engine.credentials.set({ name: 'own-key', hosts: ['api.example.com'], placement: { kind: 'header', header: 'X-Key', template: '{secret}' } }, undefined);
    await until(() => seen === 1, 'the event for the engine’s own save', 5_000);
    await expect(engine.credentials.set({ name: 'own-key', hosts: [] }, undefined)).rejects.toThrow(/credential: hosts/);
    await new Promise((r) => setTimeout(r, 600));
    expect(seen).toBe(1);
  });
});
