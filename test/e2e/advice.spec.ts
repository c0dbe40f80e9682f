import { beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.ts';
import { vendorServer } from '../support/vendor.ts';
import { studioSession } from './fixture.ts';

describe('the Advice tab (advice from observed behaviour, as callable lint gives it)', () => {
  const session = studioSession();
  let vendor: Awaited<ReturnType<typeof vendorServer>>;

  beforeAll(async () => {
    vendor = await vendorServer((req, res) => {
      const page = Number(new URL(req.url, 'http://x').searchParams.get('page') ?? '1');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ items: [`item ${page}a`, `item ${page}b`], ...(page === 1 ? { next: 2 } : {}) }));
    });
  }, 60_000);

  it('shows readOnlyHint and outputSchema advice with their evidence, live as runs come in, and applies both', async () => {
    await session.studio.call('functions:save', {
      spec: { name: 'list_items', description: 'Lists the items of a page', allowedHosts: [`127.0.0.1:${vendor.port}`], inputSchema: { type: 'object', properties: { page: { type: 'integer' } } } },
      source: `export default async function (args: { page?: number }, ctx: Ctx) {\n  const page = args.page ?? 1;\n  const body = await (await ctx.fetch('http://127.0.0.1:${vendor.port}/items?page=' + page)).json();\n  return { page, count: body.items.length, items: body.items, ...(body.next ? { next: body.next } : {}) };\n}\n`,
    });
    await session.ui.openFunction('list_items');
    await session.ui.page.locator('.fn-title', { hasText: 'list_items' }).waitFor();
    await session.ui.tab('Advice');
    const panel = session.ui.page.getByTestId('advice-panel');
    await panel.getByText('No advice.').waitFor();

    // A run from another process (the CLI on the same data folder) reaches the open panel by itself.
    const fromCli = await cli(['run', 'list_items', '--args', '{"page":1}', '--data-dir', session.studio.dataDir]);
    expect(fromCli.code, fromCli.stderr).toBe(0);
    const readOnly = panel.getByTestId('advice-read_only');
    await expect.poll(() => readOnly.count(), { timeout: 15_000 }).toBe(1);
    await session.ui.screenshot('advice-01-live');

    // Two more runs from the test console, GET only.
    for (const page of [2, 3]) {
      const result = await session.ui.run({ page });
      await expect.poll(() => result.textContent()).toContain(`item ${page}a`);
    }
    expect(vendor.seen.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /items?page=1', 'GET /items?page=2', 'GET /items?page=3']);

    await session.ui.tab('Advice');
    await expect.poll(() => readOnly.getByTestId('advice-evidence').textContent()).toBe('Evidence: 3 request(s) in 3 run(s) and test case(s), methods: GET');
    expect(await readOnly.textContent()).toContain('every recorded request was a GET: mark it "readOnlyHint": true in annotations');
    const outputSchema = panel.getByTestId('advice-output_schema');
    await expect.poll(() => outputSchema.getByTestId('advice-evidence').textContent()).toMatch(/^Evidence: 3 successful result\(s\): run [0-9a-f-]{36}, run [0-9a-f-]{36}, run [0-9a-f-]{36}$/);
    expect(await outputSchema.textContent()).toContain('it has no outputSchema');
    const suggested = JSON.parse((await outputSchema.getByTestId('advice-suggestion').textContent()) ?? '') as { properties: Record<string, unknown>; required: string[] };
    // `next` came in one result of three: it is a property, not required.
    expect(Object.keys(suggested.properties).sort()).toEqual(['count', 'items', 'next', 'page']);
    expect(suggested.required).toEqual(['page', 'count', 'items']);
    // Nothing else to say: its one host was used, and its name, description and timeout suit clients.
    expect(await panel.locator('.advice-item').count()).toBe(2);
    await session.ui.screenshot('advice-02-advice');

    // Accept the inferred outputSchema: saved as a new revision, and that advice is gone.
    await outputSchema.getByRole('button', { name: 'Accept this outputSchema' }).click();
    await session.ui.page.getByText('Saved list_items (revision 2) with the inferred outputSchema').waitFor();
    await expect.poll(() => outputSchema.count()).toBe(0);
    expect(await readOnly.count()).toBe(1);
    const saved = await session.studio.call('functions:get', { name: 'list_items' });
    expect(saved).toMatchObject({ revision: 2, outputSchema: suggested });
    // The settings carry it (Monaco draws only the lines in view: the schema's beginning).
    await session.ui.tab('Schema & settings');
    const outputEditor = session.ui.page.locator('.schema-editor').nth(1).locator('.view-lines');
    await expect.poll(async () => ((await outputEditor.textContent()) ?? '').replace(/\s/g, '')).toContain('{"type":"object","properties":{"page":{"type":"integer"},"count":{"type":"integer"},"items":{"type":"array","items":{"type":"string"}}');
    await session.ui.screenshot('advice-03-settings');

    // Unsaved edits: advice applies to the saved function, so its buttons wait until they are saved or undone.
    await session.ui.page.locator('#fn-description').fill('Lists the items of a page, edited');
    await session.ui.tab('Advice');
    await panel.getByText('This function has unsaved edits: save or discard them to apply advice').waitFor();
    expect(await readOnly.getByRole('button', { name: 'Mark readOnlyHint' }).isDisabled()).toBe(true);
    await session.ui.tab('Schema & settings');
    await session.ui.page.locator('#fn-description').fill('Lists the items of a page');

    // Mark readOnlyHint: the panel has nothing left to say, and the settings show the box checked.
    await session.ui.tab('Advice');
    expect(await panel.getByText('This function has unsaved edits').count()).toBe(0);
    await readOnly.getByRole('button', { name: 'Mark readOnlyHint' }).click();
    await panel.getByText('No advice.').waitFor();
    expect((await session.studio.call('functions:get', { name: 'list_items' })).annotations).toEqual({ readOnlyHint: true });
    await session.ui.tab('Schema & settings');
    expect(await session.ui.page.getByRole('checkbox', { name: 'Read-only (does not change anything)' }).isChecked()).toBe(true);
    expect(await session.studio.call('functions:advise', { name: 'list_items' })).toEqual([]);
    expect(session.studio.pageErrors).toEqual([]);
  }, 120_000);

  it('refuses to apply advice to a function that moved on, or advice that no longer holds, and changes nothing', async () => {
    const before = await session.studio.call('functions:get', { name: 'list_items' });
    await expect(session.studio.call('functions:applyAdvice', { name: 'list_items', kind: 'output_schema', revision: 1 })).rejects.toMatchObject({
      code: 'conflict',
      message: `list_items changed since this advice was given (it is now at revision ${before.revision}); look at the advice again`,
    });
    await expect(session.studio.call('functions:applyAdvice', { name: 'list_items', kind: 'read_only', revision: before.revision })).rejects.toMatchObject({
      code: 'conflict',
      message: 'there is no "read_only" advice for list_items any more; nothing was changed',
    });
    await expect(session.studio.call('functions:advise', { name: 'no_such_function' })).rejects.toMatchObject({ code: 'not_found' });
    expect((await session.studio.call('functions:get', { name: 'list_items' })).revision).toBe(before.revision);
  }, 30_000);
});
