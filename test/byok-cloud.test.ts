// BYOK cloud forms end to end: an Azure OpenAI deployment, Claude on Amazon Bedrock (SigV4, the
// binary event stream) and Gemini on Vertex AI (a service account's OAuth token, fetched once and
// reused), each through POST /v1/chat/completions against the mock vendor over HTTPS (a certificate
// made here, trusted by the gateway through NODE_EXTRA_CA_CERTS); never charged; a wrong secret or an
// unusable service account is a failed attempt with last_error, then the platform serves; a token endpoint
// answering 500 with a huge body costs the gateway its error-body cap, not the body. Plus unit
// tests of the SigV4 signer (AWS's published example), the event-stream decoder and the Bedrock relay.
import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type Gateway } from './helpers/harness.js';
import { eachRequest } from './helpers/raw-requests.js';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { TEST_JWT_SECRET, eventually, fastUser, mintToken, rawRequest } from './helpers/http-tools.js';
import { leasesClosed, moneyView, sseData } from './helpers/billing-checks.js';
import { canonicalRequest, canonicalUri, signSigV4, signingKey, stringToSign } from '../src/providers/cloud/sigv4.js';
import { EventStreamDecoder, EventStreamError, encodeEventStreamMessage } from '../src/providers/cloud/eventstream.js';
import { BedrockStreamRelay } from '../src/providers/anthropic/bedrock.js';
import { AnthropicStreamRelay } from '../src/providers/anthropic/stream-relay.js';
import { createHash, createHmac } from 'node:crypto';

// ---- unit: SigV4 ----

