// oidc-provider ships no types: what the OAuth tests use of it.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  interface Token {
    consumed?: unknown;
    destroy(): Promise<void>;
  }
  interface TokenModel {
    find(value: string): Promise<Token | undefined>;
  }
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
    readonly AccessToken: TokenModel;
    readonly ClientCredentials: TokenModel;
    readonly RefreshToken: TokenModel;
  }
}
