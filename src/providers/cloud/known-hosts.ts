/**
 * The hosts a cloud form may name (docs/byok.md "Addresses a row may name"): each cloud serves its
 * API from a few host patterns of its own, so a form's `endpoint_url` and a service account's
 * `token_uri` are held to them. Anything else (an internal service, a scanner's target) is refused
 * before it is ever resolved or connected to.
 */
export interface KnownHosts {
  /** What the field must be, as a 422 says it: "must be ...". */
  readonly description: string;
  readonly matches: (url: URL) => boolean;
}

/** A DNS label as the clouds allow in resource names and regions. */
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';

/** https on the default port, a host matching `pattern` (and, when given, exactly `path`). */
function hostsMatching(pattern: RegExp, path?: string) {
  return (url: URL) => url.protocol === 'https:' && url.port === '' && pattern.test(url.hostname) && (path === undefined || url.pathname === path);
}

/** Azure OpenAI resources: `<resource>.openai.azure.com`, and Azure AI services resources that serve the same API. */
export const AZURE_OPENAI_HOSTS: KnownHosts = Object.freeze({
  description: 'an Azure OpenAI resource endpoint, https://<resource>.openai.azure.com or https://<resource>.cognitiveservices.azure.com',
  matches: hostsMatching(new RegExp(`^${LABEL}\\.(?:openai|cognitiveservices)\\.azure\\.com$`)),
});

/** Amazon Bedrock's runtime endpoints (and their FIPS twins), per region. */
export const BEDROCK_HOSTS: KnownHosts = Object.freeze({
  description: 'an Amazon Bedrock runtime endpoint, https://bedrock-runtime.<region>.amazonaws.com (or bedrock-runtime-fips)',
  matches: hostsMatching(new RegExp(`^bedrock-runtime(?:-fips)?\\.${LABEL}\\.amazonaws\\.com$`)),
});

/** Vertex AI: the regional `<region>-aiplatform.googleapis.com` and the global `aiplatform.googleapis.com`. */
export const VERTEX_HOSTS: KnownHosts = Object.freeze({
  description: 'a Vertex AI endpoint, https://<region>-aiplatform.googleapis.com or https://aiplatform.googleapis.com',
  matches: hostsMatching(new RegExp(`^(?:${LABEL}-)?aiplatform\\.googleapis\\.com$`)),
});

/** Google's OAuth 2.0 token endpoint, as service account key files name it (older files: the accounts.google.com form). */
export const GOOGLE_TOKEN_URIS: KnownHosts = Object.freeze({
  description: "Google's token endpoint, https://oauth2.googleapis.com/token",
  matches: (url: URL) => hostsMatching(/^oauth2\.googleapis\.com$/, '/token')(url) || hostsMatching(/^accounts\.google\.com$/, '/o/oauth2/token')(url),
});
