import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.ts';
import { testEngine } from '../support/engine.ts';
import { tempDir } from '../support/tmp.ts';

// Schemas are JSON Schema 2020-12 unless their "$schema" declares draft-07 (MCP 2025-11-25, SEP-1613).
// Other dialects are refused by name at save and import, in one line that names the supported ones.

const engine = testEngine();

const D2020 = 'https://json-schema.org/draft/2020-12/schema';
const D07 = 'http://json-schema.org/draft-07/schema#';
const SUPPORTED = `leave "$schema" out (2020-12, the default) or set it to "${D2020}" or "${D07}"`;

function folderWith(spec: Record<string, unknown>, source = 'export default (a) => a'): string {
  const dir = join(tempDir(), String(spec.name));
  mkdirSync(dir);
  writeFileSync(join(dir, 'function.json'), `${JSON.stringify(spec, null, 2)}\n`);
  writeFileSync(join(dir, 'index.js'), source);
  return dir;
}

async function refusal(work: Promise<unknown>): Promise<string> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e as Error & { code?: string },
  );
  expect(error, 'expected a refusal').toBeDefined();
  expect(error!.code).toBe('bad_input');
  expect(error!.message.split('\n')).toHaveLength(1);
  return error!.message;
}

describe('JSON Schema dialects', () => {
  it('imports a function whose inputSchema declares 2020-12, and validates calls by it ($defs, $ref)', async () => {
    const dir = folderWith({
      name: 'with_2020',
      language: 'js',
      inputSchema: {
        $schema: D2020,
        type: 'object',
        $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } }, required: ['city'] } },
        properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
        additionalProperties: false,
      },
    });
    const [record] = await engine.importFunctions(dir);
    expect(record?.inputSchema.$schema).toBe(D2020);
    const good = { name: 'Ada', address: { city: 'London' } };
    expect(await engine.run('with_2020', good, { caller: 'test' })).toMatchObject({ ok: true, value: good });
    const bad = await engine.run('with_2020', { name: 'Ada', address: { street: 'Main' }, extra: 1 }, { caller: 'test' });
    expect(bad).toMatchObject({ ok: false, error: { code: 'bad_input', message: 'invalid arguments: args has an unexpected property "extra"; args.address.city is required' } });
  });

  it('without "$schema", prefixItems with items: false accepts a matching tuple and refuses longer or mistyped ones', async () => {
    await engine.saveFunction({
      spec: {
        name: 'tuple_2020',
        language: 'js',
        inputSchema: { type: 'object', properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false } }, required: ['pair'] },
      },
      source: 'export default ({ pair }) => pair.length',
    });
    expect(await engine.run('tuple_2020', { pair: ['a', 1] }, { caller: 'test' })).toMatchObject({ ok: true, value: 2 });
    expect(await engine.run('tuple_2020', { pair: ['a'] }, { caller: 'test' })).toMatchObject({ ok: true, value: 1 });
    const tooLong = await engine.run('tuple_2020', { pair: ['a', 1, 2] }, { caller: 'test' });
    expect(tooLong).toMatchObject({ ok: false, error: { code: 'bad_input', message: 'invalid arguments: args.pair must NOT have more than 2 items' } });
    const mistyped = await engine.run('tuple_2020', { pair: [1, 'a'] }, { caller: 'test' });
    expect(mistyped).toMatchObject({ ok: false, error: { code: 'bad_input', message: 'invalid arguments: args.pair.0 must be string; args.pair.1 must be number' } });
  });

  it('unevaluatedProperties (2020-12 only) is enforced and the stray property is named', async () => {
    await engine.saveFunction({
      spec: {
        name: 'closed_2020',
        language: 'js',
        inputSchema: { type: 'object', allOf: [{ properties: { a: { type: 'string' } } }], unevaluatedProperties: false },
      },
      source: 'export default () => "ok"',
    });
    expect(await engine.run('closed_2020', { a: 'x' }, { caller: 'test' })).toMatchObject({ ok: true, value: 'ok' });
    expect(await engine.run('closed_2020', { a: 'x', b: 1 }, { caller: 'test' })).toMatchObject({
      ok: false,
      error: { code: 'bad_input', message: 'invalid arguments: args has an unexpected property "b"' },
    });
  });

  it('a schema declaring draft-07 keeps draft-07 rules: "items" as an array with additionalItems', async () => {
    const dir = folderWith({
      name: 'tuple_07',
      language: 'js',
      inputSchema: { $schema: D07, type: 'object', properties: { pair: { type: 'array', items: [{ type: 'string' }, { type: 'number' }], additionalItems: false } } },
      outputSchema: { $schema: 'https://json-schema.org/draft-07/schema', type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    }, 'export default ({ pair }) => ({ n: pair.length })');
    await engine.importFunctions(dir);
    expect(await engine.run('tuple_07', { pair: ['a', 1] }, { caller: 'test' })).toMatchObject({ ok: true, value: { n: 2 } });
    expect(await engine.run('tuple_07', { pair: ['a', 1, 2] }, { caller: 'test' })).toMatchObject({
      ok: false,
      error: { code: 'bad_input', message: 'invalid arguments: args.pair must NOT have more than 2 items' },
    });
    expect(await engine.run('tuple_07', { pair: [1] }, { caller: 'test' })).toMatchObject({ ok: false, error: { message: 'invalid arguments: args.pair.0 must be string' } });
  });

  it('a draft-07 array "items" without "$schema" is refused at save with a line saying how to declare draft-07', async () => {
    const message = await refusal(
      engine.saveFunction({
        spec: { name: 'tuple_undeclared', inputSchema: { type: 'object', properties: { pair: { type: 'array', items: [{ type: 'string' }] } } } },
        source: 'export default () => 1',
      }),
    );
    expect(message).toBe(
      `inputSchema is not a valid JSON Schema 2020-12: schema is invalid: data/properties/pair/items must be object,boolean (a schema without "$schema" follows JSON Schema 2020-12; for draft-07 rules such as "items" as an array, add "$schema": "${D07}")`,
    );
    expect(engine.functions.find('tuple_undeclared')).toBeUndefined();
  });

  it('an unknown "$schema" is refused at save and at import in one line naming the supported dialects; nothing is stored', async () => {
    const spec = { name: 'odd_dialect', language: 'js', inputSchema: { $schema: 'https://example.com/my-schema', type: 'object' } };
    expect(await refusal(engine.saveFunction({ spec: spec as never, source: 'export default () => 1' }))).toBe(
      `inputSchema: "$schema" "https://example.com/my-schema" is not a JSON Schema dialect Callable Studio knows; ${SUPPORTED}`,
    );
    const dir = folderWith(spec);
    expect(await refusal(engine.importFunctions(dir))).toBe(
      `${dir}: inputSchema: "$schema" "https://example.com/my-schema" is not a JSON Schema dialect Callable Studio knows; ${SUPPORTED}`,
    );
    const notText = folderWith({ name: 'odd_output', language: 'js', outputSchema: { $schema: 42, type: 'object' } });
    expect(await refusal(engine.importFunctions(notText))).toBe(`${notText}: outputSchema: "$schema" must be a string; ${SUPPORTED}`);
    expect(engine.functions.find('odd_output')).toBeUndefined();
    expect(engine.functions.find('odd_dialect')).toBeUndefined();
  });

  it('draft-04, draft-06 and 2019-09 are refused by name', async () => {
    for (const [uri, name] of [
      ['http://json-schema.org/draft-04/schema#', 'draft-04'],
      ['http://json-schema.org/draft-06/schema#', 'draft-06'],
      ['https://json-schema.org/draft/2019-09/schema', '2019-09'],
    ]) {
      const message = await refusal(
        engine.saveFunction({ spec: { name: 'old_dialect', outputSchema: { $schema: uri, type: 'object' } }, source: 'export default () => ({})' }),
      );
      expect(message).toBe(`outputSchema: "$schema" is JSON Schema ${name}, which Callable Studio does not validate; ${SUPPORTED}`);
    }
    expect(engine.functions.find('old_dialect')).toBeUndefined();
  });

  it('`callable import` of such a folder prints the one line and exits 2; a 2020-12 folder imports', async () => {
    const data = tempDir();
    const odd = folderWith({ name: 'odd_cli', language: 'js', inputSchema: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' } });
    const refused = await cli(['import', odd, '--data-dir', data]);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain(`inputSchema: "$schema" is JSON Schema draft-04, which Callable Studio does not validate; ${SUPPORTED}`);
    const good = folderWith({ name: 'good_cli', language: 'js', inputSchema: { $schema: D2020, type: 'object', properties: { t: { type: 'array', prefixItems: [{ type: 'string' }], items: false } } } });
    expect((await cli(['import', good, '--data-dir', data])).code).toBe(0);
  });
});
