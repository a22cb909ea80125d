/**
 * The cloud credential forms a BYOK row's config_json may hold, read by one pure function used both
 * when a row is created or updated (a 422 naming the missing field) and when the call path builds
 * its candidates:
 * - `openai` + `endpoint_url`/`deployment_id`: an Azure OpenAI deployment (key in `api_key`);
 * - `anthropic` + `region`/`accessKeyId`/`secretAccessKey`: Claude on Amazon Bedrock (SigV4);
 * - `google` + `service_account`: Gemini on Vertex AI (OAuth token from the service account).
 * Any other config_json is no cloud form: the row is a plain key for the vendor's own API.
 */
export type ByokCloudProvider = 'openai' | 'anthropic' | 'google';

export const AZURE_DEFAULT_API_VERSION = '2024-10-21';
export const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';

export interface AzureForm {
  readonly kind: 'azure';
  readonly endpointUrl: string;
  readonly deployment: string;
  readonly apiVersion: string;
}

export interface BedrockForm {
  readonly kind: 'bedrock';
  readonly region: string;
  readonly endpointUrl: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  /** Gateway model id or catalog upstream model -> Bedrock model id (or inference profile). */
  readonly modelMap: Readonly<Record<string, string>>;
}

export interface ServiceAccount {
  readonly clientEmail: string;
  readonly privateKey: string;
  readonly privateKeyId?: string;
  readonly tokenUri: string;
}

export interface VertexForm {
  readonly kind: 'vertex';
  readonly region: string;
  readonly projectId: string;
  readonly endpointUrl: string;
  readonly account: ServiceAccount;
}

export type CloudForm = AzureForm | BedrockForm | VertexForm;

export interface FormProblem {
  /** The field, as `config_json.deployment_id` or `api_key`. */
  readonly field: string;
  readonly message: string;
}

export type FormResult = { form: CloudForm | undefined } | { problem: FormProblem };

const REGION = /^[a-z0-9][a-z0-9-]{0,62}$/;

const text = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);
const problem = (field: string, message: string): { problem: FormProblem } => ({ problem: { field, message } });

/** What is wrong with `text` as an absolute https:// URL without user name or password, if anything. */
export function httpsUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:') return 'must be an https:// URL';
  if (url.username !== '' || url.password !== '') return 'must not contain credentials';
  return undefined;
}

/** A cloud endpoint: an https:// URL as above, with no query or fragment (paths are appended to it). */
function httpsProblem(value: string): string | undefined {
  const problem = httpsUrlProblem(value);
  if (problem !== undefined) return problem;
  const url = new URL(value);
  return url.search !== '' || url.hash !== '' ? 'must not have a query or fragment' : undefined;
}

/** An optional https URL field, without a trailing slash; a problem when present but not https. */
function urlField(config: Record<string, unknown>, name: string, path = `config_json.${name}`): { value: string | undefined } | { problem: FormProblem } {
  if (config[name] === undefined || config[name] === null) return { value: undefined };
  const value = text(config[name]);
  if (value === undefined) return problem(path, 'must be a non-empty string');
  const bad = httpsProblem(value);
  return bad ? problem(path, bad) : { value: value.replace(/\/+$/, '') };
}

function regionField(config: Record<string, unknown>): { value: string } | { problem: FormProblem } {
  const region = text(config.region);
  if (region === undefined) return problem('config_json.region', 'is required for this form');
  if (!REGION.test(region)) return problem('config_json.region', 'must be a region name such as us-east-1 or europe-west4');
  return { value: region };
}

/**
 * The cloud form of `config`, undefined when it holds none, or the first problem. `hasApiKey`: the
 * row keeps an api_key (Azure needs one; the others take their credential from config_json).
 */
export function readCloudForm(provider: ByokCloudProvider, config: Record<string, unknown> | null | undefined, hasApiKey: boolean): FormResult {
  if (!config) return { form: undefined };
  switch (provider) {
    case 'openai': return azureForm(config, hasApiKey);
    case 'anthropic': return bedrockForm(config);
    case 'google': return vertexForm(config);
  }
}

