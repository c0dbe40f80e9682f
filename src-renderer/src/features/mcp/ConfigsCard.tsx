import { useEffect, useState } from 'react';
import type { ClientConfigs, McpStatus } from '../../../../src-preload/contract.ts';
import type { ProfileSpec } from '../../../../src-preload/model.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { copy } from './copy.ts';

/** "Connect a client": the configuration each MCP client needs, for all functions or one profile. */
export function ConfigsCard({ profiles, status }: { profiles: ProfileSpec[]; status: McpStatus | undefined }) {
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
