import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { openStudio, type Studio } from './harness.ts';
import { StudioPage } from './studioPage.ts';

// What the engine reports that no call returns reaches the window, not only the engine's stderr.
describe("the engine's own reports in the window", () => {
  let studio: Studio;
  let ui: StudioPage;

  beforeAll(async () => {
    studio = await openStudio();
    ui = new StudioPage(studio.page);
  }, 60_000);

  afterAll(async () => {
    await studio?.close();
  });

  it('a database moved to a newer schema by another version is said in the window, and can be dismissed', async () => {
    await studio.call('functions:save', { spec: { name: 'echo' }, source: 'export default ({ text }) => ({ echo: text })' });
    await ui.functionItem('echo').waitFor();
    // Another version of Callable Studio migrates the database while the studio runs.
    const other = new Database(join(studio.dataDir, DATABASE_FILE));
    other.pragma(`user_version = ${(other.pragma('user_version', { simple: true }) as number) + 1}`);
    other.close();

    // The next run is refused (the engine will not record rows of the old shape) and says why.
    await expect(studio.call('runs:start', { name: 'echo', args: { text: 'x' }, token: 'notice-run' })).rejects.toMatchObject({
      code: 'schema_changed',
      message: expect.stringContaining('was changed by another version of Callable Studio'),
    });
    const notices = ui.page.getByTestId('engine-notices');
    await expect.poll(() => notices.textContent()).toMatch(/the database \S+callable\.db was changed by another version of Callable Studio/);
    await ui.screenshot('10-engine-notice');
    await notices.getByRole('button', { name: 'Dismiss this notice' }).click();
    await expect.poll(() => notices.count()).toBe(0);
  });
});
