import type { EngineNotice } from '../../../../src-preload/contract.ts';
import { studio } from '../../api/studio.ts';
import { createStore } from '../../store/store.ts';

/** The newest reports kept on screen; older ones are on the engine's stderr. */
export const MAX_NOTICES = 5;

/** The engine's own reports not dismissed yet, newest last. */
export const engineNotices = createStore<{ notices: EngineNotice[] }>({ notices: [] });

studio.on('engine:notice', (notice) => {
  engineNotices.set((s) => ({ notices: [...s.notices, notice].slice(-MAX_NOTICES) }));
});

export function dismissNotice(notice: EngineNotice): void {
  engineNotices.set((s) => ({ notices: s.notices.filter((n) => n !== notice) }));
}
