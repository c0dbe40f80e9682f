import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createStudioApi } from '../../src-main/engineProcess/studioApi.ts';
import { buildStudio } from '../../src-preload/bridge.ts';
import { contract, METHOD_NAMES, type Envelope } from '../../src-preload/contract.ts';
import { McpHttpHost } from '../../src-main/mcp/httpHost.ts';
import { testEngine } from '../support/engine.ts';
import { CALLABLE_BIN, REPO } from '../support/callable.ts';

const engine = testEngine();
const mcp = new McpHttpHost(engine, { port: 0 });
const api = createStudioApi({ engine, mcp, resourcesDir: join(REPO, 'resources'), callableCommand: CALLABLE_BIN, diagnostic: () => {} });
afterAll(() => api.close());

describe('the bridge contract', () => {
  it('refuses an unknown channel', async () => {
    expect(await api.dispatch('fs:readFile', { path: '/etc/passwd' })).toEqual({ ok: false, error: { code: 'bad_input', message: 'unknown method "fs:readFile"' } });
    expect(await api.dispatch('__proto__', {})).toMatchObject({ ok: false, error: { code: 'bad_input' } });
    expect(await api.dispatch('constructor', {})).toMatchObject({ ok: false, error: { code: 'bad_input' } });
  });

  it('refuses a malformed payload, naming the field', async () => {
    expect(await api.dispatch('functions:get', { name: 'Not A Name' })).toMatchObject({ ok: false, error: { code: 'bad_input', message: expect.stringContaining('functions:get: name: a function name starts with') } });
    expect(await api.dispatch('functions:get', { name: 'ok', extra: 1 })).toMatchObject({ ok: false, error: { code: 'bad_input' } });
    expect(await api.dispatch('runs:list', 'not an object')).toMatchObject({ ok: false, error: { code: 'bad_input' } });
    expect(await api.dispatch('credentials:set', { spec: { name: 'x', hosts: [], placement: { kind: 'header', header: 'A', template: 'no placeholder' } } })).toMatchObject({
      ok: false,
      error: { code: 'bad_input', message: expect.stringMatching(/hosts: a credential needs at least one host.*template must contain \{secret\}/) },
    });
  });

  it('answers engine errors as { code, message }', async () => {
    expect(await api.dispatch('functions:get', { name: 'missing' })).toMatchObject({ ok: false, error: { code: 'not_found', message: expect.stringContaining('no function named "missing"') } });
    const saved = await api.dispatch('functions:save', { spec: { name: 'broken_save' }, source: 'export default () => {' });
    expect(saved).toMatchObject({ ok: false, error: { code: 'compile_error', details: { problems: [expect.objectContaining({ line: 1 })] } } });
  });

  it('answers the operations of an OpenAPI spec file (functions:openapiOperations), and each file it cannot use in one line', async () => {
    expect(await api.dispatch('functions:openapiOperations', { file: join(REPO, 'test/fixtures/openapi/uspto.json') })).toEqual({
      ok: true,
      value: [
        { id: 'list-data-sets', method: 'GET', path: '/', summary: 'List available data sets' },
        { id: 'list-searchable-fields', method: 'GET', path: '/{dataset}/{version}/fields', summary: 'Provides the general information about the API and the list of fields that can be used to query the dataset.' },
        { id: 'perform-search', method: 'POST', path: '/{dataset}/{version}/records', summary: 'Provides search capability for the data set with the given search criteria.' },
      ],
    });
    const petstore = await api.dispatch('functions:openapiOperations', { file: join(REPO, 'test/fixtures/openapi/petstore3.yaml') });
    expect(petstore).toMatchObject({ ok: true, value: expect.arrayContaining([{ id: 'getPetById', method: 'GET', path: '/pet/{petId}', summary: 'Find pet by ID.' }]) });
    expect((petstore as { value: unknown[] }).value).toHaveLength(19);

    const dir = mkdtempSync(join(tmpdir(), 'callable-bridge-openapi-'));
    writeFileSync(join(dir, 'swagger.json'), JSON.stringify({ swagger: '2.0', info: { title: 'Old', version: '1' }, host: 'api.old.example', paths: {} }));
    writeFileSync(join(dir, 'empty.yaml'), 'openapi: 3.0.3\ninfo:\n  title: Nothing yet\n  version: "0.1"\npaths: {}\n');
    writeFileSync(join(dir, 'notes.txt'), 'just some notes\n');
    const refusals: Array<[string, string]> = [
      ['missing.yaml', `cannot read the OpenAPI spec ${join(dir, 'missing.yaml')}: no such file`],
      ['swagger.json', `${join(dir, 'swagger.json')} is Swagger 2.0; only OpenAPI 3 specs are read (convert it first, e.g. with swagger2openapi)`],
      ['empty.yaml', `${join(dir, 'empty.yaml')} describes no operations (its "paths" is empty or missing)`],
      ['notes.txt', `${join(dir, 'notes.txt')} could not be read as an OpenAPI spec (JSON or YAML): it is not a JSON or YAML document`],
    ];
    for (const [file, message] of refusals) expect(await api.dispatch('functions:openapiOperations', { file: join(dir, file) })).toEqual({ ok: false, error: { code: 'bad_input', message } });
  });

  it('refuses a functions:openapiOperations payload that is not one bounded file path', async () => {
    for (const payload of [{}, { file: '' }, { file: 'x'.repeat(4097) }, { file: 42 }, { file: 'spec.yaml', operation: 'getThing' }]) {
      expect(await api.dispatch('functions:openapiOperations', payload)).toMatchObject({ ok: false, error: { code: 'bad_input', message: expect.stringMatching(/^functions:openapiOperations: /) } });
    }
  });

  it('never sends a secret back to the renderer', async () => {
    await api.dispatch('credentials:set', { spec: { name: 'k', hosts: ['api.example.com'], placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } }, secret: 'sekrit-value' });
    const listed = await api.dispatch('credentials:list', {});
    expect(listed).toMatchObject({ ok: true, value: { credentials: [{ name: 'k', hasSecret: true }] } });
    expect(JSON.stringify(listed)).not.toContain('sekrit-value');
  });

  it('exposes exactly the contract methods as named functions, and rejects with plain { code, message }', async () => {
    const calls: string[] = [];
    const studio = buildStudio(
      async (channel) => {
        calls.push(channel);
        return { ok: false, error: { code: 'not_found', message: 'nope' } } as Envelope<unknown>;
      },
      () => () => {},
    ) as unknown as Record<string, unknown>;
    const exposed = Object.entries(studio).flatMap(([noun, value]) => (typeof value === 'function' ? [noun] : Object.keys(value as object).map((verb) => `${noun}:${verb}`)));
    expect(exposed.filter((n) => n !== 'on').sort()).toEqual([...METHOD_NAMES].sort());
    expect(Object.keys(studio)).not.toContain('invoke');
    const error = await (studio.functions as Record<string, (r: unknown) => Promise<unknown>>).get!({ name: 'x' }).catch((e: unknown) => e);
    expect(error).toEqual({ code: 'not_found', message: 'nope' });
    expect(Object.getPrototypeOf(error)).toBe(Object.prototype);
    expect(calls).toEqual(['functions:get']);
    expect(Object.keys(contract).length).toBe(METHOD_NAMES.length);
  });
});
