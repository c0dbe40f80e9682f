import { engineStatus } from './engineStatus.ts';
import './engine.css';

/** Says why the studio cannot answer while the engine process is starting, restarting or unavailable. */
export function EngineBanner() {
  const { state, message } = engineStatus.use();
  if (state === 'ready') return null;
  return (
    <div className={`engine-banner ${state}`} role={state === 'unavailable' ? 'alert' : 'status'} data-testid="engine-banner">
      {message}
    </div>
  );
}
