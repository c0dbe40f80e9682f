import { StudioError, type OAuthConnectInput, type OAuthGrant } from '../model/index.ts';

/** What a provider's documentation says about connecting to it; nothing here is secret. */
export interface OAuthPreset {
  /** The ID token issuer, when it differs from the token endpoint's origin (an ID token is checked against it). */
  issuer?: string;
  authorizeUrl: string;
  tokenUrl: string;
  revocationUrl?: string;
  deviceUrl?: string;
  scopes: string[];
  /** The API hosts its tokens are sent to. */
  hosts: string[];
  grants: OAuthGrant[];
  /** Grants for which the token endpoint insists on the client secret, even with PKCE. */
  secretFor: OAuthGrant[];
  /** How the client secret is sent: HTTP Basic (the default) or in the form body. */
  clientAuth?: 'basic' | 'post';
  /** Extra authorization request parameters the provider needs (for a refresh token, say). */
  authorizeParams?: Record<string, string>;
  /** How scopes are joined in the authorization request, when not by a space. */
  scopeDelimiter?: string;
}

/**
 * Every preset sends PKCE S256 (providers without PKCE ignore the parameters). The line above
 * each one says where its URLs come from.
 */
export const OAUTH_PRESETS: Readonly<Record<string, OAuthPreset>> = {
  // docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps (web and device flow)
  github: {
    authorizeUrl: 'https://github.com/login/oauth/authorize',
    tokenUrl: 'https://github.com/login/oauth/access_token',
    deviceUrl: 'https://github.com/login/device/code',
    scopes: ['read:user'],
    hosts: ['api.github.com'],
    grants: ['code', 'device'],
    secretFor: ['code'],
    clientAuth: 'post',
  },
  // developers.google.com/identity/protocols/oauth2/native-app and .../oauth2/limited-input-device
  google: {
    issuer: 'https://accounts.google.com',
    authorizeUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
    tokenUrl: 'https://oauth2.googleapis.com/token',
    revocationUrl: 'https://oauth2.googleapis.com/revoke',
    deviceUrl: 'https://oauth2.googleapis.com/device/code',
    scopes: ['openid', 'email'],
    hosts: ['www.googleapis.com'],
    grants: ['code', 'device'],
    secretFor: ['code', 'device'],
    clientAuth: 'post',
    authorizeParams: { access_type: 'offline', prompt: 'consent' },
  },
  // learn.microsoft.com/entra/identity-platform/v2-oauth2-auth-code-flow and v2-oauth2-device-code (tenant "common")
  microsoft: {
    authorizeUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
    tokenUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
    deviceUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/devicecode',
    scopes: ['offline_access', 'User.Read'],
    hosts: ['graph.microsoft.com'],
    grants: ['code', 'device'],
    secretFor: [],
  },
  // api.slack.com/authentication/oauth-v2 (oauth/v2/authorize, oauth.v2.access)
  slack: {
    authorizeUrl: 'https://slack.com/oauth/v2/authorize',
    tokenUrl: 'https://slack.com/api/oauth.v2.access',
    scopes: [],
    hosts: ['slack.com'],
    grants: ['code'],
    secretFor: ['code'],
    scopeDelimiter: ',',
  },
  // developers.notion.com/reference/authorization (public integrations; token request with HTTP Basic)
  notion: {
    authorizeUrl: 'https://api.notion.com/v1/oauth/authorize',
    tokenUrl: 'https://api.notion.com/v1/oauth/token',
    scopes: [],
    hosts: ['api.notion.com'],
    grants: ['code'],
    secretFor: ['code'],
    authorizeParams: { owner: 'user' },
  },
  // developers.hubspot.com/docs/api/oauth-quickstart-guide (app.hubspot.com/oauth/authorize, api.hubapi.com/oauth/v1/token)
  hubspot: {
    authorizeUrl: 'https://app.hubspot.com/oauth/authorize',
    tokenUrl: 'https://api.hubapi.com/oauth/v1/token',
    scopes: ['oauth'],
    hosts: ['api.hubapi.com'],
    grants: ['code'],
    secretFor: ['code'],
    clientAuth: 'post',
  },
  // developer.atlassian.com/cloud/jira/platform/oauth-2-3lo-apps (audience api.atlassian.com, offline_access for refresh)
  atlassian: {
    authorizeUrl: 'https://auth.atlassian.com/authorize',
    tokenUrl: 'https://auth.atlassian.com/oauth/token',
    scopes: ['offline_access', 'read:me'],
    hosts: ['api.atlassian.com'],
    grants: ['code'],
    secretFor: ['code'],
    clientAuth: 'post',
    authorizeParams: { audience: 'api.atlassian.com', prompt: 'consent' },
  },
  // linear.app/developers/oauth-2-0-authentication (comma-separated scopes, PKCE, oauth/revoke)
  linear: {
    authorizeUrl: 'https://linear.app/oauth/authorize',
    tokenUrl: 'https://api.linear.app/oauth/token',
    revocationUrl: 'https://api.linear.app/oauth/revoke',
    scopes: ['read'],
    hosts: ['api.linear.app'],
    grants: ['code'],
    secretFor: [],
    clientAuth: 'post',
    scopeDelimiter: ',',
  },
  // developers.dropbox.com/oauth-guide and dropbox.tech "Using OAuth 2.0 with offline access" (PKCE, token_access_type=offline)
  dropbox: {
    authorizeUrl: 'https://www.dropbox.com/oauth2/authorize',
    tokenUrl: 'https://api.dropboxapi.com/oauth2/token',
    scopes: [],
    hosts: ['api.dropboxapi.com', 'content.dropboxapi.com'],
    grants: ['code'],
    secretFor: [],
    authorizeParams: { token_access_type: 'offline' },
  },
  // developer.spotify.com/documentation/web-api/tutorials/code-pkce-flow and client-credentials-flow
  spotify: {
    authorizeUrl: 'https://accounts.spotify.com/authorize',
    tokenUrl: 'https://accounts.spotify.com/api/token',
    scopes: ['user-read-email'],
    hosts: ['api.spotify.com'],
    grants: ['code', 'client_credentials'],
    secretFor: ['client_credentials'],
  },
};

