import type { EngineStatus } from '../../../../src-preload/contract.ts';
import { studio } from '../../api/studio.ts';
import { refreshFunctions } from '../../store/app.ts';
import { createStore } from '../../store/store.ts';

/** The engine process as main reports it; taken as ready until main says otherwise. */
export const engineStatus = createStore<EngineStatus>({ state: 'ready', message: '' });

// Subscribed as the module loads, before the first render, so main's first report is not missed.
studio.on('engine:status', (status) => {
  const recovered = status.state === 'ready' && engineStatus.get().state !== 'ready';
  engineStatus.set(status);
  // Calls made while the engine was down failed: show what the restarted engine holds.
  if (recovered) refreshFunctions().catch(() => {});
});
