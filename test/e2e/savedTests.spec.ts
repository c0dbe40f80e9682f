import { beforeAll, describe, expect, it } from 'vitest';
import { vendorServer } from '../support/vendor.ts';
import { studioSession } from './fixture.ts';

describe('saved tests in the studio', () => {
  const session = studioSession();
  let vendor: Awaited<ReturnType<typeof vendorServer>>;

  beforeAll(async () => {
    vendor = await vendorServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ price: req.body.includes('apple') ? 3 : 5 }));
    });
  }, 60_000);

  const source = (factor: string) =>
    `export default async function (args: { item: string }, ctx: Ctx) {\n  const r = await ctx.fetch('http://127.0.0.1:${vendor.port}/v1/quote', { method: 'POST', json: { item: args.item } });\n  return { item: args.item, price: (await r.json()).price${factor} };\n}\n`;

  it('saves a test from the console, sees it pass offline, breaks the function and sees the diff', async () => {
    await session.studio.call('functions:save', {
      spec: { name: 'quote', description: 'quotes a price', allowedHosts: [`127.0.0.1:${vendor.port}`], inputSchema: { type: 'object', properties: { item: { type: 'string' } } } },
      source: source(''),
    });
    await session.ui.openFunction('quote');
    await session.ui.page.locator('.fn-title', { hasText: 'quote' }).waitFor();

    const result = await session.ui.run({ item: 'apple' });
    await expect.poll(() => result.textContent()).toContain('price: 3');
    await result.getByRole('button', { name: 'Save as test' }).click();
    await result.getByLabel('Test case name').fill('apple');
    await result.getByRole('button', { name: 'Save test' }).click();
    await session.ui.page.getByText('Saved test case apple (1 request)').waitFor();
    await session.ui.screenshot('saved-tests-01-console');

    // Offline from here: the vendor is gone, the replay answers from the recording.
    await new Promise<void>((resolve) => vendor.server.close(() => resolve()));
    const seen = vendor.seen.length;
    await session.ui.page.getByRole('tab', { name: 'Tests' }).click();
    const row = session.ui.page.getByTestId('test-case-apple');
    await row.waitFor();
    await session.ui.page.getByRole('button', { name: 'Run all' }).click();
    await expect.poll(() => row.locator('.badge').textContent()).toBe('pass');
    expect(vendor.seen.length).toBe(seen);
    await session.ui.screenshot('saved-tests-02-pass');

    // Break the function: the price doubles. The case fails with expected and actual side by side.
    await session.ui.replaceCode(source(' * 2'));
    await session.ui.save();
    await expect.poll(async () => (await session.studio.call('functions:get', { name: 'quote' })).revision).toBe(2);
    await session.ui.page.getByRole('tab', { name: 'Tests' }).click();
    await session.ui.page.getByRole('button', { name: 'Run all' }).click();
    await expect.poll(() => session.ui.page.getByTestId('test-case-apple').locator('.badge').textContent()).toBe('fail');
    const failure = session.ui.page.getByTestId('test-failure-apple');
    expect(await failure.textContent()).toContain('$.price: expected 3, got 6');
    expect(JSON.parse((await failure.getByTestId('test-expected').textContent()) ?? '')).toEqual({ item: 'apple', price: 3 });
    expect(JSON.parse((await failure.getByTestId('test-actual').textContent()) ?? '')).toEqual({ item: 'apple', price: 6 });
    await session.ui.screenshot('saved-tests-03-diff');

    // Rename, then delete, from the tab.
    await session.ui.page.getByTestId('test-case-apple').getByRole('button', { name: 'Rename' }).click();
    await session.ui.page.getByLabel('New case name').fill('apple_price');
    await session.ui.page.getByRole('button', { name: 'OK' }).click();
    await session.ui.page.getByTestId('test-case-apple_price').waitFor();
    session.ui.page.once('dialog', (d) => void d.accept());
    await session.ui.page.getByTestId('test-case-apple_price').getByRole('button', { name: 'Delete' }).click();
    await session.ui.page.getByText('No saved tests yet.').waitFor();
    expect(await session.studio.call('tests:list', { name: 'quote' })).toEqual([]);
    expect(session.studio.pageErrors).toEqual([]);
  }, 90_000);

  it('saves a past run from the history as a test', async () => {
    await session.ui.tab('History');
    const firstRow = session.ui.page.locator('.history-table tbody tr', { hasText: 'console' }).first();
    await firstRow.waitFor();
    await firstRow.getByRole('button', { name: 'Save as test' }).click();
    await firstRow.getByLabel('Test case name').fill('from_history');
    await firstRow.getByRole('button', { name: 'Save test' }).click();
    await session.ui.page.getByText('Saved test case from_history').waitFor();
    expect((await session.studio.call('tests:list', { name: 'quote' })).map((c) => c.name)).toEqual(['from_history']);
  }, 60_000);
});
