import { useState, type FormEvent } from 'react';
import type { FunctionSummary, McpStatus } from '../../../../src-preload/contract.ts';
import type { ProfileSpec } from '../../../../src-preload/model.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { ConfirmDelete } from '../../components/ConfirmDelete.tsx';
import { toast } from '../../store/app.ts';

/** Profiles: the list, and the form that creates or edits one. */
interface ProfileDraft {
  name: string;
  functions: string[];
  metaTools: boolean;
  isNew: boolean;
}

export function ProfilesCard(props: { profiles: ProfileSpec[]; functions: FunctionSummary[]; status: McpStatus | undefined; onChange: () => Promise<void> }) {
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
                  <ConfirmDelete asking={confirming === p.name} onAsk={() => setConfirming(p.name)} onCancel={() => setConfirming(undefined)} onConfirm={() => void remove(p.name)}>
                    <button onClick={() => open({ ...p, functions: [...p.functions], isNew: false })}>Edit</button>
                  </ConfirmDelete>
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
