import t from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Breakers, breakerMemory } from '../src/routing/breakers.js';
import { dueSoonest, nextTarget } from '../src/routing/choice.js';
import { parseRoutingFile, RoutingFileError } from '../src/routing/file.js';
import { retryableAnswer, retryAfterMs } from '../src/routing/retryable.js';
import { Routing, exhausted } from '../src/routing/routing.js';
import type { RouteTarget } from '../src/routing/targets.js';
import { ApiError } from '../src/http/errors.js';
import { ConfigError, loadConfig } from '../src/config.js';

const target = (name: string, priority: number, weight = 1, slot = 0): RouteTarget => ({ name, vendor: 'openai', baseUrl: 'http://x', apiKey: 'k', priority, weight, slot });
const always = () => true;
const thrown = (run: () => unknown): Error | undefined => {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  return undefined;
};

t.test('the highest priority is tried first, then the next priority', async (t) => {
  const targets = [target('a', 5), target('b', 1), target('c', 0)];
  t.equal(nextTarget(targets, 0, always, () => 0.99), 0);
  t.equal(nextTarget(targets, 0b001, always, () => 0.99), 1);
  t.equal(nextTarget(targets, 0b011, always, () => 0), 2);
  t.equal(nextTarget(targets, 0b111, always, () => 0), -1, 'none left');
  t.equal(nextTarget(targets, 0, (x) => x.name !== 'a', () => 0), 1, 'an unavailable target is skipped');
});

t.test('within a priority, calls are spread by weight', async (t) => {
  const targets = [target('a', 0, 3), target('b', 0, 1), target('c', -1, 100)];
  const counts = [0, 0, 0];
  for (let i = 0; i < 400; i++) counts[nextTarget(targets, 0, always, () => i / 400)]!++;
  t.same(counts, [300, 100, 0], 'weights 3:1, the lower priority never first');
  t.equal(nextTarget(targets, 0b01, always, () => 0.1), 1, 'the other of the priority once one is tried');
});

t.test('the target due soonest when every one is cooled down', async (t) => {
  const targets = [target('a', 0, 1, 0), target('b', 0, 1, 1), target('c', 0, 1, 2)];
  const due = [300, 100, 200];
  t.equal(dueSoonest(targets, 0, (x) => due[x.slot]!), 1);
  t.equal(dueSoonest(targets, 0b010, (x) => due[x.slot]!), 2);
});

t.test('breaker: opens after consecutive failures, half-open after the cooldown, one probe, closes on success', async (t) => {
  let now = 1_000_000;
  const changes: string[] = [];
  const breakers = new Breakers(breakerMemory(2), 2, { failures: 3, cooldownMs: 10_000, probeMs: 5_000 }, () => now, (slot, to) => changes.push(`${slot}:${to}`));
  breakers.failed(0);
  breakers.failed(0);
  t.equal(breakers.state(0), 'closed', 'two failures: still closed');
  breakers.succeeded(0);
  breakers.failed(0);
  breakers.failed(0);
  t.equal(breakers.state(0), 'closed', 'a success resets the count');
  breakers.failed(0);
  t.equal(breakers.state(0), 'open');
  breakers.succeeded(0);
  t.equal(breakers.state(0), 'open', 'an answer to an attempt sent before it opened does not close it');
  t.notOk(breakers.available(0));
  t.notOk(breakers.claim(0));
  t.equal(breakers.state(1), 'closed', 'slots are independent');
  now += 10_000;
  t.equal(breakers.state(0), 'half_open');
  t.ok(breakers.available(0));
  t.ok(breakers.claim(0), 'the first caller gets the probe');
  t.notOk(breakers.available(0), 'no second probe while one is under way');
  t.notOk(breakers.claim(0));
  breakers.failed(0);
  t.equal(breakers.state(0), 'open', 'a failed probe cools it down again');
  t.equal(breakers.dueAt(0), now + 10_000);
  now += 10_000;
  t.ok(breakers.claim(0));
  breakers.succeeded(0);
  t.equal(breakers.state(0), 'closed', 'a successful probe closes it');
  t.same(changes, ['0:open', '0:half_open', '0:open', '0:half_open', '0:closed']);
});

