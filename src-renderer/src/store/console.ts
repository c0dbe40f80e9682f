import { app } from './app.ts';
import { createStore } from './store.ts';

/** Arguments handed to the test console by another view (History's "Re-run"); consumed once run. */
export const consoleRequest = createStore<{ args: unknown; run: boolean }>({ args: undefined, run: false });

/** Opens the test console with these arguments and runs them. */
export function rerun(args: unknown): void {
  consoleRequest.set({ args, run: true });
  app.set({ tab: 'console' });
}
