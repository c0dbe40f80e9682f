import { useCallback, useEffect, useState, type FormEvent } from 'react';
import type { ClientConfigs, FunctionSummary, McpStatus } from '../../../../src-preload/contract.ts';
import type { ProfileSpec, RunRecord } from '../../../../src-preload/model.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { toast } from '../../store/app.ts';
import { RunCaller, RunDuration, RunOutcome, RunTime } from '../history/HistoryPane.tsx';
import './mcp.css';

async function copy(text: string, what: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    toast(`${what} copied`);
  } catch (e) {
    toast(`Could not copy: ${asUiError(e).message}`, 'error');
  }
}

export function McpPage() {
  const [status, setStatus] = useState<McpStatus>();
  const [profiles, setProfiles] = useState<ProfileSpec[]>([]);
  const [functions, setFunctions] = useState<FunctionSummary[]>([]);

  useEffect(() => {
    let live = true;
    const off = studio.on('mcp:status', setStatus);
    studio.mcp
      .status({})
      .then((s) => live && setStatus(s))
      .catch((e: unknown) => toast(`MCP status: ${asUiError(e).message}`, 'error'));
    return () => {
      live = false;
      off();
    };
  }, []);

  const refreshCatalog = useCallback(async () => {
    try {
      const [p, f] = await Promise.all([studio.profiles.list({}), studio.functions.list({})]);
      setProfiles(p);
      setFunctions(f);
    } catch (e) {
      toast(`Could not load profiles: ${asUiError(e).message}`, 'error');
    }
  }, []);

  useEffect(() => {
    void refreshCatalog();
    return studio.on('catalog:changed', () => void refreshCatalog());
  }, [refreshCatalog]);

  return (
    <div className="page mcp">
      <h2>MCP</h2>
      <ServerCard status={status} />
      <ProfilesCard profiles={profiles} functions={functions} status={status} onChange={refreshCatalog} />
      <ConfigsCard profiles={profiles} status={status} />
      <FeedCard />
    </div>
  );
}

