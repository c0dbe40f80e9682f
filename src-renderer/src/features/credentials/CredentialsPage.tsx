import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react';
import type { CredentialView } from '../../../../src-preload/contract.ts';
import type { CredentialPlacement, CredentialSpec } from '../../../../src-preload/model.ts';
import { asUiError, studio, type UiError } from '../../api/studio.ts';
import { ConfirmDelete } from '../../components/ConfirmDelete.tsx';
import { toast } from '../../store/app.ts';
import { OAuthActions, OAuthConnectForm, OAuthState } from './OAuthControls.tsx';
import './credentials.css';

type Store = 'keychain' | 'env' | 'memory';

interface Form {
  name: string;
  hosts: string;
  kind: CredentialPlacement['kind'];
  header: string;
  template: string;
  param: string;
  /** Write-only: typed here, sent once, never loaded from main. */
  secret: string;
}

const EMPTY: Form = { name: '', hosts: '', kind: 'header', header: 'Authorization', template: 'Bearer {secret}', param: '', secret: '' };

// Electron's context bridge drops custom error properties, so the code may be gone: the message still says it.
const isKeychainError = (e: UiError | undefined): boolean =>
  !!e && (e.code.startsWith('keychain_') || /No OS keychain|the keychain is (locked|not answering)/.test(e.message));

/** The banner's headline for a keychain problem: locked, not answering, or not there at all. */
function keychainHeadline(e: UiError): string {
  if (e.code === 'keychain_locked' || e.message.includes('the keychain is locked')) return 'The OS keychain is locked: unlock it and retry. Until then secrets cannot be stored or read, and functions using them fail.';
  if (e.code === 'keychain_not_answering' || e.message.includes('the keychain is not answering')) return 'The OS keychain is not answering: secrets cannot be stored or read, and functions using them fail.';
  return 'The OS keychain is unavailable: secrets cannot be stored or read, and functions using them fail.';
}

const envVariable = (name: string): string => `CALLABLE_SECRET_${(name.trim() || '<NAME>').toUpperCase().replace(/-/g, '_')}`;

function formOf(c: CredentialView): Form {
  const p = c.placement;
  return {
    ...EMPTY,
    name: c.name,
    hosts: c.hosts.join('\n'),
    kind: p.kind,
    ...(p.kind === 'header' ? { header: p.header, template: p.template } : { param: p.param }),
  };
}

function specOf(form: Form): CredentialSpec | string {
  const name = form.name.trim();
  const hosts = form.hosts.split(/[\s,]+/).filter(Boolean);
  if (!name) return 'Give the credential a name.';
  if (hosts.length === 0) return 'List at least one host the secret may be sent to.';
  if (form.kind === 'query') {
    if (!form.param.trim()) return 'Give the query parameter name.';
    return { name, hosts, placement: { kind: 'query', param: form.param.trim() } };
  }
  if (!form.header.trim()) return 'Give the header name.';
  if (!form.template.includes('{secret}')) return 'The template must contain {secret}, e.g. "Bearer {secret}".';
  return { name, hosts, placement: { kind: 'header', header: form.header.trim(), template: form.template } };
}

