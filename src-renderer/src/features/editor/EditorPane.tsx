import { Editor, type OnMount } from '@monaco-editor/react';
import { useEffect, useRef, useState } from 'react';
import type { RevisionRecord } from '../../../../src-preload/model.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { app, toast } from '../../store/app.ts';
import { draft, editSource, saveDraft, ungrantedOf } from '../../store/draft.ts';
import { PackagesPanel } from '../packages/PackagesPanel.tsx';
import { monaco, setArgsTypes, setPackageTypes, setRuntimeTypes } from './monaco.ts';
import { argsDeclarations } from './schemaToTs.ts';

let runtimeTypesLoaded: Promise<void> | undefined;

export function EditorPane() {
  const record = draft.use((s) => s.record);
  const source = draft.use((s) => s.source);
  const language = draft.use((s) => s.spec?.language ?? 'ts');
  const inputSchema = draft.use((s) => s.spec?.inputSchema);
  const problems = draft.use((s) => s.problems);
  const error = draft.use((s) => s.error);
  const ungranted = draft.use((s) => s.ungranted);
  const recordName = record?.name;
  const editorRef = useRef<Parameters<OnMount>[0] | null>(null);
  const [showHistory, setShowHistory] = useState(false);
  const [showPackages, setShowPackages] = useState(false);

  useEffect(() => {
    runtimeTypesLoaded ??= studio.types.runtime({}).then(({ dts }) => setRuntimeTypes(dts));
  }, []);

  useEffect(() => {
    setArgsTypes(argsDeclarations(inputSchema));
  }, [inputSchema]);

  // The packages' own declarations, for completions and type errors while typing: loaded again when
  // the function's packages change (the panel, or `callable add` in another process).
  useEffect(() => {
    if (!recordName) return;
    let current = true;
    let loaded: string | undefined;
    const refresh = async (): Promise<void> => {
      try {
        const { packages } = await studio.packages.list({ name: recordName });
        const key = JSON.stringify(packages);
        if (!current || key === loaded) return;
        loaded = key;
        const { files } = packages.length > 0 ? await studio.types.packages({ name: recordName }) : { files: [] };
        if (current) setPackageTypes(files);
      } catch {
        loaded = undefined;
        if (current) setPackageTypes([]);
      }
    };
    void refresh();
    const off = studio.on('catalog:changed', () => void refresh());
    return () => {
      current = false;
      off();
    };
  }, [recordName]);

  // Which listed credentials are not granted yet: on opening the function and on coming back to the
  // editor (a grant may have been made meanwhile). A save answers it by itself, so only the name counts.
  useEffect(() => {
    const opened = draft.get().record;
    if (!opened || opened.name !== recordName) return;
    let current = true;
    void ungrantedOf(opened).then((ungranted) => {
      if (current && draft.get().record?.name === opened.name) draft.set({ ungranted });
    });
    return () => {
      current = false;
    };
  }, [recordName]);

  // Compile errors from the last save, shown inline.
  useEffect(() => {
    const model = editorRef.current?.getModel();
    if (!model) return;
    monaco.editor.setModelMarkers(
      model,
      'callable-compile',
      problems.map((p) => ({
        severity: monaco.MarkerSeverity.Error,
        message: p.message,
        startLineNumber: p.line,
        startColumn: p.column,
        endLineNumber: p.line,
        endColumn: p.column + 1,
      })),
    );
  }, [problems, record?.name]);

  const onMount: OnMount = (editor) => {
    editorRef.current = editor;
    editor.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.KeyS, () => void saveDraft());
  };

  if (!record) return null;
  return (
    <div className="editor-layout">
      <div className="editor-main">
        {error?.code === 'compile_error' && (
          <div className="compile-error error-text" role="alert">
            {error.message}
          </div>
        )}
        {ungranted.length > 0 && (
          <div className="ungranted" role="status" data-testid="ungranted">
            {ungranted.map((c) => (
              <p key={c.name}>
                {c.exists
                  ? `${record.name} asks for credential ${c.name}, which has not been granted to it: nothing is sent until you grant it.`
                  : `${record.name} asks for credential ${c.name}, which does not exist yet: add it, then grant it to ${record.name}; nothing is sent until then.`}
              </p>
            ))}
            <button onClick={() => app.set({ page: 'credentials' })}>{ungranted.some((c) => c.exists) ? 'Grant on the Credentials page' : 'Add it on the Credentials page'}</button>
          </div>
        )}
        <div className="editor-toolbar row">
          <span className="muted">
            {language === 'ts' ? 'TypeScript' : 'JavaScript'} · revision {record.revision} · <kbd>Ctrl/Cmd+S</kbd> saves
          </span>
          <span style={{ flex: 1 }} />
          <button onClick={() => setShowPackages(!showPackages)} aria-pressed={showPackages}>
            Packages
          </button>
          <button onClick={() => setShowHistory(!showHistory)}>{showHistory ? 'Hide history' : 'Source history'}</button>
        </div>
        <div className="editor-host" data-testid="code-editor">
          <Editor
            key={record.name}
            path={`file:///functions/${record.name}.${language}`}
            language={language === 'ts' ? 'typescript' : 'javascript'}
            theme="vs-dark"
            value={source}
            onChange={(value) => editSource(value ?? '')}
            onMount={onMount}
            options={{ minimap: { enabled: false }, fontSize: 13, tabSize: 2, scrollBeyondLastLine: false, automaticLayout: true }}
          />
        </div>
      </div>
      {showPackages && <PackagesPanel name={record.name} />}
      {showHistory && <RevisionHistory name={record.name} />}
    </div>
  );
}

function RevisionHistory({ name }: { name: string }) {
  const current = draft.use((s) => s.record?.revision);
  const [revisions, setRevisions] = useState<RevisionRecord[]>([]);
  const [selected, setSelected] = useState<RevisionRecord | undefined>();

  useEffect(() => {
    studio.functions.revisions({ name }).then(setRevisions, (e: unknown) => toast(asUiError(e).message, 'error'));
  }, [name, current]);

  const restore = async (revision: number): Promise<void> => {
    try {
      const record = await studio.functions.restore({ name, revision });
      draft.set({ record, source: record.source });
      toast(`Restored revision ${revision} as revision ${record.revision}`);
    } catch (e) {
      toast(asUiError(e).message, 'error');
    }
  };

  return (
    <aside className="history-panel">
      <h3>Source history</h3>
      <ul>
        {revisions.map((r) => (
          <li key={r.revision} className={selected?.revision === r.revision ? 'selected' : ''} onClick={() => setSelected(r)}>
            <span className="mono">r{r.revision}</span> <span className="muted">{new Date(r.createdAt).toLocaleString()}</span>
            {r.revision === current && <span className="badge ok">current</span>}
          </li>
        ))}
      </ul>
      {selected && (
        <>
          <pre className="code">{selected.source}</pre>
          {selected.revision !== current && <button onClick={() => void restore(selected.revision)}>Restore revision {selected.revision}</button>}
        </>
      )}
    </aside>
  );
}
