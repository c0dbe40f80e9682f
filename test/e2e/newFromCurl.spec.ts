import { beforeAll, describe, expect, it } from 'vitest';
import { vendorServer } from '../support/vendor.ts';
import { studioSession } from './fixture.ts';

describe('"New function" started from a curl command', () => {
  const session = studioSession();
  let vendor: Awaited<ReturnType<typeof vendorServer>>;

  beforeAll(async () => {
    vendor = await vendorServer((req, res) => {
      const query = new URL(req.url, 'http://x').searchParams;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ things: Array.from({ length: Number(query.get('limit')) }, (_, i) => `${query.get('q')} ${i + 1}`) }));
    });
  }, 60_000);

  const newFromCurl = async (name: string, command: string): Promise<void> => {
    await session.ui.page.getByRole('button', { name: 'New function' }).click();
    const dialog = session.ui.page.getByRole('dialog', { name: 'New function' });
    await dialog.getByLabel('Start from').selectOption({ label: 'A curl command' });
    await dialog.getByLabel('curl command').fill(command);
    await dialog.getByLabel('Function name').fill(name);
    await dialog.getByRole('button', { name: 'Create' }).click();
  };

  it('pastes a curl command for the vendor, sees the generated code and allowedHosts, runs it and the vendor gets the request', async () => {
    const base = `http://127.0.0.1:${vendor.port}`;
    await newFromCurl('list_things', `curl -H 'Accept: application/json' \\\n  '${base}/v1/things?limit=2&q=cat'`);
    // No secret and nothing to note: the dialog closes on the new function's code.
    await session.ui.page.getByRole('dialog', { name: 'New function' }).waitFor({ state: 'detached' });
    await session.ui.page.locator('.fn-title', { hasText: 'list_things' }).waitFor();
    const code = session.ui.page.locator('[data-testid=code-editor] .view-lines');
    await expect.poll(async () => ((await code.textContent()) ?? '').replace(/\s/g, '')).toContain(`constres=awaitctx.fetch(url.href,{method:"GET",`);
    const text = ((await code.textContent()) ?? '').replace(/\s/g, '');
    expect(text).toContain(`newURL("${base}/v1/things")`);
    expect(text).toContain(`url.searchParams.append("limit",String((args["limit"]??2)));`);
    expect(text).toContain('"Accept":"application/json"');
    await session.ui.screenshot('new-from-curl-01-code');

    await session.ui.tab('Schema & settings');
    expect(await session.ui.page.locator('#fn-hosts').inputValue()).toBe(`127.0.0.1:${vendor.port}`);
    expect(await session.ui.page.getByRole('checkbox', { name: 'Read-only (does not change anything)' }).isChecked()).toBe(true);

    // Run it from the console: the query's values are its arguments' defaults, and can be changed.
    const first = await session.ui.run({});
    await expect.poll(() => first.textContent()).toContain('cat 2');
    expect(vendor.seen.at(-1)).toMatchObject({ method: 'GET', url: '/v1/things?limit=2&q=cat' });
    expect(vendor.seen.at(-1)!.headers.accept).toBe('application/json');
    const second = await session.ui.run({ limit: 3, q: 'dog' });
    await expect.poll(() => second.textContent()).toContain('dog 3');
    expect(vendor.seen.at(-1)).toMatchObject({ method: 'GET', url: '/v1/things?limit=3&q=dog' });
    expect(vendor.seen).toHaveLength(2);
    await session.ui.screenshot('new-from-curl-02-run');
    expect(session.studio.pageErrors).toEqual([]);
  }, 90_000);

  it('names the credential for an Authorization header and keeps the secret nowhere', async () => {
    const secret = 'sk_test_e2e_9f8e7d6c5b4a';
    await newFromCurl('create_thing', `curl -X POST http://127.0.0.1:${vendor.port}/v1/things -H "Authorization: Bearer ${secret}" --json '{"name":"box","size":3}'`);
    const made = session.ui.page.getByRole('dialog', { name: 'New function' });
    await expect.poll(() => made.textContent()).toContain(`Created create_thing for 127.0.0.1:${vendor.port}.`);
    expect(await made.textContent()).toContain('was not kept. Store it on the Credentials page as local');
    expect(await made.textContent()).not.toContain(secret);
    await session.ui.screenshot('new-from-curl-03-credential');
    await made.getByRole('button', { name: 'Done' }).click();
    await session.ui.page.locator('.fn-title', { hasText: 'create_thing' }).waitFor();
    const record = await session.studio.call('functions:get', { name: 'create_thing' });
    expect(record).toMatchObject({ credentials: ['local'], allowedHosts: [`127.0.0.1:${vendor.port}`] });
    expect(JSON.stringify(record)).not.toContain(secret);
    expect(await session.ui.page.content()).not.toContain(secret);
  }, 60_000);

  it('shows what is wrong with a command it cannot use, and creates nothing', async () => {
    await newFromCurl('upload_thing', `curl -F file=@photo.jpg http://127.0.0.1:${vendor.port}/v1/upload`);
    const alert = session.ui.page.getByRole('dialog', { name: 'New function' }).getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toBe(
      'the curl command uploads the file photo.jpg (-F file=@photo.jpg), which a function cannot read; leave that field out of the command, then add an argument holding the file\'s content as base64 and send it from the source as multipart: { "file": { data: bytes, filename: "photo.jpg" } }',
    );
    await session.ui.page.getByRole('dialog', { name: 'New function' }).getByRole('button', { name: 'Cancel' }).click();
    expect((await session.studio.call('functions:list', {})).map((f) => f.name).sort()).toEqual(['create_thing', 'list_things']);
  }, 60_000);
});
