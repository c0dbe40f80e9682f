import { describe, expect, it } from 'vitest';
import { createEngine, KeychainSecretStore } from '../../src-main/engine/index.ts';
import { APP, MACHINE, oauthProvider, signIn, type OAuthProvider } from '../support/oauthProvider.ts';
import { studioSession } from './fixture.ts';

// The Credentials page's Connect for an OAuth credential: the engine asks for the sign-in page, the
// relay main uses checks it is on the credential's authorization endpoint and hands it to the
// "system browser", here a tab of the test's own Chromium, where a person signs in on a real
// oidc-provider's login and consent pages; the studio then shows the credential connected.
describe('connecting an OAuth account from the Credentials page', () => {
  const opened: string[] = [];
  /** Whether the person signs in on the page the browser opens (or walks away from it). */
  let signsIn = true;
  const session = studioSession({
    openExternal: (url) => {
      opened.push(url);
      if (signsIn) void signInInBrowser(url);
    },
  });
  let op: OAuthProvider;
  /** The sign-in tab's end: the loopback redirect's page text, or why it failed. */
  let signedIn: Promise<string> | undefined;

  async function signInInBrowser(url: string): Promise<void> {
    signedIn = (async () => {
      // The system browser: the same Chromium, its own profile (cookies) apart from the studio's page.
      const tab = await session.studio.page.context().browser()!.newPage();
      // Its pages @import a web font: do not wait for a network this machine may not have.
      await tab.goto(url, { waitUntil: 'domcontentloaded' });
      await tab.locator('input[name=login]').fill('grace');
      await tab.locator('input[name=password]').fill('any-password');
      await tab.getByRole('button', { name: 'Sign-in' }).click();
      await tab.getByRole('button', { name: 'Continue' }).click();
      await tab.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/, { waitUntil: 'domcontentloaded' });
      const text = (await tab.locator('body').textContent()) ?? '';
      await tab.context().close();
      return text;
    })();
    // The test reads what it ended with (or how it failed) from `signedIn`.
    await signedIn.catch(() => {});
  }

  it('Connect opens the sign-in page in the browser and the row shows connected, as whom, with its scopes and expiry; Disconnect leaves it not connected', async () => {
    op = await oauthProvider({ accessTokenTtl: 600 });
    // Defined with its server, as the OpenAPI scaffold does: only the client id is missing.
    const definer = createEngine({ dataDir: session.studio.dataDir, secrets: new KeychainSecretStore(process.env.CALLABLE_KEYCHAIN_SERVICE!) });
    definer.credentials.defineOAuth({ name: 'workspace', hosts: [`127.0.0.1:${op.resource.port}`], issuer: op.issuer, scopes: ['openid', 'email', 'offline_access', 'read'], grant: 'code' });
    definer.close();

    const { page } = session.ui;
    await session.ui.goTo('Credentials');
    const state = page.getByTestId('oauth-state-workspace');
    await expect.poll(() => state.textContent()).toContain('not connected');
    const row = page.getByRole('row').filter({ hasText: 'workspace' });
    expect(await row.textContent()).toContain('OAuth 2 (sign-in)');
    expect(await row.getByRole('button', { name: 'Edit' }).count()).toBe(0);

    // Without the client id, Connect says what is missing and opens nothing.
    await page.getByRole('button', { name: 'Connect workspace' }).click();
    await row.getByRole('alert').filter({ hasText: 'Give the client id registered with the authorization server.' }).waitFor();
    expect(opened).toEqual([]);

    await page.getByLabel('Client id for workspace').fill(APP.id);
    await page.getByRole('button', { name: 'Connect workspace' }).click();
    await row.getByRole('status').filter({ hasText: 'Waiting for the sign-in in your browser…' }).waitFor();
    await session.ui.screenshot('oauth-connect-waiting');
    await expect.poll(() => signedIn).toBeDefined();
    expect(await signedIn).toContain('Connected. You can close this tab.');
    await state.getByText('connected', { exact: true }).waitFor();
    expect(opened).toHaveLength(1);
    expect(new URL(opened[0]!).origin).toBe(op.issuer);
    const shown = (await state.textContent()) ?? '';
    expect(shown).toContain('as grace');
    expect(shown).toMatch(/scopes: .*openid/);
    expect(shown).toContain('token expires');
    await row.getByRole('button', { name: 'Reconnect workspace' }).waitFor();
    await session.ui.screenshot('oauth-connected');

    await row.getByRole('button', { name: 'Disconnect workspace' }).click();
    await state.getByText('not connected', { exact: true }).waitFor();
    await row.getByRole('button', { name: 'Connect workspace' }).waitFor();
    // The client id is kept: no field for it now.
    expect(await page.getByLabel('Client id for workspace').count()).toBe(0);

    // Nobody signs in this time: Cancel stops waiting, says nothing went wrong, and leaves it as it was.
    signsIn = false;
    await row.getByRole('button', { name: 'Connect workspace' }).click();
    await row.getByRole('status').filter({ hasText: 'Waiting for the sign-in in your browser…' }).waitFor();
    await expect.poll(() => opened.length).toBe(2);
    await row.getByRole('button', { name: 'Cancel connecting workspace' }).click();
    await row.getByRole('button', { name: 'Connect workspace' }).waitFor();
    expect(await row.getByRole('alert').count()).toBe(0);
    expect(await state.textContent()).toContain('not connected');
    signsIn = true;
    expect(session.studio.pageErrors).toEqual([]);
  });

  it('the "Connect an OAuth 2 account" form connects a new client credentials account from its issuer, client id and secret', async () => {
    const { page } = session.ui;
    const form = page.getByRole('form', { name: 'Connect an OAuth 2 account' });
    await form.getByLabel('Credential name').fill('backend');
    await form.getByLabel('Grant').selectOption('client_credentials');
    await form.getByLabel('Client id').fill(MACHINE.id);
    await form.getByRole('button', { name: 'Connect' }).click();
    // Nothing is asked of the server before the form is whole.
    await form.getByRole('alert').filter({ hasText: 'Pick a provider, or give the issuer URL of the authorization server.' }).waitFor();
    expect(await form.getByLabel('Provider').locator('option').allTextContents()).toEqual(expect.arrayContaining(['google', 'github', 'microsoft']));
    await form.getByLabel('Issuer URL').fill(op.issuer);
    await form.getByRole('button', { name: 'Connect' }).click();
    await form.getByRole('alert').filter({ hasText: 'Client credentials need the client secret.' }).waitFor();
    await form.getByLabel('Client secret').fill(MACHINE.secret);
    await form.getByLabel('Hosts').fill(`127.0.0.1:${op.resource.port}`);
    await form.getByLabel('Scopes').fill('read');
    const requests = op.tokenRequests.length;
    await form.getByRole('button', { name: 'Connect' }).click();
    const state = page.getByTestId('oauth-state-backend');
    await state.getByText('connected', { exact: true }).waitFor();
    expect(await state.textContent()).toContain(`as ${MACHINE.id}`);
    expect(await page.getByRole('row').filter({ hasText: 'backend' }).textContent()).toContain('OAuth 2 (client credentials)');
    expect(op.tokenRequests.slice(requests).map((r) => r.grantType)).toEqual(['client_credentials']);
    // The form is cleared, and the secret is nowhere on the page.
    expect(await form.getByLabel('Credential name').inputValue()).toBe('');
    expect(await page.content()).not.toContain(MACHINE.secret);
    await session.ui.screenshot('oauth-connect-form');
    expect(session.studio.pageErrors).toEqual([]);
  });

  it('the device grant shows the code to enter on another device, and the row shows connected once it is approved there', async () => {
    const { page } = session.ui;
    const form = page.getByRole('form', { name: 'Connect an OAuth 2 account' });
    await form.getByLabel('Credential name').fill('kiosk');
    await form.getByLabel('Issuer URL').fill(op.issuer);
    await form.getByLabel('Grant').selectOption('device');
    await form.getByLabel('Client id').fill(APP.id);
    await form.getByLabel('Hosts').fill(`127.0.0.1:${op.resource.port}`);
    await form.getByLabel('Scopes').fill('openid read');
    await form.getByRole('button', { name: 'Connect' }).click();
    const shown = form.getByTestId('device-code');
    await expect.poll(() => shown.textContent()).toMatch(new RegExp(`^On any device, open ${op.issuer}/device and enter the code [A-Z]{4}-[A-Z]{4} \\(${op.issuer}/device\\?user_code=`));
    await session.ui.screenshot('oauth-device-code');
    // Approved on "another device": the provider's own pages, from the complete URL the page shows.
    const complete = /\((http\S+)\)/.exec((await shown.textContent())!)![1]!;
    expect((await signIn(complete, 'dev')).status).toBe(200);
    await page.getByTestId('oauth-state-kiosk').getByText('connected', { exact: true }).waitFor();
    expect(await page.getByTestId('oauth-state-kiosk').textContent()).toContain('as dev');
    expect(session.studio.pageErrors).toEqual([]);
  });
});
