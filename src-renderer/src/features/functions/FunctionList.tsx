import { useEffect, useRef, useState } from 'react';
import type { OpenApiOperationView, ScaffoldedFunction, TemplateInfo } from '../../../../src-preload/contract.ts';
import { specOf } from '../../../../src-preload/model.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { app, refreshFunctions, setDirty, toast } from '../../store/app.ts';
import { draft, isDirty, loadDraft } from '../../store/draft.ts';

export function FunctionList() {
  const functions = app.use((s) => s.functions);
  const selected = app.use((s) => s.selected);
  const [query, setQuery] = useState('');
  const [dialog, setDialog] = useState<'new' | 'rename' | 'duplicate' | undefined>();
  const current = functions.find((f) => f.name === selected);
  const q = query.toLowerCase();
  const shown = functions.filter((f) => `${f.name} ${f.title ?? ''} ${f.description}`.toLowerCase().includes(q));

  const select = (name: string): void => {
    if (name === selected) return;
    if (isDirty() && !window.confirm('Discard unsaved changes to this function?')) return;
    const previous = draft.get().record?.name;
    if (previous) setDirty(previous, false);
    app.set({ selected: name });
  };

  const act = async (what: () => Promise<unknown>, done?: string): Promise<void> => {
    try {
      await what();
      await refreshFunctions();
      if (done) toast(done);
    } catch (e) {
      toast(asUiError(e).message, 'error');
    }
  };

  const remove = async (): Promise<void> => {
    if (!current) return;
    try {
      const { spec, source } = await studio.functions.delete({ name: current.name });
      app.set({ selected: undefined });
      draft.set({ record: undefined });
      await refreshFunctions();
      toast(`Deleted ${spec.name}`, 'info', {
        label: 'Undo',
        run: () => void act(async () => {
          await studio.functions.save({ spec: specOf(spec), source });
          app.set({ selected: spec.name });
        }, `Restored ${spec.name}`),
      });
    } catch (e) {
      toast(asUiError(e).message, 'error');
    }
  };

  return (
    <aside className="sidebar">
      <input className="search" placeholder="Search functions" aria-label="Search functions" value={query} onChange={(e) => setQuery(e.target.value)} />
      <ul role="listbox" aria-label="Functions">
        {shown.map((f) => (
          <li key={f.name} role="option" aria-selected={f.name === selected} className={f.name === selected ? 'selected' : ''} onClick={() => select(f.name)} title={f.description}>
            <span className={`dot ${f.enabled ? '' : 'off'}`} title={f.enabled ? 'enabled' : 'disabled'} />
            <span className="name mono">{f.name}</span>
          </li>
        ))}
        {shown.length === 0 && <li className="muted">{functions.length === 0 ? 'No functions yet' : 'No match'}</li>}
      </ul>
      <div className="actions">
        <button className="primary" onClick={() => setDialog('new')}>
          New function
        </button>
        {current && (
          <>
            <button onClick={() => setDialog('rename')}>Rename</button>
            <button onClick={() => setDialog('duplicate')}>Duplicate</button>
            <button onClick={() => void act(() => studio.functions.setEnabled({ name: current.name, enabled: !current.enabled }).then(() => loadDraft(current.name)), `${current.enabled ? 'Disabled' : 'Enabled'} ${current.name}`)}>
              {current.enabled ? 'Disable' : 'Enable'}
            </button>
            <button className="danger" onClick={() => void remove()}>
              Delete
            </button>
          </>
        )}
      </div>
      {dialog === 'new' && <NewFunctionDialog onClose={() => setDialog(undefined)} />}
      {(dialog === 'rename' || dialog === 'duplicate') && current && (
        <NameDialog
          title={dialog === 'rename' ? `Rename ${current.name}` : `Duplicate ${current.name}`}
          initial={dialog === 'rename' ? current.name : `${current.name}_copy`}
          onClose={() => setDialog(undefined)}
          onSubmit={async (newName) => {
            if (dialog === 'rename') await studio.functions.rename({ name: current.name, newName });
            else await studio.functions.duplicate({ name: current.name, newName });
            await refreshFunctions();
            app.set({ selected: newName });
          }}
        />
      )}
    </aside>
  );
}

