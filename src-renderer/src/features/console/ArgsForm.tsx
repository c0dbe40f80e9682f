interface PropertySchema {
  type?: string | string[];
  description?: string;
  enum?: unknown[];
  default?: unknown;
}

/** A form generated from the top level of the inputSchema; edits the same JSON text as raw mode. */
export function ArgsForm({ schema, text, onChange }: { schema: Record<string, unknown> | undefined; text: string; onChange: (text: string) => void }) {
  let values: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) values = parsed as Record<string, unknown>;
  } catch {
    return <p className="error-text">The arguments are not valid JSON: switch to raw JSON to fix them.</p>;
  }
  const properties = (schema?.properties ?? {}) as Record<string, PropertySchema>;
  const required = new Set((schema?.required as string[] | undefined) ?? []);
  const set = (key: string, value: unknown): void => {
    const next = { ...values };
    if (value === undefined) delete next[key];
    else next[key] = value;
    onChange(JSON.stringify(next, null, 2));
  };
  const keys = Object.keys(properties);
  if (keys.length === 0) return <p className="muted">This function takes no arguments.</p>;
  return (
    <div className="args-form">
      {keys.map((key) => {
        const p = properties[key]!;
        const type = Array.isArray(p.type) ? p.type.find((t) => t !== 'null') : p.type;
        const id = `arg-${key}`;
        const label = (
          <label htmlFor={id}>
            <span className="mono">{key}</span>
            {required.has(key) && <span className="error-text"> *</span>} {p.description && <span className="muted">— {p.description}</span>}
          </label>
        );
        const current = values[key];
        if (p.enum) {
          return (
            <div className="field" key={key}>
              {label}
              <select id={id} value={current === undefined ? '' : JSON.stringify(current)} onChange={(e) => set(key, e.target.value === '' ? undefined : JSON.parse(e.target.value))}>
                <option value="">(not set)</option>
                {p.enum.map((v) => (
                  <option key={JSON.stringify(v)} value={JSON.stringify(v)}>
                    {String(v)}
                  </option>
                ))}
              </select>
            </div>
          );
        }
        if (type === 'boolean') {
          return (
            <div className="field" key={key}>
              <label className="row">
                <input id={id} type="checkbox" checked={current === true} onChange={(e) => set(key, e.target.checked)} />
                <span className="mono">{key}</span> {p.description && <span className="muted">— {p.description}</span>}
              </label>
            </div>
          );
        }
        if (type === 'number' || type === 'integer') {
          return (
            <div className="field" key={key}>
              {label}
              <input
                id={id}
                inputMode="decimal"
                placeholder={p.default === undefined ? '' : `default ${String(p.default)}`}
                value={current === undefined ? '' : String(current)}
                onChange={(e) => set(key, e.target.value.trim() === '' ? undefined : Number.isNaN(Number(e.target.value)) ? e.target.value : Number(e.target.value))}
              />
            </div>
          );
        }
        if (type === 'string') {
          return (
            <div className="field" key={key}>
              {label}
              <textarea id={id} rows={2} value={typeof current === 'string' ? current : ''} onChange={(e) => set(key, e.target.value === '' && !required.has(key) ? undefined : e.target.value)} />
            </div>
          );
        }
        return (
          <div className="field" key={key}>
            {label}
            <textarea
              id={id}
              rows={3}
              defaultValue={current === undefined ? '' : JSON.stringify(current, null, 2)}
              onBlur={(e) => {
                try {
                  set(key, e.target.value.trim() === '' ? undefined : JSON.parse(e.target.value));
                } catch {
                  /* keep what was typed; raw JSON mode shows the whole document */
                }
              }}
            />
          </div>
        );
      })}
    </div>
  );
}
