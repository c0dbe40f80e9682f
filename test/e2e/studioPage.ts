import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { SCREENSHOTS } from './harness.ts';

/** What a user does in the studio, in the user's words. */
export class StudioPage {
  readonly page: Page;

  constructor(page: Page) {
    this.page = page;
  }

  async screenshot(name: string): Promise<void> {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await this.page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
  }

  goTo(page: 'Functions' | 'Credentials' | 'MCP'): Promise<void> {
    return this.page.locator('.topbar nav').getByRole('button', { name: page, exact: true }).click();
  }

  tab(name: 'Code' | 'Schema & settings' | 'Test console' | 'History' | 'Tests' | 'Advice'): Promise<void> {
    return this.page.getByRole('tab', { name }).click();
  }

  functionItem(name: string): Locator {
    return this.page.getByRole('option', { name });
  }

  /** Opens a function from the list and waits until the editor shows it (the list may be reloading). */
  async openFunction(name: string): Promise<void> {
    await this.functionItem(name).click();
    await this.page.locator('.fn-title', { hasText: new RegExp(`^${name}( ● unsaved)?$`) }).waitFor();
  }

  async createFromTemplate(templateTitle: string, name: string): Promise<void> {
    await this.page.getByRole('button', { name: 'New function' }).click();
    const dialog = this.page.getByRole('dialog', { name: 'New function' });
    await dialog.getByLabel('Template').selectOption({ label: templateTitle });
    await dialog.getByLabel('Function name').fill(name);
    await dialog.getByRole('button', { name: 'Create' }).click();
    await this.page.locator('.fn-title', { hasText: name }).waitFor();
  }

  /** Replaces the whole source in Monaco by pasting it, as a user would (typing would auto-close brackets). */
  async replaceCode(code: string): Promise<void> {
    await this.tab('Code');
    const editor = this.page.locator('[data-testid=code-editor] .monaco-editor');
    await editor.waitFor();
    await this.page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await this.page.evaluate((text) => navigator.clipboard.writeText(text), code);
    await editor.locator('.view-lines').click();
    await this.page.keyboard.press('ControlOrMeta+A');
    await this.page.keyboard.press('ControlOrMeta+V');
    // Monaco pastes asynchronously (it reads the clipboard): wait until the code is in the editor.
    const whole = code.replace(/\s/g, '');
    await this.page.waitForFunction(
      (expected) => (document.querySelector('[data-testid=code-editor] .view-lines')?.textContent ?? '').replace(/\s/g, '') === expected,
      whole,
    );
  }

  async save(): Promise<void> {
    await this.page.keyboard.press('ControlOrMeta+S');
  }

  compileError(): Locator {
    return this.page.locator('.compile-error');
  }

  async run(args: unknown): Promise<Locator> {
    await this.tab('Test console');
    const raw = this.page.getByLabel('Raw JSON');
    if (!(await raw.isChecked())) await raw.check();
    await this.page.getByLabel('Arguments JSON').fill(JSON.stringify(args));
    const before = await this.page.locator('[data-testid=run-result]').count();
    await this.page.getByRole('button', { name: /^(Save & run|Run)$/ }).click();
    const result = this.page.locator('[data-testid=run-result]');
    if (before === 0) await result.waitFor();
    await this.page.getByText('Running…').waitFor({ state: 'detached' });
    return result;
  }
}
