// Vertex AI targets in the routing file: Claude and Gemini on Vertex with the platform's own service
// account. The file's vertex entries are validated at start-up with errors naming the line; the
// gateway keeps each account's access token fresh in the background (the mock vendor plays Google's
// token endpoint and Vertex AI over TLS); a model whose first target answers 529 is served from
// Vertex; a target whose token cannot be had is left out of its route's calls.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type Gateway } from './helpers/harness.js';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { parseJson, postChat, sseData, moneyView } from './helpers/billing-checks.js';
import { RoutingFileError, parseRoutingFile, readRoutingFile } from '../src/routing/file.js';
import { callableTargets, withAccessTokens } from '../src/routing/access-tokens.js';
import type { KeptToken, ServiceAccountTokens } from '../src/providers/cloud/google-token.js';
import type { ServiceAccount } from '../src/providers/cloud/forms.js';
import { anthropicFamily } from '../src/providers/anthropic/family.js';
import { ApiError } from '../src/http/errors.js';
import { usdToNano, type CatalogModel } from '../src/catalog/model.js';
import { CHAT_MODELS } from '../src/catalog/seed/chat.js';
import type { ChatRequest } from '../src/http/schemas/chat.js';

const keyPair = () => generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
const account = keyPair();
const stranger = keyPair();
const CLIENT_EMAIL = 'gateway-platform@proj-1.iam.gserviceaccount.com';
const serviceAccount = (privateKey: string, tokenUri = 'https://oauth2.googleapis.com/token', extra: Record<string, unknown> = {}) => ({
  type: 'service_account', project_id: 'proj-1', private_key_id: 'key-1', private_key: privateKey,
  client_email: CLIENT_EMAIL, client_id: '1', token_uri: tokenUri, ...extra,
});
const VENDORS = {
  openai: { baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-env' },
  anthropic: { baseUrl: 'https://api.anthropic.com/v1', apiKey: 'sk-ant' },
  gemini: { baseUrl: 'https://generativelanguage.googleapis.com/v1beta', apiKey: 'g-key' },
};
const thrown = (run: () => unknown): Error | undefined => {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  return undefined;
};

// ---- the file ----

t.test('a vertex target: its service account from the environment or a file, its endpoint from the region', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'routing-vertex-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'sa.json'), JSON.stringify(serviceAccount(account.privateKey)));
  const file = join(dir, 'routing.yaml');
  writeFileSync(file, `
models:
  anthropic/claude-haiku-4-5:
    targets:
      - { name: direct, vendor: anthropic, priority: 1 }
      - name: claude-vertex
        vendor: anthropic
        model: claude-haiku-4-5@20251001
        cloud: { kind: vertex, region: us-east5, service_account_json_env: SA_JSON }
  google/gemini-2.5-flash:
    targets:
      - name: gemini-vertex
        vendor: gemini
        base_url: https://psc.example.internal/
        cloud: { kind: vertex, region: global, project_id: other-project, service_account_file: sa.json }
`);
  const table = readRoutingFile(file, VENDORS, { SA_JSON: JSON.stringify(serviceAccount(account.privateKey)) });
  const claude = table.models['anthropic/claude-haiku-4-5']![1]!;
  t.equal(claude.baseUrl, 'https://us-east5-aiplatform.googleapis.com', 'the regional endpoint');
  t.equal(claude.guarded, true, 'an endpoint the operator did not write is vetted like a BYOK row\'s');
  t.equal(claude.apiKey, '', 'the key is the access token, filled in by each HTTP thread');
  t.same(claude.cloud, { kind: 'vertex', projectId: 'proj-1', region: 'us-east5' }, 'the project from the key file');
  t.equal(claude.serviceAccount?.clientEmail, CLIENT_EMAIL);
  t.equal(claude.serviceAccount?.tokenUri, 'https://oauth2.googleapis.com/token');
  t.equal(claude.model, 'claude-haiku-4-5@20251001');
  const gemini = table.models['google/gemini-2.5-flash']![0]!;
  t.equal(gemini.baseUrl, 'https://psc.example.internal', 'the operator\'s own base_url');
  t.equal(gemini.guarded, undefined, 'trusted like <VENDOR>_BASE_URL');
  t.same(gemini.cloud, { kind: 'vertex', projectId: 'other-project', region: 'global' }, 'project_id overrides the key file\'s');
  t.equal(gemini.serviceAccount?.privateKey, account.privateKey.trim(), 'service_account_file is read from the routing file\'s directory');
  const global = parseRoutingFile('vendors:\n  gemini:\n    targets:\n      - name: g\n        cloud: { kind: vertex, region: global, service_account_json_env: SA_JSON }\n', 'f', VENDORS,
    { SA_JSON: JSON.stringify(serviceAccount(account.privateKey)) });
  t.equal(global.vendors.gemini![0]!.baseUrl, 'https://aiplatform.googleapis.com', 'the global endpoint');
});

