// A production gateway never answers with the mock vendor (at real prices) unless MOCK_VENDOR=on: a
// vendor with no key is not configured, its models are listed inactive with the reason, calls to them
// get 404, and start-up logs which vendors are configured. Real gateway processes, over HTTP.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { startGateway, postJson, freePort, type Gateway } from './helpers/harness.js';
import { assertEnvelope } from './helpers/http-tools.js';
import { VENDOR_NOT_CONFIGURED_TAG } from '../src/catalog/seed/index.js';

const secret = () => randomBytes(48).toString('base64');
const CHAT = { messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 };
const OPENAI_MODEL = 'openai/gpt-4o-mini';
const ANTHROPIC_MODEL = 'anthropic/claude-haiku-4-5';
const BFL_MODEL = 'black-forest-labs/flux-2-pro';

/** A production gateway whose only vendor with a key (and the test mock's URL) is OpenAI. */
async function productionGateway(env: Record<string, string> = {}): Promise<{ gateway: Gateway; mockPort: number }> {
  const mockPort = await freePort();
  const gateway = await startGateway({
    vendors: ['openai'],
    env: {
      NODE_ENV: 'production', JWT_SECRET: secret(), KEY_SECRET: secret(), METRICS_TOKEN: secret(),
      MOCK_VENDOR_PORT: String(mockPort), LOG_LEVEL: 'info', MEDIA_URL: 'http://127.0.0.1:1/media', ...env,
    },
  });
  return { gateway, mockPort };
}

/** Whether anything accepts connections on 127.0.0.1:port. */
const listening = (port: number) => new Promise<boolean>((resolve) => {
  const socket = connect(port, '127.0.0.1');
  socket.once('connect', () => { socket.destroy(); resolve(true); });
  socket.once('error', () => resolve(false));
});

/** The JSON log line with message `msg`. */
function logLine(output: string, msg: string): Record<string, unknown> | undefined {
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as Record<string, unknown>;
    if (entry.msg === msg) return entry;
  }
  return undefined;
}

async function model(gateway: Gateway, token: string, id: string): Promise<{ is_active: boolean; tags: string[] }> {
  const response = await fetch(`${gateway.url}/api/v1/models/${id}`, { headers: { authorization: `Bearer ${token}` } });
  return (await response.json()) as { is_active: boolean; tags: string[] };
}

t.test('MOCK_VENDOR=auto in production: no mock, unconfigured vendors\' models inactive and 404, configured ones served', async (t) => {
  const { gateway, mockPort } = await productionGateway({ MOCK_VENDOR: 'auto' }); // the default (the harness sets off)
  t.teardown(() => gateway.close());
  const { token, key } = await gateway.user('prod-auto', '5');

  t.notOk(await listening(mockPort), `nothing listens on MOCK_VENDOR_PORT ${mockPort}`);
  t.notMatch(gateway.output, /mock vendor started/, 'no mock was started');
  const vendors = logLine(gateway.output, 'vendors');
  t.ok(vendors, 'start-up logs the vendors');
  t.same(vendors?.configured, ['openai'], 'configured: the one with a key');
  t.same(vendors?.mocked, [], 'mocked: none');
  t.ok((vendors?.not_configured as string[]).includes('anthropic') && (vendors?.not_configured as string[]).includes('bfl'), 'not configured: the keyless ones');

  for (const id of [ANTHROPIC_MODEL, BFL_MODEL]) {
    const record = await model(gateway, token, id);
    t.equal(record.is_active, false, `${id} is listed inactive`);
    t.ok(record.tags.includes(VENDOR_NOT_CONFIGURED_TAG), `${id} says why (${VENDOR_NOT_CONFIGURED_TAG})`);
  }
  const openai = await model(gateway, token, OPENAI_MODEL);
  t.ok(openai.is_active && !openai.tags.includes(VENDOR_NOT_CONFIGURED_TAG), 'a configured vendor\'s model is active');
  const listed = (await (await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: { id: string }[] };
  t.notOk(listed.data.some((entry) => entry.id === ANTHROPIC_MODEL), '/v1/models leaves it out');
  t.ok(listed.data.some((entry) => entry.id === OPENAI_MODEL));

  assertEnvelope(t, await postJson(`${gateway.v1}/chat/completions`, key, { model: ANTHROPIC_MODEL, ...CHAT }), 404, 'model_not_found', 'chat through an unconfigured vendor');
  assertEnvelope(t, await postJson(`${gateway.v1}/images/generations`, key, { model: BFL_MODEL, prompt: 'a red square' }), 404, 'model_not_found', 'an image through an unconfigured vendor');
  const served = await postJson(`${gateway.v1}/chat/completions`, key, { model: OPENAI_MODEL, ...CHAT });
  t.equal(served.status, 200, 'the configured vendor answers');
  t.equal(gateway.mock.requests().filter((request) => request.path.startsWith('/anthropic/')).length, 0, 'nothing reached any mock as Anthropic');
});

t.test('MOCK_VENDOR=on in production: the mock plays the keyless vendors, with a warning', async (t) => {
  const { gateway, mockPort } = await productionGateway({ MOCK_VENDOR: 'on' });
  t.teardown(() => gateway.close());
  const { token, key } = await gateway.user('prod-on', '5');
  t.ok(await listening(mockPort), 'the built-in mock listens');
  t.match(gateway.output, /MOCK_VENDOR=on in production/, 'a warning says so');
  t.same(logLine(gateway.output, 'vendors')?.not_configured, [], 'every vendor is served');
  t.equal((await model(gateway, token, ANTHROPIC_MODEL)).is_active, true, 'Anthropic\'s models are active');
  t.equal((await postJson(`${gateway.v1}/chat/completions`, key, { model: ANTHROPIC_MODEL, ...CHAT })).status, 200, 'and answered by the mock');
});