t.test('breaker: a 429 with Retry-After cools the target down until then, at once', async (t) => {
  let now = 5_000;
  const breakers = new Breakers(breakerMemory(1), 1, { failures: 5, cooldownMs: 30_000, probeMs: 1_000 }, () => now);
  breakers.failed(0, 2_000);
  t.equal(breakers.state(0), 'open');
  t.equal(breakers.dueAt(0), 7_000);
  now = 7_000;
  t.ok(breakers.claim(0));
  now = 8_001;
  t.ok(breakers.available(0), 'a probe that never reported frees the target after probeMs');
  t.ok(breakers.claim(0, true), 'a call with nowhere else to go takes an open target');
});

t.test('breaker memory is shared: another view of the same buffer sees the state', async (t) => {
  const memory = breakerMemory(3);
  const policy = { failures: 1, cooldownMs: 1_000, probeMs: 1_000 };
  const a = new Breakers(memory, 3, policy, () => 0);
  const b = new Breakers(memory, 3, policy, () => 0);
  a.failed(2);
  t.equal(b.state(2), 'open');
  t.equal(b.state(1), 'closed');
});

t.test('retryable answers and the error when every attempt failed', async (t) => {
  const error = (status: number, message = 'x') => new ApiError(status === 429 ? 429 : 502, 'upstream_error', message);
  for (const status of [429, 500, 502, 503, 504, 529]) t.ok(retryableAnswer(status, error(status)), String(status));
  for (const status of [400, 401, 403, 404, 422]) t.notOk(retryableAnswer(status, error(status, 'overloaded')), String(status));
  t.ok(retryableAnswer(520, error(520, 'The server is Overloaded')), 'the vendor says overloaded');
  t.notOk(retryableAnswer(501, error(501)));
  t.equal(retryAfterMs(new ApiError(429, 'x', 'x', null, { 'retry-after': '3' }), 0), 3000);
  t.equal(retryAfterMs(new ApiError(429, 'x', 'x', null, { 'retry-after': 'Thu, 01 Jan 1970 00:00:10 GMT' }), 4000), 6000);
  const last = new ApiError(502, 'upstream_error', 'The upstream vendor openai failed with status 503: busy');
  const all = exhausted(last, 3, true);
  t.equal(all.status, 503);
  t.equal(all.code, 'upstream_unavailable');
  t.match(all.message, /after 3 attempts.*failed with status 503: busy/);
  t.equal(exhausted(last, 1, false), last, 'one target: its error as it is');
  const limited = new ApiError(429, 'upstream_rate_limited', 'slow down', null, { 'retry-after': '7' });
  t.equal(exhausted(limited, 2, true), limited, 'the last 429 with its Retry-After');
});

