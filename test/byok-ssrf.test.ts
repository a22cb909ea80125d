// BYOK addresses and SSRF (issue 24): a row's base_url, a cloud form's endpoint_url and a service
// account's token_uri may name only public addresses (cloud forms: only the cloud's own hosts). Through
// real HTTP: creation refuses loopback, private, link-local, mapped, 6to4 and Teredo forms and names that
// resolve to loopback; rows written straight into Postgres (a hostile old row) pointing at an HTTPS
// server of this test on 127.0.0.1 (its certificate trusted by the gateway) are never connected to, for
// chat, images and the Vertex token exchange, while a gateway that allows loopback does connect (the
// control); open and closed ports are refused alike (no port scanner). Plus the row cap per provider,
// the attempts per call of an account without credit, and every kind of BYOK target marked guarded.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, eventually, fastUser, mintToken, rawRequest } from './helpers/http-tools.js';
import { loadConfig } from '../src/config.js';
import { SealedBox } from '../src/auth/sealed-box.js';
import { ByokCredentials } from '../src/providers/byok-credentials.js';
import { ServiceAccountTokens } from '../src/providers/cloud/google-token.js';
import type { UpstreamClient, UpstreamEndpoint } from '../src/providers/upstream-client.js';
import type { CatalogModel } from '../src/catalog/model.js';
import { usdToNano } from '../src/catalog/model.js';
import { CHAT_MODELS } from '../src/catalog/seed/chat.js';
import type { ChatRequest } from '../src/http/schemas/chat.js';
import { openAiFamily } from '../src/providers/openai/family.js';
import { anthropicFamily } from '../src/providers/anthropic/family.js';
import { geminiFamily } from '../src/providers/gemini/family.js';
import type { ByokProvider } from '../src/store/byok.js';
import { AZURE_OPENAI_HOSTS, BEDROCK_HOSTS, GOOGLE_TOKEN_URIS, VERTEX_HOSTS, type KnownHosts } from '../src/providers/cloud/known-hosts.js';

const SECRET_BODY = 'INTERNAL-ADMIN-PANEL root-token=s3cr3t';

