// POST /v1/messages through the caller's own credentials and the cloud forms (issue 27), against the
// mock vendor over HTTPS (a certificate made here, trusted through NODE_EXTRA_CA_CERTS): a BYOK row for
// Anthropic's own API (the row's key upstream, the caller's body passed through, not charged), a BYOK
// Bedrock row (Bedrock's body: anthropic_version, no model/stream/metadata, the betas as anthropic_beta;
// SigV4 verified by the mock; the event stream re-framed as Anthropic's SSE, read by the SDK), and Claude
// on Vertex AI (Vertex's body: anthropic_version, no model, the anthropic-beta header, rawPredict and
// streamRawPredict). BYOK has no Claude-on-Vertex form (a `google` row is Gemini on Vertex), so Vertex
// is the routing file's target with the platform's service account, charged as any platform call.
import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, type Gateway } from './helpers/harness.js';
import { startMockVendor, type MockVendor, type MockRequestRecord } from '../src/mock-vendor/server.js';
import { TEST_JWT_SECRET, eventually, fastUser, mintToken, rawRequest } from './helpers/http-tools.js';
import { leasesClosed, moneyView, type MoneyView } from './helpers/billing-checks.js';
import { selfSignedCert } from './helpers/self-signed-cert.js';
import { serviceAccountKeyFile } from './helpers/service-account.js';

const tls = selfSignedCert('messages-byok');
const account = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
const CLIENT_EMAIL = 'gateway-messages@proj-1.iam.gserviceaccount.com';
const AWS_KEY_ID = 'AKIDMESSAGESEXAMPLE';
const AWS_SECRET = 'mock/messages+secret/key';
const OWN_KEY = 'sk-ant-api03-test-own-key-of-the-caller-0001';
/** Served from Vertex AI only (the routing file); the BYOK tests use Sonnet, which no file names. */
const VERTEX_MODEL = 'anthropic/claude-haiku-4-5';
/** The harness's platform key for Anthropic. */
const PLATFORM_KEY = 'test-anthropic-key';
const BETAS = 'interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14';

let mock: MockVendor;
let gateway: Gateway;
t.before(async () => {
  mock = await startMockVendor({
    tls: { key: tls.key, cert: tls.cert },
    cloud: { awsSecrets: { [AWS_KEY_ID]: AWS_SECRET }, serviceAccounts: { [CLIENT_EMAIL]: account.publicKey } },
  });
  const routing = join(tls.dir, 'routing.yaml');
  writeFileSync(routing, `
models:
  ${VERTEX_MODEL}:
    targets:
      - name: claude-vertex
        vendor: anthropic
        model: claude-haiku-4-5@20251001
        base_url: ${mock.url}
        cloud: { kind: vertex, region: us-east5, service_account_json_env: VERTEX_SA }
`);
  const serviceAccount = serviceAccountKeyFile(account.privateKey, CLIENT_EMAIL, `${mock.url}/token`);
  // The mock plays Anthropic, Bedrock, Vertex and Google's token endpoint on loopback: allowed here.
  gateway = await startGateway({
    mock,
    env: {
      JWT_SECRET: TEST_JWT_SECRET, NODE_EXTRA_CA_CERTS: tls.certPath, FETCH_ALLOW_LOOPBACK: 'true',
      ROUTING_FILE: routing, VERTEX_SA: JSON.stringify(serviceAccount),
    },
  });
});
t.teardown(async () => {
  if (process.env.GW_DEBUG) console.error(gateway?.output);
  await gateway?.close();
  await mock?.close();
  tls.remove();
});

const client = (key: string) => new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0 });
const upstreamWith = (marker: string): MockRequestRecord[] => mock.requests().filter((r) => JSON.stringify(r.body ?? '').includes(marker));
const textOf = (message: Anthropic.Message) => message.content.filter((b): b is Anthropic.TextBlock => b.type === 'text').map((b) => b.text).join('');
const words = (text: string) => text.trim().split(/\s+/).filter(Boolean).length;

async function addCredential(token: string, body: Record<string, unknown>): Promise<string> {
  const response = await rawRequest(`${gateway.url}/api/v1/byok`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`create byok: ${response.status} ${response.text}`);
  return (response.body as { id: string }).id;
}