function NewFunctionDialog({ onClose }: { onClose: () => void }) {
  const [templates, setTemplates] = useState<TemplateInfo[]>([]);
  const [template, setTemplate] = useState('');
  const [name, setName] = useState('');
  const [error, setError] = useState<string | undefined>();
  /** What the new function starts from: a template, a pasted curl command, or an operation of an OpenAPI spec file. */
  const [origin, setOrigin] = useState<'template' | 'curl' | 'openapi'>('template');
  const [curl, setCurl] = useState('');
  const [specFile, setSpecFile] = useState('');
  const [operation, setOperation] = useState('');
  /** The operations read from `specFile` (undefined until read; 'reading' while it is). */
  const [operations, setOperations] = useState<OpenApiOperationView[] | 'reading' | undefined>();
  /** Counts the reads, so only the answer for the path last read is shown. */
  const reads = useRef(0);
  const [made, setMade] = useState<ScaffoldedFunction | undefined>();

  useEffect(() => {
    studio.templates.list({}).then((list) => {
      setTemplates(list);
      setTemplate(list[0]?.id ?? '');
    }, (e: unknown) => setError(asUiError(e).message));
  }, []);

  /** Reads the spec's operations and preselects the one chosen before (if it is still there) or the first; a file it cannot read is the dialog's error line. */
  const readOperations = async (): Promise<void> => {
    if (!specFile.trim()) return;
    const read = ++reads.current;
    setOperations('reading');
    try {
      const list = await studio.functions.openapiOperations({ file: specFile });
      if (read !== reads.current) return;
      setOperations(list);
      setOperation((chosen) => (list.some((o) => o.id === chosen) ? chosen : (list[0]?.id ?? '')));
      setError(undefined);
    } catch (e) {
      if (read !== reads.current) return;
      setOperations(undefined);
      setOperation('');
      setError(asUiError(e).message);
    }
  };

  const changeSpecFile = (file: string): void => {
    // Operations read from another path do not belong to this one.
    reads.current++;
    setSpecFile(file);
    setOperations(undefined);
    setOperation('');
  };

  const create = async (): Promise<void> => {
    try {
      if (origin !== 'template') {
        const from = origin === 'curl' ? { kind: 'curl' as const, command: curl } : { kind: 'openapi' as const, file: specFile, operation };
        const result = await studio.functions.createFromRequest({ name, from });
        await refreshFunctions();
        app.set({ selected: name, tab: 'editor' });
        // The secret was not kept: say which credential to store before the dialog goes.
        if (result.notes.length > 0 || (result.credential && !result.credential.exists)) setMade(result);
        else onClose();
        return;
      }
      await studio.functions.create({ template, name });
      await refreshFunctions();
      app.set({ selected: name, tab: 'editor' });
      onClose();
    } catch (e) {
      setError(asUiError(e).message);
    }
  };

  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog" aria-label="New function">
        <h3>New function</h3>
        {made ? (
          <div className="field" aria-label="Created from the request">
            <p>Created {made.record.name} for {made.record.allowedHosts.join(', ')}.</p>
            {made.credential && !made.credential.exists && (
              <p>
                The secret ({made.credential.from}) was not kept. Store it on the Credentials page as <span className="mono">{made.credential.name}</span> for {made.credential.hosts.join(', ')},{' '}
                {made.credential.placement.kind === 'header' ? `header ${made.credential.placement.header}, template "${made.credential.placement.template}"` : `query parameter ${made.credential.placement.param}`}
                ; or in a terminal: <span className="mono">{made.credential.command}</span>
              </p>
            )}
            {made.notes.map((n) => (
              <p key={n} className="hint">
                {n}
              </p>
            ))}
            <button className="primary" onClick={onClose}>
              Done
            </button>
          </div>
        ) : (
          <>
        <div className="field">
          <label htmlFor="new-origin">Start from</label>
          <select id="new-origin" aria-label="Start from" value={origin} onChange={(e) => setOrigin(e.target.value as typeof origin)}>
            <option value="template">A template</option>
            <option value="curl">A curl command</option>
            <option value="openapi">An OpenAPI operation</option>
          </select>
        </div>
        {origin === 'curl' && (
          <div className="field">
            <label htmlFor="new-curl">curl command</label>
            <textarea id="new-curl" aria-label="curl command" className="mono" rows={6} value={curl} placeholder="curl https://api.example.com/v1/things -H 'Authorization: Bearer …'" onChange={(e) => setCurl(e.target.value)} />
            <span className="hint">Query, JSON and form values become arguments; an Authorization or API-key header becomes a credential, and its secret is not kept.</span>
          </div>
        )}
        {origin === 'openapi' && (
          <div className="field">
            <label htmlFor="new-spec">OpenAPI spec file</label>
            <input
              id="new-spec"
              aria-label="OpenAPI spec file"
              className="mono"
              value={specFile}
              placeholder="/path/to/openapi.yaml"
              onChange={(e) => changeSpecFile(e.target.value)}
              onBlur={() => void readOperations()}
              onKeyDown={(e) => {
                if (e.key === 'Enter') void readOperations();
              }}
            />
            <span className="hint">Its operations are read when you leave this field (or press Enter).</span>
            <label htmlFor="new-operation">Operation</label>
            <select id="new-operation" aria-label="Operation" className="mono" value={operation} disabled={!Array.isArray(operations)} onChange={(e) => setOperation(e.target.value)}>
              {Array.isArray(operations) ? (
                operations.map((o) => (
                  <option key={o.id} value={o.id}>
                    {operationLabel(o)}
                  </option>
                ))
              ) : (
                <option value="">{operations === 'reading' ? 'Reading the operations…' : 'Give the spec file first'}</option>
              )}
            </select>
          </div>
        )}
        {origin === 'template' && (
        <div className="field">
          <label htmlFor="template">Template</label>
          <select id="template" aria-label="Template" value={template} onChange={(e) => setTemplate(e.target.value)}>
            {templates.map((t) => (
              <option key={t.id} value={t.id}>
                {t.title}
              </option>
            ))}
          </select>
          <span className="hint">{templates.find((t) => t.id === template)?.description}</span>
        </div>
        )}
        <div className="field">
          <label htmlFor="new-name">Name</label>
          <input id="new-name" aria-label="Function name" className="mono" value={name} placeholder="e.g. translate_text" onChange={(e) => setName(e.target.value)} />
          <span className="hint">The MCP tool name: a-z, 0-9 and _, starting with a letter.</span>
        </div>
        {error && <p className="error-text" role="alert">{error}</p>}
        <div className="row">
          <button
            className="primary"
            onClick={() => void create()}
            disabled={!name || (origin === 'template' ? !template : origin === 'curl' ? !curl.trim() : !specFile.trim() || !operation.trim())}
          >
            Create
          </button>
          <button onClick={onClose}>Cancel</button>
        </div>
          </>
        )}
      </div>
    </div>
  );
}

/** `getThing — GET /things/{thingId} — Get one thing` (the id once when it is "METHOD /path"). */
function operationLabel(o: OpenApiOperationView): string {
  const request = `${o.method} ${o.path}`;
  const summary = o.summary.length > 100 ? `${o.summary.slice(0, 99)}…` : o.summary;
  return [o.id === request ? undefined : o.id, request, summary || undefined].filter(Boolean).join(' — ');
}

function NameDialog({ title, initial, onClose, onSubmit }: { title: string; initial: string; onClose: () => void; onSubmit: (name: string) => Promise<void> }) {
  const [name, setName] = useState(initial);
  const [error, setError] = useState<string | undefined>();
  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog" aria-label={title}>
        <h3>{title}</h3>
        <input aria-label="New name" className="mono" value={name} onChange={(e) => setName(e.target.value)} />
        {error && <p className="error-text" role="alert">{error}</p>}
        <div className="row" style={{ marginTop: 12 }}>
          <button
            className="primary"
            onClick={() =>
              void onSubmit(name).then(onClose, (e: unknown) => setError(asUiError(e).message))
            }
          >
            OK
          </button>
          <button onClick={onClose}>Cancel</button>
        </div>
      </div>
    </div>
  );
}
