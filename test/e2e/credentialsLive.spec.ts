import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CALLABLE_COMMAND } from '../support/callable.ts';
import { studioSession } from './fixture.ts';

/** The real `callable` command in its own process, on the studio's data folder; `stdin` is written and closed. */
function callable(dataDir: string, args: string[], stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, ...args, '--data-dir', dataDir], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/** What another process changes shows within ~2 s (the engine polls every 250 ms); 5 s leaves room on a busy machine. */
const LIVE = { timeout: 5_000 };

// The Credentials page follows credentials and grants changed by the CLI in another process, without a reload.
describe('the Credentials page while the CLI changes credentials', () => {
  const session = studioSession();

  it('shows an added credential, a grant, a revoke and a removal made by `callable credentials`', async () => {
    await session.studio.call('functions:save', { spec: { name: 'uses_live', allowedHosts: ['api.example.com'], credentials: ['live-key'] }, source: 'export default () => 1' });
    await session.ui.goTo('Credentials');
    await session.ui.page.getByText('No credentials yet. Add one below.').waitFor();
    // Set once in this page: a reload would lose it.
    await session.ui.page.evaluate(() => ((window as unknown as { __sameDocument: boolean }).__sameDocument = true));
    const row = session.ui.page.getByRole('row').filter({ hasText: 'live-key' });

    const added = await callable(session.studio.dataDir, ['credentials', 'set', 'live-key', '--host', 'api.example.com', '--header', 'X-Live', '--template', 'Token {secret}'], 'live-secret\n');
    expect(added).toEqual({ code: 0, stdout: expect.any(String), stderr: '' });
    await expect.poll(() => row.textContent(), LIVE).toContain('X-Live: Token {secret}');
    expect(await row.textContent()).toContain('api.example.com');
    await session.ui.page.getByRole('button', { name: 'Grant live-key to uses_live' }).waitFor(LIVE);

    expect((await callable(session.studio.dataDir, ['credentials', 'grant', 'live-key', 'uses_live'])).code).toBe(0);
    await session.ui.page.getByRole('button', { name: 'Revoke live-key from uses_live' }).waitFor(LIVE);
    await session.ui.screenshot('credentials-live-granted');

    expect((await callable(session.studio.dataDir, ['credentials', 'revoke', 'live-key', 'uses_live'])).code).toBe(0);
    await session.ui.page.getByRole('button', { name: 'Grant live-key to uses_live' }).waitFor(LIVE);

    // Replaced from the CLI: the new placement shows.
    expect((await callable(session.studio.dataDir, ['credentials', 'set', 'live-key', '--host', 'api.example.com', '--query', 'key'], 'other-secret\n')).code).toBe(0);
    await expect.poll(() => row.textContent(), LIVE).toContain('?key={secret}');

    expect((await callable(session.studio.dataDir, ['credentials', 'rm', 'live-key'])).code).toBe(0);
    await session.ui.page.getByText('No credentials yet. Add one below.').waitFor(LIVE);
    expect(await row.count()).toBe(0);

    // And the other way: deleted on the page, after the confirmation, gone for the CLI.
    expect((await callable(session.studio.dataDir, ['credentials', 'set', 'live-key', '--host', 'api.example.com'], 'third-secret\n')).code).toBe(0);
    await row.getByRole('button', { name: 'Delete' }).click(LIVE);
    expect(await row.textContent()).toContain('Really delete? 1 function uses it.');
    await row.getByRole('button', { name: 'Cancel' }).click();
    await row.getByRole('button', { name: 'Edit' }).waitFor();
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: 'Delete' }).click();
    await session.ui.page.getByText('No credentials yet. Add one below.').waitFor(LIVE);
    expect((await callable(session.studio.dataDir, ['credentials', 'list'])).stdout).toContain('No credentials yet');

    expect(await session.ui.page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
    expect(session.studio.pageErrors).toEqual([]);
  });
});