export const PRESET_NAMES = Object.keys(OAUTH_PRESETS);

/**
 * Fills what the input leaves out from its preset: hosts, scopes, and the server. An explicit
 * --issuer, --authorize-url or --token-url replaces the preset's server whole, so no token is sent
 * to one of its URLs (revocation, device) while another server is used.
 */
export function withPreset(input: OAuthConnectInput, hasSecret: boolean): OAuthConnectInput {
  if (input.preset === undefined) return input;
  const preset = OAUTH_PRESETS[input.preset];
  if (!preset) throw new StudioError('bad_input', `no preset "${input.preset}"; the presets are ${PRESET_NAMES.join(', ')}`);
  if (!preset.grants.includes(input.grant)) {
    throw new StudioError('bad_input', `the ${input.preset} preset does not support --grant ${input.grant} (it supports ${preset.grants.join(', ')})`);
  }
  if (preset.secretFor.includes(input.grant) && !hasSecret) {
    throw new StudioError('bad_input', `${input.preset} needs the client secret for --grant ${input.grant}: pass it on standard input with --client-secret-stdin`);
  }
  const ownServer = input.issuer !== undefined || input.authorizeUrl !== undefined || input.tokenUrl !== undefined;
  const server = ownServer
    ? {}
    : { issuer: preset.issuer, authorizeUrl: preset.authorizeUrl, tokenUrl: preset.tokenUrl, revocationUrl: input.revocationUrl ?? preset.revocationUrl, deviceUrl: preset.deviceUrl };
  return {
    ...input,
    ...server,
    hosts: input.hosts.length > 0 ? input.hosts : preset.hosts,
    scopes: input.scopes.length > 0 ? input.scopes : preset.scopes,
    clientAuth: input.clientAuth ?? preset.clientAuth,
    authorizeParams: { ...preset.authorizeParams, ...input.authorizeParams },
    scopeDelimiter: input.scopeDelimiter ?? preset.scopeDelimiter,
  };
}
