import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { DATABASE_FILE, SCHEMA_VERSION } from '../../src-main/engine/store/database.ts';
import { scratch } from '../support/scratch.ts';

// A function saved before JSON Schema 2020-12 became the default had its schema read by draft-07
// rules. One with a draft-07 tuple (an array "items", which 2020-12 refuses) keeps working after
// the upgrade: the migration stamps it draft-07. Other schemas are left as they are.
const s = scratch();
const D07 = 'http://json-schema.org/draft-07/schema#';
const TUPLE = { type: 'object' as const, properties: { pair: { type: 'array', items: [{ type: 'string' }, { type: 'number' }] } }, required: ['pair'] };
const MODERN = { type: 'object' as const, properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false } } };

describe('upgrading a data folder from before JSON Schema 2020-12', () => {
  it('stamps draft-07 on schemas with a draft-07 tuple, in functions and their revisions, so their calls validate as before', async () => {
    const dataDir = s.dir('callable-schema-migration-');
    const before = createEngine({ dataDir, secrets: new MemorySecretStore() });
    await before.saveFunction({ spec: { name: 'tuple', language: 'js', inputSchema: { $schema: D07, ...TUPLE } }, source: 'export default ({ pair }) => pair.join(":")' });
    await before.saveFunction({ spec: { name: 'modern', language: 'js', inputSchema: MODERN }, source: 'export default ({ pair }) => pair.length' });
    before.close();
    // As an older version left it: the tuple without "$schema", the database from before the stamping
    // migration (the OAuth credentials table came after it; it is created only if missing).
    const db = new Database(join(dataDir, DATABASE_FILE));
    for (const table of ['functions', 'revisions']) db.exec(`UPDATE ${table} SET spec = json_remove(spec, '$.inputSchema."$schema"')`);
    db.pragma(`user_version = ${SCHEMA_VERSION - 2}`);
    db.close();

    const after = s.engine(createEngine({ dataDir, secrets: new MemorySecretStore() }));
    expect(after.functions.load('tuple').record.inputSchema).toEqual({ ...TUPLE, $schema: D07 });
    expect(after.functions.load('modern').record.inputSchema).toEqual(MODERN);
    const stamped = new Database(join(dataDir, DATABASE_FILE), { readonly: true });
    expect(stamped.prepare("SELECT json_extract(r.spec, '$.inputSchema.\"$schema\"') FROM revisions r JOIN functions f ON f.id = r.function_id WHERE f.name = 'tuple'").pluck().all()).toEqual([D07]);
    stamped.close();

    expect(await after.run('tuple', { pair: ['a', 1] }, { caller: 'test' })).toMatchObject({ ok: true, value: 'a:1' });
    expect(await after.run('tuple', { pair: ['a', 'b'] }, { caller: 'test' })).toMatchObject({ ok: false, error: { code: 'bad_input', message: expect.stringContaining('args.pair.1 must be number') } });
    expect(await after.run('modern', { pair: ['a', 1] }, { caller: 'test' })).toMatchObject({ ok: true, value: 2 });
  });
});
