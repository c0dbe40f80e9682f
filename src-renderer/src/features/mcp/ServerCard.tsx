import { useState, type FormEvent } from 'react';
import type { McpStatus } from '../../../../src-preload/contract.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { toast } from '../../store/app.ts';
import { copy } from './copy.ts';

/** The HTTP server: its state and URL, start/stop on a port, and the bearer token. */
export function ServerCard({ status }: { status: McpStatus | undefined }) {
  const [port, setPort] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const shownPort = port ?? (status ? String(status.port) : '');

  async function act(action: () => Promise<McpStatus>): Promise<void> {
    setBusy(true);
    setError(undefined);
    try {
      // The mcp:status event updates the page; the answer is only checked for a failed start.
      const next = await action();
      if (next.error) setError(next.error);
      else setPort(undefined);
    } catch (e) {
      setError(asUiError(e).message);
    } finally {
      setBusy(false);
    }
  }

  function start(e: FormEvent): void {
    e.preventDefault();
    const n = Number(shownPort);
    if (shownPort.trim() === '' || !Number.isInteger(n) || n < 0 || n > 65535) {
      setError('The port is a whole number from 0 to 65535 (0 picks a free port).');
      return;
    }
    void act(() => studio.mcp.start({ port: n }));
  }

  const state = !status ? 'loading' : status.running ? 'running' : status.error ? 'failed' : 'stopped';
  const shownError = error ?? status?.error;
  return (
    <div className="card">
      <h3>HTTP server</h3>
      <div className="row mcp-status">
        <span className={`badge ${state === 'running' ? 'ok' : state === 'failed' ? 'err' : ''}`}>{state}</span>
        {status?.running && status.url && (
          <>
            <span className="mono">{status.url}</span>
            <button onClick={() => void copy(status.url!, 'URL')}>Copy URL</button>
          </>
        )}
        {status && !status.running && <span className="muted">on {status.host}</span>}
        {status && <span className="muted">{status.auth ? 'clients must send the bearer token' : 'no authentication'}</span>}
      </div>
      {shownError && (
        <p className="error-text" role="alert">
          {shownError}
        </p>
      )}
      <form className="row" onSubmit={start}>
        <label htmlFor="mcp-port">Port</label>
        <input id="mcp-port" className="mcp-port" inputMode="numeric" value={shownPort} onChange={(e) => setPort(e.target.value)} />
        <button type="submit" className="primary" disabled={busy || !status}>
          {status?.running ? 'Restart' : 'Start'}
        </button>
        <button type="button" onClick={() => void act(() => studio.mcp.stop({}))} disabled={busy || !status?.running}>
          Stop
        </button>
      </form>
      {status?.auth && <TokenRow />}
    </div>
  );
}

function TokenRow() {
  const [token, setToken] = useState<string>();
  const [shown, setShown] = useState(false);
  const [error, setError] = useState<string>();

  async function load(regenerate = false): Promise<string | undefined> {
    setError(undefined);
    try {
      const { token: t } = await studio.mcp.token(regenerate ? { regenerate } : {});
      setToken(t);
      return t;
    } catch (e) {
      setError(asUiError(e).message);
      return undefined;
    }
  }

  async function reveal(): Promise<void> {
    if (shown) setShown(false);
    else setShown((await load()) !== undefined);
  }

  async function copyToken(): Promise<void> {
    const t = token ?? (await load());
    if (t !== undefined) await copy(t, 'Token');
  }

  async function regenerate(): Promise<void> {
    if (!window.confirm('Regenerate the bearer token? HTTP clients using the current token stop working until they get the new one.')) return;
    if (await load(true)) toast('New token generated: update your HTTP clients');
  }

  return (
    <div className="mcp-token">
      <div className="row">
        <span className="muted">Bearer token</span>
        <code className="mono mcp-token-value">{shown && token ? token : '•'.repeat(24)}</code>
        <button onClick={() => void reveal()}>{shown ? 'Hide' : 'Reveal'}</button>
        <button onClick={() => void copyToken()}>Copy token</button>
        <button className="danger" onClick={() => void regenerate()}>
          Regenerate
        </button>
      </div>
      {error && (
        <p className="error-text" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
