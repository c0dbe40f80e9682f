import { useState } from 'react';
import type { CredentialView } from '../../../../src-preload/contract.ts';
import { asUiError, studio, type UiError } from '../../api/studio.ts';
import { toast } from '../../store/app.ts';

/** An OAuth credential's state: connected (as whom, which scopes, until when), needs reconnect, or not connected; and why the last refresh failed. */
export function OAuthState({ c }: { c: CredentialView }) {
  return (
    <div className="cred-oauth" data-testid={`oauth-state-${c.name}`}>
      {c.state === 'connected' ? (
        <span className="badge ok">connected</span>
      ) : c.state === 'needs_reconnect' ? (
        <span className="badge err" title="The authorization server refused the grant: connect again">
          needs reconnect
        </span>
      ) : (
        <span className="badge err">not connected</span>
      )}
      {c.state === 'connected' && c.account && <div>as {c.account}</div>}
      {c.scopes && c.scopes.length > 0 && <div className="mono">scopes: {c.scopes.join(' ')}</div>}
      {c.state === 'connected' && c.expiresAt && (
        <div className="muted" title="The engine refreshes the access token before it expires">
          token expires {new Date(c.expiresAt).toLocaleTimeString()}
        </div>
      )}
      {c.lastRefreshError && (
        <div className="error-text" title={`at ${new Date(c.lastRefreshError.at).toLocaleString()}`}>
          Last refresh failed: {c.lastRefreshError.message}
        </div>
      )}
    </div>
  );
}

/**
 * Connect (with the client id the first time), Reconnect and Disconnect. Connect waits for the
 * sign-in, which the engine opens in the system browser, and can be cancelled.
 */
export function OAuthActions({ c, onChanged }: { c: CredentialView; onChanged: () => Promise<void> }) {
  const [waiting, setWaiting] = useState(false);
  const [clientId, setClientId] = useState('');
  const [error, setError] = useState<UiError>();
  const needsClient = !c.clientId;
  const connected = c.state === 'connected';

  async function connect(): Promise<void> {
    if (needsClient && !clientId.trim()) {
      setError({ code: 'bad_input', message: 'Give the client id registered with the authorization server.' });
      return;
    }
    setWaiting(true);
    setError(undefined);
    try {
      const info = await studio.credentials.connect(needsClient ? { name: c.name, clientId: clientId.trim() } : { name: c.name });
      toast(`Connected ${c.name}${info.account ? ` as ${info.account}` : ''}`);
      await onChanged();
    } catch (e) {
      const why = asUiError(e);
      if (why.code !== 'cancelled' && !why.message.includes('connect was cancelled')) setError(why);
    } finally {
      setWaiting(false);
    }
  }

  async function disconnect(): Promise<void> {
    setError(undefined);
    try {
      const { note } = await studio.credentials.disconnect({ name: c.name });
      toast(`Disconnected ${c.name}${note ? `: ${note}` : ''}`);
      await onChanged();
    } catch (e) {
      setError(asUiError(e));
    }
  }

  if (waiting) {
    return (
      <div className="cred-oauth-actions">
        <span className="muted" role="status">
          {c.grant === 'client_credentials' ? 'Connecting…' : 'Waiting for the sign-in in your browser…'}
        </span>
        <button onClick={() => void studio.credentials.cancelConnect({ name: c.name })} aria-label={`Cancel connecting ${c.name}`}>
          Cancel
        </button>
      </div>
    );
  }
  return (
    <div className="cred-oauth-actions">
      {needsClient && (
        <input aria-label={`Client id for ${c.name}`} value={clientId} onChange={(e) => setClientId(e.target.value)} placeholder="client id" spellCheck={false} autoComplete="off" />
      )}
      <button className={connected ? undefined : 'primary'} onClick={() => void connect()} aria-label={`${connected || c.state === 'needs_reconnect' ? 'Reconnect' : 'Connect'} ${c.name}`}>
        {connected || c.state === 'needs_reconnect' ? 'Reconnect' : 'Connect'}
      </button>
      {c.state !== 'not_connected' && (
        <button onClick={() => void disconnect()} aria-label={`Disconnect ${c.name}`} title="Revoke the grant at the server and forget the tokens; the credential stays">
          Disconnect
        </button>
      )}
      {error && (
        <p className="error-text" role="alert">
          {error.message}
        </p>
      )}
    </div>
  );
}