t.test('SigV4: AWS\'s published example (S3 GET Object, header auth) — canonical request, string to sign, signature', async (t) => {
  // https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, "Example: GET Object".
  const secret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
  const emptyHash = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
  const headers = { host: 'examplebucket.s3.amazonaws.com', range: 'bytes=0-9', 'x-amz-content-sha256': emptyHash, 'x-amz-date': '20130524T000000Z' };
  const { text, signedHeaders } = canonicalRequest('GET', canonicalUri('/test.txt', true), '', headers, emptyHash);
  t.equal(text, `GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\nx-amz-content-sha256:${emptyHash}\nx-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n${emptyHash}`);
  t.equal(signedHeaders, 'host;range;x-amz-content-sha256;x-amz-date');
  const toSign = stringToSign('20130524T000000Z', '20130524/us-east-1/s3/aws4_request', text);
  t.equal(toSign.split('\n')[3], '7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972', 'the canonical request\'s hash');
  const signature = createHmac('sha256', signingKey(secret, '20130524', 'us-east-1', 's3')).update(toSign).digest('hex');
  t.equal(signature, 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41', 'the published signature');

  const signed = signSigV4({
    method: 'GET', url: 'https://examplebucket.s3.amazonaws.com/test.txt', headers: { Range: 'bytes=0-9' }, body: '', region: 'us-east-1', service: 's3',
    singleEncodePath: true, contentSha256Header: true,
  }, { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: secret }, new Date('2013-05-24T00:00:00Z'));
  t.equal(signed.authorization, 'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41');
  t.equal(signed['x-amz-date'], '20130524T000000Z');
});

t.test('SigV4 for Bedrock: the path encoded twice in the canonical request; a session token is sent and signed', async (t) => {
  t.equal(canonicalUri('/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke', false), '/model/anthropic.claude-sonnet-4-5-20250929-v1%253A0/invoke');
  const body = '{"a":1}';
  const signed = signSigV4({ method: 'POST', url: 'https://bedrock-runtime.us-east-1.amazonaws.com/model/m%3A0/invoke', headers: { 'content-type': 'application/json' }, body, region: 'us-east-1', service: 'bedrock' },
    { accessKeyId: 'AKID', secretAccessKey: 'SECRET', sessionToken: 'SESSION' }, new Date('2025-01-02T03:04:05Z'));
  t.equal(signed['x-amz-security-token'], 'SESSION');
  t.match(signed.authorization, /^AWS4-HMAC-SHA256 Credential=AKID\/20250102\/us-east-1\/bedrock\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/);
  // Worked by hand from the definition, step by step.
  const canonical = ['POST', '/model/m%253A0/invoke', '', 'content-type:application/json', 'host:bedrock-runtime.us-east-1.amazonaws.com',
    'x-amz-date:20250102T030405Z', 'x-amz-security-token:SESSION', '', 'content-type;host;x-amz-date;x-amz-security-token',
    createHash('sha256').update(body).digest('hex')].join('\n');
  const scope = '20250102/us-east-1/bedrock/aws4_request';
  const toSign = `AWS4-HMAC-SHA256\n20250102T030405Z\n${scope}\n${createHash('sha256').update(canonical).digest('hex')}`;
  const key = ['20250102', 'us-east-1', 'bedrock', 'aws4_request'].reduce<Buffer | string>((k, part) => createHmac('sha256', k).update(part).digest(), 'AWS4SECRET');
  t.equal(signed.authorization!.slice(-64), createHmac('sha256', key).update(toSign).digest('hex'));
});

// ---- unit: event stream ----

const chunkMessage = (event: unknown) => encodeEventStreamMessage(
  { ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' },
  Buffer.from(JSON.stringify({ bytes: Buffer.from(JSON.stringify(event)).toString('base64'), p: 'abc' })),
);

t.test('event stream: messages decode however the bytes are split; CRCs are verified', async (t) => {
  const a = encodeEventStreamMessage({ ':message-type': 'event', ':event-type': 'chunk' }, Buffer.from('{"bytes":"eyJ4IjoxfQ=="}'));
  const b = encodeEventStreamMessage({ ':message-type': 'exception', ':exception-type': 'throttlingException' }, Buffer.from('{"message":"slow down"}'));
  const both = Buffer.concat([a, b]);
  t.equal(both.readUInt32BE(0), a.length, 'the prelude holds the total length');
  for (let cut = 0; cut <= both.length; cut++) {
    const decoder = new EventStreamDecoder();
    const messages = [...decoder.push(both.subarray(0, cut)), ...decoder.push(both.subarray(cut))];
    if (messages.length !== 2 || decoder.buffered !== 0) { t.fail(`split at ${cut}`); return; }
  }
  const decoder = new EventStreamDecoder();
  const [first, second] = decoder.push(both);
  t.same(first!.headers, { ':message-type': 'event', ':event-type': 'chunk' });
  t.equal(first!.payload.toString(), '{"bytes":"eyJ4IjoxfQ=="}');
  t.equal(second!.headers[':exception-type'], 'throttlingException');
  const corrupt = Buffer.from(a);
  corrupt[corrupt.length - 6]! ^= 1;
  t.throws(() => new EventStreamDecoder().push(corrupt), EventStreamError, 'a flipped payload bit fails the message CRC');
  const badPrelude = Buffer.from(a);
  badPrelude[3]! ^= 1;
  t.throws(() => new EventStreamDecoder().push(badPrelude), EventStreamError, 'a flipped length bit fails the prelude CRC');
});

t.test('Bedrock relay: event-stream chunks become chat.completion.chunk events with usage, fed a byte at a time', async (t) => {
  const events = [
    { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude', content: [], usage: { input_tokens: 12, output_tokens: 1 } } },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: ' there' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } },
    { type: 'message_stop' },
  ];
  const bytes = Buffer.concat(events.map(chunkMessage));
  const relay = new BedrockStreamRelay(new AnthropicStreamRelay('anthropic/claude-sonnet-4-5', { includeReasoning: true, id: 'chatcmpl-x', created: 1 }));
  let out = '';
  for (let i = 0; i < bytes.length; i++) out += relay.push(bytes.subarray(i, i + 1))?.toString() ?? '';
  out += relay.flush()?.toString() ?? '';
  const data = sseData(out);
  t.equal(data.at(-1), '[DONE]');
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
  t.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'Hello there');
  t.match(chunks.at(-1).usage, { prompt_tokens: 12, completion_tokens: 2, total_tokens: 14 }, 'usage from the stream');
  t.equal(relay.usage?.promptTokens, 12);

  const failing = new BedrockStreamRelay(new AnthropicStreamRelay('m', { includeReasoning: true, id: 'c', created: 1 }));
  const exception = encodeEventStreamMessage({ ':message-type': 'exception', ':exception-type': 'modelStreamErrorException' }, Buffer.from('{"message":"boom"}'));
  const text = (failing.push(Buffer.concat([chunkMessage(events[0]), exception]))?.toString() ?? '') + (failing.flush()?.toString() ?? '');
  t.match(text, /modelStreamErrorException: boom/, 'an exception message fails the stream as Anthropic\'s error event does');
  t.notMatch(text, /\[DONE\]/);
});

// ---- end to end ----

const dir = mkdtempSync(join(tmpdir(), 'byok-cloud-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
  '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
const keyPair = () => generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
const account = keyPair();
const stranger = keyPair();
const CLIENT_EMAIL = 'gateway-test@proj-1.iam.gserviceaccount.com';
const AWS_KEY_ID = 'AKIDMOCKEXAMPLE';
const AWS_SECRET = 'mock/secret+access/key';

let mock: MockVendor;
let gateway: Gateway;
t.before(async () => {
  mock = await startMockVendor({
    tls: { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
    cloud: { awsSecrets: { [AWS_KEY_ID]: AWS_SECRET }, serviceAccounts: { [CLIENT_EMAIL]: account.publicKey } },
  });
  // The mock plays Azure, Bedrock, Vertex and Google's token endpoint on loopback: allowed for these rows.
  gateway = await startGateway({ mock, env: { JWT_SECRET: TEST_JWT_SECRET, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem'), FETCH_ALLOW_LOOPBACK: 'true' } });
});
t.teardown(async () => {
  await gateway?.close();
  await mock?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function addCredential(token: string, body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const response = await rawRequest(`${gateway.url}/api/v1/byok`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: response.status, body: response.body };
}

async function row(token: string, id: string): Promise<any> {
  const response = await rawRequest(`${gateway.url}/api/v1/byok`, { headers: { authorization: `Bearer ${token}` } });
  return (response.body as any[]).find((r) => r.id === id);
}

async function chat(key: string, model: string, stream: boolean) {
  const before = mock.requests().length;
  const response = await rawRequest(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello [[mock chunks=3]]' }], max_tokens: 50, ...(stream ? { stream: true } : {}) }),
  });
  return { ...response, upstream: mock.requests().slice(before) };
}

/** The answer's text and usage, whole or streamed. */
function answerOf(response: { text: string; body: any }, stream: boolean): { content: string; usage: any; model: string } {
  if (!stream) return { content: response.body.choices[0].message.content, usage: response.body.usage, model: response.body.model };
  const data = sseData(response.text);
  if (data.at(-1) !== '[DONE]') throw new Error(`stream did not finish: ${response.text.slice(-300)}`);
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
  return { content: chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), usage: chunks.at(-1).usage, model: chunks[0].model };
}

async function servedFree(t: Test, user: string, token: string, id: string, before: Awaited<ReturnType<typeof moneyView>>) {
  t.ok(await eventually(async () => Boolean((await row(token, id)).last_used_at)), 'last_used_at advanced');
  t.equal((await row(token, id)).last_error, null);
  await gateway.ledgerSettled(user);
  const after = await leasesClosed(gateway, user);
  t.equal(after.credits, before.credits, 'not charged (BYOK)');
  t.equal(after.usageTransactions, before.usageTransactions, 'no usage transaction');
}

t.test('Azure OpenAI deployment: the deployment URL, api-key header, no model in the body; whole and streamed, uncharged', async (t) => {
  const user = 'cloud-azure';
  const { key } = await fastUser(gateway, user, '1');
  const token = mintToken(user);
  const created = await addCredential(token, {
    provider: 'openai', label: 'azure', api_key: 'azure-key-0001',
    config_json: { endpoint_url: mock.url, deployment_id: 'gpt-4o-mini-prod', api_version: '2024-10-21' },
  });
  t.equal(created.status, 201, JSON.stringify(created.body));
  const before = await moneyView(gateway, user);
  for (const stream of [false, true]) {
    const response = await chat(key, 'openai/gpt-4o-mini', stream);
    t.equal(response.status, 200, `served (stream ${stream})`);
    const answer = answerOf(response, stream);
    t.ok(answer.content.length > 0, 'an answer');
    t.equal(answer.model, 'openai/gpt-4o-mini', "the gateway's model id");
    t.ok(answer.usage.prompt_tokens > 0 && answer.usage.completion_tokens === 3, 'usage');
    t.equal(response.upstream.length, 1, 'one upstream call');
    const record = response.upstream[0]!;
    t.equal(record.path, '/openai/deployments/gpt-4o-mini-prod/chat/completions');
    t.equal(record.authorization, 'azure-key-0001', 'the key in api-key');
    t.notOk('model' in (record.body as object), 'the deployment names the model');
  }
  await servedFree(t, user, token, created.body.id, before);
});

t.test('Claude on Bedrock: SigV4-signed invoke and invoke-with-response-stream (event stream decoded), uncharged', async (t) => {
  const user = 'cloud-bedrock';
  const { key } = await fastUser(gateway, user, '1');
  const token = mintToken(user);
  const created = await addCredential(token, {
    provider: 'anthropic', label: 'bedrock',
    config_json: { region: 'us-east-1', accessKeyId: AWS_KEY_ID, secretAccessKey: AWS_SECRET, endpoint_url: mock.url },
  });
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.equal(created.body.config_json.secretAccessKey, '***');
  const before = await moneyView(gateway, user);
  for (const stream of [false, true]) {
    const response = await chat(key, 'anthropic/claude-sonnet-4-5', stream);
    t.equal(response.status, 200, `served (stream ${stream}): ${response.text.slice(0, 300)}`);
    const answer = answerOf(response, stream);
    t.ok(answer.content.length > 0, 'an answer');
    t.equal(answer.model, 'anthropic/claude-sonnet-4-5');
    t.ok(answer.usage.prompt_tokens > 0 && answer.usage.completion_tokens === 3, 'usage');
    const record = response.upstream[0]!;
    t.equal(record.path, `/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/${stream ? 'invoke-with-response-stream' : 'invoke'}`, 'the Bedrock model id from the table');
    t.equal(record.authorization, AWS_KEY_ID, 'signed with the row\'s access key');
    t.equal((record.body as any).anthropic_version, 'bedrock-2023-05-31');
    t.notOk('model' in (record.body as object) || 'stream' in (record.body as object), 'no model or stream in a Bedrock body');
  }
  await servedFree(t, user, token, created.body.id, before);
});

t.test('a wrong Bedrock secret: the signature is refused, last_error recorded, the platform serves and charges', async (t) => {
  const user = 'cloud-bedrock-wrong';
  const { key } = await fastUser(gateway, user, '1');
  const token = mintToken(user);
  const created = await addCredential(token, {
    provider: 'anthropic', label: 'wrong',
    config_json: { region: 'us-east-1', accessKeyId: AWS_KEY_ID, secretAccessKey: 'not-the-secret', endpoint_url: mock.url },
  });
  const before = await moneyView(gateway, user);
  const response = await chat(key, 'anthropic/claude-sonnet-4-5', false);
  t.equal(response.status, 200, 'served by the platform');
  t.same(response.upstream.map((r) => [r.path.split('/')[1], r.status]), [['model', 403], ['anthropic', 200]], 'Bedrock refused, then the platform');
  const failed = await eventually(async () => Boolean((await row(token, created.body.id)).last_error));
  t.ok(failed);
  const after = await row(token, created.body.id);
  t.match(after.last_error, /^403 .*signature we calculated does not match/);
  t.equal(after.last_used_at, null);
  await gateway.ledgerSettled(user);
  t.equal((await moneyView(gateway, user)).usageTransactions, before.usageTransactions + 1, 'the platform call is charged');
});

function serviceAccount(privateKey: string): Record<string, unknown> {
  return {
    type: 'service_account', project_id: 'proj-1', private_key_id: 'key-1', private_key: privateKey,
    client_email: CLIENT_EMAIL, client_id: '1', token_uri: `${mock.url}/token`,
  };
}

t.test('Gemini on Vertex AI: a token from the service account (JWT grant), fetched once and reused; whole and streamed, uncharged', async (t) => {
  const user = 'cloud-vertex';
  const { key } = await fastUser(gateway, user, '1');
  const token = mintToken(user);
  const created = await addCredential(token, {
    provider: 'google', label: 'vertex', config_json: { service_account: serviceAccount(account.privateKey), region: 'us-central1', endpoint_url: mock.url },
  });
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.equal(created.body.config_json.service_account.private_key, '***');
  const issuedBefore = mock.cloud.tokensIssued;
  const before = await moneyView(gateway, user);
  const tokens = new Set<string>();
  for (const stream of [false, true]) {
    const response = await chat(key, 'google/gemini-2.5-flash', stream);
    t.equal(response.status, 200, `served (stream ${stream}): ${response.text.slice(0, 300)}`);
    const answer = answerOf(response, stream);
    t.ok(answer.content.length > 0, 'an answer');
    t.equal(answer.model, 'google/gemini-2.5-flash');
    t.ok(answer.usage.prompt_tokens > 0 && answer.usage.completion_tokens > 0, 'usage');
    const record = response.upstream.find((r) => r.path.startsWith('/v1/projects/'))!;
    t.equal(record.path, `/v1/projects/proj-1/locations/us-central1/publishers/google/models/gemini-2.5-flash:${stream ? 'streamGenerateContent' : 'generateContent'}`);
    t.match(record.authorization, /^Bearer ya29\.mock-/);
    tokens.add(record.authorization!);
  }
  // A change to the row drops the cached candidates; the token stays cached per service account.
  const renamed = await rawRequest(`${gateway.url}/api/v1/byok/${created.body.id}`, {
    method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ label: 'vertex renamed' }),
  });
  t.equal(renamed.status, 200);
  const third = await chat(key, 'google/gemini-2.5-flash', false);
  t.equal(third.status, 200);
  tokens.add(third.upstream[0]!.authorization!);
  t.equal(mock.cloud.tokensIssued - issuedBefore, 1, 'one token request for three calls');
  t.equal(tokens.size, 1, 'the same token each time');
  await servedFree(t, user, token, created.body.id, before);
});

t.test('a service account the token endpoint refuses: a failed attempt with last_error, then the platform', async (t) => {
  const user = 'cloud-vertex-refused';
  const { key } = await fastUser(gateway, user, '1');
  const token = mintToken(user);
  const created = await addCredential(token, {
    provider: 'google', label: 'stranger', config_json: { service_account: serviceAccount(stranger.privateKey), region: 'us-central1', endpoint_url: mock.url },
  });
  const response = await chat(key, 'google/gemini-2.5-flash', false);
  t.equal(response.status, 200, 'served by the platform');
  t.notOk(response.upstream.some((r) => r.path.startsWith('/v1/projects/')), 'Vertex never called without a token');
  t.ok(await eventually(async () => Boolean((await row(token, created.body.id)).last_error)));
  const lastError = (await row(token, created.body.id)).last_error;
  t.match(lastError, /^502 .*token endpoint refused the service account \(400: invalid_grant\)/, 'the status and the OAuth error code');
  t.notMatch(lastError, /Invalid JWT Signature/, 'never the token endpoint\'s own words');
});

/** Starts the gateway's peak resident memory (VmHWM) afresh from its present size (Linux's clear_refs). */
function resetPeakRss(): void {
  writeFileSync(`/proc/${gateway.process.pid}/clear_refs`, '5');
}

/** The gateway process's peak resident memory (VmHWM), bytes. */
function peakRss(): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${gateway.process.pid}/status`, 'utf8'))![1]) * 1024;
}

t.test('a token endpoint answering 500 with a 200 MiB body: its cap is read, the socket closed, the short refusal recorded at once; memory stays flat', async (t) => {
  const total = 200 * 1024 * 1024;
  const piece = Buffer.alloc(1024 * 1024, 'A');
  let sent = 0;
  const sockets: tls.TLSSocket[] = [];
  let closed = 0;
  const hostile = tls.createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    socket.on('close', () => { closed++; });
    eachRequest(socket, () => {
      // As fast as the gateway reads, never more: what it reads is what `sent` counts, give or take the kernel's buffers.
      socket.write(`HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: ${total}\r\n\r\n`);
      const more = (): void => {
        while (sent < total && !socket.destroyed) {
          sent += piece.length;
          if (!socket.write(piece)) return void socket.once('drain', more);
        }
      };
      more();
    });
  });
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    hostile.close();
  });
  const port = (hostile.address() as AddressInfo).port;

  const user = 'cloud-vertex-huge-refusal';
  const { key } = await fastUser(gateway, user, '1');
  const token = mintToken(user);
  const created = await addCredential(token, {
    provider: 'google', label: 'huge',
    config_json: { service_account: { ...serviceAccount(account.privateKey), token_uri: `https://127.0.0.1:${port}/token` }, region: 'us-central1', endpoint_url: mock.url },
  });
  t.equal(created.status, 201, JSON.stringify(created.body));
  resetPeakRss();
  const before = peakRss();
  const startedMs = Date.now();
  const response = await chat(key, 'google/gemini-2.5-flash', false);
  const elapsedMs = Date.now() - startedMs;
  t.equal(response.status, 200, 'served by the platform');
  t.notOk(response.upstream.some((r) => r.path.startsWith('/v1/projects/')), 'Vertex never called without a token');
  t.ok(elapsedMs < 5000, `answered at once (${elapsedMs} ms), not after reading 200 MiB`);
  t.equal(sockets.length, 1, 'one token request');
  t.ok(await eventually(() => closed === 1), 'the gateway closed the token connection');
  t.ok(sent < 16 * 1024 * 1024, `the gateway stopped reading: ${(sent / 1048576).toFixed(1)} of 200 MiB written`);
  t.ok(await eventually(async () => Boolean((await row(token, created.body.id)).last_error)), 'last_error recorded');
  const lastError = (await row(token, created.body.id)).last_error as string;
  t.match(lastError, /^502 .*token endpoint refused the service account \(500\)$/, 'the short, fixed refusal');
  t.ok(lastError.length < 300 && !lastError.includes('AAAA'), `nothing of the body (${lastError.length} characters)`);
  const grown = peakRss() - before;
  t.ok(grown < 64 * 1024 * 1024, `peak RSS grew by ${(grown / 1048576).toFixed(1)} MiB, far below the body`);
});

t.test('the forms are validated on create and update: 422 naming the missing or wrong field', async (t) => {
  const token = mintToken('cloud-validate');
  const cases: [string, Record<string, unknown>, string][] = [
    ['no credential at all', { provider: 'anthropic', label: 'l', config_json: { region: 'us-east-1', accessKeyId: 'A' } }, 'api_key'],
    ['Bedrock without its secret', { provider: 'anthropic', label: 'l', api_key: 'sk-ant-unused-000', config_json: { region: 'us-east-1', accessKeyId: 'A' } }, 'config_json.secretAccessKey'],
    ['Bedrock without a region', { provider: 'anthropic', label: 'l', config_json: { accessKeyId: 'A', secretAccessKey: 'S' } }, 'config_json.region'],
    ['Azure over http', { provider: 'openai', label: 'l', api_key: 'k-123456', config_json: { endpoint_url: 'http://x.openai.azure.com', deployment_id: 'd' } }, 'config_json.endpoint_url'],
    ['Azure without a deployment', { provider: 'openai', label: 'l', api_key: 'k-123456', config_json: { endpoint_url: 'https://x.openai.azure.com' } }, 'config_json.deployment_id'],
    ['Vertex without a region', { provider: 'google', label: 'l', config_json: { service_account: serviceAccount(account.privateKey) } }, 'config_json.region'],
    ['Vertex without client_email', { provider: 'google', label: 'l', config_json: { service_account: { ...serviceAccount(account.privateKey), client_email: undefined }, region: 'us-central1' } }, 'config_json.service_account.client_email'],
    ['a cloud form with base_url', { provider: 'anthropic', label: 'l', base_url: 'https://x.example', config_json: { region: 'us-east-1', accessKeyId: 'A', secretAccessKey: 'S' } }, 'base_url'],
  ];
  for (const [name, body, param] of cases) {
    const response = await addCredential(token, body);
    t.equal(response.status, 422, name);
    t.equal(response.body.error?.param, param, `${name}: names ${param}`);
  }
  const ok = await addCredential(token, { provider: 'anthropic', label: 'ok', config_json: { region: 'eu-west-1', accessKeyId: 'A', secretAccessKey: 'S' } });
  t.equal(ok.status, 201);
  const broken = await rawRequest(`${gateway.url}/api/v1/byok/${ok.body.id}`, {
    method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ config_json: { region: 'eu-west-1', accessKeyId: 'A', secretAccessKey: 'S', model_map: { 'claude-sonnet-4-5': '' } } }),
  });
  t.equal(broken.status, 422, 'update validated too');
  t.equal((broken.body as any).error?.param, 'config_json.model_map.claude-sonnet-4-5');
});
