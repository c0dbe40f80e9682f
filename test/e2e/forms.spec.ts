import { beforeAll, describe, expect, it } from 'vitest';
import { studioSession } from './fixture.ts';

/** What vendor schemas contain: $defs + $ref, nested objects, a oneOf, an array of objects, a titled enum, formats, defaults, required. */
const ORDER_SCHEMA = {
  type: 'object' as const,
  $defs: {
    address: {
      type: 'object',
      title: 'Address',
      properties: { street: { type: 'string', title: 'Street' }, city: { type: 'string', title: 'City' } },
      required: ['city'],
    },
  },
  properties: {
    customer: {
      type: 'object',
      title: 'Customer',
      properties: {
        name: { type: 'string', title: 'Name' },
        email: { type: 'string', title: 'Email', format: 'email', pattern: '^[^@\\s]+@[^@\\s]+\\.[a-z]+$' },
        address: { $ref: '#/$defs/address' },
      },
      required: ['name', 'email'],
    },
    delivery: {
      title: 'Delivery',
      oneOf: [
        {
          type: 'object',
          title: 'Pickup',
          properties: { kind: { type: 'string', const: 'pickup', default: 'pickup' }, store: { type: 'string', title: 'Store' } },
          required: ['kind', 'store'],
        },
        {
          type: 'object',
          title: 'Courier',
          properties: { kind: { type: 'string', const: 'courier', default: 'courier' }, date: { type: 'string', format: 'date', title: 'Date' }, to: { $ref: '#/$defs/address' } },
          required: ['kind', 'date', 'to'],
        },
      ],
    },
    items: {
      type: 'array',
      title: 'Items',
      items: {
        type: 'object',
        properties: { sku: { type: 'string', title: 'SKU' }, quantity: { type: 'integer', title: 'Quantity', minimum: 1, default: 1 } },
        required: ['sku'],
      },
    },
    priority: {
      type: 'string',
      title: 'Priority',
      oneOf: [
        { const: 'low', title: 'Low' },
        { const: 'high', title: 'High (same day)' },
      ],
      default: 'low',
    },
  },
  required: ['customer', 'delivery'],
};

