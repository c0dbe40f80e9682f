import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { REPO } from '../support/callable.ts';
import { cannotMount, holdWriteLock, smallDisk } from '../support/fsFaults.ts';
import { studioSession } from './fixture.ts';
import { openStudio } from './harness.ts';
import { StudioPage } from './studioPage.ts';

// What the engine reports that no call returns reaches the window, not only the engine's stderr.
describe("the engine's own reports in the window", () => {
  const session = studioSession();

  it('a run that waits behind another process\'s write lock is said in the window, and so is its recording once the lock goes', async () => {
    await session.studio.call('functions:save', { spec: { name: 'echo' }, source: 'export default ({ text }) => ({ echo: text })' });
    await session.ui.openFunction('echo');
    // Another process takes the database's write lock and keeps it past the ledger's report threshold (5 s).
    const lock = await holdWriteLock(join(session.studio.dataDir, DATABASE_FILE), 30_000, REPO);
    const result = await session.ui.run({ text: 'behind the lock' });
    await expect.poll(() => result.textContent()).toContain('behind the lock');
    const notices = session.ui.page.getByTestId('engine-notices');
    await expect
      .poll(() => notices.locator('li.warning').textContent(), { timeout: 15_000 })
      .toMatch(/1 run\(s\) \(echo\) wait to be recorded: another process has held the write lock on \S+callable\.db for \d+ s; still trying/);
    lock.release();
    await lock.released;
    // Said as a recovery, not as another fault.
    await expect.poll(() => notices.locator('li.info').textContent(), { timeout: 10_000 }).toMatch(/recorded 1 run\(s\) that had waited to be written to \S+callable\.db/);
    // The run is in the history once recorded.
    expect((await session.studio.call('runs:list', { name: 'echo', limit: 10 })).map((r) => r.args)).toContainEqual({ text: 'behind the lock' });
    for (let n = await notices.locator('li').count(); n > 0; n--) await notices.getByRole('button', { name: 'Dismiss this notice' }).first().click();
    await expect.poll(() => notices.count()).toBe(0);
  }, 40_000);

  it.skipIf(cannotMount !== undefined)(`on a full disk each run not recorded is said, the newest 5 kept, then their recording (skipped unless a tmpfs can be mounted${cannotMount ? `: ${cannotMount}` : ''})`, async () => {
    const disk = smallDisk('16m');
    const full = await openStudio({ dataDir: join(disk.dir, 'data') });
    try {
      const fullUi = new StudioPage(full.page);
      await full.call('functions:save', { spec: { name: 'echo' }, source: 'export default ({ text }) => ({ echo: text })' });
      await fullUi.openFunction('echo');
      disk.fill();
      const notices = full.page.getByTestId('engine-notices');
      for (let run = 1; run <= 6; run++) {
        const result = await fullUi.run({ text: `run ${run}` });
        // The server keeps serving: the run answers though it cannot be recorded.
        await expect.poll(() => result.textContent()).toContain(`run ${run}`);
        await expect
          .poll(() => notices.locator('li.warning').last().textContent(), { timeout: 10_000 })
          .toMatch(new RegExp(`${run} run\\(s\\) \\(echo\\) could not be recorded yet: the disk holding \\S+ is full`));
      }
      // The newest few stay on screen, not every report since the studio opened.
      expect(await notices.locator('li').count()).toBe(5);
      expect(await notices.textContent()).not.toContain('1 run(s) (echo) could not be recorded yet');
      await fullUi.screenshot('12-full-disk-notices');
      disk.unfill();
      await expect.poll(() => notices.locator('li.info').textContent(), { timeout: 10_000 }).toMatch(/recorded 6 run\(s\) that had waited to be written/);
      expect(await notices.locator('li').count()).toBe(5);
    } finally {
      await full.close();
    }
  }, 90_000);

  it('a database moved to a newer schema by another version is said in the window, and can be dismissed', async () => {
    // Another version of Callable Studio migrates the database while the studio runs.
    const other = new Database(join(session.studio.dataDir, DATABASE_FILE));
    other.pragma(`user_version = ${(other.pragma('user_version', { simple: true }) as number) + 1}`);
    other.close();

    // The next run is refused (the engine will not record rows of the old shape) and says why.
    await expect(session.studio.call('runs:start', { name: 'echo', args: { text: 'x' }, token: 'notice-run' })).rejects.toMatchObject({
      code: 'schema_changed',
      message: expect.stringContaining('was changed by another version of Callable Studio'),
    });
    const notices = session.ui.page.getByTestId('engine-notices');
    await expect.poll(() => notices.textContent()).toMatch(/the database \S+callable\.db was changed by another version of Callable Studio/);
    await session.ui.screenshot('10-engine-notice');
    await notices.getByRole('button', { name: 'Dismiss this notice' }).click();
    await expect.poll(() => notices.count()).toBe(0);
  });
});
