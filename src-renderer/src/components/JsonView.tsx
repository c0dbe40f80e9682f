import { useState } from 'react';

/** A collapsible JSON tree. */
export function JsonView({ value, name, depth = 0 }: { value: unknown; name?: string; depth?: number }) {
  const [open, setOpen] = useState(depth < 2);
  const label = name === undefined ? null : <span className="json-key">{name}: </span>;
  if (value === null || typeof value !== 'object') {
    return (
      <div className="json-row" style={{ paddingLeft: depth * 14 }}>
        {label}
        <span className={`json-${value === null ? 'null' : typeof value}`}>{JSON.stringify(value)}</span>
      </div>
    );
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value as Record<string, unknown>);
  const brackets = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  return (
    <div className="json-node">
      <div className="json-row toggle" style={{ paddingLeft: depth * 14 }} onClick={() => setOpen(!open)}>
        <span className="caret">{open ? '▾' : '▸'}</span>
        {label}
        {brackets[0]}
        {!open && `… ${entries.length} ${Array.isArray(value) ? 'items' : 'keys'} ${brackets[1]}`}
      </div>
      {open && entries.map(([k, v]) => <JsonView key={k} name={k} value={v} depth={depth + 1} />)}
      {open && <div className="json-row" style={{ paddingLeft: depth * 14 }}>{brackets[1]}</div>}
    </div>
  );
}
