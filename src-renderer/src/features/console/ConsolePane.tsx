import { useCallback, useEffect, useMemo, useState } from 'react';
import type { ContentItem, RunResult } from '../../../../src-preload/model.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { JsonView } from '../../components/JsonView.tsx';
import { toast } from '../../store/app.ts';
import { consoleRequest } from '../../store/console.ts';
import { draft, isDirty, saveDraft } from '../../store/draft.ts';
import { SchemaForm, type SchemaValidity } from '../forms/SchemaForm.tsx';
import { SaveAsTest } from '../savedTests/SaveAsTest.tsx';

const argsKey = (name: string): string => `callable.console.args.${name}`;

function rememberedArgs(name: string): string {
  return localStorage.getItem(argsKey(name)) ?? '{}';
}

export function ConsolePane() {
  const name = draft.use((s) => s.record?.name);
  const inputSchema = draft.use((s) => s.record?.inputSchema);
  const dirty = draft.use((s) => isDirty(s));
  const request = consoleRequest.use();
  const [text, setText] = useState(() => (name ? rememberedArgs(name) : '{}'));
  const [raw, setRaw] = useState(false);
  const [running, setRunning] = useState<string | undefined>();
  const [result, setResult] = useState<RunResult | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [validity, setValidity] = useState<SchemaValidity | undefined>();
  // The form and raw mode edit the same JSON text.
  const formValue = useMemo((): { ok: true; value: unknown } | { ok: false } => {
    try {
      return { ok: true, value: JSON.parse(text) as unknown };
    } catch {
      return { ok: false };
    }
  }, [text]);

  useEffect(() => {
    if (name) setText(rememberedArgs(name));
    setResult(undefined);
    setError(undefined);
  }, [name]);

  const run = useCallback(
    async (argsText: string): Promise<void> => {
      if (!name || running) return;
      let args: unknown;
      try {
        args = JSON.parse(argsText);
      } catch (e) {
        setError(`The arguments are not valid JSON: ${(e as Error).message}`);
        return;
      }
      if (isDirty() && !(await saveDraft())) return;
      localStorage.setItem(argsKey(name), argsText);
      const token = crypto.randomUUID();
      setRunning(token);
      setError(undefined);
      try {
        setResult(await studio.runs.start({ name, args, token }));
      } catch (e) {
        setError(asUiError(e).message);
      } finally {
        setRunning(undefined);
      }
    },
    [name, running],
  );

  // "Re-run" from History: take its arguments and run them (once: the request is consumed).
  useEffect(() => {
    if (!request.run) return;
    consoleRequest.set({ run: false });
    const argsText = JSON.stringify(request.args ?? {}, null, 2);
    setText(argsText);
    void run(argsText);
  }, [request, run]);

  useEffect(() => {
    const keys = (e: KeyboardEvent): void => {
      if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') {
        e.preventDefault();
        void run(text);
      }
    };
    window.addEventListener('keydown', keys);
    return () => window.removeEventListener('keydown', keys);
  }, [run, text]);

  if (!name) return null;
  return (
    <div className="console">
      <section className="console-input">
        <div className="row">
          <h3>Arguments</h3>
          <span style={{ flex: 1 }} />
          <label className="row">
            <input type="checkbox" checked={raw} onChange={(e) => setRaw(e.target.checked)} /> Raw JSON
          </label>
        </div>
        {raw ? (
          <textarea aria-label="Arguments JSON" className="args-json" rows={10} value={text} onChange={(e) => setText(e.target.value)} />
        ) : formValue.ok ? (
          <SchemaForm key={name} idPrefix="arg" schema={inputSchema} value={formValue.value} onChange={(v) => setText(JSON.stringify(v ?? {}, null, 2))} onValidity={setValidity} />
        ) : (
          <p className="error-text">The arguments are not valid JSON: switch to raw JSON to fix them.</p>
        )}
        <div className="row" style={{ marginTop: 8 }}>
          <button className="primary" onClick={() => void run(text)} disabled={running !== undefined} title="Ctrl/Cmd+Enter">
            {dirty ? 'Save & run' : 'Run'}
          </button>
          {running && (
            <button onClick={() => void studio.runs.cancel({ token: running }).catch((e: unknown) => toast(asUiError(e).message, 'error'))}>Cancel</button>
          )}
          {running && <span className="muted">Running…</span>}
          {!raw && formValue.ok && validity && validity.problems.length > 0 && (
            <span className="error-text" data-testid="args-problems" title={validity.problems.join('\n')}>
              {validity.problems.length === 1 ? '1 problem' : `${validity.problems.length} problems`} in the arguments: a run would be refused
            </span>
          )}
        </div>
        {error && (
          <p className="error-text" role="alert">
            {error}
          </p>
        )}
      </section>
      {result && <RunView result={result} />}
    </div>
  );
}

