import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { testEngine } from '../support/engine.ts';
import { connect } from '../support/mcpClients.ts';
import { tempDir } from '../support/tmp.ts';

// Vendors' APIs have fields named "constructor", "prototype" and even "__proto__". A schema that
// names them is imported, stored, validated and served exactly (JSON.parse keeps "__proto__" as an
// own key; a copy by assignment would drop it), and arguments holding them reach the function as
// sent, without touching any object's prototype, in the engine or in the sandbox.

/** inputSchema with all three as properties, "__proto__" required and checked inside. */
const INPUT_SCHEMA = `{"type":"object","properties":{"__proto__":{"type":"object","properties":{"polluted":{"type":"boolean"}},"additionalProperties":false},"constructor":{"type":"string"},"prototype":{"type":"integer"}},"required":["__proto__","constructor"],"additionalProperties":false}`;
const OUTPUT_SCHEMA = `{"type":"object","properties":{"prototype":{"type":"string"},"__proto__":{"type":"array"}},"required":["prototype"]}`;
/** function.json as export writes it (JSON.parse and JSON.stringify keep "__proto__" as an own key). */
const SPEC = `${JSON.stringify(JSON.parse(`{"name":"vendor_fields","description":"Echoes a vendor's awkward fields","language":"js","inputSchema":${INPUT_SCHEMA},"outputSchema":${OUTPUT_SCHEMA}}`), null, 2)}\n`;
/** Tells what the function saw: its arguments as JSON, their own keys, and whether any prototype in the sandbox was touched. */
const SOURCE = `export default (args) => ({
  prototype: JSON.stringify(args),
  ["__proto__"]: [Object.keys(args).join(","), String(({}).polluted), String(Object.getPrototypeOf(args) === Object.prototype)],
});
`;

/** What a function with no schema sees of its arguments, and whether the sandbox's Object.prototype was touched. */
const SNOOP = 'export default (args) => ({ args: JSON.stringify(args), polluted: String(({}).polluted), plainPrototype: Object.getPrototypeOf(args) === Object.prototype })';

function folderWith(spec: string, source: string): string {
  const dir = join(tempDir(), 'vendor_fields');
  mkdirSync(dir);
  writeFileSync(join(dir, 'function.json'), spec);
  writeFileSync(join(dir, 'index.js'), source);
  return dir;
}

