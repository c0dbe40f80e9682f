import { describe, expect, it } from 'vitest';
import { studioSession } from './fixture.ts';

const credential = (name: string) => ({ name, hosts: ['api.example.com'], placement: { kind: 'header' as const, header: 'X-Key', template: '{secret}' } });

// A save answers, and the editor says, which credentials the function asks for and has not been granted.
describe('credentials a saved function asks for and has not been granted', () => {
  const session = studioSession();

  it('are answered by the save, listed in the editor with the way to the Credentials page, and go once granted', async () => {
    await session.studio.call('credentials:set', { spec: credential('vendor_key'), secret: 'vendor-secret' });
    const spec = { name: 'needs_keys', allowedHosts: ['api.example.com'], credentials: ['vendor_key', 'later_key'] };
    const source = 'export default () => ({ ok: true })';
    const saved = await session.studio.call('functions:save', { spec, source });
    expect(saved.ungranted).toEqual([
      { name: 'vendor_key', exists: true },
      { name: 'later_key', exists: false },
    ]);

    // Saved from the editor: the list is above the code.
    await session.ui.openFunction('needs_keys');
    await session.ui.replaceCode('export default () => ({ ok: 1 })');
    await session.ui.save();
    const ungranted = session.ui.page.getByTestId('ungranted');
    await expect.poll(() => session.ui.page.getByText('Saved needs_keys (revision 2); not granted: vendor_key, later_key').count()).toBe(1);
    await expect.poll(() => ungranted.textContent()).toContain('needs_keys asks for credential vendor_key, which has not been granted to it: nothing is sent until you grant it.');
    expect(await ungranted.textContent()).toContain('needs_keys asks for credential later_key, which does not exist yet: add it, then grant it to needs_keys');
    await session.ui.screenshot('11-ungranted-after-save');

    // The button leads to the Credentials page, where the grant is one click.
    await session.ui.page.getByRole('button', { name: 'Grant on the Credentials page' }).click();
    await session.ui.page.getByRole('button', { name: 'Grant vendor_key to needs_keys' }).click();
    await session.ui.page.getByRole('button', { name: 'Revoke vendor_key from needs_keys' }).waitFor();

    // Back in the editor, only the credential that does not exist yet is left.
    await session.ui.goTo('Functions');
    await session.ui.openFunction('needs_keys');
    await session.ui.tab('Code');
    await expect.poll(() => ungranted.textContent()).not.toContain('vendor_key');
    expect(await ungranted.textContent()).toContain('later_key, which does not exist yet');
    await session.ui.page.getByRole('button', { name: 'Add it on the Credentials page' }).waitFor();

    // Added and granted: the next save lists nothing, and the editor says nothing.
    await session.studio.call('credentials:set', { spec: credential('later_key'), secret: 'later-secret' });
    expect(await session.studio.call('credentials:grant', { name: 'later_key', function: 'needs_keys' })).toEqual({ granted: true, credentialExists: true });
    await session.ui.replaceCode('export default () => ({ ok: 2 })');
    await session.ui.save();
    await expect.poll(() => session.ui.page.getByText('Saved needs_keys (revision 3)', { exact: true }).count()).toBe(1);
    await expect.poll(() => ungranted.count()).toBe(0);
    expect(await session.studio.call('functions:ungranted', { name: 'needs_keys' })).toEqual({ ungranted: [] });
  });
});
