import { dismissNotice, engineNotices } from './engineNotices.ts';
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

/** What the engine reported that no call returned (runs not recorded yet, a moved schema…), until dismissed. */
export function EngineNotices() {
  const { notices } = engineNotices.use();
  if (notices.length === 0) return null;
  return (
    <ul className="engine-notices" data-testid="engine-notices">
      {notices.map((notice) => (
        <li key={`${notice.at} ${notice.message}`} role="status" className={notice.level}>
          <time dateTime={notice.at}>{new Date(notice.at).toLocaleTimeString()}</time> {notice.message}
          <button onClick={() => dismissNotice(notice)} aria-label="Dismiss this notice" title="Dismiss">
            ×
          </button>
        </li>
      ))}
    </ul>
  );
}
