import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore, StudioError } from '../../src-main/engine/index.ts';
import { defineFunction, testEngine } from '../support/engine.ts';
import { tempDir } from '../support/tmp.ts';

const engine = testEngine();

describe('saving functions', () => {
  it('reports a compile error with line and column and keeps the previous good version', async () => {
    await defineFunction(engine, { name: 'keeper' }, 'export default () => "v1";');
    const error = await defineFunction(engine, { name: 'keeper' }, 'export default () => {\n  const x = ;\n}').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StudioError);
    expect((error as StudioError).code).toBe('compile_error');
    expect((error as StudioError).message).toMatch(/^keeper\.ts:2:13: /);
    expect((error as StudioError).details).toMatchObject({ problems: [{ line: 2, column: 13 }] });
    expect(engine.functions.get('keeper').revision).toBe(1);
    expect(await engine.run('keeper', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'v1' });
  });

  it('refuses a module without a default export', async () => {
    await expect(defineFunction(engine, { name: 'nodefault' }, 'export const x = 1;')).rejects.toThrow(/no default export/);
  });

  it('refuses names that are not valid MCP tool names, with the rule', async () => {
    for (const bad of ['Upper', '1st', 'has-dash', 'a'.repeat(65), '']) {
      await expect(defineFunction(engine, { name: bad }, 'export default () => 1')).rejects.toThrow(/name: a function name starts with a lower-case letter/);
    }
  });

  it('refuses an inputSchema that is not an object schema or not valid JSON Schema', async () => {
    await expect(defineFunction(engine, { name: 'badschema', inputSchema: { type: 'string' } as never }, 'export default () => 1')).rejects.toThrow(/inputSchema.type/);
    await expect(defineFunction(engine, { name: 'badschema', inputSchema: { type: 'object', properties: { a: { type: 'nonsense' } } } }, 'export default () => 1')).rejects.toThrow(
      /inputSchema is not a valid JSON Schema/,
    );
  });

  it('keeps every saved revision and restores an old one as a new revision', async () => {
    await defineFunction(engine, { name: 'history' }, 'export default () => 1;');
    await defineFunction(engine, { name: 'history' }, 'export default () => 2;');
    await defineFunction(engine, { name: 'history', description: 'now described' }, 'export default () => 3;');
    expect(engine.functions.revisions('history').map((r) => r.revision)).toEqual([3, 2, 1]);
    const restored = await engine.functions.restore('history', 1);
    expect(restored.revision).toBe(4);
    expect(restored.source).toBe('export default () => 1;');
    expect(await engine.run('history', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 1 });
  });

  it('checks results against the outputSchema', async () => {
    await defineFunction(
      engine,
      { name: 'typed_out', outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }, inputSchema: { type: 'object', properties: { bad: { type: 'boolean' } } } },
      'export default ({ bad }) => bad ? { n: "nope" } : { n: 1 }',
    );
    expect(await engine.run('typed_out', {}, { caller: 'test' })).toMatchObject({ ok: true, value: { n: 1 } });
    expect(await engine.run('typed_out', { bad: true }, { caller: 'test' })).toMatchObject({ ok: false, error: { code: 'output_invalid', message: expect.stringContaining('result.n must be number') } });
  });

  it('records every run in the audit ledger', async () => {
    await defineFunction(engine, { name: 'audited' }, 'export default (a) => a');
    await engine.run('audited', { x: 1 }, { caller: 'cli' });
    await engine.run('audited', 'not an object', { caller: 'console' });
    const runs = engine.runs.list({ functionName: 'audited' });
    expect(runs.map((r) => [r.caller, r.ok, r.errorCode ?? null])).toEqual([
      ['console', false, 'bad_input'],
      ['cli', true, null],
    ]);
    expect(runs[1]).toMatchObject({ args: { x: 1 }, bytesOut: 7 });
  });
});

describe('import and export', () => {
  it('round-trips the example functions byte for byte', async () => {
    const examples = join(import.meta.dirname, '../../resources/examples');
    const out = tempDir();
    const own = createEngine({ dataDir: tempDir(), secrets: new MemorySecretStore() });
    try {
      const imported = await own.importFunctions(examples);
      expect(imported.length).toBeGreaterThanOrEqual(2);
      own.exportFunctions(out);
      for (const folder of readdirSync(examples)) {
        for (const file of readdirSync(join(examples, folder))) {
          expect(readFileSync(join(out, folder, file), 'utf8'), `${folder}/${file}`).toBe(readFileSync(join(examples, folder, file), 'utf8'));
        }
      }
    } finally {
      own.close();
    }
  });

  it('imports one function folder, and names the file when one is broken (importing nothing)', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'good'));
    writeFileSync(join(dir, 'good', 'function.json'), JSON.stringify({ name: 'good_one', description: 'ok' }));
    writeFileSync(join(dir, 'good', 'index.js'), 'export default () => "good"');
    const [one] = await engine.importFunctions(join(dir, 'good'));
    expect(one).toMatchObject({ name: 'good_one', language: 'js' });

    mkdirSync(join(dir, 'broken'));
    writeFileSync(join(dir, 'broken', 'function.json'), '{ "name": "broken_one", ');
    writeFileSync(join(dir, 'broken', 'index.ts'), 'export default () => 1');
    writeFileSync(join(dir, 'good', 'index.js'), 'export default () => "changed"');
    await expect(engine.importFunctions(dir)).rejects.toThrow(/broken\/function\.json: not valid JSON/);
    expect(engine.functions.get('good_one').source).toBe('export default () => "good"');
  });
});

describe('the database shared by several processes', () => {
  it('lets two engines on one data folder see each other’s writes', async () => {
    const dataDir = tempDir();
    const a = createEngine({ dataDir, secrets: new MemorySecretStore() });
    const b = createEngine({ dataDir, secrets: new MemorySecretStore() });
    try {
      const before = b.functions.catalogVersion();
      await a.saveFunction({ spec: { name: 'shared' }, source: 'export default () => "from a"' });
      expect(b.functions.catalogVersion()).toBeGreaterThan(before);
      expect(await b.run('shared', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'from a' });
      expect(a.database.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      a.close();
      b.close();
    }
  });
});
