/**
 * The part of `oidc-provider` (a dev dependency without type declarations) the gateway's development
 * identity provider (src/auth/dev-identity-provider.ts) and the tests use: a provider with static
 * clients and keys, and its request handler for a node:http server; for sign-in, accounts found by id
 * and the interaction calls that stand for its login and consent pages.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface ProviderClientMetadata {
    client_id: string;
    client_secret: string;
    grant_types: string[];
    redirect_uris: string[];
    response_types: string[];
    token_endpoint_auth_method?: string;
  }

  interface Account {
    accountId: string;
    claims: () => Record<string, unknown> | Promise<Record<string, unknown>>;
  }

  interface InteractionDetails {
    uid: string;
    prompt: { name: string; reasons: string[] };
    params: Record<string, unknown>;
    session?: { accountId: string };
  }

  class Grant {
    constructor(properties: { accountId: string; clientId: string });
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
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
    claims?: Record<string, string[]>;
    conformIdTokenClaims?: boolean;
    pkce?: { required?: (ctx: unknown, client: unknown) => boolean };
    findAccount?: (ctx: unknown, id: string) => Account | undefined | Promise<Account | undefined>;
    cookies?: { keys?: string[] };
    /** Lifetimes in seconds, by model (`Session`, `Grant`, `Interaction`, ...). */
    ttl?: Record<string, number>;
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
    interactionDetails(request: IncomingMessage, response: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(request: IncomingMessage, response: ServerResponse, result: Record<string, unknown>, options?: { mergeWithLastSubmission?: boolean }): Promise<void>;
    readonly Grant: typeof Grant;
  }
}
