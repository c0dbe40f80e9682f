import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { testEngine } from '../support/engine.ts';
import { CALLABLE_COMMAND } from '../support/callable.ts';
import { connect } from '../support/mcpClients.ts';
import { tempDir } from '../support/tmp.ts';
import { until } from '../support/wait.ts';

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

describe.each(['2026-07-28', '2025-11-25'] as const)('over MCP, with a real client of the %s era', (era) => {
  it('tools/list serves the schemas exactly, and tools/call validates and passes such arguments exactly, polluting nothing', async () => {
    const dataDir = tempDir();
    const seed = createEngine({ dataDir, secrets: new MemorySecretStore() });
    await seed.importFunctions(folderWith(SPEC, SOURCE));
    await seed.saveFunction({ spec: { name: 'no_schema' }, source: SNOOP });
    seed.close();
    const client = await connect(era, { transport: 'stdio', stdioArgs: ['--data-dir', dataDir] });
    onTestFinished(() => client.close());

    const tool = (await client.listTools()).find((t) => t.name === 'vendor_fields');
    // The 1.x client SDK (2025 era) drops a "__proto__" property while it parses the list on its own
    // side (the wire is exact: see below), so only the properties it keeps are compared.
    const kept = era === '2026-07-28' ? INPUT_SCHEMA : INPUT_SCHEMA.replace('"__proto__":{"type":"object","properties":{"polluted":{"type":"boolean"}},"additionalProperties":false},', '');
    expect(JSON.stringify(tool!.inputSchema)).toBe(kept);
    expect(JSON.stringify(tool!.outputSchema)).toBe(era === '2026-07-28' ? OUTPUT_SCHEMA : OUTPUT_SCHEMA.replace(',"__proto__":{"type":"array"}', ''));

    const ok = await client.callTool('vendor_fields', JSON.parse('{"constructor":"c","__proto__":{"polluted":true},"prototype":3}'));
    expect(ok.isError, JSON.stringify(ok.content)).toBeFalsy();
    const seen = JSON.stringify(JSON.parse('{"prototype":"{\\"constructor\\":\\"c\\",\\"__proto__\\":{\\"polluted\\":true},\\"prototype\\":3}","__proto__":["constructor,__proto__,prototype","undefined","true"]}'));
    expect(ok.content[0]?.text).toBe(seen);
    // structuredContent as the client SDK gives it (the 1.x SDK drops "__proto__" from it on its side).
    if (era === '2026-07-28') expect(JSON.stringify(ok.structuredContent)).toBe(seen);

    // A schema that declares nothing: the key still arrives as data, never as a prototype.
    const plain = await client.callTool('no_schema', JSON.parse('{"__proto__":{"polluted":true}}'));
    expect(plain.content[0]?.text).toBe(JSON.stringify({ args: '{"__proto__":{"polluted":true}}', polluted: 'undefined', plainPrototype: true }));

    const refused = await client.callTool('vendor_fields', JSON.parse('{"constructor":"c","__proto__":{"polluted":"yes"}}'));
    expect(refused.isError).toBe(true);
    expect(refused.content[0]?.text).toContain('args.__proto__.polluted must be boolean');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('on the wire', () => {
  it('tools/list carries the schemas exactly to a client of the 2025 era too (its 1.x SDK drops "__proto__" only on its own side)', async () => {
    const dataDir = tempDir();
    const seed = createEngine({ dataDir, secrets: new MemorySecretStore() });
    await seed.importFunctions(folderWith(SPEC, SOURCE));
    seed.close();
    const child = spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'mcp', '--data-dir', dataDir], { stdio: ['pipe', 'pipe', 'ignore'] });
    onTestFinished(() => void child.kill());
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    for (const message of [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    ]) child.stdin.write(`${JSON.stringify(message)}\n`);
    await until(() => out.includes('"id":2'), 'the tools/list answer');
    const line = out.split('\n').find((l) => l.includes('"id":2'))!;
    const [tool] = (JSON.parse(line) as { result: { tools: Array<{ inputSchema: unknown; outputSchema: unknown }> } }).result.tools;
    expect(JSON.stringify(tool!.inputSchema)).toBe(INPUT_SCHEMA);
    expect(JSON.stringify(tool!.outputSchema)).toBe(OUTPUT_SCHEMA);
  });
});