t.test('vertex entries that cannot work stop start-up with an error naming the line', async (t) => {
  const good = JSON.stringify(serviceAccount(account.privateKey));
  const env: Record<string, string> = {
    SA: good,
    NOT_JSON: 'not json {',
    ARRAY: '[1]',
    NO_EMAIL: JSON.stringify({ ...serviceAccount(account.privateKey), client_email: undefined }),
    BAD_KEY: JSON.stringify(serviceAccount('-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n')),
    ELSEWHERE: JSON.stringify(serviceAccount(account.privateKey, 'https://tokens.example.com/token')),
    LOOPBACK: JSON.stringify(serviceAccount(account.privateKey, 'https://127.0.0.1:8443/token')),
    NO_PROJECT: JSON.stringify({ ...serviceAccount(account.privateKey), project_id: undefined }),
  };
  const file = (cloud: string, vendor = 'anthropic', extra = '') => `models:\n  m:\n    targets:\n      - name: v\n        vendor: ${vendor}\n${extra}        cloud:\n          kind: vertex\n          region: us-east5\n${cloud}`;
  const cases: [string, RegExp][] = [
    [file('          service_account_json_env: MISSING\n'), /^f:9: service_account_json_env names MISSING, which is not set$/],
    [file('          service_account_json_env: NOT_JSON\n'), /^f:9: the value of NOT_JSON is not a service account key file \(not JSON\)$/],
    [file('          service_account_json_env: ARRAY\n'), /^f:9: the value of ARRAY is not a service account key file \(not a JSON object\)$/],
    [file('          service_account_json_env: NO_EMAIL\n'), /^f:9: .*service_account\.client_email is required$/],
    [file('          service_account_json_env: BAD_KEY\n'), /^f:9: .*private_key is not a PEM private key$/],
    [file('          service_account_json_env: ELSEWHERE\n'), /^f:9: .*token_uri must be Google's token endpoint/],
    [file('          service_account_json_env: LOOPBACK\n'), /^f:9: .*token_uri must be Google's token endpoint/],
    [file('          service_account_json_env: NO_PROJECT\n'), /^f:9: .*project_id is required \(or cloud\.project_id\)$/],
    [file('          service_account_file: /nonexistent/sa.json\n'), /^f:9: \/nonexistent\/sa\.json cannot be read \(ENOENT\)$/],
    [file(''), /^f:6: a vertex target needs service_account_json_env or service_account_file/],
    [file('          service_account_json_env: SA\n          service_account_file: sa.json\n'), /^f:6: .*one of them/],
    [file('          service_account_json_env: SA\n', 'openai'), /^f:7: cloud kind vertex serves the vendors anthropic and gemini .*not openai$/],
    [file('          service_account_json_env: SA\n', 'anthropic', '        api_key: sk-x\n'), /^f:6: a vertex target's credential is its service account, not an api_key$/],
    [file('          service_account_json_env: SA\n').replace('us-east5', 'US East'), /^f:8: .*region must be a Google Cloud region/],
    [file('          service_account_json_env: SA\n          sa_file: x\n'), /^f:10: .*sa_file/],
  ];
  for (const [text, message] of cases) {
    const error = thrown(() => parseRoutingFile(text, 'f', VENDORS, env));
    t.ok(error instanceof RoutingFileError, `refused: ${message}`);
    t.match(error?.message, message);
    t.notMatch(error?.message ?? '', /BEGIN PRIVATE KEY|MII/, 'never the key in the message');
  }
  const loopback = parseRoutingFile(file('          service_account_json_env: LOOPBACK\n'), 'f', VENDORS, env, { allowLoopback: true });
  t.equal(loopback.models.m![0]!.serviceAccount?.tokenUri, 'https://127.0.0.1:8443/token', 'a loopback token endpoint with FETCH_ALLOW_LOOPBACK (tests, the offline demo)');
});

// ---- tokens in an HTTP thread ----

/** A token keeper the test holds the token of. */
function fakeTokens(): { tokens: ServiceAccountTokens; set(account: ServiceAccount, token: string | undefined): void } {
  const current = new Map<string, string | undefined>();
  const tokens = {
    keep: (account: ServiceAccount): KeptToken => ({ current: () => current.get(account.clientEmail), ready: Promise.resolve() }),
  } as unknown as ServiceAccountTokens;
  return { tokens, set: (account, token) => current.set(account.clientEmail, token) };
}

t.test('a vertex target reads its kept token; without one it is left out of its route, and a route of none answers 503', async (t) => {
  const env = { SA: JSON.stringify(serviceAccount(account.privateKey)), SB: JSON.stringify({ ...serviceAccount(stranger.privateKey), client_email: 'other@proj-1.iam.gserviceaccount.com' }) };
  const file = parseRoutingFile(`
models:
  anthropic/claude-haiku-4-5:
    targets:
      - { name: claude-vertex, vendor: anthropic, priority: 1, cloud: { kind: vertex, region: us-east5, service_account_json_env: SA } }
      - { name: claude-direct, vendor: anthropic }
  anthropic/claude-sonnet-4-5:
    targets:
      - { name: sonnet-vertex, vendor: anthropic, cloud: { kind: vertex, region: us-east5, service_account_json_env: SB } }
`, 'f', VENDORS, env);
  const { tokens, set } = fakeTokens();
  const { table } = withAccessTokens(file, tokens);
  const route = table.models['anthropic/claude-haiku-4-5']!;
  const [vertex, direct] = route;
  set(vertex!.serviceAccount!, 'ya29.first');
  t.equal(vertex!.apiKey, 'ya29.first', 'the key is the current token');
  t.equal(callableTargets(route), route, 'every target callable: the route itself (no copy)');
  set(vertex!.serviceAccount!, 'ya29.second');
  t.equal(vertex!.apiKey, 'ya29.second', 'a refreshed token is used at once');
  set(vertex!.serviceAccount!, undefined);
  t.same(callableTargets(route).map((x) => x.name), ['claude-direct'], 'without a token: left out, the others serve');
  t.equal(direct!.apiKey, 'sk-ant');
  const lone = table.models['anthropic/claude-sonnet-4-5']!;
  t.equal(callableTargets(lone), lone, 'no target has a token: the route as it is');
  const seed = CHAT_MODELS.find((m) => m.id === 'anthropic/claude-sonnet-4-5')!;
  const model = { ...seed, modality: 'chat', isActive: true, prices: { input: usdToNano(seed.usdPerMillion.input), cachedInput: usdToNano(seed.usdPerMillion.cachedInput), cacheWrite: usdToNano(seed.usdPerMillion.cacheWrite), output: usdToNano(seed.usdPerMillion.output) } } as CatalogModel;
  const chat = { model: model.id, messages: [{ role: 'user', content: 'hi' }] } as ChatRequest;
  const error = thrown(() => anthropicFamily.request(chat, model, false, lone[0]!, { partition: 'p' }));
  t.ok(error instanceof ApiError);
  t.equal((error as ApiError).status, 503, 'a 503 the client may retry, not a call Vertex would refuse with a 401');
  t.equal((error as ApiError).code, 'upstream_unavailable');
  set(lone[0]!.serviceAccount!, 'ya29.sonnet');
  const request = anthropicFamily.request(chat, model, true, lone[0]!, { partition: 'p' });
  t.equal(request.url, `https://us-east5-aiplatform.googleapis.com/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/${model.upstreamModel}:streamRawPredict`);
  t.equal(request.headers.authorization, 'Bearer ya29.sonnet');
  t.equal(request.guarded, true, 'the derived endpoint goes through the URL guard');
  const body = JSON.parse(request.body);
  t.equal(body.anthropic_version, 'vertex-2023-10-16');
  t.equal(body.model, undefined, 'the path names the model');
  t.equal(body.stream, true);
});

// ---- end to end ----

const dir = mkdtempSync(join(tmpdir(), 'routing-vertex-e2e-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
  '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
/** Tokens live 6 s here, so a refresh (at half their life for short ones) comes within the test. */
const TOKEN_LIFETIME_S = 6;
const CLAUDE = 'anthropic/claude-haiku-4-5';
const SONNET = 'anthropic/claude-sonnet-4-5';
const GEMINI = 'google/gemini-2.5-flash';
const GEMINI_PRO = 'google/gemini-2.5-pro';
let mock: MockVendor;
let gateway: Gateway;

t.test('end to end', async (t) => {
  mock = await startMockVendor({
    tls: { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
    cloud: { serviceAccounts: { [CLIENT_EMAIL]: account.publicKey }, tokenLifetimeS: TOKEN_LIFETIME_S },
  });
  writeFileSync(join(dir, 'stranger.json'), JSON.stringify(serviceAccount(stranger.privateKey, `${mock.url}/token`)));
  const file = join(dir, 'routing.yaml');
  writeFileSync(file, `
models:
  ${CLAUDE}:
    targets:
      - { name: claude-direct, vendor: anthropic, api_key: claude-direct-key, priority: 1 }
      - name: claude-vertex
        vendor: anthropic
        model: claude-haiku-4-5@20251001
        base_url: ${mock.url}
        cloud: { kind: vertex, region: us-east5, service_account_json_env: VERTEX_SA }
  ${GEMINI}:
    targets:
      - name: gemini-vertex
        vendor: gemini
        base_url: ${mock.url}
        cloud: { kind: vertex, region: us-central1, service_account_json_env: VERTEX_SA }
  ${SONNET}:
    targets:
      - name: sonnet-vertex-refused
        vendor: anthropic
        priority: 1
        base_url: ${mock.url}
        cloud: { kind: vertex, region: us-east5, service_account_file: stranger.json }
      - { name: sonnet-direct, vendor: anthropic, api_key: sonnet-direct-key }
  ${GEMINI_PRO}:
    targets:
      - name: gemini-pro-vertex-refused
        vendor: gemini
        base_url: ${mock.url}
        cloud: { kind: vertex, region: us-central1, service_account_file: stranger.json }
`);
  gateway = await startGateway({
    mock,
    env: {
      ROUTING_FILE: file, VERTEX_SA: JSON.stringify(serviceAccount(account.privateKey, `${mock.url}/token`)),
      NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem'), FETCH_ALLOW_LOOPBACK: 'true', RATE_LIMIT_DEFAULT: '1000000/1', LOG_LEVEL: 'info',
    },
  });
  t.ok(mock.cloud.tokensIssued >= 1, 'the thread fetched its token before taking calls');
  t.teardown(async () => {
    await gateway?.close();
    await mock?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  t.test('an Anthropic model whose first target answers 529 is served from Vertex AI, whole and streamed, charged once each', async (t) => {
    const user = 'vertex-529';
    const { key } = await gateway.user(user, '5');
    mock.setFaults({ 'claude-direct-key': { kind: 529 } });
    const before = await moneyView(gateway, user);
    for (const stream of [false, true]) {
      mock.clearRequests();
      const response = await postChat(gateway, key, JSON.stringify({ model: CLAUDE, stream, messages: [{ role: 'user', content: 'hi' }] }));
      t.equal(response.status, 200, response.text.slice(0, 300));
      t.equal(response.headers.get('x-gateway-attempts'), '2', 'the second attempt served');
      const answer = stream ? JSON.parse(sseData(response.text).at(-2)!) : parseJson(response.text);
      t.equal(answer.model, CLAUDE);
      if (!stream) t.ok(answer.choices[0].message.content.length > 0, 'an answer');
      else t.ok(sseData(response.text).length > 3, 'streamed in chunks');
      const records = mock.requests();
      t.ok(records.some((r) => r.path.endsWith('/v1/messages') && r.fault === '529'), 'the direct target answered 529');
      const vertex = records.find((r) => r.path.startsWith('/v1/projects/'))!;
      t.equal(vertex?.path, `/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:${stream ? 'streamRawPredict' : 'rawPredict'}`);
      t.match(vertex?.authorization, /^Bearer ya29\.mock-/, 'the service account\'s access token');
      t.equal((vertex?.body as Record<string, unknown>).anthropic_version, 'vertex-2023-10-16');
    }
    mock.setFaults({});
    await gateway.ledgerSettled(user);
    t.equal((await moneyView(gateway, user)).usageTransactions, before.usageTransactions + 2, 'one charge per call, none for the failed attempts');
  });

  t.test('Gemini on Vertex AI from the routing file, and the token kept fresh in the background', async (t) => {
    const { key } = await gateway.user('vertex-gemini', '5');
    mock.clearRequests();
    const before = mock.cloud.tokensIssued;
    const seen = new Set<string>();
    for (const stream of [false, true, false]) {
      const response = await postChat(gateway, key, JSON.stringify({ model: GEMINI, stream, messages: [{ role: 'user', content: 'hi' }] }));
      t.equal(response.status, 200, response.text.slice(0, 300));
      t.equal(response.headers.get('x-gateway-attempts'), '1');
    }
    for (const record of mock.requests().filter((r) => r.path.startsWith('/v1/projects/'))) {
      t.match(record.path, /^\/v1\/projects\/proj-1\/locations\/us-central1\/publishers\/google\/models\/gemini-2\.5-flash:(generateContent|streamGenerateContent)$/);
      seen.add(record.authorization!);
    }
    t.ok(mock.cloud.tokensIssued - before <= 1, `no token fetched per call (${mock.cloud.tokensIssued - before} for 3 calls; a background refresh may fall among them)`);
    const issued = mock.cloud.tokensIssued;
    // No call meanwhile: the thread replaces the token before it expires, by itself.
    await new Promise((resolve) => setTimeout(resolve, TOKEN_LIFETIME_S * 1000 + 500));
    t.ok(mock.cloud.tokensIssued > issued, 'a new token fetched before the old one expired');
    mock.clearRequests();
    const later = await postChat(gateway, key, JSON.stringify({ model: GEMINI, messages: [{ role: 'user', content: 'hi' }] }));
    t.equal(later.status, 200, `served after the first token expired: ${later.text.slice(0, 300)}`);
    const record = mock.requests().find((r) => r.path.startsWith('/v1/projects/'))!;
    t.notOk(seen.has(record.authorization!), 'with the new token');
  });

  t.test('a service account the token endpoint refuses: its target is left out, the others serve; alone, a 503', async (t) => {
    const { key } = await gateway.user('vertex-refused', '5');
    mock.clearRequests();
    const response = await postChat(gateway, key, JSON.stringify({ model: SONNET, messages: [{ role: 'user', content: 'hi' }] }));
    t.equal(response.status, 200, response.text.slice(0, 300));
    t.equal(response.headers.get('x-gateway-attempts'), '1', 'the direct target served at once');
    t.notOk(mock.requests().some((r) => r.path.startsWith('/v1/projects/')), 'Vertex never called without a token');
    const alone = await postChat(gateway, key, JSON.stringify({ model: GEMINI_PRO, messages: [{ role: 'user', content: 'hi' }] }));
    t.equal(alone.status, 503, alone.text);
    t.equal(parseJson(alone.text).error.code, 'upstream_unavailable');
    t.match(parseJson(alone.text).msg, /no access token/);
    t.notOk(mock.requests().some((r) => r.path.startsWith('/v1/projects/')), 'still never called');
    t.match(gateway.output, /service account access token could not be fetched.*token endpoint refused the service account \(400: invalid_grant\)/);
    t.notMatch(gateway.output, /BEGIN PRIVATE KEY|ya29\.mock-/, 'never a key or a token in the logs');
  });
});