describe('schema keys named __proto__, constructor and prototype', () => {
  const engine = testEngine();

  it('are imported, stored and exported byte for byte', async () => {
    const dir = folderWith(SPEC, SOURCE);
    await engine.importFunctions(dir);
    const record = engine.functions.get('vendor_fields');
    expect(JSON.stringify(record.inputSchema)).toBe(INPUT_SCHEMA);
    expect(JSON.stringify(record.outputSchema)).toBe(OUTPUT_SCHEMA);
    const out = tempDir();
    engine.exportFunctions(out);
    expect(readFileSync(join(out, 'vendor_fields', 'function.json'), 'utf8')).toBe(SPEC);
  });

  it('are validated as the properties they are: required, typed, and absent when not given', async () => {
    await engine.importFunctions(folderWith(SPEC, SOURCE));
    const call = (json: string) => engine.run('vendor_fields', JSON.parse(json), { caller: 'test' });
    const bad = async (json: string) => {
      const result = await call(json);
      return result.ok ? 'accepted' : result.error.message;
    };
    // Object.prototype.constructor is not the caller's "constructor": missing means missing.
    expect(await bad('{"__proto__":{}}')).toBe('invalid arguments: args.constructor is required');
    expect(await bad('{"constructor":"c"}')).toBe('invalid arguments: args.__proto__ is required');
    expect(await bad('{"constructor":"c","__proto__":{"polluted":"yes"}}')).toBe('invalid arguments: args.__proto__.polluted must be boolean');
    expect(await bad('{"constructor":"c","__proto__":{"polluted":true,"other":1}}')).toBe('invalid arguments: args.__proto__ has an unexpected property "other"');
    expect(await bad('{"constructor":"c","__proto__":{},"prototype":"p"}')).toBe('invalid arguments: args.prototype must be integer');
    expect(await bad('{"constructor":"c","__proto__":{},"extra":1}')).toBe('invalid arguments: args has an unexpected property "extra"');

    const result = await call('{"constructor":"c","__proto__":{"polluted":true},"prototype":3}');
    expect(result).toMatchObject({ ok: true, value: { prototype: '{"constructor":"c","__proto__":{"polluted":true},"prototype":3}' } });
    // The function saw its own key, a plain object and an untouched Object.prototype.
    expect(JSON.stringify(result.ok && result.value)).toContain('"__proto__":["constructor,__proto__,prototype","undefined","true"]');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('"__proto__" in the arguments of a function whose schema declares nothing arrives as data, polluting nothing', async () => {
    await engine.saveFunction({ spec: { name: 'no_schema' }, source: SNOOP });
    const result = await engine.run('no_schema', JSON.parse('{"__proto__":{"polluted":true}}'), { caller: 'test' });
    expect(result).toMatchObject({ ok: true, value: { args: '{"__proto__":{"polluted":true}}', polluted: 'undefined', plainPrototype: true } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(engine.runs.list({ functionName: 'no_schema', limit: 1 })[0]?.args).toEqual(JSON.parse('{"__proto__":{"polluted":true}}'));
  });

  it('a result is checked against an outputSchema that names them', async () => {
    await engine.importFunctions(folderWith(SPEC.replace('"type": "array"', '"type": "string"'), SOURCE));
    const result = await engine.run('vendor_fields', JSON.parse('{"constructor":"c","__proto__":{}}'), { caller: 'test' });
    expect(result).toMatchObject({ ok: false, error: { code: 'output_invalid', message: 'the result does not match the outputSchema: result.__proto__ must be string' } });
  });
});

describe('over MCP, with a real client', () => {
  it('tools/list serves the schemas exactly, and tools/call validates and passes such arguments exactly, polluting nothing', async () => {
    const dataDir = tempDir();
    const seed = createEngine({ dataDir, secrets: new MemorySecretStore() });
    await seed.importFunctions(folderWith(SPEC, SOURCE));
    await seed.saveFunction({ spec: { name: 'no_schema' }, source: SNOOP });
    seed.close();
    const client = await connect('2026-07-28', { transport: 'stdio', stdioArgs: ['--data-dir', dataDir] });
    onTestFinished(() => client.close());

    const tool = (await client.listTools()).find((t) => t.name === 'vendor_fields');
    expect(JSON.stringify(tool!.inputSchema)).toBe(INPUT_SCHEMA);
    expect(JSON.stringify(tool!.outputSchema)).toBe(OUTPUT_SCHEMA);

    const ok = await client.callTool('vendor_fields', JSON.parse('{"constructor":"c","__proto__":{"polluted":true},"prototype":3}'));
    expect(ok.isError, JSON.stringify(ok.content)).toBeFalsy();
    expect(JSON.stringify(ok.structuredContent)).toBe(
      JSON.stringify(JSON.parse('{"prototype":"{\\"constructor\\":\\"c\\",\\"__proto__\\":{\\"polluted\\":true},\\"prototype\\":3}","__proto__":["constructor,__proto__,prototype","undefined","true"]}')),
    );

    // A schema that declares nothing: the key still arrives as data, never as a prototype.
    const plain = await client.callTool('no_schema', JSON.parse('{"__proto__":{"polluted":true}}'));
    expect(plain.content[0]?.text).toBe(JSON.stringify({ args: '{"__proto__":{"polluted":true}}', polluted: 'undefined', plainPrototype: true }));

    const refused = await client.callTool('vendor_fields', JSON.parse('{"constructor":"c","__proto__":{"polluted":"yes"}}'));
    expect(refused.isError).toBe(true);
    expect(refused.content[0]?.text).toContain('args.__proto__.polluted must be boolean');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