function RunView({ result }: { result: RunResult }) {
  return (
    <section className="console-output" data-testid="run-result">
      <div className="row">
        <span className={`badge ${result.ok ? 'ok' : 'err'}`}>{result.ok ? 'ok' : result.error.code}</span>
        {(result.ok || result.error.code !== 'bad_input') && <SaveAsTest key={result.runId} runId={result.runId} source="console" />}
        <span className="muted">
          {result.metrics.durationMs} ms
          {result.metrics.heapBytes !== undefined && ` · heap ${(result.metrics.heapBytes / 1024 / 1024).toFixed(1)} MB`}
          {` · ${result.metrics.resultBytes} bytes out`}
        </span>
      </div>
      <h3>Result</h3>
      <div className="card result">
        {result.ok ? (
          result.content ? (
            result.content.map((c, i) => <ContentView key={i} item={c} />)
          ) : (
            <JsonView value={result.value} />
          )
        ) : (
          <div className="error-text" role="alert">
            {result.error.message}
            {typeof result.error.details?.stack === 'string' && <pre className="code">{result.error.details.stack}</pre>}
          </div>
        )}
      </div>
      <h3>Logs ({result.logs.length})</h3>
      <div className="card logs" data-testid="run-logs">
        {result.logs.length === 0 && <span className="muted">No logs</span>}
        {result.logs.map((l, i) => (
          <div key={i} className={`log log-${l.level}`}>
            <span className="muted mono">+{l.at}ms</span> <span className="level">{l.level}</span> <span className="mono">{l.message}</span>
          </div>
        ))}
      </div>
      <h3>Network ({result.trace.length})</h3>
      <div className="card" data-testid="run-trace">
        {result.trace.length === 0 ? (
          <span className="muted">No requests</span>
        ) : (
          <table className="grid">
            <thead>
              <tr>
                <th>Request</th>
                <th>Status</th>
                <th>Time</th>
                <th>Size</th>
                <th>Credential</th>
              </tr>
            </thead>
            <tbody>
              {result.trace.map((t, i) => (
                <tr key={i}>
                  <td className="mono">
                    {t.method} {t.url}
                    {t.redirectFrom && <div className="muted">redirected from {t.redirectFrom}</div>}
                  </td>
                  <td>{t.refused ? <span className="error-text">refused: {t.refused}</span> : t.error ? <span className="error-text">{t.error}</span> : t.status}</td>
                  <td>{t.ms} ms</td>
                  <td>
                    {t.bytesOut} B out / {t.bytesIn} B in
                  </td>
                  <td className="mono">{t.credential ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
    </section>
  );
}

function ContentView({ item }: { item: ContentItem }) {
  switch (item.type) {
    case 'image':
      return <img alt="result" src={`data:${item.mimeType};base64,${item.data}`} style={{ maxWidth: '100%' }} />;
    case 'audio':
      return <audio controls src={`data:${item.mimeType};base64,${item.data}`} />;
    case 'text':
      return <pre className="code">{item.text}</pre>;
    case 'resource':
      return (
        <div>
          <div className="mono muted">{item.resource.uri}</div>
          <pre className="code">{item.resource.text ?? `(${item.resource.blob?.length ?? 0} base64 characters)`}</pre>
        </div>
      );
  }
}
