/**
 * The part of `oidc-provider` (a dev dependency without type declarations) the tests use: a provider
 * with static clients and keys, and its request handler for a node:http server.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface ProviderClientMetadata {
    client_id: string;
    client_secret: string;
    grant_types: string[];
    redirect_uris: string[];
    response_types: string[];
  }

  interface ResourceServerInfo {
    scope: string;
    audience?: string;
    accessTokenTTL?: number;
    accessTokenFormat?: 'opaque' | 'jwt';
    jwt?: { sign?: { alg?: string; kid?: string } };
  }

  interface ProviderConfiguration {
    clients?: ProviderClientMetadata[];
    jwks?: { keys: object[] };
    scopes?: string[];
    features?: {
      devInteractions?: { enabled: boolean };
      clientCredentials?: { enabled: boolean };
      resourceIndicators?: {
        enabled: boolean;
        defaultResource?: (ctx: unknown, client: { clientId: string }, oneOf?: string[]) => string | string[] | undefined | Promise<string | string[] | undefined>;
        getResourceServerInfo?: (ctx: unknown, resourceIndicator: string, client: { clientId: string }) => ResourceServerInfo | Promise<ResourceServerInfo>;
      };
    };
    extraTokenClaims?: (ctx: unknown, token: { clientId?: string }) => Record<string, unknown> | undefined | Promise<Record<string, unknown> | undefined>;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: ProviderConfiguration);
    readonly issuer: string;
    callback(): (request: IncomingMessage, response: ServerResponse) => void;
  }
}