function azureForm(config: Record<string, unknown>, hasApiKey: boolean): FormResult {
  if (config.endpoint_url === undefined && config.deployment_id === undefined) return { form: undefined };
  const endpoint = urlField(config, 'endpoint_url');
  if ('problem' in endpoint) return endpoint;
  if (endpoint.value === undefined) return problem('config_json.endpoint_url', 'is required with deployment_id (the resource endpoint, https://<resource>.openai.azure.com)');
  const deployment = text(config.deployment_id);
  if (deployment === undefined) return problem('config_json.deployment_id', 'is required with endpoint_url (the deployment name)');
  let apiVersion = AZURE_DEFAULT_API_VERSION;
  if (config.api_version !== undefined) {
    const version = text(config.api_version);
    if (version === undefined) return problem('config_json.api_version', 'must be a non-empty string such as 2024-10-21');
    apiVersion = version;
  }
  if (!hasApiKey) return problem('api_key', 'is required with an Azure deployment (its api-key)');
  return { form: { kind: 'azure', endpointUrl: endpoint.value, deployment, apiVersion } };
}

function bedrockForm(config: Record<string, unknown>): FormResult {
  if (config.region === undefined && config.accessKeyId === undefined && config.secretAccessKey === undefined) return { form: undefined };
  const region = regionField(config);
  if ('problem' in region) return region;
  const accessKeyId = text(config.accessKeyId);
  if (accessKeyId === undefined) return problem('config_json.accessKeyId', 'is required with region (an AWS access key id)');
  const secretAccessKey = text(config.secretAccessKey);
  if (secretAccessKey === undefined) return problem('config_json.secretAccessKey', 'is required with region (the AWS secret access key)');
  let sessionToken: string | undefined;
  if (config.sessionToken !== undefined && config.sessionToken !== null) {
    sessionToken = text(config.sessionToken);
    if (sessionToken === undefined) return problem('config_json.sessionToken', 'must be a non-empty string');
  }
  const endpoint = urlField(config, 'endpoint_url');
  if ('problem' in endpoint) return endpoint;
  const modelMap: Record<string, string> = {};
  if (config.model_map !== undefined && config.model_map !== null) {
    const map = config.model_map;
    if (typeof map !== 'object' || Array.isArray(map)) return problem('config_json.model_map', 'must be an object of model id -> Bedrock model id');
    for (const [from, to] of Object.entries(map as Record<string, unknown>)) {
      const id = text(to);
      if (id === undefined) return problem(`config_json.model_map.${from}`, 'must be a non-empty string (a Bedrock model id or inference profile)');
      modelMap[from] = id;
    }
  }
  return {
    form: {
      kind: 'bedrock', region: region.value, accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}),
      endpointUrl: endpoint.value ?? `https://bedrock-runtime.${region.value}.amazonaws.com`, modelMap,
    },
  };
}

function vertexForm(config: Record<string, unknown>): FormResult {
  if (config.service_account === undefined) return { form: undefined };
  let account: Record<string, unknown>;
  if (typeof config.service_account === 'string') {
    try {
      account = JSON.parse(config.service_account) as Record<string, unknown>;
    } catch {
      return problem('config_json.service_account', 'must be the service account key file (a JSON object, or its text)');
    }
  } else account = config.service_account as Record<string, unknown>;
  if (typeof account !== 'object' || account === null || Array.isArray(account)) {
    return problem('config_json.service_account', 'must be the service account key file (a JSON object, or its text)');
  }
  const clientEmail = text(account.client_email);
  if (clientEmail === undefined) return problem('config_json.service_account.client_email', 'is required');
  const privateKey = text(account.private_key);
  if (privateKey === undefined || !privateKey.includes('PRIVATE KEY')) return problem('config_json.service_account.private_key', 'is required (a PEM private key)');
  const tokenUri = urlField(account, 'token_uri', 'config_json.service_account.token_uri');
  if ('problem' in tokenUri) return tokenUri;
  const projectId = text(config.project_id) ?? text(account.project_id);
  if (projectId === undefined) return problem('config_json.service_account.project_id', 'is required (or config_json.project_id)');
  const region = regionField(config);
  if ('problem' in region) return region;
  const endpoint = urlField(config, 'endpoint_url');
  if ('problem' in endpoint) return endpoint;
  const privateKeyId = text(account.private_key_id);
  return {
    form: {
      kind: 'vertex', region: region.value, projectId,
      endpointUrl: endpoint.value ?? (region.value === 'global' ? 'https://aiplatform.googleapis.com' : `https://${region.value}-aiplatform.googleapis.com`),
      account: { clientEmail, privateKey, tokenUri: tokenUri.value ?? GOOGLE_TOKEN_URI, ...(privateKeyId ? { privateKeyId } : {}) },
    },
  };
}