// ---- an internal HTTPS service on loopback, as an attacker would aim a row at it ----
const dir = mkdtempSync(join(tmpdir(), 'byok-ssrf-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
  '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
let connections = 0;
const paths: string[] = [];
const internal = https.createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (request, response) => {
  paths.push(request.url ?? '');
  request.resume();
  response.writeHead(500, { 'content-type': 'text/plain' }).end(SECRET_BODY);
});
internal.on('connection', () => { connections++; });
let INTERNAL = '';
let CLOSED = '';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
const serviceAccount = (tokenUri?: string) => ({
  type: 'service_account', project_id: 'proj-1', private_key: privateKey, client_email: 'gw@proj-1.iam.gserviceaccount.com',
  ...(tokenUri ? { token_uri: tokenUri } : {}),
});

let gateway: Gateway;
const gatewayEnv = () => ({ JWT_SECRET: TEST_JWT_SECRET, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') });
t.before(async () => {
  await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
  INTERNAL = `https://127.0.0.1:${(internal.address() as AddressInfo).port}`;
  CLOSED = `https://127.0.0.1:${await freePort()}`;
  gateway = await startGateway({ env: gatewayEnv() });
});
t.teardown(async () => {
  await gateway?.close();
  await new Promise((resolve) => internal.close(resolve));
  internal.closeAllConnections();
  rmSync(dir, { recursive: true, force: true });
});

async function send(gw: Gateway, token: string, method: string, path: string, body?: unknown) {
  return rawRequest(`${gw.url}/api/v1/byok${path}`, {
    method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

interface PlantedRow { provider: ByokProvider; label: string; apiKey?: string; baseUrl?: string; config?: Record<string, unknown>; priority?: number }

/** Rows written straight into Postgres, past every check of the API: an old row, or one an attacker got in. */
async function plant(gw: Gateway, user: string, rows: PlantedRow[]): Promise<void> {
  const box = new SealedBox(loadConfig(gw.env).keySecret);
  for (const row of rows) {
    await gw.sql`
      insert into byok_credentials (id, user_id, provider, label, api_key_enc, api_key_prefix, base_url, config_enc, priority)
      values (${randomUUID()}, ${user}, ${row.provider}, ${row.label}, ${row.apiKey ? box.seal(row.apiKey) : null}, ${row.apiKey ? 'sk-...' : null},
              ${row.baseUrl ?? null}, ${row.config ? box.seal(JSON.stringify(row.config)) : null}, ${row.priority ?? 0})`;
  }
}

async function lastErrors(gw: Gateway, token: string): Promise<Map<string, string | null>> {
  const response = await send(gw, token, 'GET', '');
  return new Map((response.body as any[]).map((row) => [row.label, row.last_error]));
}

function chat(gw: Gateway, key: string, model: string) {
  return rawRequest(`${gw.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 10 }),
  });
}

function image(gw: Gateway, key: string) {
  return rawRequest(`${gw.v1}/images/generations`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-image-2', prompt: 'a lighthouse', size: '1024x1024', quality: 'low' }),
  });
}

/** One row of each kind aimed at the internal service. */
const hostileRows = (): PlantedRow[] => [
  { provider: 'openai', label: 'proxy', apiKey: 'sk-proxy-0001', baseUrl: `${INTERNAL}/internal/admin`, priority: 2 },
  { provider: 'openai', label: 'azure', apiKey: 'azure-key-0001', config: { endpoint_url: INTERNAL, deployment_id: 'd' }, priority: 1 },
  { provider: 'anthropic', label: 'bedrock', config: { region: 'us-east-1', accessKeyId: 'AKID', secretAccessKey: 'S', endpoint_url: INTERNAL } },
  { provider: 'google', label: 'vertex', config: { service_account: serviceAccount(`${INTERNAL}/token`), region: 'us-central1', endpoint_url: INTERNAL } },
];

t.test('creation and update refuse addresses that are not public: 422 naming the field, nothing connected', async (t) => {
  const token = mintToken('ssrf-create');
  const ok = { provider: 'openai', label: 'l', api_key: 'sk-valid-000000000000' };
  const refusedBaseUrls = [
    `${INTERNAL}/internal/admin`, 'https://127.1.2.3/v1', 'https://2130706433/v1', 'https://0x7f000001/', 'https://0.0.0.0/',
    'https://10.0.0.5/v1', 'https://172.16.0.1/', 'https://192.168.1.1/', 'https://100.64.0.1/', 'https://169.254.169.254/latest/meta-data',
    'https://[::1]/v1', 'https://[::ffff:127.0.0.1]/', 'https://[::ffff:169.254.169.254]/', 'https://[::]/', 'https://[fd00::1]/', 'https://[fe80::1]/',
    'https://[64:ff9b::a9fe:a9fe]/', 'https://[2002:7f00:1::]/', 'https://[2002:a9fe:a9fe::]/', 'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/',
    'https://localhost/v1', `https://localhost:${new URL(INTERNAL).port}/`,
  ];
  for (const baseUrl of refusedBaseUrls) {
    const response = await send(gateway, token, 'POST', '', { ...ok, base_url: baseUrl });
    assertEnvelope(t, response, 422, 'validation_error', baseUrl);
    t.equal(response.body.error?.param, 'base_url', `${baseUrl}: names base_url`);
    t.match(response.body.error?.message ?? response.body.msg, /not a public address/, `${baseUrl}: says why`);
  }
  const unresolved = await send(gateway, token, 'POST', '', { ...ok, base_url: 'https://no-such-host.invalid/v1' });
  assertEnvelope(t, unresolved, 422, 'validation_error', 'a name that does not resolve');
  t.match(JSON.stringify(unresolved.body), /does not resolve/);

  const cloudCases: [string, Record<string, unknown>, string][] = [
    ['Azure on loopback', { provider: 'openai', api_key: 'k-1', config_json: { endpoint_url: INTERNAL, deployment_id: 'd' } }, 'config_json.endpoint_url'],
    ['Azure off its hosts', { provider: 'openai', api_key: 'k-1', config_json: { endpoint_url: 'https://attacker.example', deployment_id: 'd' } }, 'config_json.endpoint_url'],
    ['Azure host on another port', { provider: 'openai', api_key: 'k-1', config_json: { endpoint_url: 'https://res.openai.azure.com:8443', deployment_id: 'd' } }, 'config_json.endpoint_url'],
    ['Azure look-alike', { provider: 'openai', api_key: 'k-1', config_json: { endpoint_url: 'https://res.openai.azure.com.attacker.example', deployment_id: 'd' } }, 'config_json.endpoint_url'],
    ['Bedrock at the metadata address', { provider: 'anthropic', config_json: { region: 'us-east-1', accessKeyId: 'A', secretAccessKey: 'S', endpoint_url: 'https://169.254.169.254' } }, 'config_json.endpoint_url'],
    ['Vertex endpoint on loopback', { provider: 'google', config_json: { service_account: serviceAccount(), region: 'us-central1', endpoint_url: INTERNAL } }, 'config_json.endpoint_url'],
    ['Vertex token_uri on loopback', { provider: 'google', config_json: { service_account: serviceAccount(`${INTERNAL}/token`), region: 'us-central1' } }, 'config_json.service_account.token_uri'],
    ['Vertex token_uri elsewhere on Google', { provider: 'google', config_json: { service_account: serviceAccount('https://oauth2.googleapis.com/other'), region: 'us-central1' } }, 'config_json.service_account.token_uri'],
  ];
  for (const [label, body, param] of cloudCases) {
    const response = await send(gateway, token, 'POST', '', { label, ...body });
    assertEnvelope(t, response, 422, 'validation_error', label);
    t.equal(response.body.error?.param, param, `${label}: names ${param}`);
  }

  const accepted: [string, Record<string, unknown>][] = [
    ['a public address literal', { ...ok, base_url: 'https://1.1.1.1/v1' }],
    ['an Azure resource', { provider: 'openai', label: 'az', api_key: 'k-1', config_json: { endpoint_url: 'https://my-res.openai.azure.com', deployment_id: 'd' } }],
    ['Bedrock on its derived host', { provider: 'anthropic', label: 'br', config_json: { region: 'eu-west-1', accessKeyId: 'A', secretAccessKey: 'S' } }],
    ['Bedrock FIPS', { provider: 'anthropic', label: 'fips', config_json: { region: 'us-east-1', accessKeyId: 'A', secretAccessKey: 'S', endpoint_url: 'https://bedrock-runtime-fips.us-east-1.amazonaws.com' } }],
    ['Vertex with Google\'s token URI', { provider: 'google', label: 'vx', config_json: { service_account: serviceAccount('https://oauth2.googleapis.com/token'), region: 'europe-west4' } }],
  ];
  let publicRow = '';
  for (const [label, body] of accepted) {
    const response = await send(gateway, token, 'POST', '', body);
    t.equal(response.status, 201, `${label}: ${response.text}`);
    if (body.base_url) publicRow = response.body.id;
  }

  const update = await send(gateway, token, 'PUT', `/${publicRow}`, { base_url: 'https://169.254.169.254/' });
  assertEnvelope(t, update, 422, 'validation_error', 'update to the metadata address');
  t.equal(update.body.error?.param, 'base_url');
  t.equal((await send(gateway, token, 'GET', '')).body.find((row: any) => row.id === publicRow).base_url, 'https://1.1.1.1/v1', 'the row is unchanged');
  t.equal((await send(gateway, token, 'PUT', `/${publicRow}`, { label: 'renamed' })).status, 200, 'a change that sets no address is not re-vetted');
  t.equal(connections, 0, 'the internal service was never connected to');
});

t.test('hostile rows written around the API are never connected to: chat, images, the Vertex token exchange; the platform serves', async (t) => {
  const user = 'ssrf-planted';
  const { key, token } = await fastUser(gateway, user, '1');
  await plant(gateway, user, hostileRows());
  const before = connections;
  for (const model of ['openai/gpt-4o-mini', 'anthropic/claude-sonnet-4-5', 'google/gemini-2.5-flash']) {
    const response = await chat(gateway, key, model);
    t.equal(response.status, 200, `${model}: served by the platform`);
    t.notMatch(response.text, /INTERNAL-ADMIN/, `${model}: nothing of the internal service in the answer`);
  }
  const images = await image(gateway, key);
  t.equal(images.status, 200, `images: served by the platform ${images.text.slice(0, 200)}`);
  t.ok(await eventually(async () => [...(await lastErrors(gateway, token)).values()].every((error) => error !== null)), 'every row recorded its failure');
  t.equal(connections - before, 0, 'zero connections to the internal service');
  t.same(paths, [], 'and no request');
  const errors = await lastErrors(gateway, token);
  t.match(errors.get('proxy'), /^502 .*Invalid value for 'base_url': the host 127\.0\.0\.1 is not a public address/);
  t.match(errors.get('azure'), /config_json\.endpoint_url'?: must be an Azure OpenAI resource endpoint/);
  t.match(errors.get('bedrock'), /config_json\.endpoint_url'?: must be an Amazon Bedrock runtime endpoint/);
  t.match(errors.get('vertex'), /config_json\.endpoint_url'?: must be a Vertex AI endpoint/);
  for (const [label, error] of errors) t.notMatch(error, /INTERNAL-ADMIN/, `${label}: no body in last_error`);
});

t.test('an open and a closed port are refused alike: the answer is no port scanner', async (t) => {
  const user = 'ssrf-scan';
  const { key, token } = await fastUser(gateway, user, '1');
  await plant(gateway, user, [
    { provider: 'openai', label: 'open', apiKey: 'sk-open-0001', baseUrl: `${INTERNAL}/v1`, priority: 1 },
    { provider: 'openai', label: 'closed', apiKey: 'sk-closed-0001', baseUrl: `${CLOSED}/v1` },
  ]);
  t.equal((await chat(gateway, key, 'openai/gpt-4o-mini')).status, 200);
  t.ok(await eventually(async () => [...(await lastErrors(gateway, token)).values()].every((error) => error !== null)));
  const errors = await lastErrors(gateway, token);
  t.equal(errors.get('open')!.replace("'open'", "'x'"), errors.get('closed')!.replace("'closed'", "'x'"), 'the same words for both');
  t.equal(connections, 0);
});

t.test('control: a gateway that allows loopback does reach the internal service through the same rows', async (t) => {
  const control = await startGateway({ env: { ...gatewayEnv(), FETCH_ALLOW_LOOPBACK: 'true' } });
  t.teardown(() => control.close());
  const user = 'ssrf-control';
  const { key } = await fastUser(control, user, '1');
  await plant(control, user, hostileRows());
  paths.length = 0;
  t.equal((await chat(control, key, 'openai/gpt-4o-mini')).status, 200);
  t.ok(paths.includes('/internal/admin/chat/completions'), 'the chat attempt connected');
  t.ok(paths.some((path) => path.startsWith('/openai/deployments/d/chat/completions')), 'the Azure attempt connected');
  t.equal((await chat(control, key, 'anthropic/claude-sonnet-4-5')).status, 200);
  t.ok(paths.some((path) => path.startsWith('/model/')), 'the Bedrock attempt connected');
  t.equal((await image(control, key)).status, 200);
  t.ok(paths.includes('/internal/admin/images/generations'), 'the image attempt connected');
  t.equal((await chat(control, key, 'google/gemini-2.5-flash')).status, 200);
  t.ok(paths.includes('/token'), 'the Vertex token exchange connected');
});

t.test('rows per (user, provider) are capped, against a burst too: 409 byok_limit_reached', async (t) => {
  const token = mintToken('ssrf-cap');
  const body = (i: number) => ({ provider: 'openai', label: `k${i}`, api_key: `sk-cap-${String(i).padStart(4, '0')}` });
  const burst = await Promise.all(Array.from({ length: 13 }, (_, i) => send(gateway, token, 'POST', '', body(i))));
  const created = burst.filter((response) => response.status === 201);
  const refused = burst.filter((response) => response.status === 409);
  t.equal(created.length, 10, 'BYOK_MAX_ROWS_PER_PROVIDER (10) created');
  t.equal(refused.length, 3, 'the rest refused');
  for (const response of refused) {
    assertEnvelope(t, response, 409, 'byok_limit_reached', 'over the cap');
    t.equal(response.body.error?.param, 'provider');
  }
  const disabled = await send(gateway, token, 'PUT', `/${created[0]!.body.id}`, { disabled: true });
  t.equal(disabled.status, 200);
  t.equal((await send(gateway, token, 'POST', '', body(20))).status, 409, 'a disabled row still counts');
  t.equal((await send(gateway, token, 'POST', '', { ...body(21), provider: 'anthropic' })).status, 201, 'another provider has its own cap');
  t.equal((await send(gateway, token, 'DELETE', `/${created[0]!.body.id}`)).status, 204);
  t.equal((await send(gateway, token, 'POST', '', body(22))).status, 201, 'room again after a delete');
});

t.test('an account without credit: one call tries at most BYOK_MAX_ATTEMPTS_PER_CALL (3) rows, then is refused', async (t) => {
  const user = 'ssrf-fanout';
  const { key, token } = await fastUser(gateway, user, '0');
  for (let i = 0; i < 8; i++) {
    const response = await send(gateway, token, 'POST', '', { provider: 'openai', label: `r${i}`, api_key: `sk-revoked-fan-${i}`, priority: i });
    t.equal(response.status, 201);
  }
  const before = gateway.mock.requests().length;
  const response = await chat(gateway, key, 'openai/gpt-4o-mini');
  const tried = gateway.mock.requests().slice(before).map((record) => record.authorization);
  t.same(tried, ['Bearer sk-revoked-fan-7', 'Bearer sk-revoked-fan-6', 'Bearer sk-revoked-fan-5'], 'the first three in selection order, nothing else');
  assertEnvelope(t, response, 402, undefined, 'then the platform call is refused for want of credit');
});

// ---- every kind of BYOK target is guarded, and the requests built from it ----

const modelOf = (id: string): CatalogModel => {
  const seed = CHAT_MODELS.find((m) => m.id === id)!;
  return {
    ...seed, modality: 'chat', isActive: true,
    prices: { input: usdToNano(seed.usdPerMillion.input), cachedInput: usdToNano(seed.usdPerMillion.cachedInput), cacheWrite: usdToNano(seed.usdPerMillion.cacheWrite), output: usdToNano(seed.usdPerMillion.output) },
  } as CatalogModel;
};

t.test('every target from a user-chosen address is guarded, every request built from one carries it, the Vertex token exchange too', async (t) => {
  const user = 'ssrf-guarded';
  const { token } = await fastUser(gateway, user, '0');
  const rows: Record<string, unknown>[] = [
    { provider: 'openai', label: 'platform-url', api_key: 'sk-plain-0001' },
    { provider: 'openai', label: 'own-url', api_key: 'sk-own-0001', base_url: 'https://1.1.1.1/v1' },
    { provider: 'openai', label: 'azure', api_key: 'k-1', config_json: { endpoint_url: 'https://res.openai.azure.com', deployment_id: 'd' } },
    { provider: 'anthropic', label: 'anthropic-platform', api_key: 'sk-ant-0001' },
    { provider: 'anthropic', label: 'bedrock', config_json: { region: 'us-east-1', accessKeyId: 'A', secretAccessKey: 'S' } },
    { provider: 'google', label: 'gemini-own', api_key: 'g-0001', base_url: 'https://[2606:4700:4700::1111]/v1beta' },
    { provider: 'google', label: 'vertex', config_json: { service_account: serviceAccount(), region: 'us-central1' } },
  ];
  for (const row of rows) t.equal((await send(gateway, token, 'POST', '', row)).status, 201, String(row.label));
  const platform = { openai: { baseUrl: 'https://api.openai.com/v1', apiKey: '' }, anthropic: { baseUrl: 'https://api.anthropic.com/v1', apiKey: '' }, gemini: { baseUrl: 'https://generativelanguage.googleapis.com/v1beta', apiKey: '' } };
  const tokens = { token: async () => 'access-token' } as unknown as ServiceAccountTokens;
  const credentials = new ByokCredentials(gateway.sql as any, new SealedBox(loadConfig(gateway.env).keySecret), platform, tokens, { maxAttempts: 10 });
  const targets = new Map<string, any>();
  for (const provider of ['openai', 'anthropic', 'google'] as const) {
    for (const candidate of (await credentials.forCall(user, 'any-key', provider)).candidates) {
      t.equal(candidate.problem, undefined, `${candidate.label} is usable`);
      targets.set(candidate.label, candidate.target);
    }
  }
  const expected: Record<string, boolean> = {
    'platform-url': false, 'own-url': true, azure: true, 'anthropic-platform': false, bedrock: true, 'gemini-own': true, vertex: true,
  };
  t.same(Object.fromEntries([...targets].map(([label, target]) => [label, target.guarded === true])), expected, 'guarded exactly where the user chose the address');

  const request = { model: 'm', messages: [{ role: 'user', content: 'hi' }] } as ChatRequest;
  const cache = { partition: 'p' };
  const built: [string, { guarded?: boolean }][] = [
    ['platform-url', openAiFamily.request(request, modelOf('openai/gpt-4o-mini'), false, targets.get('platform-url'), cache)],
    ['own-url', openAiFamily.request(request, modelOf('openai/gpt-4o-mini'), true, targets.get('own-url'), cache)],
    ['azure', openAiFamily.request(request, modelOf('openai/gpt-4o-mini'), false, targets.get('azure'), cache)],
    ['anthropic-platform', anthropicFamily.request(request, modelOf('anthropic/claude-sonnet-4-5'), false, targets.get('anthropic-platform'), cache)],
    ['bedrock', anthropicFamily.request(request, modelOf('anthropic/claude-sonnet-4-5'), true, targets.get('bedrock'), cache)],
    ['gemini-own', geminiFamily.request(request, modelOf('google/gemini-2.5-flash'), false, targets.get('gemini-own'), cache)],
    ['vertex', geminiFamily.request(request, modelOf('google/gemini-2.5-flash'), true, targets.get('vertex'), cache)],
  ];
  for (const [label, upstream] of built) t.equal(upstream.guarded === true, expected[label], `${label}: the request carries the target's guarded`);

  const seen: UpstreamEndpoint[] = [];
  const client = { post: async (endpoint: UpstreamEndpoint) => { seen.push(endpoint); throw new Error('offline'); } } as unknown as UpstreamClient;
  await new ServiceAccountTokens(client).token({ clientEmail: 'a@b', privateKey, tokenUri: 'https://oauth2.googleapis.com/token' }).catch(() => {});
  t.equal(seen.length, 1);
  t.equal(seen[0]!.guarded, true, 'the token exchange is a guarded endpoint');
});

t.test('the clouds\' host lists: exact hosts on https and the default port, no look-alikes', async (t) => {
  const cases: [KnownHosts, string, boolean][] = [
    [AZURE_OPENAI_HOSTS, 'https://my-res.openai.azure.com', true],
    [AZURE_OPENAI_HOSTS, 'https://my-res.cognitiveservices.azure.com/', true],
    [AZURE_OPENAI_HOSTS, 'https://openai.azure.com', false],
    [AZURE_OPENAI_HOSTS, 'https://a.b.openai.azure.com', false],
    [AZURE_OPENAI_HOSTS, 'https://my-res.openai.azure.com.attacker.example', false],
    [AZURE_OPENAI_HOSTS, 'https://attacker.example/my-res.openai.azure.com', false],
    [AZURE_OPENAI_HOSTS, 'https://my-res.openai.azure.com:444', false],
    [AZURE_OPENAI_HOSTS, 'http://my-res.openai.azure.com', false],
    [BEDROCK_HOSTS, 'https://bedrock-runtime.us-east-1.amazonaws.com', true],
    [BEDROCK_HOSTS, 'https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com', true],
    [BEDROCK_HOSTS, 'https://bedrock.us-east-1.amazonaws.com', false],
    [BEDROCK_HOSTS, 'https://bedrock-runtime.us-east-1.amazonaws.com.attacker.example', false],
    [BEDROCK_HOSTS, 'https://x.bedrock-runtime.us-east-1.amazonaws.com', false],
    [VERTEX_HOSTS, 'https://us-central1-aiplatform.googleapis.com', true],
    [VERTEX_HOSTS, 'https://aiplatform.googleapis.com', true],
    [VERTEX_HOSTS, 'https://aiplatform.googleapis.com.attacker.example', false],
    [VERTEX_HOSTS, 'https://storage.googleapis.com', false],
    [GOOGLE_TOKEN_URIS, 'https://oauth2.googleapis.com/token', true],
    [GOOGLE_TOKEN_URIS, 'https://accounts.google.com/o/oauth2/token', true],
    [GOOGLE_TOKEN_URIS, 'https://oauth2.googleapis.com/revoke', false],
    [GOOGLE_TOKEN_URIS, 'https://oauth2.googleapis.com:8443/token', false],
  ];
  for (const [hosts, url, expected] of cases) t.equal(hosts.matches(new URL(url)), expected, `${url}: ${expected ? 'allowed' : 'refused'}`);
});
