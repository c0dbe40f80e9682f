import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vendorServer } from '../support/vendor.ts';
import { studioSession } from './fixture.ts';

/** A small OpenAPI 3.0 spec whose server is the local stand-in for the vendor. */
function thingsApi(port: number): object {
  const thing = { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' }, size: { type: 'integer' } } };
  return {
    openapi: '3.0.3',
    info: { title: 'Things API', version: '1.0.0' },
    servers: [{ url: `http://127.0.0.1:${port}/v1` }],
    paths: {
      '/things/{thingId}': {
        get: {
          operationId: 'getThing',
          summary: 'Get one thing',
          parameters: [
            { name: 'thingId', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'fields', in: 'query', schema: { type: 'string' } },
          ],
          responses: { '200': { description: 'The thing', content: { 'application/json': { schema: thing } } } },
        },
        // No operationId: the operation is known as "DELETE /things/{thingId}".
        delete: { summary: 'Delete a thing', parameters: [{ name: 'thingId', in: 'path', required: true, schema: { type: 'string' } }], responses: { '204': { description: 'Deleted' } } },
      },
      '/things': {
        post: {
          operationId: 'createThing',
          summary: 'Create a thing',
          requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, size: { type: 'integer' } } } } } },
          responses: { '201': { description: 'Created', content: { 'application/json': { schema: thing } } } },
        },
      },
    },
  };
}

