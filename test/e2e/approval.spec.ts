import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { CALLABLE_COMMAND } from '../support/callable.ts';
import { vendorServer } from '../support/vendor.ts';
import { studioSession } from './fixture.ts';

// An agent's `callable mcp` asks the person at the studio before a destructive call: the window
// shows what would run, and nothing reaches the vendor until the person allows it.
describe('approval of a destructive call in the studio window', () => {
  const session = studioSession();

  it('a `callable mcp` client calls a destructive function; the person sees function, client and arguments, and clicks "Allow once"', async () => {
    const vendor = await vendorServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"deleted":true}'));
    await session.studio.call('functions:save', {
      spec: {
        name: 'delete_customer',
        description: 'Deletes a customer',
        annotations: { destructiveHint: true },
        allowedHosts: [`127.0.0.1:${vendor.port}`],
        inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      },
      source: `export default async ({ id }, ctx) => (await ctx.fetch('http://127.0.0.1:${vendor.port}/customers/' + id, { method: 'DELETE' })).json()`,
    });

    // An agent without elicitation, started the way IDEs start it.
    const client = new Client({ name: 'ide-agent', version: '3.1.0' });
    await client.connect(
      new StdioClientTransport({ command: CALLABLE_COMMAND.command, args: [...CALLABLE_COMMAND.args, 'mcp', '--data-dir', session.studio.dataDir], stderr: 'pipe', env: process.env as Record<string, string> }),
    );
    try {
      const call = client.callTool({ name: 'delete_customer', arguments: { id: 'cus_4711' } }, undefined, { timeout: 60_000 });
      const dialog = session.ui.page.getByRole('dialog', { name: 'Approve a call' });
      await dialog.waitFor({ timeout: 20_000 });
      expect(await dialog.getByTestId('prompt-function').textContent()).toBe('delete_customer');
      expect(await dialog.getByTestId('prompt-client').textContent()).toBe('ide-agent 3.1.0');
      expect(await dialog.getByTestId('prompt-args').textContent()).toContain('"cus_4711"');
      expect(await dialog.getByRole('button', { name: 'Allow for this session' }).count()).toBe(1);
      expect(vendor.seen).toEqual([]);
      await session.ui.screenshot('approval-prompt');

      await dialog.getByRole('button', { name: 'Allow once' }).click();
      const result = (await call) as { isError?: boolean; content: Array<{ text?: string }> };
      expect(result.isError).toBeFalsy();
      expect(JSON.parse(result.content[0]!.text!)).toEqual({ deleted: true });
      expect(vendor.seen.map((r) => `${r.method} ${r.url}`)).toEqual(['DELETE /customers/cus_4711']);
      await dialog.waitFor({ state: 'detached' });
    } finally {
      await client.close();
    }
    await expect.poll(async () => (await session.studio.call('runs:list', { name: 'delete_customer', limit: 5 }))[0]).toMatchObject({ ok: true, clientName: 'ide-agent', approval: 'studio:allow_once' });
    expect(session.studio.pageErrors).toEqual([]);
  });

  it('"Ask before every call" in the settings is saved with the function, and then its calls are asked about', async () => {
    await session.studio.call('functions:save', { spec: { name: 'send_invoice', description: 'Sends an invoice' }, source: 'export default () => ({ sent: true })' });
    await session.ui.openFunction('send_invoice');
    await session.ui.tab('Schema & settings');
    await session.ui.page.getByRole('checkbox', { name: /Ask before every call/ }).check();
    await session.ui.save();
    await expect.poll(async () => (await session.studio.call('functions:get', { name: 'send_invoice' })).askBeforeCall).toBe(true);

    const client = new Client({ name: 'ide-agent', version: '3.1.0' });
    await client.connect(
      new StdioClientTransport({ command: CALLABLE_COMMAND.command, args: [...CALLABLE_COMMAND.args, 'mcp', '--data-dir', session.studio.dataDir], stderr: 'pipe', env: process.env as Record<string, string> }),
    );
    try {
      const call = client.callTool({ name: 'send_invoice', arguments: {} }, undefined, { timeout: 60_000 });
      const dialog = session.ui.page.getByRole('dialog', { name: 'Approve a call' });
      await dialog.waitFor({ timeout: 20_000 });
      expect(await dialog.textContent()).toContain('its settings say "ask before every call"');
      await dialog.getByRole('button', { name: 'Deny' }).click();
      const result = (await call) as { isError?: boolean; content: Array<{ text?: string }> };
      expect(result.isError).toBe(true);
      expect(result.content[0]!.text).toMatch(/^send_invoice was not run: a person denied this call in Callable Studio/);
    } finally {
      await client.close();
    }
    await expect.poll(async () => (await session.studio.call('runs:list', { name: 'send_invoice', limit: 5 }))[0]).toMatchObject({ ok: false, errorCode: 'denied', approval: 'studio:deny' });
    // The function's history says how the call was decided.
    await session.ui.tab('History');
    await session.ui.page.getByText('approval: studio:deny').first().waitFor();
  });

  it("a function's ctx.elicit question, from a client without elicitation, is a form in the studio whose answer the function gets", async () => {
    await session.studio.call('functions:save', {
      spec: { name: 'book_room', description: 'Books a room' },
      source: `export default async (args, ctx) => {
        const answer = await ctx.elicit('Which floor should the room be on?', { type: 'object', properties: { floor: { type: 'integer', title: 'Floor' } }, required: ['floor'] });
        return answer.action === 'accept' ? { booked: answer.content.floor } : { booked: null, action: answer.action };
      }`,
    });
    const client = new Client({ name: 'ide-agent', version: '3.1.0' });
    await client.connect(
      new StdioClientTransport({ command: CALLABLE_COMMAND.command, args: [...CALLABLE_COMMAND.args, 'mcp', '--data-dir', session.studio.dataDir], stderr: 'pipe', env: process.env as Record<string, string> }),
    );
    try {
      const call = client.callTool({ name: 'book_room', arguments: {} }, undefined, { timeout: 60_000 });
      const dialog = session.ui.page.getByRole('dialog', { name: 'Input requested' });
      await dialog.waitFor({ timeout: 20_000 });
      expect(await dialog.textContent()).toContain('Which floor should the room be on?');
      await dialog.getByLabel('Floor').fill('7');
      const submit = dialog.getByRole('button', { name: 'Submit' });
      await expect.poll(() => submit.isEnabled()).toBe(true);
      await session.ui.screenshot('elicitation-prompt');
      await submit.click();
      const result = (await call) as { isError?: boolean; content: Array<{ text?: string }> };
      expect(result.isError).toBeFalsy();
      expect(JSON.parse(result.content[0]!.text!)).toEqual({ booked: 7 });
      await dialog.waitFor({ state: 'detached' });
    } finally {
      await client.close();
    }
  });

  it("a function's ctx.elicit question from a run in the test console is asked in the same window", async () => {
    await session.studio.call('functions:save', {
      spec: { name: 'pick_colour', description: 'Asks for a colour' },
      source: `export default async (args, ctx) => {
        const answer = await ctx.elicit('Which colour?', { type: 'object', properties: { colour: { type: 'string', title: 'Colour' } }, required: ['colour'] });
        return answer.action === 'accept' ? { colour: answer.content.colour } : { colour: null, action: answer.action };
      }`,
    });
    await session.ui.openFunction('pick_colour');
    await session.ui.tab('Test console');
    await session.ui.page.getByRole('button', { name: /^(Save & run|Run)$/ }).click();
    const dialog = session.ui.page.getByRole('dialog', { name: 'Input requested' });
    await dialog.waitFor({ timeout: 20_000 });
    expect(await dialog.textContent()).toContain('Which colour?');
    await dialog.getByLabel('Colour').fill('teal');
    const submit = dialog.getByRole('button', { name: 'Submit' });
    await expect.poll(() => submit.isEnabled()).toBe(true);
    await submit.click();
    await session.ui.page.getByText('Running…').waitFor({ state: 'detached' });
    expect(await session.ui.page.locator('[data-testid=run-result]').textContent()).toContain('teal');
    const [run] = await session.studio.call('runs:list', { name: 'pick_colour', limit: 1 });
    expect(run).toMatchObject({ caller: 'console', ok: true });
  });
});