async function row(token: string, id: string): Promise<{ last_used_at: string | null; last_error: string | null }> {
  const response = await rawRequest(`${gateway.url}/api/v1/byok`, { headers: { authorization: `Bearer ${token}` } });
  return (response.body as { id: string; last_used_at: string | null; last_error: string | null }[]).find((r) => r.id === id)!;
}

/** A streamed /v1/messages call by raw fetch: the SSE text as the client gets it. */
async function rawStream(key: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<{ status: number; contentType: string | null; text: string }> {
  const response = await fetch(`${gateway.url}/v1/messages`, {
    method: 'POST', headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ ...body, stream: true }),
  });
  return { status: response.status, contentType: response.headers.get('content-type'), text: await response.text() };
}

/** Each SSE event's `event:` name, checked against its data's `type` (the SDK dispatches on the name). */
function eventNames(t: Test, text: string): string[] {
  const names: string[] = [];
  for (const block of text.split('\n\n').filter((b) => b.trim() !== '')) {
    const name = /^event: (\S+)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (name === undefined || data === undefined) {
      t.fail(`an event without its name or data: ${block.slice(0, 200)}`);
      continue;
    }
    const type = (JSON.parse(data) as { type?: unknown }).type;
    if (type !== name) t.fail(`event ${name} carries data of type ${String(type)}`);
    names.push(name);
  }
  return names;
}

/** The row served (last_used_at, no last_error) and the user paid nothing (BYOK). */
async function servedFree(t: Test, user: string, token: string, id: string, before: MoneyView): Promise<void> {
  t.ok(await eventually(async () => Boolean((await row(token, id)).last_used_at)), 'the row\'s last_used_at advanced');
  t.equal((await row(token, id)).last_error, null, 'no last_error');
  await gateway.ledgerSettled(user);
  const after = await leasesClosed(gateway, user);
  t.equal(after.credits, before.credits, 'not charged: the caller\'s own credential');
  t.equal(after.usageTransactions, before.usageTransactions, 'no usage transaction');
  t.equal(after.held, 0n, 'nothing held');
}

t.test('a BYOK row for Anthropic\'s API: the row\'s key upstream, the caller\'s body passed through, whole and streamed, not charged', async (t) => {
  const user = 'messages-byok-direct';
  const { key, token } = await fastUser(gateway, user, '1');
  const id = await addCredential(token, { provider: 'anthropic', label: 'own', api_key: OWN_KEY });
  const before = await moneyView(gateway, user);
  // The mock records no x-api-key for Anthropic's route; it counts the requests of each credential.
  const ownBefore = mock.faultCounts(OWN_KEY).served;
  const platformBefore = mock.faultCounts(PLATFORM_KEY).served;
  const api = client(key);
  const marker = `${user}-whole`;
  const params = {
    model: 'claude-sonnet-4-5', max_tokens: 100, top_k: 7, service_tier: 'auto', stop_sequences: ['STOP'],
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
    messages: [{ role: 'user', content: [{ type: 'text', text: `Hello ${marker} [[mock chunks=4]]` }] }],
  } as const;
  const message = await api.messages.create(params as unknown as Anthropic.MessageCreateParamsNonStreaming, { headers: { 'anthropic-beta': BETAS } });
  t.equal(message.type, 'message');
  t.equal(words(textOf(message)), 4, 'the upstream\'s answer');
  t.equal(message.model, 'claude-sonnet-4-5-20250929', 'the upstream\'s own bytes');
  const [record] = upstreamWith(marker);
  t.ok(record, 'the call reached Anthropic\'s API');
  t.equal(record!.path, '/anthropic/v1/messages', 'at the platform\'s base URL (the row names none)');
  t.equal(mock.faultCounts(OWN_KEY).served, ownBefore + 1, 'with the row\'s key in x-api-key');
  t.equal(record!.anthropicBeta, BETAS, 'anthropic-beta passed on');
  t.equal(record!.anthropicVersion, '2023-06-01');
  const sent = record!.body as Record<string, any>;
  t.equal(sent.model, 'claude-sonnet-4-5');
  t.equal(sent.top_k, 7, 'fields the gateway does not read pass through');
  t.equal(sent.service_tier, 'auto');
  t.same(sent.stop_sequences, ['STOP']);
  t.same(sent.messages, params.messages, 'the messages as sent');
  t.same(sent.system.slice(1), params.system, 'the caller\'s system blocks, breakpoint and all, after the cache scope');
  t.match(sent.system[0].text, /^cache-scope:/);
  t.notOk('stream' in sent, 'a whole call sends no stream');

  const streamMarker = `${user}-stream`;
  let streamed = '';
  const stream = api.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: `Stream ${streamMarker} [[mock chunks=6]]` }] });
  stream.on('text', (delta) => { streamed += delta; });
  const final = await stream.finalMessage();
  t.equal(words(streamed), 6, 'streamed text deltas');
  t.equal(final.usage.output_tokens, 6);
  const [streamRecord] = upstreamWith(streamMarker);
  t.equal(mock.faultCounts(OWN_KEY).served, ownBefore + 2, 'the stream with the row\'s key too');
  t.equal(mock.faultCounts(PLATFORM_KEY).served, platformBefore, 'the platform\'s key never used');
  t.equal((streamRecord!.body as { stream?: unknown }).stream, true);
  await servedFree(t, user, token, id, before);
});

