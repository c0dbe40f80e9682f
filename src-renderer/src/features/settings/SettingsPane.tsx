import { Editor } from '@monaco-editor/react';
import { useEffect, useState } from 'react';
import { isHostPatternError, LIMITS, parseHostPattern, type FunctionSpec } from '../../../../src-preload/model.ts';
import { studio } from '../../api/studio.ts';
import { draft, editSpec } from '../../store/draft.ts';
import { monaco } from '../editor/monaco.ts';
import { JSON_SCHEMA_META } from './metaSchema.ts';

monaco.json.jsonDefaults.setDiagnosticsOptions({
  validate: true,
  enableSchemaRequest: false,
  schemas: [{ uri: 'inmemory://callable/json-schema-meta.json', fileMatch: ['*.schema.json'], schema: JSON_SCHEMA_META }],
});

type Annotation = 'readOnlyHint' | 'destructiveHint' | 'idempotentHint' | 'openWorldHint';
const ANNOTATIONS: Array<[Annotation, string]> = [
  ['readOnlyHint', 'Read-only (does not change anything)'],
  ['destructiveHint', 'Destructive (may delete or overwrite)'],
  ['idempotentHint', 'Idempotent (repeating a call is harmless)'],
  ['openWorldHint', 'Open world (talks to external services)'],
];

export function SettingsPane() {
  const spec = draft.use((s) => s.spec);
  const name = draft.use((s) => s.record?.name);
  const error = draft.use((s) => s.error);
  const [credentialNames, setCredentialNames] = useState<string[]>([]);

  useEffect(() => {
    studio.credentials.list({}).then((r) => setCredentialNames(r.credentials.map((c) => c.name)), () => setCredentialNames([]));
  }, []);

  if (!spec || !name) return null;
  const hostProblems = spec.allowedHosts.map((h) => parseHostPattern(h)).filter(isHostPatternError);
  const credentialChoices = [...new Set([...credentialNames, ...spec.credentials])].sort();

  return (
    <div className="page settings">
      {error && error.code !== 'compile_error' && (
        <div className="card error-text" role="alert">
          Not saved: {error.message}
        </div>
      )}
      <div className="settings-grid">
        <section>
          <h3>Description</h3>
          <div className="field">
            <label htmlFor="fn-title">Title</label>
            <input id="fn-title" value={spec.title ?? ''} onChange={(e) => editSpec({ title: e.target.value === '' ? undefined : e.target.value })} />
          </div>
          <div className="field">
            <label htmlFor="fn-description">Description (what agents read to decide when to call it)</label>
            <textarea id="fn-description" rows={4} value={spec.description} onChange={(e) => editSpec({ description: e.target.value })} />
          </div>
          <div className="field">
            <label>Annotations</label>
            {ANNOTATIONS.map(([key, label]) => (
              <label key={key} className="row">
                <input
                  type="checkbox"
                  checked={spec.annotations?.[key] === true}
                  onChange={(e) => {
                    const next = { ...(spec.annotations ?? {}) };
                    if (e.target.checked) next[key] = true;
                    else delete next[key];
                    editSpec({ annotations: Object.keys(next).length > 0 ? next : undefined });
                  }}
                />
                {label}
              </label>
            ))}
            <label className="row">
              <input type="checkbox" checked={spec.askBeforeCall === true} onChange={(e) => editSpec({ askBeforeCall: e.target.checked ? true : undefined })} />
              Ask before every call (an MCP client's call waits for a person to allow it, as for a destructive function)
            </label>
          </div>

          <h3>Network and credentials</h3>
          <div className="field">
            <label htmlFor="fn-hosts">Allowed hosts (one per line: api.example.com, *.example.com, 127.0.0.1:8080)</label>
            <HostsField value={spec.allowedHosts} onChange={(allowedHosts) => editSpec({ allowedHosts })} />
            {hostProblems.map((p) => (
              <span key={p.error} className="error-text">
                {p.error}
              </span>
            ))}
            {spec.allowedHosts.length === 0 && <span className="hint">Empty: the function has no network.</span>}
          </div>
          <div className="field">
            <label>Credentials it may use</label>
            {credentialChoices.length === 0 && <span className="hint">No credentials yet: add them on the Credentials page.</span>}
            {credentialChoices.map((c) => (
              <label key={c} className="row">
                <input
                  type="checkbox"
                  checked={spec.credentials.includes(c)}
                  onChange={(e) => editSpec({ credentials: e.target.checked ? [...spec.credentials, c] : spec.credentials.filter((x) => x !== c) })}
                />
                <span className="mono">{c}</span>
                {!credentialNames.includes(c) && <span className="error-text">(does not exist)</span>}
              </label>
            ))}
          </div>

          <h3>Limits</h3>
          <NumberField label={`Timeout (ms, default ${LIMITS.timeoutMs.default}, max ${LIMITS.timeoutMs.max})`} id="fn-timeout" value={spec.timeoutMs} min={LIMITS.timeoutMs.min} max={LIMITS.timeoutMs.max} onChange={(timeoutMs) => editSpec({ timeoutMs })} />
          <NumberField label={`Memory (MB, default ${LIMITS.memoryMb.default}, max ${LIMITS.memoryMb.max})`} id="fn-memory" value={spec.memoryMb} min={LIMITS.memoryMb.min} max={LIMITS.memoryMb.max} onChange={(memoryMb) => editSpec({ memoryMb })} />
          {(['resultBytes', 'logBytes', 'fetchCount', 'responseBytes'] as const).map((key) => (
            <NumberField
              key={key}
              id={`fn-${key}`}
              label={`${LIMITS[key].what} (${key}, default ${LIMITS[key].default}, max ${LIMITS[key].max})`}
              value={spec.limits?.[key]}
              min={LIMITS[key].min}
              max={LIMITS[key].max}
              onChange={(v) => {
                const limits = { ...(spec.limits ?? {}) };
                if (v === undefined) delete limits[key];
                else limits[key] = v;
                editSpec({ limits: Object.keys(limits).length > 0 ? limits : undefined });
              }}
            />
          ))}
        </section>
        <section>
          <h3>Input schema</h3>
          <SchemaField key={`${name}-in`} name={`${name}.input`} value={spec.inputSchema} onChange={(inputSchema) => inputSchema && editSpec({ inputSchema })} required />
          <h3>Output schema (optional: results are checked and sent as structuredContent)</h3>
          <SchemaField key={`${name}-out`} name={`${name}.output`} value={spec.outputSchema} onChange={(outputSchema) => editSpec({ outputSchema })} />
        </section>
      </div>
    </div>
  );
}

function HostsField({ value, onChange }: { value: string[]; onChange: (hosts: string[]) => void }) {
  const [text, setText] = useState(value.join('\n'));
  return (
    <textarea
      id="fn-hosts"
      rows={4}
      value={text}
      onChange={(e) => {
        setText(e.target.value);
        onChange(
          e.target.value
            .split(/[\n,]/)
            .map((h) => h.trim())
            .filter(Boolean),
        );
      }}
    />
  );
}

function NumberField({ id, label, value, min, max, onChange }: { id: string; label: string; value: number | undefined; min: number; max: number; onChange: (v: number | undefined) => void }) {
  const [text, setText] = useState(value === undefined ? '' : String(value));
  const n = Number(text);
  const problem = text === '' ? undefined : !Number.isInteger(n) ? 'a whole number, please' : n < min ? `at least ${min}` : n > max ? `at most ${max} (the hard maximum)` : undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        inputMode="numeric"
        placeholder="default"
        value={text}
        onChange={(e) => {
          setText(e.target.value);
          const v = e.target.value.trim();
          onChange(v === '' ? undefined : Number(v));
        }}
      />
      {problem && <span className="error-text">{problem}</span>}
    </div>
  );
}

