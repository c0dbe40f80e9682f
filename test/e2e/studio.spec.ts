import { beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../support/mcpClients.ts';
import { vendorServer } from '../support/vendor.ts';
import { studioSession } from './fixture.ts';

describe('the studio in a real browser, bound to a real engine process', () => {
  const session = studioSession();
  let vendor: Awaited<ReturnType<typeof vendorServer>>;
  const SECRET = `e2e-secret-${Date.now()}`;

  beforeAll(async () => {
    vendor = await vendorServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ translations: [{ text: `[${req.headers.authorization === `DeepL-Auth-Key ${SECRET}` ? 'authorized' : 'anonymous'}] ${JSON.parse(req.body || '{}').text?.[0] ?? ''}`, detected_source_language: 'EN' }] }));
    });
  }, 60_000);

  it('creates a function from a template, shows a compile error inline, keeps the text, saves the fix and runs it', async () => {
    await session.ui.createFromTemplate('Word statistics', 'count_words');
    await session.ui.screenshot('01-editor');
    await session.ui.replaceCode('export default async function (args: Args) {\n  const words = args.text.split(/\\s+/).filter(Boolean)\n  return { words: words.length, first: words[0] ?? null ;\n}\n');
    await session.ui.save();
    await expect.poll(() => session.ui.compileError().textContent()).toMatch(/count_words\.ts:3:\d+: Expected "}" but found ";"/);
    await expect.poll(() => session.ui.page.locator('.unsaved').count()).toBe(1);
    await session.ui.screenshot('02-compile-error');
    // The typed text was not lost: fix just the bad line.
    await session.ui.replaceCode('export default async function (args: Args, ctx: Ctx) {\n  const words = args.text.split(/\\s+/).filter(Boolean);\n  ctx.log(`counted ${words.length} words`);\n  return { words: words.length, sentences: 1, characters: args.text.length, topWords: [] };\n}\n');
    await session.ui.save();
    await expect.poll(() => session.ui.compileError().count()).toBe(0);
    expect((await session.studio.call('functions:get', { name: 'count_words' })).revision).toBe(2);

    const result = await session.ui.run({ text: 'one two three' });
    await expect.poll(() => result.textContent()).toContain('words: 3');
    expect(await result.locator('.badge').textContent()).toBe('ok');
    expect(await result.locator('[data-testid=run-logs]').textContent()).toContain('counted 3 words');
    await session.ui.screenshot('03-console-result');
  });

  it('stores a credential from the Credentials page and the run injects it, shown in the trace', async () => {
    await session.ui.goTo('Credentials');
    // The page also holds the OAuth connect form, with fields of the same names.
    const form = session.ui.page.getByRole('form', { name: 'Add a credential' });
    await form.getByLabel('Credential name').fill('deepl');
    await form.getByLabel('Hosts').fill(`127.0.0.1:${vendor.port}`);
    await form.getByLabel('Template').fill('DeepL-Auth-Key {secret}');
    await form.getByLabel('Secret', { exact: true }).fill(SECRET);
    await form.getByRole('button', { name: 'Save credential' }).click();
    await session.ui.page.getByText('Saved credential deepl').waitFor();
    await expect.poll(() => session.ui.page.locator('td', { hasText: `127.0.0.1:${vendor.port}` }).count()).toBe(1);
    // Write-only: after saving, the secret field is empty and the secret is nowhere in the page.
    expect(await session.ui.page.getByRole('form', { name: 'Add a credential' }).getByLabel('Secret', { exact: true }).inputValue()).toBe('');
    expect(await session.ui.page.content()).not.toContain(SECRET);
    await session.ui.screenshot('04-credentials');

    await session.ui.goTo('Functions');
    await session.ui.createFromTemplate('Translate with DeepL', 'translate_local');
    await session.ui.tab('Schema & settings');
    await session.ui.page.locator('#fn-hosts').fill(`127.0.0.1:${vendor.port}`);
    await session.ui.replaceCode(
      `export default async function (args: Args, ctx: Ctx) {\n  const res = await ctx.fetch('http://127.0.0.1:${vendor.port}/v2/translate', { method: 'POST', credential: 'deepl', json: { text: [args.text], target_lang: args.target } });\n  return (await res.json()).translations[0].text;\n}\n`,
    );
    // The function lists the credential, but giving it the secret is the user's decision: refused until granted.
    const seenBefore = vendor.seen.length;
    const refused = await session.ui.run({ text: 'Hello', target: 'DE' });
    await expect.poll(() => refused.textContent()).toContain('callable credentials grant deepl translate_local');
    expect(vendor.seen.length).toBe(seenBefore);
    // The saved function says so in the editor, with the way to the grant.
    await session.ui.tab('Code');
    await expect.poll(() => session.ui.page.getByTestId('ungranted').textContent()).toContain('translate_local asks for credential deepl, which has not been granted to it');
    await session.ui.page.getByRole('button', { name: 'Grant on the Credentials page' }).click();
    await session.ui.page.getByRole('button', { name: 'Grant deepl to translate_local' }).click();
    await session.ui.page.getByRole('button', { name: 'Revoke deepl from translate_local' }).waitFor();
    await session.ui.goTo('Functions');
    await session.ui.openFunction('translate_local');
    await session.ui.tab('Code');
    await expect.poll(() => session.ui.page.getByTestId('ungranted').count()).toBe(0);
    const result = await session.ui.run({ text: 'Hello', target: 'DE' });
    await expect.poll(() => result.textContent()).toContain('[authorized] Hello');
    const trace = result.locator('[data-testid=run-trace]');
    expect(await trace.textContent()).toContain(`POST http://127.0.0.1:${vendor.port}/v2/translate`);
    expect(await trace.textContent()).toContain('deepl');
    expect(vendor.seen.at(-1)!.headers.authorization).toBe(`DeepL-Auth-Key ${SECRET}`);
    expect(await session.ui.page.content()).not.toContain(SECRET);
    await session.ui.screenshot('05-trace-with-credential');
  });

  it('shows the run history with the console runs and re-runs one', async () => {
    await session.ui.tab('History');
    await expect.poll(() => session.ui.page.getByRole('button', { name: 'Re-run' }).count()).toBeGreaterThan(0);
    await session.ui.screenshot('06-history');
    const runs = async (): Promise<number> => (await session.studio.call('runs:list', { name: 'translate_local', limit: 500 })).length;
    const before = await runs();
    await session.ui.page.getByRole('button', { name: 'Re-run' }).first().click();
    await expect.poll(runs).toBe(before + 1);
  });

  it('disabling a function in the studio changes the tool list of a connected stdio MCP client', async () => {
    let client: TestClient | undefined;
    try {
      client = await connect('2025-11-25', { transport: 'stdio', stdioArgs: ['--data-dir', session.studio.dataDir] });
      expect((await client.listTools()).map((t) => t.name)).toContain('translate_local');
      const changed = client.nextListChanged();
      await session.ui.goTo('Functions');
      await session.ui.openFunction('translate_local');
      await session.ui.page.getByRole('button', { name: 'Disable', exact: true }).click();
      expect(await changed).not.toContain('translate_local');
      await expect.poll(() => session.ui.page.getByRole('button', { name: 'Enable', exact: true }).count()).toBe(1);
    } finally {
      await client?.close();
    }
  });

  it('shows the MCP server, its client configs with this install’s paths, and the live call feed', async () => {
    await session.ui.goTo('MCP');
    await expect.poll(() => session.ui.page.getByText(/http:\/\/127\.0\.0\.1:\d+\/mcp/).count()).toBeGreaterThan(0);
    expect(await session.ui.page.content()).toContain('bin/callable.js');
    await session.ui.screenshot('07-mcp');
  });

  it('when the engine process dies, the window says so, and the studio works again once it is restarted', async () => {
    await session.ui.goTo('Functions');
    const banner = session.ui.page.getByTestId('engine-banner');
    process.kill(session.studio.relay.pid!, 'SIGKILL');
    await banner.waitFor();
    expect(await banner.textContent()).toBe('The engine process was killed by SIGKILL; restarting it…');
    await session.ui.screenshot('08-engine-restarting');
    await banner.waitFor({ state: 'detached', timeout: 20_000 });
    await session.ui.openFunction('count_words');
    const result = await session.ui.run({ text: 'still here' });
    await expect.poll(() => result.textContent()).toContain('words: 2');
  });

  it('raised no errors in the page', () => {
    expect(session.studio.pageErrors).toEqual([]);
  });
});
