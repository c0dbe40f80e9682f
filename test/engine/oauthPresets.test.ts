import { describe, expect, it } from 'vitest';
import { OAUTH_PRESETS, PRESET_NAMES } from '../../src-main/engine/index.ts';
import { withPreset } from '../../src-main/engine/credentials/oauthPresets.ts';
import type { OAuthConnectInput } from '../../src-main/engine/model/index.ts';

// The endpoints as each provider documents them, written out here independently of the presets.
const DOCUMENTED: Record<string, { authorize: string; token: string; device?: string; revocation?: string; hosts: string[] }> = {
  github: { authorize: 'https://github.com/login/oauth/authorize', token: 'https://github.com/login/oauth/access_token', device: 'https://github.com/login/device/code', hosts: ['api.github.com'] },
  google: {
    authorize: 'https://accounts.google.com/o/oauth2/v2/auth',
    token: 'https://oauth2.googleapis.com/token',
    device: 'https://oauth2.googleapis.com/device/code',
    revocation: 'https://oauth2.googleapis.com/revoke',
    hosts: ['www.googleapis.com'],
  },
  microsoft: {
    authorize: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
    token: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
    device: 'https://login.microsoftonline.com/common/oauth2/v2.0/devicecode',
    hosts: ['graph.microsoft.com'],
  },
  slack: { authorize: 'https://slack.com/oauth/v2/authorize', token: 'https://slack.com/api/oauth.v2.access', hosts: ['slack.com'] },
  notion: { authorize: 'https://api.notion.com/v1/oauth/authorize', token: 'https://api.notion.com/v1/oauth/token', hosts: ['api.notion.com'] },
  hubspot: { authorize: 'https://app.hubspot.com/oauth/authorize', token: 'https://api.hubapi.com/oauth/v1/token', hosts: ['api.hubapi.com'] },
  atlassian: { authorize: 'https://auth.atlassian.com/authorize', token: 'https://auth.atlassian.com/oauth/token', hosts: ['api.atlassian.com'] },
  linear: { authorize: 'https://linear.app/oauth/authorize', token: 'https://api.linear.app/oauth/token', revocation: 'https://api.linear.app/oauth/revoke', hosts: ['api.linear.app'] },
  dropbox: { authorize: 'https://www.dropbox.com/oauth2/authorize', token: 'https://api.dropboxapi.com/oauth2/token', hosts: ['api.dropboxapi.com', 'content.dropboxapi.com'] },
  spotify: { authorize: 'https://accounts.spotify.com/authorize', token: 'https://accounts.spotify.com/api/token', hosts: ['api.spotify.com'] },
};

function input(preset: string, more: Partial<OAuthConnectInput> = {}): OAuthConnectInput {
  return { name: 'acct', hosts: [], clientId: 'id', scopes: [], grant: 'code', preset, ...more };
}

describe('OAuth provider presets', () => {
  it('cover the ten providers', () => {
    expect([...PRESET_NAMES].sort()).toEqual(Object.keys(DOCUMENTED).sort());
  });

  it.each(Object.entries(DOCUMENTED))('%s resolves to its documented endpoints and API hosts', (name, documented) => {
    const resolved = withPreset(input(name), true);
    expect(resolved).toMatchObject({
      authorizeUrl: documented.authorize,
      tokenUrl: documented.token,
      deviceUrl: documented.device,
      revocationUrl: documented.revocation,
      hosts: documented.hosts,
      scopes: OAUTH_PRESETS[name]!.scopes,
    });
    expect(OAUTH_PRESETS[name]!.grants.includes('device')).toBe(documented.device !== undefined);
  });

  it('ask for what the provider needs for a refresh token, and join scopes as it expects', () => {
    expect(withPreset(input('google'), true).authorizeParams).toEqual({ access_type: 'offline', prompt: 'consent' });
    expect(withPreset(input('dropbox'), false).authorizeParams).toEqual({ token_access_type: 'offline' });
    expect(withPreset(input('atlassian'), true)).toMatchObject({ scopes: ['offline_access', 'read:me'], authorizeParams: { audience: 'api.atlassian.com' } });
    expect(withPreset(input('linear'), false).scopeDelimiter).toBe(',');
  });

  it('give way to explicit flags: hosts, scopes, and a server given replaces the whole preset server', () => {
    const resolved = withPreset(input('google', { hosts: ['gmail.googleapis.com'], scopes: ['openid'], tokenUrl: 'https://t.example/token' }), true);
    expect(resolved).toMatchObject({ hosts: ['gmail.googleapis.com'], scopes: ['openid'], tokenUrl: 'https://t.example/token' });
    // No token of this server goes to the preset's revocation or device URL, nor is its ID token checked against Google.
    expect(resolved.revocationUrl).toBeUndefined();
    expect(resolved.deviceUrl).toBeUndefined();
    expect(resolved.issuer).toBeUndefined();
  });

  it('refuse a grant the provider does not have, a missing client secret, or an unknown name, in one line', () => {
    expect(() => withPreset(input('dropbox', { grant: 'device' }), false)).toThrow(/^the dropbox preset does not support --grant device \(it supports code\)$/);
    expect(() => withPreset(input('notion'), false)).toThrow(/^notion needs the client secret for --grant code: pass it on standard input with --client-secret-stdin$/);
    expect(() => withPreset(input('gitlab'), false)).toThrow(/^no preset "gitlab"; the presets are github, google, /);
  });
});