/** A JSON Schema in a JSON editor; invalid JSON stays in the editor (not lost) and is flagged. */
function SchemaField({ name, value, onChange, required = false }: { name: string; value: FunctionSpec['outputSchema']; onChange: (v: FunctionSpec['outputSchema']) => void; required?: boolean }) {
  const [text, setText] = useState(value ? JSON.stringify(value, null, 2) : '');
  const [problem, setProblem] = useState<string | undefined>();
  return (
    <div className="field">
      <div className="schema-editor">
        <Editor
          path={`inmemory://callable/${name}.schema.json`}
          language="json"
          theme="vs-dark"
          value={text}
          onChange={(next) => {
            const t = next ?? '';
            setText(t);
            if (t.trim() === '' && !required) {
              setProblem(undefined);
              onChange(undefined);
              return;
            }
            try {
              const parsed = JSON.parse(t) as unknown;
              if (!parsed || typeof parsed !== 'object' || (parsed as { type?: unknown }).type !== 'object') {
                setProblem('The schema must be an object schema: { "type": "object", "properties": { … } }');
                return;
              }
              setProblem(undefined);
              onChange(parsed as FunctionSpec['outputSchema']);
            } catch (e) {
              setProblem(`Not valid JSON yet: ${(e as Error).message}`);
            }
          }}
          options={{ minimap: { enabled: false }, fontSize: 12, tabSize: 2, scrollBeyondLastLine: false, automaticLayout: true }}
        />
      </div>
      {problem && <span className="error-text">{problem}</span>}
    </div>
  );
}
