import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testEngine } from '../support/engine.ts';
import { tempDir } from '../support/tmp.ts';

// JSON.parse makes "__proto__" an own property; object copies and the spec schema would drop it, so
// an import would silently lose part of the schema. Such keys are refused by name instead, anywhere
// in inputSchema or outputSchema, and nothing is imported.

const engine = testEngine();

function folderWith(specJson: string, name: string): string {
  const dir = join(tempDir(), name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'function.json'), specJson);
  writeFileSync(join(dir, 'index.js'), 'export default () => 1');
  return dir;
}

describe('schema keys JavaScript treats specially', () => {
  it('a top-level "__proto__" in inputSchema is refused by name on import, and nothing is imported', async () => {
    const spec = `{"name":"proto_top","description":"","inputSchema":{"type":"object","properties":{},"__proto__":{"x":1}}}`;
    expect(Object.keys(JSON.parse(spec).inputSchema)).toContain('__proto__');
    const dir = folderWith(spec, 'proto_top');
    const error = await engine.importFunctions(dir).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toBe(
      `${join(dir, 'function.json')}: inputSchema.__proto__: "__proto__" is not allowed as a key in a schema ("__proto__", "constructor" and "prototype" are refused); rename it`,
    );
    expect(error?.message.split('\n')).toHaveLength(1);
    expect(engine.functions.list().map((f) => f.name)).not.toContain('proto_top');
  });

  it('"constructor" and "prototype" anywhere in inputSchema or outputSchema are refused by name', async () => {
    const nested = folderWith(
      JSON.stringify({ name: 'ctor_nested', inputSchema: { type: 'object', properties: { a: { type: 'object', properties: { constructor: { type: 'string' } } } } } }),
      'ctor_nested',
    );
    await expect(engine.importFunctions(nested)).rejects.toThrow(/inputSchema\.properties\.a\.properties\.constructor: "constructor" is not allowed/);
    const inArray = folderWith(
      JSON.stringify({ name: 'proto_out', outputSchema: { type: 'object', anyOf: [{ type: 'object', prototype: {} }] } }),
      'proto_out',
    );
    await expect(engine.importFunctions(inArray)).rejects.toThrow(/outputSchema\.anyOf\[0\]\.prototype: "prototype" is not allowed/);
    // The same check guards saving from the studio.
    await expect(
      engine.functions.save({ spec: JSON.parse('{"name":"proto_save","inputSchema":{"type":"object","__proto__":{}}}'), source: 'export default () => 1' }),
    ).rejects.toThrow(/inputSchema\.__proto__: "__proto__" is not allowed/);
    expect(engine.functions.list().map((f) => f.name)).toEqual(expect.not.arrayContaining(['ctor_nested', 'proto_out', 'proto_save']));
  });

  it('a property merely named like them elsewhere (a description, a value) is fine and round trips', async () => {
    const dir = folderWith(
      `${JSON.stringify({ name: 'proto_words', description: 'mentions __proto__ and constructor', language: 'js', inputSchema: { type: 'object', properties: { kind: { type: 'string', enum: ['__proto__', 'constructor'] } } } }, null, 2)}\n`,
      'proto_words',
    );
    await engine.importFunctions(dir);
    const out = tempDir();
    engine.exportFunctions(out);
    expect(readFileSync(join(out, 'proto_words', 'function.json'), 'utf8')).toBe(readFileSync(join(dir, 'function.json'), 'utf8'));
  });
});
