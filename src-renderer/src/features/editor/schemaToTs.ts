/** A TypeScript type for a JSON Schema, good enough for editor completion (not a validator). */
export function schemaToTs(schema: unknown, depth = 0): string {
  if (!schema || typeof schema !== 'object' || depth > 8) return 'unknown';
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ') || 'never';
  if ('const' in s) return JSON.stringify(s.const);
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(s[key])) return (s[key] as unknown[]).map((x) => schemaToTs(x, depth + 1)).join(' | ');
  }
  const type = s.type;
  if (Array.isArray(type)) return type.map((t) => schemaToTs({ ...s, type: t }, depth + 1)).join(' | ');
  switch (type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return `Array<${schemaToTs(s.items, depth + 1)}>`;
    case 'object':
    case undefined: {
      const props = (s.properties ?? {}) as Record<string, unknown>;
      const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
      const pad = '  '.repeat(depth + 1);
      const lines = Object.entries(props).map(([k, v]) => {
        const doc = v && typeof v === 'object' && typeof (v as { description?: unknown }).description === 'string' ? `${pad}/** ${(v as { description: string }).description.replace(/\*\//g, '* /')} */\n` : '';
        const key = /^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k);
        return `${doc}${pad}${key}${required.has(k) ? '' : '?'}: ${schemaToTs(v, depth + 1)};`;
      });
      if (type === undefined && lines.length === 0) return 'unknown';
      return `{\n${lines.join('\n')}\n${'  '.repeat(depth)}}`;
    }
    default:
      return 'unknown';
  }
}

/** Declarations that give `args` and `ctx` their types in the editor. */
export function argsDeclarations(inputSchema: unknown): string {
  return `type Args = ${schemaToTs(inputSchema)};\ntype Ctx = import('callable').Ctx;\n`;
}