const VENDORS = { openai: { baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-env' }, anthropic: { baseUrl: 'https://api.anthropic.com/v1', apiKey: 'sk-ant' } };

t.test('routing file: key pools and model routes, secrets from the environment', async (t) => {
  const table = parseRoutingFile(`
vendors:
  openai:
    targets:
      - name: org-a
        api_key_env: KEY_A
        weight: 3
      - name: org-b
        api_key: sk-inline
        base_url: https://proxy.example/v1/
        priority: 10
        head_timeout_ms: 2500
models:
  anthropic/claude-sonnet-4.5:
    targets:
      - name: claude-direct
        vendor: anthropic
      - name: claude-bedrock
        vendor: anthropic
        model: us.anthropic.claude-sonnet-4-5-v1:0
        priority: -1
        cloud: { kind: bedrock, region: us-east-1, access_key_id_env: AK, secret_access_key_env: SK }
`, 'routing.yaml', VENDORS, { KEY_A: 'sk-from-env', AK: 'AKIA', SK: 'secret' });
  t.same(table.vendors.openai!.map((x) => [x.name, x.apiKey, x.baseUrl, x.priority, x.weight]), [
    ['org-b', 'sk-inline', 'https://proxy.example/v1', 10, 1],
    ['org-a', 'sk-from-env', 'https://api.openai.com/v1', 0, 3],
  ], 'sorted by priority; defaults from the vendor');
  t.equal(table.vendors.openai![0]!.headTimeoutMs, 2500);
  t.equal(table.vendors.openai![1]!.headTimeoutMs, undefined);
  const [direct, bedrock] = table.models['anthropic/claude-sonnet-4.5']!;
  t.equal(direct!.apiKey, 'sk-ant');
  t.equal(bedrock!.baseUrl, 'https://bedrock-runtime.us-east-1.amazonaws.com');
  t.same(bedrock!.cloud, { kind: 'bedrock', region: 'us-east-1', accessKeyId: 'AKIA', secretAccessKey: 'secret', modelMap: { 'anthropic/claude-sonnet-4.5': 'us.anthropic.claude-sonnet-4-5-v1:0' } });
  t.equal(table.slots, 4);
  t.same(new Set([...table.vendors.openai!, ...table.models['anthropic/claude-sonnet-4.5']!].map((x) => x.slot)), new Set([0, 1, 2, 3]), 'one breaker slot each');
  const json = parseRoutingFile(JSON.stringify({ vendors: { openai: { targets: [{ name: 'one' }] } } }), 'routing.json', VENDORS, {});
  t.equal(json.vendors.openai![0]!.apiKey, 'sk-env', 'JSON works too');
});

t.test('routing file errors name the line', async (t) => {
  const cases: [string, RegExp][] = [
    ['vendors:\n  openai:\n    targets:\n      - name: a\n        wieght: 2\n', /^f:5: .*wieght/],
    ['vendors:\n  openai:\n    targets:\n      - name: a\n        weight: 0\n', /^f:5: vendors\.openai\.targets\.0\.weight must be at least 1/],
    ['vendors:\n  nosuch:\n    targets:\n      - name: a\n', /^f:2: .*must be one of openai, anthropic/],
    ['vendors:\n  openai:\n    targets:\n      - name: a\n        api_key_env: MISSING\n', /^f:5: api_key_env names MISSING, which is not set/],
    ['vendors:\n  openai:\n    targets:\n      - name: a\n  anthropic:\n    targets:\n      - name: a\n', /^f:7: target name 'a' is used twice/],
    ['models:\n  m:\n    targets:\n      - name: a\n', /^f:4: models\.m\.targets\.0\.vendor/],
    ['models:\n  m:\n    targets:\n      - name: a\n        vendor: openai\n        cloud: { kind: azure, deployment: d, api_version: v }\n', /^f:4: .*needs base_url/],
    ['vendors: [\n', /^f:\d+: /],
    ['vendors:\n  openai:\n    targets: []\n', /^f:3: .*at least one target/],
    ['vendors:\n  openai:\n    targets:\n      - name: a\n        api_key: x\n        api_key_env: KEY_A\n', /^f:5: give api_key or api_key_env, not both/],
  ];
  for (const [text, message] of cases) {
    const error = thrown(() => parseRoutingFile(text, 'f', VENDORS, { KEY_A: 'x' }));
    t.ok(error instanceof RoutingFileError, text);
    t.match(error?.message, message, text);
  }
});

t.test('ROUTING_FILE in the configuration', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'routing-'));
  const file = join(dir, 'routing.yaml');
  writeFileSync(file, 'vendors:\n  openai:\n    targets:\n      - name: a\n        api_key_env: POOL_KEY\n');
  const config = loadConfig({ ROUTING_FILE: file, POOL_KEY: 'sk-pool' });
  t.equal(config.routing.table!.vendors.openai![0]!.apiKey, 'sk-pool');
  t.equal(config.routing.maxAttempts, 3);
  t.equal(config.routing.deadlineMs, 30_000);
  t.equal(loadConfig({}).routing.table, undefined, 'no file: each vendor is its one target');
  const error = thrown(() => loadConfig({ ROUTING_FILE: file }));
  t.ok(error instanceof ConfigError);
  t.match(error?.message, /^invalid ROUTING_FILE: .*routing\.yaml:5: .*POOL_KEY/);
  t.throws(() => loadConfig({ ROUTING_FILE: join(dir, 'missing.yaml') }), /invalid ROUTING_FILE: .*cannot be read \(ENOENT\)/);
});

