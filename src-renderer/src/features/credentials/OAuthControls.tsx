import { useEffect, useState, type FormEvent } from 'react';
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

/** What a connect that failed says, or nothing when the person cancelled it (the context bridge may drop the code: the message still says it). */
function unlessCancelled(error: unknown): UiError | undefined {
  const why = asUiError(error);
  return why.code === 'cancelled' || why.message.includes('connect was cancelled') ? undefined : why;
}

type DeviceCode = { verificationUri: string; verificationUriComplete?: string | undefined; userCode: string };

/**
 * While `name` connects by the device grant: the code to enter, and where, once the server gave it.
 * Listens from mount, not from the connect: the code may come before a listener added after it.
 */
function useDeviceCode(name: string | undefined, waiting: boolean): DeviceCode | undefined {
  const [code, setCode] = useState<DeviceCode & { name: string }>();
  useEffect(() => studio.on('credentials:deviceCode', (info) => setCode(info)), []);
  useEffect(() => {
    if (!waiting) setCode(undefined);
  }, [waiting]);
  return waiting && code?.name === name ? code : undefined;
}

/** What the person does while a connect waits: sign in in the browser, or enter the device code. */
function WaitingFor({ grant, device }: { grant: string | undefined; device: DeviceCode | undefined }) {
  if (grant === 'client_credentials') return <span className="muted" role="status">Connecting…</span>;
  if (grant !== 'device') return <span className="muted" role="status">Waiting for the sign-in in your browser…</span>;
  return (
    <span role="status" data-testid="device-code">
      {device ? (
        <>
          On any device, open <span className="mono">{device.verificationUri}</span> and enter the code <strong className="mono">{device.userCode}</strong>
          {device.verificationUriComplete && <span className="mono cred-device-link"> ({device.verificationUriComplete})</span>}
        </>
      ) : (
        'Asking the server for a device code…'
      )}
    </span>
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
  const device = useDeviceCode(c.name, waiting);

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
    } catch (err) {
      setError(unlessCancelled(err));
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
        <WaitingFor grant={c.grant} device={device} />
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

interface AccountForm {
  name: string;
  /** A preset's name, or '' for a server given by its issuer URL. */
  provider: string;
  issuer: string;
  clientId: string;
  /** Write-only: sent once with the connect, kept in the keychain, never loaded back. */
  clientSecret: string;
  hosts: string;
  scopes: string;
  grant: 'code' | 'device' | 'client_credentials';
}

const NO_ACCOUNT: AccountForm = { name: '', provider: '', issuer: '', clientId: '', clientSecret: '', hosts: '', scopes: '', grant: 'code' };

/** Connects a new OAuth 2 account: a provider preset or an issuer URL, the client, and the grant. */
export function OAuthConnectForm({ presets, onChanged }: { presets: string[]; onChanged: () => Promise<void> }) {
  const [form, setForm] = useState<AccountForm>(NO_ACCOUNT);
  // The name being connected, kept apart from the field the person may go on editing meanwhile.
  const [connecting, setConnecting] = useState<string>();
  const waiting = connecting !== undefined;
  const [error, setError] = useState<UiError>();
  const edit = (patch: Partial<AccountForm>): void => setForm((f) => ({ ...f, ...patch }));
  const device = useDeviceCode(connecting, waiting);
  const list = (text: string): string[] => text.split(/[\s,]+/).filter(Boolean);

  function problem(): string | undefined {
    if (!form.name.trim()) return 'Give the credential a name.';
    if (!form.provider && !form.issuer.trim()) return 'Pick a provider, or give the issuer URL of the authorization server.';
    if (!form.clientId.trim()) return 'Give the client id registered with the authorization server.';
    if (form.grant === 'client_credentials' && !form.clientSecret) return 'Client credentials need the client secret.';
    if (!form.provider && list(form.hosts).length === 0) return 'List at least one host the tokens may be sent to.';
    return undefined;
  }

  async function connect(e: FormEvent): Promise<void> {
    e.preventDefault();
    const wrong = problem();
    if (wrong) {
      setError({ code: 'bad_input', message: wrong });
      return;
    }
    const name = form.name.trim();
    setConnecting(name);
    setError(undefined);
    try {
      const info = await studio.credentials.connect({
        name,
        clientId: form.clientId.trim(),
        grant: form.grant,
        ...(form.provider ? { preset: form.provider } : { issuer: form.issuer.trim() }),
        ...(form.clientSecret ? { clientSecret: form.clientSecret } : {}),
        ...(list(form.hosts).length > 0 ? { hosts: list(form.hosts) } : {}),
        ...(list(form.scopes).length > 0 ? { scopes: list(form.scopes) } : {}),
      });
      toast(`Connected ${name}${info.account ? ` as ${info.account}` : ''}`);
      setForm(NO_ACCOUNT);
      await onChanged();
    } catch (err) {
      setError(unlessCancelled(err));
    } finally {
      setConnecting(undefined);
    }
  }

  return (
    <form className="card cred-form" onSubmit={(e) => void connect(e)} noValidate aria-label="Connect an OAuth 2 account">
      <h3>Connect an OAuth 2 account</h3>
      <p className="muted">The engine keeps the tokens in the OS keychain and refreshes them; functions never see them.</p>
      <div className="field">
        <label htmlFor="oauth-name">Credential name</label>
        <input id="oauth-name" value={form.name} onChange={(e) => edit({ name: e.target.value })} placeholder="google" autoComplete="off" spellCheck={false} />
      </div>
      <div className="field">
        <label htmlFor="oauth-provider">Provider</label>
        <select id="oauth-provider" value={form.provider} onChange={(e) => edit({ provider: e.target.value })}>
          <option value="">Another server (issuer URL)</option>
          {presets.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </div>
      {!form.provider && (
        <div className="field">
          <label htmlFor="oauth-issuer">Issuer URL</label>
          <input id="oauth-issuer" value={form.issuer} onChange={(e) => edit({ issuer: e.target.value })} placeholder="https://auth.example.com" spellCheck={false} />
          <span className="hint">Found by OpenID or RFC 8414 discovery.</span>
        </div>
      )}
      <div className="field">
        <label htmlFor="oauth-grant">Grant</label>
        <select id="oauth-grant" value={form.grant} onChange={(e) => edit({ grant: e.target.value as AccountForm['grant'] })}>
          <option value="code">Sign in in the browser (authorization code)</option>
          <option value="device">Device code (enter a code on another device)</option>
          <option value="client_credentials">Client credentials (server to server)</option>
        </select>
      </div>
      <div className="field">
        <label htmlFor="oauth-client-id">Client id</label>
        <input id="oauth-client-id" value={form.clientId} onChange={(e) => edit({ clientId: e.target.value })} autoComplete="off" spellCheck={false} />
      </div>
      <div className="field">
        <label htmlFor="oauth-client-secret">Client secret</label>
        <input id="oauth-client-secret" type="password" value={form.clientSecret} onChange={(e) => edit({ clientSecret: e.target.value })} autoComplete="new-password" spellCheck={false} />
        <span className="hint">Needed for client credentials and by confidential clients; stored in the OS keychain, never shown again.</span>
      </div>
      <div className="field">
        <label htmlFor="oauth-hosts">Hosts</label>
        <textarea id="oauth-hosts" rows={2} value={form.hosts} onChange={(e) => edit({ hosts: e.target.value })} placeholder={form.provider ? "the provider's API hosts" : 'api.example.com'} spellCheck={false} />
      </div>
      <div className="field">
        <label htmlFor="oauth-scopes">Scopes</label>
        <input id="oauth-scopes" value={form.scopes} onChange={(e) => edit({ scopes: e.target.value })} placeholder={form.provider ? "the provider's default scopes" : 'read write'} spellCheck={false} />
      </div>
      {error && (
        <p className="error-text" role="alert">
          {error.message}
        </p>
      )}
      <div className="row">
        {waiting ? (
          <>
            <WaitingFor grant={form.grant} device={device} />
            <button type="button" onClick={() => connecting !== undefined && void studio.credentials.cancelConnect({ name: connecting })}>
              Cancel
            </button>
          </>
        ) : (
          <button type="submit" className="primary">
            Connect
          </button>
        )}
      </div>
    </form>
  );
}