t.test('a BYOK Bedrock row: Bedrock\'s body (anthropic_version, no model/stream/metadata, anthropic_beta), SigV4-signed; the stream as Anthropic\'s SSE; not charged', async (t) => {
  const user = 'messages-byok-bedrock';
  const { key, token } = await fastUser(gateway, user, '1');
  const id = await addCredential(token, {
    provider: 'anthropic', label: 'bedrock', config_json: { region: 'us-east-1', accessKeyId: AWS_KEY_ID, secretAccessKey: AWS_SECRET, endpoint_url: mock.url },
  });
  const before = await moneyView(gateway, user);
  const api = client(key);
  const marker = `${user}-whole`;
  const message = await api.messages.create(
    { model: 'claude-sonnet-4-5', max_tokens: 100, metadata: { user_id: 'end-user-1' }, top_k: 5, messages: [{ role: 'user', content: `Hi ${marker} [[mock chunks=3]]` }] },
    { headers: { 'anthropic-beta': BETAS } },
  );
  t.equal(words(textOf(message)), 3, 'Bedrock\'s answer, as Anthropic\'s Message');
  const [record] = upstreamWith(marker);
  t.equal(record!.path, '/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke', 'InvokeModel with the Bedrock model id');
  t.equal(record!.status, 200, 'the mock verified the SigV4 signature (a wrong one is 403)');
  t.equal(record!.authorization, AWS_KEY_ID, 'signed with the row\'s access key');
  const sent = record!.body as Record<string, unknown>;
  t.equal(sent.anthropic_version, 'bedrock-2023-05-31');
  t.same(sent.anthropic_beta, BETAS.split(','), 'the betas as an anthropic_beta array');
  for (const field of ['model', 'stream', 'metadata']) t.notOk(field in sent, `no ${field} in a Bedrock body`);
  t.equal(sent.top_k, 5, 'the rest of the body passed through');

  const streamMarker = `${user}-stream`;
  const raw = await rawStream(key, { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: `Stream ${streamMarker} [[mock chunks=5]]` }] }, { 'anthropic-beta': BETAS });
  t.equal(raw.status, 200);
  t.match(raw.contentType, /^text\/event-stream/, 'SSE, not Bedrock\'s event stream');
  const names = eventNames(t, raw.text);
  t.equal(names[0], 'message_start');
  t.equal(names.at(-1), 'message_stop');
  t.equal(names.filter((name) => name === 'content_block_delta').length, 5, 'one delta per token');
  t.ok(names.includes('message_delta'), 'the usage event');
  t.notOk(names.includes('error'));
  const [streamRecord] = upstreamWith(streamMarker);
  t.equal(streamRecord!.path, '/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream');
  const streamSent = streamRecord!.body as Record<string, unknown>;
  t.notOk('stream' in streamSent || 'model' in streamSent, 'the stream is asked by the path, not the body');
  t.same(streamSent.anthropic_beta, BETAS.split(','));

  // The same stream through the SDK: it dispatches on the event names.
  let streamed = '';
  const stream = client(key).messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: `SDK ${user} [[mock chunks=4]]` }] });
  stream.on('text', (delta) => { streamed += delta; });
  const final = await stream.finalMessage();
  t.equal(words(streamed), 4, 'the SDK reads Bedrock\'s stream as Anthropic\'s');
  t.equal(final.stop_reason, 'end_turn');
  t.equal(final.usage.output_tokens, 4);
  await servedFree(t, user, token, id, before);
});