describe('the console form, from a real vendor-style JSON Schema', () => {
  const session = studioSession();
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    // Errors the page logs (the test server has no favicon, which Chromium asks for on its own: not the page's doing).
    session.studio.page.on('console', (m) => {
      if ((m.type() === 'error' || /Content.Security.Policy/i.test(m.text())) && !m.location().url.endsWith('/favicon.ico')) consoleErrors.push(`${m.text()} ${m.location().url}`);
    });
    // Any CSP violation in the page (rjsf's own ajv would need 'unsafe-eval'), as the browser reports it.
    await session.studio.page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { __cspViolations: string[] }).__cspViolations = seen;
      document.addEventListener('securitypolicyviolation', (e) => seen.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
  }, 60_000);

  it('fills $ref, oneOf, array and enum fields, flags a bad email as it is typed, and runs with exactly those arguments', async () => {
    await session.studio.call('functions:save', { spec: { name: 'place_order', inputSchema: ORDER_SCHEMA }, source: 'export default (args: unknown) => args;\n' });
    await session.ui.openFunction('place_order');
    await session.ui.tab('Test console');
    const page = session.studio.page;

    await page.locator('#arg_customer_name').fill('Ada');
    await page.locator('#arg_customer_email').fill('ada-at-example');
    // The host's validator says so next to the field, before any run.
    const emailField = page.locator('.form-group', { has: page.locator('#arg_customer_email') }).last();
    await expect.poll(() => emailField.locator('.text-danger').textContent()).toContain('must match pattern');
    await expect.poll(() => page.getByTestId('args-problems').textContent()).toMatch(/^\d+ problems? in the arguments: a run would be refused$/);
    // Its tooltip lists them as a run would report them.
    expect(await page.getByTestId('args-problems').getAttribute('title')).toContain('customer.email must match pattern');
    await session.ui.screenshot('forms-01-bad-email');

    // $ref'd object inside a nested object.
    await page.locator('#arg_customer_address_city').fill('London');
    // oneOf: choose the Courier branch, then fill its fields (one is a date, another a $ref).
    await page.locator('select', { has: page.locator('option', { hasText: 'Courier' }) }).selectOption({ label: 'Courier' });
    await page.locator('#arg_delivery_date').fill('2026-12-24');
    // The branch's discriminator (a const) cannot be typed over.
    expect(await page.locator('#arg_delivery_kind').inputValue()).toBe('courier');
    expect(await page.locator('#arg_delivery_kind').getAttribute('readonly')).not.toBeNull();
    await page.locator('#arg_delivery_to_city').fill('Paris');
    // An array of objects: add an item; its quantity comes from the schema's default.
    const items = page.locator('fieldset#arg_items');
    await items.getByRole('button', { name: 'Add' }).click();
    await page.locator('#arg_items_0_sku').fill('SKU-2');
    await items.getByRole('button', { name: 'Add' }).click();
    await page.locator('#arg_items_1_sku').fill('SKU-1');
    // Move the second item up, then remove the one that is now second.
    await items.getByRole('button', { name: 'Move up' }).last().click();
    await expect.poll(() => page.locator('#arg_items_0_sku').inputValue()).toBe('SKU-1');
    await items.getByRole('button', { name: 'Remove' }).last().click();
    await expect.poll(() => page.locator('#arg_items_1_sku').count()).toBe(0);
    // An enum with titles: the user picks the title.
    await page.locator('#arg_priority').selectOption({ label: 'High (same day)' });

    // Fix the email: the error goes away as it is typed.
    await page.locator('#arg_customer_email').fill('ada@example.com');
    await expect.poll(() => emailField.locator('.text-danger').count()).toBe(0);
    await expect.poll(() => page.getByTestId('args-problems').count()).toBe(0);
    await session.ui.screenshot('forms-02-filled');

    const expected = {
      customer: { name: 'Ada', email: 'ada@example.com', address: { city: 'London' } },
      delivery: { kind: 'courier', date: '2026-12-24', to: { city: 'Paris' } },
      items: [{ sku: 'SKU-1', quantity: 1 }],
      priority: 'high',
    };
    await page.getByRole('button', { name: /^(Save & run|Run)$/ }).click();
    const result = page.locator('[data-testid=run-result]');
    await result.waitFor();
    await expect.poll(() => result.locator('.badge').textContent()).toBe('ok');
    const [run] = await session.studio.call('runs:list', { name: 'place_order', limit: 1 });
    expect(run?.args).toEqual(expected);

    // Raw JSON edits the same text; back in the form, the data picks its oneOf branch again.
    await page.getByLabel('Raw JSON').check();
    expect(JSON.parse(await page.getByLabel('Arguments JSON').inputValue())).toEqual(expected);
    await page.getByLabel('Arguments JSON').fill(JSON.stringify({ ...expected, delivery: { kind: 'pickup', store: 'Soho' } }));
    await page.getByLabel('Raw JSON').uncheck();
    await expect.poll(() => page.locator('#arg_delivery_store').inputValue()).toBe('Soho');
    expect(await page.locator('#arg_customer_email').inputValue()).toBe('ada@example.com');

    expect(session.studio.pageErrors).toEqual([]);
    expect(consoleErrors).toEqual([]);
    expect(await page.evaluate(() => (window as unknown as { __cspViolations: string[] }).__cspViolations)).toEqual([]);
  }, 60_000);

  it('shows the missing fields of the oneOf branch chosen, not those of the other branch, and a run refuses the same arguments', async () => {
    await session.studio.call('functions:save', { spec: { name: 'only_host', inputSchema: ORDER_SCHEMA }, source: 'export default (args: unknown) => args;\n' });
    await session.ui.openFunction('only_host');
    await session.ui.tab('Test console');
    const page = session.studio.page;
    await page.locator('select', { has: page.locator('option', { hasText: 'Courier' }) }).selectOption({ label: 'Courier' });
    // The Courier branch's missing date is reported at its field, not the Pickup branch's missing store.
    const dateField = page.locator('.form-group', { has: page.locator('#arg_delivery_date') }).last();
    await expect.poll(() => dateField.locator('.text-danger').textContent()).toContain('is required');
    expect(await page.locator('#arg_delivery_store').count()).toBe(0);
    // A run with these arguments is refused by the host for the same reasons the form shows.
    await page.getByRole('button', { name: /^(Save & run|Run)$/ }).click();
    const result = page.locator('[data-testid=run-result]');
    await expect.poll(() => result.textContent()).toContain('invalid arguments');
    await expect.poll(() => result.textContent()).toContain('args.customer.name is required');
    expect(session.studio.pageErrors).toEqual([]);
  }, 60_000);

  it('validates through the bridge as runs do: 2020-12 by default, draft-07 when declared, formats not checked, other dialects refused in one line', async () => {
    const tuple = { type: 'object', properties: { pair: { type: 'array', items: [{ type: 'string' }, { type: 'number' }] } } };
    // draft-07 reads an array "items" as a tuple: the second element must be a number.
    const draft07 = await session.studio.call('schemas:validate', { schema: { $schema: 'http://json-schema.org/draft-07/schema#', ...tuple }, value: { pair: ['a', 'b'] } });
    expect(draft07.problems.map((p) => [p.instancePath, p.keyword])).toEqual([['/pair/1', 'type']]);
    // Without "$schema" the schema is 2020-12, where an array "items" is not valid (as a save says too).
    await expect(session.studio.call('schemas:validate', { schema: tuple, value: {} })).rejects.toMatchObject({ code: 'bad_input', message: expect.stringContaining('inputSchema is not a valid JSON Schema 2020-12: schema is invalid: data/properties/pair/items must be object,boolean') });
    await expect(session.studio.call('schemas:validate', { schema: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' }, value: {} })).rejects.toMatchObject({
      code: 'bad_input',
      message: expect.stringContaining('"$schema" is JSON Schema draft-04, which Callable Studio does not validate'),
    });
    // Formats are not checked, as in a run: a schema-valid value with a bad email passes.
    expect((await session.studio.call('schemas:validate', { schema: { type: 'object', properties: { to: { type: 'string', format: 'email' } } }, value: { to: 'nope' } })).problems).toEqual([]);
    // At most 100 problems come back.
    const many = Array.from({ length: 150 }, (_, i) => `p${i}`);
    expect((await session.studio.call('schemas:validate', { schema: { type: 'object', required: many }, value: {} })).problems).toHaveLength(100);
  });
});