function ServerCard({ status }: { status: McpStatus | undefined }) {
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

interface ProfileDraft {
  name: string;
  functions: string[];
  metaTools: boolean;
  isNew: boolean;
}

function ProfilesCard(props: { profiles: ProfileSpec[]; functions: FunctionSummary[]; status: McpStatus | undefined; onChange: () => Promise<void> }) {
  const { profiles, functions, status, onChange } = props;
  const [draft, setDraft] = useState<ProfileDraft>();
  const [error, setError] = useState<string>();
  const [saving, setSaving] = useState(false);
  const [confirming, setConfirming] = useState<string>();

  const open = (d: ProfileDraft | undefined): void => {
    setDraft(d);
    setError(undefined);
  };

  async function save(e: FormEvent): Promise<void> {
    e.preventDefault();
    if (!draft) return;
    const name = draft.name.trim();
    if (draft.isNew && profiles.some((p) => p.name === name)) {
      setError(`A profile named "${name}" already exists: edit it instead.`);
      return;
    }
    setSaving(true);
    setError(undefined);
    try {
      await studio.profiles.set({ name, functions: draft.functions, metaTools: draft.metaTools });
      toast(`Saved profile ${name}`);
      setDraft(undefined);
      await onChange();
    } catch (err) {
      setError(asUiError(err).message);
    } finally {
      setSaving(false);
    }
  }

  async function remove(name: string): Promise<void> {
    setConfirming(undefined);
    try {
      await studio.profiles.delete({ name });
      toast(`Deleted profile ${name}`);
      if (draft?.name === name) setDraft(undefined);
      await onChange();
    } catch (err) {
      toast(`Could not delete profile ${name}: ${asUiError(err).message}`, 'error');
    }
  }

  const toggle = (fn: string, on: boolean): void =>
    setDraft((d) => d && { ...d, functions: on ? [...d.functions, fn] : d.functions.filter((f) => f !== fn) });

  // Profiles may name functions that do not exist (yet); keep them listed so saving does not drop them.
  const choices = draft ? [...new Set([...functions.map((f) => f.name), ...draft.functions])].sort() : [];
  const enabled = new Map(functions.map((f) => [f.name, f.enabled]));

  return (
    <div className="card">
      <div className="row">
        <h3 className="mcp-grow">Profiles</h3>
        <button onClick={() => open({ name: '', functions: [], metaTools: false, isNew: true })}>New profile</button>
      </div>
      <p className="muted">
        A profile serves a chosen subset of functions: <span className="mono">callable mcp --profile NAME</span> over stdio, or{' '}
        <span className="mono">/mcp/NAME</span> over HTTP. Without a profile, every enabled function is served.
      </p>
      {profiles.length > 0 && (
        <table className="grid">
          <thead>
            <tr>
              <th>Name</th>
              <th>Functions</th>
              <th>Meta-tools</th>
              <th>HTTP</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {profiles.map((p) => (
              <tr key={p.name}>
                <td className="mono">{p.name}</td>
                <td className="mono">{p.functions.length ? p.functions.join(', ') : <span className="muted">none</span>}</td>
                <td>{p.metaTools ? 'yes' : <span className="muted">no</span>}</td>
                <td className="mono">{status?.url ? `${status.url}/${p.name}` : <span className="muted">server stopped</span>}</td>
                <td className="mcp-actions">
                  {confirming === p.name ? (
                    <span className="row">
                      Really delete?
                      <button className="danger" onClick={() => void remove(p.name)}>
                        Delete
                      </button>
                      <button onClick={() => setConfirming(undefined)}>Cancel</button>
                    </span>
                  ) : (
                    <span className="row">
                      <button onClick={() => open({ ...p, functions: [...p.functions], isNew: false })}>Edit</button>
                      <button className="danger" onClick={() => setConfirming(p.name)}>
                        Delete
                      </button>
                    </span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {draft && (
        <form className="mcp-profile-form" onSubmit={(e) => void save(e)}>
          <h3>{draft.isNew ? 'New profile' : `Edit profile ${draft.name}`}</h3>
          {draft.isNew && (
            <div className="field">
              <label htmlFor="profile-name">Profile name</label>
              <input id="profile-name" value={draft.name} onChange={(e) => setDraft({ ...draft, name: e.target.value })} placeholder="translation" spellCheck={false} />
              <span className="hint">Lower-case letters, digits, _ and -.</span>
            </div>
          )}
          <fieldset className="mcp-functions">
            <legend>Functions</legend>
            {choices.length === 0 && <span className="muted">No functions yet.</span>}
            {choices.map((fn) => (
              <label key={fn} className="mcp-check">
                <input type="checkbox" checked={draft.functions.includes(fn)} onChange={(e) => toggle(fn, e.target.checked)} />
                <span className="mono">{fn}</span>
                {enabled.get(fn) === false && <span className="muted"> (disabled)</span>}
                {!enabled.has(fn) && <span className="muted"> (does not exist)</span>}
              </label>
            ))}
          </fieldset>
          <label className="mcp-check">
            <input type="checkbox" checked={draft.metaTools} onChange={(e) => setDraft({ ...draft, metaTools: e.target.checked })} />
            Meta-tools
          </label>
          <p className="hint muted">
            Adds <span className="mono">find_functions</span> and <span className="mono">call_function</span>, so clients that ignore tool-list changes can
            still use functions added later.
          </p>
          {error && (
            <p className="error-text" role="alert">
              {error}
            </p>
          )}
          <div className="row">
            <button type="submit" className="primary" disabled={saving}>
              Save profile
            </button>
            <button type="button" onClick={() => open(undefined)}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </div>
  );
}

function ConfigsCard({ profiles, status }: { profiles: ProfileSpec[]; status: McpStatus | undefined }) {
  const [profile, setProfile] = useState('');
  const [configs, setConfigs] = useState<ClientConfigs>();
  const [error, setError] = useState<string>();
  const selected = profiles.some((p) => p.name === profile) ? profile : '';

  useEffect(() => {
    let live = true;
    studio.mcp
      .configs(selected ? { profile: selected } : {})
      .then((c) => {
        if (!live) return;
        setConfigs(c);
        setError(undefined);
      })
      .catch((e: unknown) => live && setError(asUiError(e).message));
    return () => {
      live = false;
    };
    // The HTTP config follows the server's URL and auth.
  }, [selected, status?.url, status?.auth]);

  return (
    <div className="card">
      <div className="row">
        <h3 className="mcp-grow">Connect a client</h3>
        <label htmlFor="config-profile">Profile</label>
        <select id="config-profile" value={selected} onChange={(e) => setProfile(e.target.value)}>
          <option value="">All enabled functions</option>
          {profiles.map((p) => (
            <option key={p.name} value={p.name}>
              {p.name}
            </option>
          ))}
        </select>
      </div>
      {error && <p className="error-text">{error}</p>}
      {configs && (
        <>
          <p className="muted">
            Over stdio the client starts <span className="mono">{configs.command}</span> itself; Callable Studio need not be open.
          </p>
          <ConfigBlock title="Claude Code" hint="Run in a terminal." text={configs.stdio.claudeCode} />
          <ConfigBlock title="Claude Desktop" hint="Merge into claude_desktop_config.json (Settings → Developer → Edit Config)." text={configs.stdio.claudeDesktop} />
          <ConfigBlock title="Cursor" hint="Merge into ~/.cursor/mcp.json, or .cursor/mcp.json in a project." text={configs.stdio.cursor} />
          <ConfigBlock title="VS Code" hint="Merge into .vscode/mcp.json in a workspace." text={configs.stdio.vscode} />
          <h3>Over HTTP</h3>
          {configs.http ? (
            <>
              <ConfigBlock title="URL" text={configs.http.url} />
              <ConfigBlock
                title="Claude Code (HTTP)"
                hint={status?.auth ? 'Replace <token> with the bearer token above.' : 'Run in a terminal.'}
                text={configs.http.claudeCode}
              />
              <ConfigBlock title="JSON (HTTP)" hint={status?.auth ? 'Replace <token> with the bearer token above.' : undefined} text={configs.http.json} />
            </>
          ) : (
            <p className="muted">Start the HTTP server above to get its configuration.</p>
          )}
        </>
      )}
    </div>
  );
}

function ConfigBlock({ title, hint, text }: { title: string; hint?: string | undefined; text: string }) {
  return (
    <div className="mcp-config">
      <div className="row">
        <strong>{title}</strong>
        {hint && <span className="muted">{hint}</span>}
        <span className="mcp-grow" />
        <button onClick={() => void copy(text, `${title} config`)} aria-label={`Copy ${title} config`}>
          Copy
        </button>
      </div>
      <pre className="code">{text}</pre>
    </div>
  );
}

const FEED_SIZE = 50;

function FeedCard() {
  const [runs, setRuns] = useState<RunRecord[]>([]);
  const [mcpOnly, setMcpOnly] = useState(false);

  useEffect(() => {
    let live = true;
    const add = (more: RunRecord[]): void =>
      setRuns((prev) => {
        const byId = new Map([...prev, ...more].map((r) => [r.id, r]));
        return [...byId.values()].sort((a, b) => Date.parse(b.startedAt) - Date.parse(a.startedAt)).slice(0, FEED_SIZE);
      });
    // Subscribe first: the seed list and the feed may overlap, `add` dedupes by id.
    const off = studio.on('runs:feed', (run) => live && add([run]));
    studio.runs
      .list({ limit: FEED_SIZE })
      .then((list) => live && add(list))
      .catch((e: unknown) => toast(`Could not load recent calls: ${asUiError(e).message}`, 'error'));
    return () => {
      live = false;
      off();
    };
  }, []);

  const shown = mcpOnly ? runs.filter((r) => r.caller === 'mcp') : runs;
  return (
    <div className="card">
      <div className="row">
        <h3 className="mcp-grow">Live calls</h3>
        <label className="mcp-check">
          <input type="checkbox" checked={mcpOnly} onChange={(e) => setMcpOnly(e.target.checked)} />
          MCP calls only
        </label>
      </div>
      <p className="muted">Calls from every process (MCP clients over stdio or HTTP, the CLI, the test console), newest first.</p>
      {shown.length === 0 ? (
        <p className="muted">No calls yet.</p>
      ) : (
        <table className="grid">
          <thead>
            <tr>
              <th>Time</th>
              <th>Function</th>
              <th>Caller</th>
              <th>Outcome</th>
              <th>Duration</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((run) => (
              <tr key={run.id} className={run.caller === 'mcp' ? 'mcp-feed-mcp' : undefined}>
                <td>
                  <RunTime iso={run.startedAt} />
                </td>
                <td className="mono">{run.functionName}</td>
                <td>
                  <RunCaller run={run} />
                </td>
                <td>
                  <RunOutcome run={run} />
                </td>
                <td className="mono">
                  <RunDuration ms={run.durationMs} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