t.test('Claude on Vertex AI: Vertex\'s body (anthropic_version, no model), the anthropic-beta header, rawPredict and streamRawPredict; charged once each', async (t) => {
  const user = 'messages-vertex';
  const { key } = await fastUser(gateway, user, '1');
  const before = await moneyView(gateway, user);
  const api = client(key);
  const marker = `${user}-whole`;
  const message = await api.messages.create(
    { model: 'claude-haiku-4-5', max_tokens: 100, top_k: 3, messages: [{ role: 'user', content: `Hi ${marker} [[mock chunks=3]]` }] },
    { headers: { 'anthropic-beta': BETAS } },
  );
  t.equal(words(textOf(message)), 3);
  const [record] = upstreamWith(marker);
  t.equal(record!.path, '/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict');
  t.match(record!.authorization, /^Bearer ya29\.mock-/, 'the service account\'s access token');
  t.equal(record!.anthropicBeta, BETAS, 'the betas in the anthropic-beta header');
  const sent = record!.body as Record<string, unknown>;
  t.equal(sent.anthropic_version, 'vertex-2023-10-16');
  t.notOk('model' in sent, 'the path names the model');
  t.notOk('stream' in sent);
  t.equal(sent.top_k, 3);

  const streamMarker = `${user}-stream`;
  let streamed = '';
  const stream = api.messages.stream({ model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user', content: `Stream ${streamMarker} [[mock chunks=5]]` }] }, { headers: { 'anthropic-beta': BETAS } });
  stream.on('text', (delta) => { streamed += delta; });
  const final = await stream.finalMessage();
  t.equal(words(streamed), 5);
  t.equal(final.usage.output_tokens, 5);
  const [streamRecord] = upstreamWith(streamMarker);
  t.equal(streamRecord!.path, '/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict');
  t.equal((streamRecord!.body as Record<string, unknown>).stream, true);
  t.notOk('model' in (streamRecord!.body as object));
  t.equal(streamRecord!.anthropicBeta, BETAS);
  await gateway.ledgerSettled(user);
  const after = await leasesClosed(gateway, user);
  t.equal(after.usageTransactions, before.usageTransactions + 2, 'the platform\'s credential: one charge per call');
  t.ok(after.credits < before.credits);
  t.equal(after.held, 0n);
  t.equal(after.credits, after.ledgerSum, 'Redis and the ledger agree');
});

t.test('a BYOK row whose key Anthropic refuses: last_error recorded, the platform serves and charges', async (t) => {
  const user = 'messages-byok-refused';
  const { key, token } = await fastUser(gateway, user, '1');
  const id = await addCredential(token, { provider: 'anthropic', label: 'revoked upstream', api_key: 'sk-ant-refused-0001' });
  mock.setFaults({ 'sk-ant-refused-0001': { kind: 401 } });
  t.teardown(() => mock.setFaults({}));
  const before = await moneyView(gateway, user);
  const marker = `${user}-call`;
  const message = await client(key).messages.create({ model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: `Hi ${marker} [[mock chunks=2]]` }] });
  t.equal(words(textOf(message)), 2, 'served');
  t.same(upstreamWith(marker).map((r) => r.status), [401, 200], 'the row refused, then the platform');
  t.same(mock.faultCounts('sk-ant-refused-0001'), { faulted: 1, served: 0 }, 'the refusal met the row\'s key');
  t.ok(await eventually(async () => Boolean((await row(token, id)).last_error)), 'last_error recorded');
  await gateway.ledgerSettled(user);
  t.equal((await moneyView(gateway, user)).usageTransactions, before.usageTransactions + 1, 'the platform call is charged');
});
