import { z } from 'zod';
import type { ErrorCode } from './errors.ts';
import { CredentialNameSchema, HostPatternSchema } from './function.ts';

export const CredentialPlacementSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('header'),
      header: z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'a header name has only letters, digits and -'),
      template: z.string().max(1000).refine((t) => t.includes('{secret}'), 'the template must contain {secret}, e.g. "Bearer {secret}"'),
    })
    .strict(),
  z.object({ kind: z.literal('query'), param: z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/, 'a query parameter name has only letters, digits, _ . and -') }).strict(),
]);
export type CredentialPlacement = z.infer<typeof CredentialPlacementSchema>;

/** A credential's public half: where it may go and how. The secret lives in the keychain only. */
export const CredentialSpecSchema = z
  .object({
    name: CredentialNameSchema,
    hosts: z.array(HostPatternSchema).min(1, 'a credential needs at least one host it may be sent to').max(50),
    placement: CredentialPlacementSchema,
  })
  .strict();
export type CredentialSpec = z.infer<typeof CredentialSpecSchema>;

export interface CredentialInfo extends CredentialSpec {
  /** Whether the secret store holds a secret for it (never the secret itself). */
  hasSecret: boolean | 'unknown';
  /** Why `hasSecret` is 'unknown': the keychain is locked, not answering or not available. */
  secretProblem?: { code: ErrorCode; message: string };
  /** The functions the user has granted this credential to. */
  grantedTo: string[];
  createdAt: string;
  updatedAt: string;
  /** Set for an OAuth 2 credential, whose secret is an access token the engine keeps fresh. */
  kind?: 'oauth';
  /** An OAuth credential's state: `needs_reconnect` after the server refused its grant, `not_connected` before the first connect. */
  state?: OAuthState;
  /** When the OAuth access token expires (ISO), or null when the server did not say. */
  expiresAt?: string | null;
  /** The scopes the server granted. */
  scopes?: string[];
  /** Who connected it, when the server said (an ID token's email or subject; the client id for client credentials). */
  account?: string | null;
  issuer?: string;
  /** The grant connect runs, and the client registered with the server ('' before it is known). */
  grant?: OAuthGrant;
  clientId?: string;
  /** Where the code grant's sign-in page is (the only host the studio opens for it), when known. */
  authorizationEndpoint?: string | null;
  /** Why the last refresh of the access token failed, until one works again. */
  lastRefreshError?: { message: string; at: string } | null;
}

/** `not_connected`: defined (by the OpenAPI scaffold) with its server, scopes and hosts, never connected yet. */
export type OAuthState = 'connected' | 'needs_reconnect' | 'not_connected';
export type OAuthGrant = 'code' | 'device' | 'client_credentials';

/** What `credentials connect` asks of an OAuth 2 authorization server. Secrets travel beside it, never in it. */
export interface OAuthConnectInput {
  name: string;
  hosts: string[];
  /** The issuer, for discovery (RFC 8414 / OpenID); with explicit URLs it only names the server. */
  issuer?: string | undefined;
  authorizeUrl?: string | undefined;
  tokenUrl?: string | undefined;
  revocationUrl?: string | undefined;
  deviceUrl?: string | undefined;
  clientId: string;
  scopes: string[];
  grant: OAuthGrant;
  /** A provider preset (github, google, …) that fills the server, hosts and scopes left out. */
  preset?: string | undefined;
  /** How the client secret is sent: HTTP Basic (the default) or in the form body. */
  clientAuth?: 'basic' | 'post' | undefined;
  /** Extra authorization request parameters. */
  authorizeParams?: Record<string, string> | undefined;
  /** How scopes are joined in the authorization request, when not by a space. */
  scopeDelimiter?: string | undefined;
}