describe('"New function" started from an OpenAPI operation', () => {
  const session = studioSession();
  let vendor: Awaited<ReturnType<typeof vendorServer>>;
  let dir: string;
  let specFile: string;

  beforeAll(async () => {
    vendor = await vendorServer((req, res) => {
      const url = new URL(req.url, 'http://x');
      if (req.method === 'POST' && url.pathname === '/v1/things') {
        const body = JSON.parse(req.body) as { name: string; size?: number };
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: `thing-${body.name}-${body.size ?? 0}`, ...body }));
        return;
      }
      const id = /^\/v1\/things\/([^/]+)$/.exec(url.pathname)?.[1];
      if (req.method === 'GET' && id) {
        const fields = url.searchParams.get('fields');
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: decodeURIComponent(id), name: `named ${decodeURIComponent(id)}${fields ? ` with ${fields}` : ''}` }));
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no such route"}');
    });
    dir = mkdtempSync(join(tmpdir(), 'callable-e2e-openapi-'));
    specFile = join(dir, 'things.json');
    writeFileSync(specFile, JSON.stringify(thingsApi(vendor.port), null, 2));
  }, 60_000);

  afterAll(async () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const dialog = () => session.ui.page.getByRole('dialog', { name: 'New function' });

  const operationSelect = () => dialog().getByLabel('Operation');
  const createButton = () => dialog().getByRole('button', { name: 'Create' });
  /** The texts of the Operation select's options, and the one selected. */
  const operationOptions = async (): Promise<{ options: string[]; selected: string }> => ({
    options: await operationSelect().locator('option').allTextContents(),
    selected: await operationSelect().evaluate((el) => (el as HTMLSelectElement).selectedOptions[0]?.textContent ?? ''),
  });
  const THINGS_OPERATIONS = ['getThing — GET /things/{thingId} — Get one thing', 'DELETE /things/{thingId} — Delete a thing', 'createThing — POST /things — Create a thing'];

  /** Opens the dialog on "An OpenAPI operation" and gives the spec's path, leaving the field as a user does (Tab) so its operations are read. */
  const giveSpec = async (file: string): Promise<void> => {
    await session.ui.page.getByRole('button', { name: 'New function' }).click();
    await dialog().getByLabel('Start from').selectOption({ label: 'An OpenAPI operation' });
    await respecify(file);
  };
  const respecify = async (file: string): Promise<void> => {
    await dialog().getByLabel('OpenAPI spec file').fill(file);
    await dialog().getByLabel('OpenAPI spec file').press('Tab');
  };

  /** Picks the operation by its text in the select (once the spec's operations are read), names the function and creates it. */
  const newFromOpenApi = async (name: string, file: string, operation: string): Promise<void> => {
    await giveSpec(file);
    await expect.poll(() => operationSelect().isEnabled()).toBe(true);
    await operationSelect().selectOption({ label: operation });
    await dialog().getByLabel('Function name').fill(name);
    await createButton().click();
  };

  const codeText = async (): Promise<string> => ((await session.ui.page.locator('[data-testid=code-editor] .view-lines').textContent()) ?? '').replace(/\s/g, '');
  const inputSchemaText = async (): Promise<string> => ((await session.ui.page.locator('.schema-editor').first().locator('.view-lines').textContent()) ?? '').replace(/\s/g, '');
  const listedFunctions = async (): Promise<string[]> => (await session.ui.page.getByRole('listbox', { name: 'Functions' }).getByRole('option').allTextContents()).sort();

  it('makes a function from a GET operation with a path and a query parameter, and running it calls the vendor', async () => {
    const base = `http://127.0.0.1:${vendor.port}`;
    // The operations are read from the spec once its path is given: the first is preselected.
    await giveSpec(specFile);
    await expect.poll(operationOptions).toEqual({ options: THINGS_OPERATIONS, selected: THINGS_OPERATIONS[0] });
    await session.ui.screenshot('new-from-openapi-00-operations');
    await dialog().getByLabel('Function name').fill('get_thing');
    await createButton().click();
    // Nothing to note and no credential: the dialog closes on the new function's code.
    await dialog().waitFor({ state: 'detached' });
    await session.ui.page.locator('.fn-title', { hasText: 'get_thing' }).waitFor();
    expect(await listedFunctions()).toEqual(['get_thing']);
    await expect.poll(codeText).toContain(`constres=awaitctx.fetch(url.href,{method:"GET",`);
    const code = await codeText();
    expect(code).toContain(`//MadebycallablenewfromtheOpenAPIoperationgetThing:GET${base}/v1/things/{thingId}`);
    expect(code).toContain(`consturl=newURL("${base}/v1/things/"+encodeURIComponent(String(args["thingId"])));`);
    expect(code).toContain(`if(args["fields"]!==undefined&&args["fields"]!==null)url.searchParams.append("fields",String(args["fields"]));`);
    expect(code).toContain('"Accept":"application/json"');
    await session.ui.screenshot('new-from-openapi-01-code');

    await session.ui.tab('Schema & settings');
    expect(await session.ui.page.locator('#fn-hosts').inputValue()).toBe(`127.0.0.1:${vendor.port}`);
    expect(await session.ui.page.locator('#fn-title').inputValue()).toBe('Get one thing');
    expect(await session.ui.page.getByRole('checkbox', { name: 'Read-only (does not change anything)' }).isChecked()).toBe(true);
    // Monaco draws only the lines in view: the schema's beginning, with the spec's parameter names.
    await expect.poll(inputSchemaText).toContain('{"type":"object","properties":{"thingId":{"type":"string"},"fields":{"type":"string"}},"required":["thingId"]');
    expect((await session.studio.call('functions:get', { name: 'get_thing' })).inputSchema).toEqual({
      type: 'object',
      properties: { thingId: { type: 'string' }, fields: { type: 'string' } },
      required: ['thingId'],
      additionalProperties: false,
    });
    await session.ui.screenshot('new-from-openapi-02-settings');

    // Run it from the console: the path parameter is encoded, the query parameter sent as given.
    const result = await session.ui.run({ thingId: 'box 7', fields: 'name,size' });
    await expect.poll(() => result.textContent()).toContain('named box 7 with name,size');
    expect(vendor.seen).toHaveLength(1);
    expect(vendor.seen[0]).toMatchObject({ method: 'GET', url: '/v1/things/box%207?fields=name%2Csize', body: '' });
    expect(vendor.seen[0]!.headers.accept).toBe('application/json');
    await session.ui.screenshot('new-from-openapi-03-run');
    expect(session.studio.pageErrors).toEqual([]);
  }, 90_000);

  it('makes a function from a POST operation with a JSON body, picked from the operations the spec lists, and running it sends the body', async () => {
    const base = `http://127.0.0.1:${vendor.port}`;
    await newFromOpenApi('create_thing', specFile, THINGS_OPERATIONS[2]!);
    await dialog().waitFor({ state: 'detached' });
    await session.ui.page.locator('.fn-title', { hasText: 'create_thing' }).waitFor();
    expect(await listedFunctions()).toEqual(['create_thing', 'get_thing']);
    await expect.poll(codeText).toContain(`constres=awaitctx.fetch(url.href,{method:"POST",json,`);
    const code = await codeText();
    expect(code).toContain(`consturl=newURL("${base}/v1/things");`);
    expect(code).toContain(`if(args["name"]!==undefined)json["name"]=args["name"];`);
    expect(code).toContain(`if(args["size"]!==undefined)json["size"]=args["size"];`);

    await session.ui.tab('Schema & settings');
    expect(await session.ui.page.locator('#fn-hosts').inputValue()).toBe(`127.0.0.1:${vendor.port}`);
    expect(await session.ui.page.getByRole('checkbox', { name: 'Read-only (does not change anything)' }).isChecked()).toBe(false);
    await expect.poll(inputSchemaText).toContain('{"type":"object","properties":{"name":{"type":"string"},"size":{"type":"integer"}},"required":["name"]');
    await session.ui.screenshot('new-from-openapi-04-post-settings');

    const result = await session.ui.run({ name: 'crate', size: 4 });
    await expect.poll(() => result.textContent()).toContain('thing-crate-4');
    expect(vendor.seen).toHaveLength(2);
    expect(vendor.seen[1]).toMatchObject({ method: 'POST', url: '/v1/things' });
    expect(vendor.seen[1]!.headers['content-type']).toMatch(/^application\/json\b/);
    expect(JSON.parse(vendor.seen[1]!.body)).toEqual({ name: 'crate', size: 4 });
    await session.ui.screenshot('new-from-openapi-05-post-run');

    // Back to the GET function: an optional query parameter left out is not sent.
    await session.ui.openFunction('get_thing');
    const again = await session.ui.run({ thingId: 'lid' });
    await expect.poll(() => again.textContent()).toContain('named lid');
    expect(vendor.seen).toHaveLength(3);
    expect(vendor.seen[2]).toMatchObject({ method: 'GET', url: '/v1/things/lid' });
    expect(session.studio.pageErrors).toEqual([]);
  }, 90_000);

  it('says in one line what is wrong with a spec path when its operations are read, or with an operation the spec no longer has, and creates nothing', async () => {
    const missing = join(dir, 'missing.yaml');
    const notes = join(dir, 'notes.txt');
    writeFileSync(notes, 'just some notes, not an API description\n');
    const swagger = join(dir, 'swagger.json');
    writeFileSync(swagger, JSON.stringify({ swagger: '2.0', info: { title: 'Old things', version: '1' }, host: 'api.old.example', paths: {} }));
    const alert = dialog().getByRole('alert');

    await giveSpec(missing);
    await alert.waitFor();
    expect(await alert.allTextContents()).toEqual([`cannot read the OpenAPI spec ${missing}: no such file`]);
    // No operation to pick: the select says what it waits for, and Create stays disabled with a name given.
    expect(await operationOptions()).toEqual({ options: ['Give the spec file first'], selected: 'Give the spec file first' });
    expect(await operationSelect().isDisabled()).toBe(true);
    await dialog().getByLabel('Function name').fill('broken');
    expect(await createButton().isDisabled()).toBe(true);
    await session.ui.screenshot('new-from-openapi-06-missing');

    // A file that is not a spec: the same dialog, the line now says why.
    await respecify(notes);
    await expect.poll(() => alert.allTextContents()).toEqual([`${notes} could not be read as an OpenAPI spec (JSON or YAML): it is not a JSON or YAML document`]);
    expect(await createButton().isDisabled()).toBe(true);

    // A Swagger 2 file: the line says to convert it.
    await respecify(swagger);
    await expect.poll(() => alert.allTextContents()).toEqual([`${swagger} is Swagger 2.0; only OpenAPI 3 specs are read (convert it first, e.g. with swagger2openapi)`]);
    expect(await createButton().isDisabled()).toBe(true);

    // A spec that loses an operation after it was read (edited meanwhile): Create says which it has, with nothing about CLI flags.
    const changing = join(dir, 'changing.json');
    writeFileSync(changing, JSON.stringify(thingsApi(vendor.port)));
    await respecify(changing);
    await expect.poll(operationOptions).toEqual({ options: THINGS_OPERATIONS, selected: THINGS_OPERATIONS[0] });
    expect(await alert.count()).toBe(0);
    await operationSelect().selectOption({ label: THINGS_OPERATIONS[2]! });
    const api = thingsApi(vendor.port) as { paths: Record<string, unknown> };
    delete api.paths['/things'];
    writeFileSync(changing, JSON.stringify(api));
    await createButton().click();
    await alert.waitFor();
    expect(await alert.allTextContents()).toEqual([`${changing} has no operation "createThing"; it has 2: getThing, DELETE /things/{thingId}`]);
    await session.ui.screenshot('new-from-openapi-07-no-operation');

    await dialog().getByRole('button', { name: 'Cancel' }).click();
    await dialog().waitFor({ state: 'detached' });
    expect(await listedFunctions()).toEqual(['create_thing', 'get_thing']);
    expect((await session.studio.call('functions:list', {})).map((f) => f.name).sort()).toEqual(['create_thing', 'get_thing']);
    expect(vendor.seen).toHaveLength(3);
    expect(session.studio.pageErrors).toEqual([]);
  }, 60_000);
});
