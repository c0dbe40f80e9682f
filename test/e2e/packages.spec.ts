import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureRegistry, type FixtureRegistry } from '../support/registry.ts';
import { studioSession } from './fixture.ts';

describe('npm packages in the studio', () => {
  let registry: FixtureRegistry;
  const saved = { registry: process.env.npm_config_registry, retries: process.env.npm_config_fetch_retries };
  // Registered before the session opens: the engine process takes the registry from its environment.
  beforeAll(async () => {
    const greeter = (version: string) => ({
      name: 'greeter',
      version,
      manifest: { main: 'index.js', types: 'index.d.ts' },
      files: {
        'index.js': 'exports.greet = (name) => `hello, ${name}`;',
        'index.d.ts': 'export declare function greet(name: string): string;\nexport declare class Client {\n  chat: { completions: { create(body: { model: string }): Promise<string> } };\n}\n',
      },
    });
    registry = await fixtureRegistry([greeter('1.0.0'), greeter('1.1.0')]);
    process.env.npm_config_registry = registry.url;
    process.env.npm_config_fetch_retries = '0';
  });
  afterAll(async () => {
    for (const [key, value] of [['npm_config_registry', saved.registry], ['npm_config_fetch_retries', saved.retries]] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    await registry.close();
  });
  const session = studioSession();

  const importing = (arg: string) => `import { greet } from 'greeter';\n\nexport default async function (args: {}, ctx: Ctx) {\n  return { text: greet(${arg}) };\n}\n`;

  it('adds a package from the panel, shows its locked version, shows the type error from its .d.ts, refuses an unknown one, removes it', async () => {
    const { page } = session.ui;
    await session.studio.call('functions:save', { spec: { name: 'hello', description: 'says hello' }, source: "export default async function () {\n  return { text: 'hi' };\n}\n" });
    await session.ui.openFunction('hello');
    await page.getByRole('button', { name: 'Packages' }).click();
    const panel = page.getByTestId('packages-panel');
    await panel.getByText('No packages yet.', { exact: false }).waitFor();

    await panel.getByLabel('Package to add').fill('greeter');
    await panel.getByRole('button', { name: 'Add' }).click();
    const row = panel.getByTestId('package-greeter');
    await row.waitFor({ timeout: 60_000 });
    expect(await row.textContent()).toContain('1.1.0');
    expect(await row.textContent()).toContain('^1.1.0');
    expect(await panel.getByTestId('packages-bundle').textContent()).toMatch(/^1 package locked · bundle \d+\.\d kB$/);
    const listed = await session.studio.call('packages:list', { name: 'hello' });
    expect(listed.packages).toEqual([{ name: 'greeter', range: '^1.1.0', version: '1.1.0' }]);
    expect((await session.studio.call('functions:get', { name: 'hello' })).revision).toBe(2);
    await session.ui.screenshot('packages-01-added');

    // The package's own declarations reach the editor, read from the install (the registry is not asked):
    // greet(1) is a type error while typing, before any save, and a client's methods complete.
    const asked = registry.requests.length;
    await session.ui.replaceCode(importing('1'));
    const editor = page.locator('[data-testid=code-editor] .monaco-editor');
    await editor.locator('.squiggly-error').first().waitFor({ timeout: 30_000 });
    await editor.locator('.view-lines').click();
    await page.keyboard.press('F8');
    const marker = page.locator('.marker-widget');
    await marker.waitFor();
    expect(await marker.textContent()).toContain("Argument of type 'number' is not assignable to parameter of type 'string'");
    await session.ui.screenshot('packages-02-type-error');
    await page.keyboard.press('Escape');
    await session.ui.replaceCode("import { Client } from 'greeter';\n\nexport default async function () {\n  const client = new Client();\n  return client.chat.completions");
    await page.keyboard.type('.');
    const suggestion = page.locator('.suggest-widget .monaco-list-row', { hasText: 'create' });
    await suggestion.waitFor({ timeout: 30_000 });
    await session.ui.screenshot('packages-03-completion');
    await page.keyboard.press('Escape');

    // With a string it type-checks (no error marker at all: the import resolved) and saves with the package.
    await session.ui.replaceCode(importing("'Ada'"));
    await expect.poll(() => editor.locator('.squiggly-error').count(), { timeout: 30_000 }).toBe(0);
    await session.ui.save();
    await expect.poll(async () => (await session.studio.call('functions:get', { name: 'hello' })).revision).toBe(3);
    expect(await session.studio.call('runs:start', { name: 'hello', args: {}, token: 'greet-run' })).toMatchObject({ ok: true, value: { text: 'hello, Ada' } });
    expect(registry.requests.length).toBe(asked);

    // An unknown package: the engine's one line, and nothing changed.
    await panel.getByLabel('Package to add').fill('no-such-package');
    await panel.getByRole('button', { name: 'Add' }).click();
    const error = panel.getByTestId('packages-error');
    await error.waitFor({ timeout: 60_000 });
    expect(await error.textContent()).toBe(`hello: the package "no-such-package" is not in the registry ${registry.url}; check its name (callable remove hello no-such-package drops it)`);
    expect((await session.studio.call('functions:get', { name: 'hello' })).revision).toBe(3);
    await session.ui.screenshot('packages-04-unknown');

    // Removing a package the saved source still imports is refused with the compile error; without the import it goes.
    await row.getByRole('button', { name: 'Remove greeter' }).click();
    await expect.poll(() => error.textContent(), { timeout: 60_000 }).toContain('"greeter" is not one of this function\'s packages');
    expect((await session.studio.call('packages:list', { name: 'hello' })).packages.map((p) => p.name)).toEqual(['greeter']);
    await session.ui.replaceCode("export default async function () {\n  return { text: 'hi' };\n}\n");
    await session.ui.save();
    await expect.poll(async () => (await session.studio.call('functions:get', { name: 'hello' })).revision).toBe(4);
    await row.getByRole('button', { name: 'Remove greeter' }).click();
    await panel.getByText('No packages yet.', { exact: false }).waitFor({ timeout: 60_000 });
    expect(await panel.getByTestId('packages-error').count()).toBe(0);
    expect((await session.studio.call('packages:list', { name: 'hello' })).packages).toEqual([]);
    expect((await session.studio.call('functions:get', { name: 'hello' })).revision).toBe(5);

    // Added elsewhere (as `callable add` in a terminal would): the panel and the editor's types follow.
    await session.studio.call('packages:add', { name: 'hello', specs: ['greeter@1.0.0'] });
    await expect.poll(() => row.textContent(), { timeout: 30_000 }).toContain('1.0.0');
    await session.ui.replaceCode(importing('2'));
    await editor.locator('.squiggly-error').first().waitFor({ timeout: 30_000 });
    await editor.locator('.view-lines').click();
    // Until the types arrive the first problem is the unresolved import: look again at the next problem each time.
    await expect
      .poll(async () => {
        await page.keyboard.press('F8');
        return page.locator('.marker-widget').textContent();
      }, { timeout: 30_000 })
      .toContain("Argument of type 'number' is not assignable to parameter of type 'string'");
    expect(session.studio.pageErrors).toEqual([]);
  }, 180_000);
});