export function CredentialsPage() {
  const [credentials, setCredentials] = useState<CredentialView[]>();
  const [store, setStore] = useState<Store>();
  const [presets, setPresets] = useState<string[]>([]);
  const [loadError, setLoadError] = useState<UiError>();
  const [actionError, setActionError] = useState<UiError>();

  const refresh = useCallback(async () => {
    try {
      const res = await studio.credentials.list({});
      setCredentials(res.credentials);
      setStore(res.store);
      setPresets(res.oauthPresets);
      setLoadError(undefined);
    } catch (e) {
      setLoadError(asUiError(e));
    }
  }, []);

  useEffect(() => {
    void refresh();
    // usedBy follows the functions' settings; credentials and grants may change in another process (the CLI).
    const offCatalog = studio.on('catalog:changed', () => void refresh());
    const offCredentials = studio.on('credentials:changed', () => void refresh());
    return () => {
      offCatalog();
      offCredentials();
    };
  }, [refresh]);

  const [form, setForm] = useState<Form>(EMPTY);
  const [formError, setFormError] = useState<UiError>();
  const [saving, setSaving] = useState(false);
  const [confirming, setConfirming] = useState<string>();

  const existing = credentials?.find((c) => c.name === form.name.trim());
  const edit = (patch: Partial<Form>): void => setForm((f) => ({ ...f, ...patch }));
  const formRef = useRef<HTMLFormElement>(null);
  const startEdit = (next: Form): void => {
    setForm(next);
    setFormError(undefined);
    formRef.current?.scrollIntoView({ behavior: 'smooth', block: 'nearest' });
  };

  async function save(e: FormEvent): Promise<void> {
    e.preventDefault();
    const spec = specOf(form);
    if (typeof spec === 'string') {
      setFormError({ code: 'bad_input', message: spec });
      return;
    }
    setSaving(true);
    setFormError(undefined);
    try {
      // An empty secret is left out: replacing then keeps the stored one.
      const secret = store !== 'env' && form.secret !== '' ? form.secret : undefined;
      await studio.credentials.set(secret === undefined ? { spec } : { spec, secret });
      toast(`Saved credential ${spec.name}`);
      setForm(EMPTY);
      await refresh();
    } catch (err) {
      setFormError(asUiError(err));
    } finally {
      setSaving(false);
    }
  }

  async function remove(name: string): Promise<void> {
    setConfirming(undefined);
    setActionError(undefined);
    try {
      await studio.credentials.delete({ name });
      toast(`Deleted credential ${name}`);
      if (form.name.trim() === name) setForm(EMPTY);
      await refresh();
    } catch (err) {
      setActionError(asUiError(err));
    }
  }

  async function setGrant(name: string, fn: string, grant: boolean): Promise<void> {
    setActionError(undefined);
    try {
      if (grant) await studio.credentials.grant({ name, function: fn });
      else await studio.credentials.revoke({ name, function: fn });
      toast(grant ? `Granted ${name} to ${fn}` : `Revoked ${name} from ${fn}`);
      await refresh();
    } catch (err) {
      setActionError(asUiError(err));
    }
  }

  // Why the secrets could not be read (the list itself still loads): said once, in the banner.
  const secretProblem = credentials?.find((c) => c.secretProblem)?.secretProblem;
  const keychainError = [loadError, actionError, formError].find(isKeychainError) ?? secretProblem;

  return (
    <div className="page credentials">
      <h2>Credentials</h2>
      <p className="muted">
        A credential is a secret that functions may send, only to the hosts listed here. Functions never see it: it is added to their
        requests on the way out.
      </p>

      {keychainError && (
        <div className="card banner-error" role="alert">
          <strong>{keychainHeadline(keychainError)}</strong>
          <p>{keychainError.message}</p>
        </div>
      )}
      {store === 'env' && (
        <div className="card banner-info">
          Secrets come from environment variables (<span className="mono">CALLABLE_SECRETS=env</span>): each credential reads{' '}
          <span className="mono">CALLABLE_SECRET_&lt;NAME&gt;</span> (name upper-cased, - as _). The secret field is not used; only hosts and
          placement are saved here.
        </div>
      )}
      {store === 'memory' && <div className="card banner-info">Secrets are kept in memory only and are lost when the app quits.</div>}

      {loadError && !isKeychainError(loadError) && <p className="error-text" role="alert">Could not load credentials: {loadError.message}</p>}
      {actionError && !isKeychainError(actionError) && <p className="error-text" role="alert">{actionError.message}</p>}

      <div className="card">
        {credentials === undefined ? (
          !loadError && <p className="muted">Loading…</p>
        ) : credentials.length === 0 ? (
          <p className="muted">No credentials yet. Add one below.</p>
        ) : (
          <table className="grid">
            <thead>
              <tr>
                <th>Name</th>
                <th>Hosts</th>
                <th>Placement</th>
                <th>Secret</th>
                <th>Used by</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {credentials.map((c) => (
                <tr key={c.name}>
                  <td className="mono">{c.name}</td>
                  <td className="mono">
                    {c.hosts.map((h) => (
                      <div key={h}>{h}</div>
                    ))}
                  </td>
                  <td className="mono">
                    {c.kind === 'oauth'
                      ? `OAuth 2 (${c.grant === 'client_credentials' ? 'client credentials' : c.grant === 'device' ? 'device' : 'sign-in'})`
                      : c.placement.kind === 'header'
                        ? `${c.placement.header}: ${c.placement.template}`
                        : `?${c.placement.param}={secret}`}
                  </td>
                  <td>{c.kind === 'oauth' ? <OAuthState c={c} /> : <SecretBadge has={c.hasSecret} store={store} name={c.name} />}</td>
                  <td>
                    {c.usedBy.length === 0 ? (
                      <span className="muted">no function</span>
                    ) : (
                      c.usedBy.map((fn) => <GrantRow key={fn} credential={c.name} fn={fn} granted={c.grantedTo.includes(fn)} onChange={(grant) => void setGrant(c.name, fn, grant)} />)
                    )}
                  </td>
                  <td className="cred-actions">
                    {c.kind === 'oauth' && <OAuthActions c={c} onChanged={refresh} />}
                    <ConfirmDelete
                      asking={confirming === c.name}
                      onAsk={() => setConfirming(c.name)}
                      onCancel={() => setConfirming(undefined)}
                      onConfirm={() => void remove(c.name)}
                      note={c.usedBy.length > 0 ? `${c.usedBy.length} function${c.usedBy.length === 1 ? '' : 's'} use${c.usedBy.length === 1 ? 's' : ''} it.` : undefined}
                      askTitle={`Delete ${c.name}`}
                      confirmTitle={`Delete ${c.name} and its secret`}
                    >
                      {c.kind !== 'oauth' && (
                        <button onClick={() => startEdit(formOf(c))} title={`Edit or replace ${c.name}`}>
                          Edit
                        </button>
                      )}
                    </ConfirmDelete>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>

      <form ref={formRef} className="card cred-form" onSubmit={(e) => void save(e)} noValidate aria-labelledby="cred-form-title">
        <h3 id="cred-form-title">{existing ? `Replace ${existing.name}` : 'Add a credential'}</h3>
        <div className="field">
          <label htmlFor="cred-name">Credential name</label>
          <input id="cred-name" value={form.name} onChange={(e) => edit({ name: e.target.value })} placeholder="deepl" autoComplete="off" spellCheck={false} />
          <span className="hint">Lower-case letters, digits, _ and -. Saving under an existing name replaces that credential.</span>
        </div>
        <div className="field">
          <label htmlFor="cred-hosts">Hosts</label>
          <textarea id="cred-hosts" rows={3} value={form.hosts} onChange={(e) => edit({ hosts: e.target.value })} placeholder={'api.deepl.com\n*.example.com'} spellCheck={false} />
          <span className="hint">One per line or comma separated. The secret is only ever sent to these hosts.</span>
        </div>
        <div className="field">
          <label htmlFor="cred-kind">Placement</label>
          <select id="cred-kind" value={form.kind} onChange={(e) => edit({ kind: e.target.value as Form['kind'] })}>
            <option value="header">Request header</option>
            <option value="query">URL query parameter</option>
          </select>
        </div>
        {form.kind === 'header' ? (
          <div className="row cred-placement">
            <div className="field">
              <label htmlFor="cred-header">Header</label>
              <input id="cred-header" value={form.header} onChange={(e) => edit({ header: e.target.value })} spellCheck={false} />
            </div>
            <div className="field cred-grow">
              <label htmlFor="cred-template">Template</label>
              <input id="cred-template" value={form.template} onChange={(e) => edit({ template: e.target.value })} spellCheck={false} />
              <span className="hint">Must contain {'{secret}'}, e.g. "Bearer {'{secret}'}" or "DeepL-Auth-Key {'{secret}'}".</span>
            </div>
          </div>
        ) : (
          <div className="field">
            <label htmlFor="cred-param">Query parameter</label>
            <input id="cred-param" value={form.param} onChange={(e) => edit({ param: e.target.value })} placeholder="api_key" spellCheck={false} />
          </div>
        )}
        {store === 'env' ? (
          <p className="muted">
            Secret: set <span className="mono">{envVariable(form.name)}</span> in the environment of Callable Studio and of every MCP client that runs it.
          </p>
        ) : (
          <div className="field">
            <label htmlFor="cred-secret">Secret</label>
            <input
              id="cred-secret"
              type="password"
              value={form.secret}
              onChange={(e) => edit({ secret: e.target.value })}
              autoComplete="new-password"
              spellCheck={false}
              placeholder={existing ? 'leave empty to keep the stored secret' : ''}
            />
            <span className="hint">
              {existing ? 'Leave empty to keep the stored secret. ' : ''}
              {store === 'memory' ? 'Kept in memory' : 'Stored in the OS keychain'}; it is never shown again.
            </span>
          </div>
        )}
        {formError && !isKeychainError(formError) && (
          <p className="error-text" role="alert">
            {formError.message}
          </p>
        )}
        <div className="row">
          <button type="submit" className="primary" disabled={saving}>
            Save credential
          </button>
          {(form.name || form.hosts || form.secret) && (
            <button type="button" onClick={() => startEdit(EMPTY)}>
              Clear
            </button>
          )}
        </div>
      </form>
      {store !== undefined && store !== 'env' && <OAuthConnectForm presets={presets} onChanged={refresh} />}
    </div>
  );
}

/** A function that lists the credential: granted (it may use it) or not (its runs are refused it), and the switch. */
function GrantRow({ credential, fn, granted, onChange }: { credential: string; fn: string; granted: boolean; onChange: (grant: boolean) => void }) {
  return (
    <div className="row cred-grant">
      <span className="mono">{fn}</span>
      {granted ? (
        <>
          <span className="badge ok">granted</span>
          <button onClick={() => onChange(false)} aria-label={`Revoke ${credential} from ${fn}`} title={`${fn} will no longer be sent ${credential}`}>
            Revoke
          </button>
        </>
      ) : (
        <>
          <span className="badge err" title={`${fn} lists ${credential}, but nothing is sent until you grant it`}>
            not granted
          </span>
          <button onClick={() => onChange(true)} aria-label={`Grant ${credential} to ${fn}`} title={`Let ${fn} send ${credential} to its hosts`}>
            Grant
          </button>
        </>
      )}
    </div>
  );
}

function SecretBadge({ has, store, name }: { has: CredentialView['hasSecret']; store: Store | undefined; name: string }) {
  if (has === true) return <span className="badge ok">set</span>;
  if (has === 'unknown') return <span className="badge" title="The secret store could not be read">unknown</span>;
  return (
    <span className="badge err" title={store === 'env' ? `Set ${envVariable(name)}` : 'Edit it and give the secret'}>
      not set
    </span>
  );
}
