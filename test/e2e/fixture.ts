import { afterAll, beforeAll } from 'vitest';
import { openStudio, type Studio } from './harness.ts';
import { StudioPage } from './studioPage.ts';

/**
 * The studio every e2e spec drives: the built renderer in Chromium, bound to a real engine process
 * on a fresh data folder (or `dataDir`), opened before the calling describe block's tests and closed
 * after them. Read `session.studio` and `session.ui` inside hooks and tests (set once the block starts);
 * a spec's own beforeAll registered after this call runs once the studio is open.
 */
export function studioSession(options: Parameters<typeof openStudio>[0] = {}): { studio: Studio; ui: StudioPage } {
  const session = {} as { studio: Studio; ui: StudioPage };
  beforeAll(async () => {
    session.studio = await openStudio(options);
    session.ui = new StudioPage(session.studio.page);
  }, 60_000);
  afterAll(async () => {
    await session.studio?.close();
  });
  return session;
}