t.test('deploy/routing.example.yaml is a valid routing file', async (t) => {
  const text = readFileSync(new URL('../../deploy/routing.example.yaml', import.meta.url), 'utf8');
  // The Vertex AI targets' variable holds a service account key file.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  const keyFile = JSON.stringify({ type: 'service_account', project_id: 'p', private_key: privateKey, client_email: 'gw@p.iam.gserviceaccount.com', token_uri: 'https://oauth2.googleapis.com/token' });
  const env = new Proxy({}, { get: (_, name) => (name === 'VERTEX_SERVICE_ACCOUNT_JSON' ? keyFile : `value-of-${String(name)}`) }) as Record<string, string>;
  const table = parseRoutingFile(text, 'routing.example.yaml', { ...VENDORS, gemini: { baseUrl: 'https://generativelanguage.googleapis.com/v1beta', apiKey: '' }, deepseek: { baseUrl: 'https://api.deepseek.com/v1', apiKey: '' } }, env);
  t.same(table.vendors.openai!.map((x) => x.name), ['openai-org-a', 'openai-org-b']);
  t.equal(table.models['openai/gpt-4o-mini']![1]!.cloud?.kind, 'azure');
  t.equal(table.models['anthropic/claude-sonnet-4-5']![1]!.baseUrl, 'https://bedrock-runtime.us-east-1.amazonaws.com');
  t.same(table.models['anthropic/claude-haiku-4-5']![1]!.cloud, { kind: 'vertex', projectId: 'my-project', region: 'us-east5' });
  t.equal(table.models['google/gemini-2.5-flash']![0]!.baseUrl, 'https://aiplatform.googleapis.com');
});

t.test('Routing: the first target is chosen without taking it; a half-open probe goes to one call only', async (t) => {
  let now = 0;
  const table = parseRoutingFile('vendors:\n  openai:\n    targets:\n      - { name: a, priority: 1 }\n      - { name: b }\n', 'f', VENDORS, {});
  const config = { table, maxAttempts: 3, deadlineMs: 1000, breakerFailures: 1, breakerCooldownMs: 100 };
  const events: string[] = [];
  const routing = new Routing(config, VENDORS, breakerMemory(table.slots), {
    attempt: () => {}, retry: () => {}, fallback: () => {}, breaker: (target, to) => events.push(`${target}:${to}`),
  }, () => now, () => 0);
  const targets = routing.targetsOf({ id: 'openai/gpt-4o-mini', upstreamVendor: 'openai' })!;
  t.same(targets.map((x) => x.name), ['a', 'b']);
  t.equal(routing.targetsOf({ id: 'anthropic/claude-haiku-4-5', upstreamVendor: 'anthropic' })![0]!.apiKey, 'sk-ant', 'a vendor without a pool: its one target');
  t.equal(routing.first(targets), 0, 'the higher priority');
  routing.failed(targets[0]!, 'm', 1, new ApiError(502, 'upstream_error', 'down'));
  t.equal(routing.first(targets), 1, 'a cooled-down target is skipped');
  now = 100;
  t.equal(routing.first(targets), 0, 'due again: half-open');
  t.equal(routing.first(targets), 0, 'choosing does not take the probe (a call refused at admission holds nothing)');
  t.equal(routing.take(targets, 0), 0, 'the first call to send takes the probe');
  t.equal(routing.take(targets, 0), 1, 'another call goes to the other target meanwhile');
  routing.failed(targets[1]!, 'm', 1, new ApiError(502, 'upstream_error', 'down'));
  t.equal(routing.first(targets), 0, 'neither may take a call (a\'s probe is out, b cooled down): the one due soonest');
  routing.answered(targets[0]!);
  t.equal(routing.first(targets), 0, 'the probe succeeded: closed again');
  t.same(events, ['a:open', 'a:half_open', 'b:open', 'a:closed']);
});
