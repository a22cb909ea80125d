// Claude Code through the gateway, without Claude Code: the request sequence it sends for one
// prompt (test/fixtures/claude-code/session.json, sources in SOURCES.md beside it) replayed with the
// official Anthropic SDK against `POST /v1/messages` and `/v1/messages/count_tokens`, once per way
// Claude Code authenticates (ANTHROPIC_AUTH_TOKEN as Authorization: Bearer, ANTHROPIC_API_KEY as
// x-api-key). The SDK's own parser and stream accumulator read every answer; a header tap between
// the gateway and the mock vendor shows what went upstream; the ledger shows what was charged.
import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import type { BetaMessage, BetaRawMessageStreamEvent } from '@anthropic-ai/sdk/resources/beta/messages';
import { startGateway, type Gateway } from './helpers/harness.js';
import { startHeaderTap, type HeaderTap, type TappedRequest } from './helpers/header-tap.js';
import { claudeCodeClient, kindOf, loadSession, replaySession, type Credential, type StepResult } from './helpers/claude-code-session.js';
import { moneyView } from './helpers/billing-checks.js';
import { startMockVendor, type MockRequestRecord, type MockVendor } from '../src/mock-vendor/server.js';

const session = loadSession();
const INITIAL_NANO = 5_000_000_000n;
const PLATFORM_KEY = 'test-anthropic-key';
// Nano-USD per token (USD per 1M tokens x 1000), from src/catalog/seed/chat.ts.
const PRICES: Readonly<Record<string, { input: bigint; cacheRead: bigint; cacheWrite: bigint; output: bigint }>> = {
  'claude-haiku-4-5-20251001': { input: 1000n, cacheRead: 100n, cacheWrite: 1250n, output: 5000n },
  'claude-sonnet-4-5-20250929': { input: 3000n, cacheRead: 300n, cacheWrite: 3750n, output: 15000n },
  'openai/gpt-6-luna': { input: 100n, cacheRead: 10n, cacheWrite: 125n, output: 500n },
};
/** A model of another family, as ANTHROPIC_MODEL and ANTHROPIC_DEFAULT_HAIKU_MODEL would name it: a reasoning model that takes tools. */
const OTHER_FAMILY_MODEL = 'openai/gpt-6-luna';
// What the gateway's catalog sends upstream for the dated ids Claude Code uses.
const UPSTREAM_MODEL: Readonly<Record<string, string>> = {
  'claude-haiku-4-5-20251001': 'claude-haiku-4-5',
  'claude-sonnet-4-5-20250929': 'claude-sonnet-4-5',
};

let mock: MockVendor;
let tap: HeaderTap;
let gateway: Gateway;
t.before(async () => {
  mock = await startMockVendor({ port: 0 });
  tap = await startHeaderTap(mock.url);
  gateway = await startGateway({ mock, env: { ANTHROPIC_BASE_URL: `${tap.url}/anthropic/v1` } });
});
t.teardown(async () => {
  if (process.env.GW_DEBUG) console.error(gateway.output);
  await gateway.close();
  await tap.close();
  await mock.close();
});

const stepNamed = (results: readonly StepResult[], name: string): StepResult => {
  const found = results.find((result) => result.step.name === name);
  if (!found) throw new Error(`no step ${name} in the replay`);
  return found;
};
const message = (results: readonly StepResult[], name: string): BetaMessage => stepNamed(results, name).message!;
const eventTypes = (events: readonly BetaRawMessageStreamEvent[] | undefined) => (events ?? []).map((event) => event.type);
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

/** The answers' shapes, whoever served them: the gateway, or the mock vendor directly. */
function checkAnswers(t: Test, results: readonly StepResult[]): void {
  const quota = message(results, 'quota');
  t.equal(quota.type, 'message');
  t.equal(quota.role, 'assistant');
  t.match(quota.model, /claude-haiku-4-5/);
  t.equal(quota.stop_reason, 'max_tokens', 'quota: one token asked, one token given');
  t.equal(quota.usage.output_tokens, 1);
  t.ok(quota.usage.input_tokens > 0, 'quota: usage.input_tokens');

  const topic = stepNamed(results, 'topic');
  t.equal(topic.message!.stop_reason, 'end_turn');
  t.equal(topic.message!.content[0]?.type, 'text', 'topic: a text answer');
  t.equal(eventTypes(topic.events)[0], 'message_start');
  t.equal(eventTypes(topic.events).at(-1), 'message_stop', 'topic: the stream ends with message_stop');

  const counted = results.find((result) => result.kind === 'count');
  if (counted) {
    t.ok(Number.isInteger(counted.count!.input_tokens), 'count_tokens: an integer input_tokens');
    t.ok(counted.count!.input_tokens >= 1024, `count_tokens counts the tools and system prompt too (${counted.count!.input_tokens})`);
  }

  const main = stepNamed(results, 'main');
  const mainAnswer = main.message!;
  t.equal(mainAnswer.stop_reason, 'tool_use', 'main: the model calls a tool');
  t.same(mainAnswer.content.map((block) => block.type), ['thinking', 'text', 'tool_use'], 'main: thinking first, then text, then the call');
  const thinking = mainAnswer.content[0];
  t.ok(thinking?.type === 'thinking' && thinking.thinking.length > 0 && thinking.signature.length > 0, 'main: the thinking block carries its signature');
  t.ok(main.events!.some((event) => event.type === 'content_block_delta' && event.delta.type === 'signature_delta'), 'main: the signature arrived as a signature_delta');
  const call = mainAnswer.content[2];
  t.ok(call?.type === 'tool_use' && /^toolu_/.test(call.id) && call.name === 'Read', 'main: a Read tool_use with a toolu_ id');
  t.same(call?.type === 'tool_use' ? call.input : undefined, { city: 'Paris' }, 'main: the streamed input_json_delta pieces parse to the input');
  t.ok((mainAnswer.usage.cache_creation_input_tokens ?? 0) > 0, 'main: the system prompt breakpoints are written to the cache');

  const next = stepNamed(results, 'tool_result');
  const sentAssistant = (next.sent.messages as { role: string; content: unknown }[])[1]!;
  t.same(sentAssistant.content, asJson(mainAnswer.content), 'tool_result: the previous answer, signature and tool_use id included, went back');
  const answer = next.message!;
  t.equal(answer.stop_reason, 'end_turn');
  t.same(answer.content.map((block) => block.type), ['thinking', 'text']);
  t.ok((answer.usage.cache_read_input_tokens ?? 0) > 0, 'tool_result: the turn reads the prefix the main turn cached');
  for (const result of results) {
    if (!result.message) continue;
    const usage = result.message.usage;
    t.ok(usage.input_tokens >= 0 && usage.output_tokens > 0 && usage.cache_read_input_tokens != null && usage.cache_creation_input_tokens != null, `${result.step.name}: usage fields present`);
  }
}

/**
 * What reached the vendor for each replayed step: the path, the betas and version as Claude Code
 * sent them, the platform credential (never the caller's), and the body's tool definitions,
 * thinking, cache breakpoints and turns as sent, the model being `modelOf` the id sent.
 */
function checkUpstream(t: Test, results: readonly StepResult[], tappedSince: readonly TappedRequest[], recordsSince: readonly MockRequestRecord[], expect: { modelOf: (id: string) => string | undefined; gatewayKey?: string }): void {
  const tapped = tappedSince.filter((request) => request.url.startsWith('/anthropic/'));
  const records = recordsSince.filter((record) => record.path.startsWith('/anthropic/'));
  t.equal(tapped.length, results.length, 'one upstream request per step');
  t.equal(records.length, results.length, 'the mock vendor saw every step');
  results.forEach(({ step, kind, sent: replayed }, i) => {
    const upstream = tapped[i];
    if (!upstream) return;
    t.match(upstream.url, kind === 'count' ? /^\/anthropic\/v1\/messages\/count_tokens(\?|$)/ : /^\/anthropic\/v1\/messages(\?|$)/, `${step.name}: upstream path`);
    t.equal(upstream.headers['anthropic-beta'], step.headers['anthropic-beta'], `${step.name}: anthropic-beta passed through`);
    t.equal(upstream.headers['anthropic-version'], step.headers['anthropic-version'], `${step.name}: anthropic-version passed through`);
    t.equal(upstream.headers['x-api-key'], PLATFORM_KEY, `${step.name}: the platform credential upstream`);
    if (expect.gatewayKey) t.notOk(JSON.stringify(upstream.headers).includes(expect.gatewayKey), `${step.name}: the gateway key never goes upstream`);

    const sent = records[i]?.body as Record<string, any> | undefined;
    if (!sent) return t.fail(`${step.name}: no upstream body`);
    t.equal(sent.model, expect.modelOf(step.body.model as string), `${step.name}: the model upstream`);
    t.same(sent.messages, replayed.messages, `${step.name}: messages as sent, cache_control and all`);
    for (const field of ['tools', 'thinking', 'max_tokens', 'stream'] as const) t.same(sent[field], replayed[field], `${step.name}: ${field} as sent`);
    if (Array.isArray(replayed.system)) {
      const system = sent.system as unknown[];
      t.same(system.slice(-replayed.system.length), replayed.system, `${step.name}: the system blocks, cache_control included, end the upstream system prompt`);
    }
    if (kind !== 'count') t.type(sent.metadata?.user_id, 'string', `${step.name}: metadata.user_id upstream`);
  });
  const mainAt = results.findIndex((result) => result.step.name === 'main');
  const main = results[mainAt]!.message!;
  const next = records[results.findIndex((result) => result.step.name === 'tool_result')]?.body as Record<string, any> | undefined;
  t.same(next?.messages?.[1]?.content, asJson(main.content), 'the thinking signature and the tool_use went back upstream unchanged');
  t.equal(next?.messages?.[2]?.content?.[0]?.tool_use_id, main.content.find((block) => block.type === 'tool_use')?.id, 'the tool_result names the tool_use id upstream');
}

function costOf(model: string, usage: BetaMessage['usage']): bigint {
  const price = PRICES[model]!;
  return BigInt(usage.input_tokens) * price.input + BigInt(usage.cache_read_input_tokens ?? 0) * price.cacheRead
    + BigInt(usage.cache_creation_input_tokens ?? 0) * price.cacheWrite + BigInt(usage.output_tokens) * price.output;
}

t.test('the fixture replays against the mock vendor directly, every answer parsed by the SDK', async (t) => {
  const client = claudeCodeClient(`${tap.url}/anthropic`, { apiKey: PLATFORM_KEY });
  const probe = await fetch(`${mock.url}/anthropic/v1/messages/count_tokens`, {
    method: 'POST', headers: { 'x-api-key': PLATFORM_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await probe.arrayBuffer();
  const mockCounts = probe.status === 200;
  if (!mockCounts) t.todo('the mock vendor serves no /v1/messages/count_tokens yet: that step is replayed through the gateway only', async () => {});
  const steps = session.steps.filter((step) => mockCounts || kindOf(step) !== 'count');
  const tappedBefore = tap.requests().length;
  const recordsBefore = mock.requests().length;
  const results = await replaySession(client, steps);
  checkAnswers(t, results);
  checkUpstream(t, results, tap.requests().slice(tappedBefore), mock.requests().slice(recordsBefore), { modelOf: (id) => id });
});

for (const form of ['authToken', 'apiKey'] as const) {
  t.test(`Claude Code's sequence through the gateway with ${form === 'authToken' ? 'ANTHROPIC_AUTH_TOKEN (Authorization: Bearer)' : 'ANTHROPIC_API_KEY (x-api-key)'}`, async (t) => {
    const user = `claude-code-${form}`;
    const { key } = await gateway.user(user, '5');
    const credential: Credential = form === 'authToken' ? { authToken: key } : { apiKey: key };
    const tappedBefore = tap.requests().length;
    const recordsBefore = mock.requests().length;

    const results = await replaySession(claudeCodeClient(gateway.url, credential), session.steps);
    t.equal(results.length, session.steps.length, 'every step answered');
    checkAnswers(t, results);
    checkUpstream(t, results, tap.requests().slice(tappedBefore), mock.requests().slice(recordsBefore), { modelOf: (id) => UPSTREAM_MODEL[id], gatewayKey: key });

    // Charged exactly as chat completions are: each answer at its usage; count_tokens is free.
    await gateway.ledgerSettled(user);
    const rows = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from transactions where user_id = ${user} and payment_method = 'usage' order by created_at`;
    const charges = rows.map((row) => -row.credits_nano);
    const answered = results.filter((result) => result.message);
    t.same(charges, answered.map((result) => costOf(result.step.body.model as string, result.message!.usage)), 'one charge per answered message, at its usage and the model\'s prices; none for count_tokens');
    const money = await moneyView(gateway, user);
    t.equal(money.credits, INITIAL_NANO - charges.reduce((sum, charge) => sum + charge, 0n), 'the balance moved by exactly the charges');
    t.equal(money.ledgerSum, money.credits, 'the Postgres ledger agrees');
    t.equal(money.held, 0n, 'nothing left held');
  });
}

t.test('a key the gateway does not know gets Anthropic\'s 401 envelope, which the SDK reads', async (t) => {
  for (const credential of [{ authToken: 'sk-not-a-gateway-key' }, { apiKey: 'sk-not-a-gateway-key' }] satisfies Credential[]) {
    const failed = await replaySession(claudeCodeClient(gateway.url, credential), session.steps.slice(0, 1)).catch((error: unknown) => error);
    t.ok(failed instanceof Anthropic.AuthenticationError, `${Object.keys(credential)[0]}: an AuthenticationError`);
    const body = (failed as InstanceType<typeof Anthropic.APIError>).error as { type?: string; error?: { type?: string; message?: string } };
    t.equal(body?.type, 'error');
    t.equal(body?.error?.type, 'authentication_error');
    t.type(body?.error?.message, 'string');
  }
});

t.test('with a model of another family for every call, the same sequence is translated both ways', async (t) => {
  const user = 'claude-code-translated';
  const { key } = await gateway.user(user, '5');
  const steps = session.steps.map((step) => ({ ...step, body: { ...step.body, model: OTHER_FAMILY_MODEL } }));
  const recordsBefore = mock.requests().length;
  const results = await replaySession(claudeCodeClient(gateway.url, { authToken: key }), steps);
  t.equal(results.length, steps.length, 'every step answered, every answer parsed by the SDK');

  const main = stepNamed(results, 'main').message!;
  t.equal(main.stop_reason, 'tool_use');
  const call = main.content.find((block) => block.type === 'tool_use');
  t.ok(call?.type === 'tool_use' && call.name === 'Read' && call.id.length > 0, 'main: a Read tool_use with an id');
  const thinking = main.content.filter((block) => block.type === 'thinking');
  for (const block of thinking) t.ok(block.type === 'thinking' && block.signature.length > 0, 'a thinking block carries a gateway-made signature');
  t.equal(stepNamed(results, 'tool_result').message!.stop_reason, 'end_turn', 'the turn after the tool result ends');
  const counted = results.find((result) => result.kind === 'count')!.count!;
  t.ok(counted.input_tokens >= 1024, `count_tokens estimates the tools and system prompt too (${counted.input_tokens})`);

  // Upstream: chat completions with the tools as functions; the tool result under the call's id; no thinking sent back.
  const records = mock.requests().slice(recordsBefore).filter((record) => record.path.startsWith('/openai/') || record.path.startsWith('/anthropic/'));
  t.same(records.map((record) => record.path), steps.filter((step) => kindOf(step) !== 'count').map(() => '/openai/v1/chat/completions'), 'one chat completion per message step; count_tokens asks no vendor');
  const at = (name: string) => records[steps.filter((step) => kindOf(step) !== 'count').findIndex((step) => step.name === name)]?.body as Record<string, any> | undefined;
  const fixtureTools = (session.steps.find((step) => step.name === 'main')!.body.tools as { name: string }[]).map((tool) => tool.name);
  t.same(at('main')?.tools?.map((tool: { function: { name: string } }) => tool.function.name), fixtureTools, 'the tool definitions went as functions');
  const sentNext = at('tool_result');
  const toolMessage = sentNext?.messages?.find((m: { role: string }) => m.role === 'tool');
  t.equal(toolMessage?.tool_call_id, call?.type === 'tool_use' ? call.id : undefined, 'the tool_result went back under the call\'s id');
  for (const block of thinking) t.notOk(block.type === 'thinking' && JSON.stringify(sentNext).includes(block.signature), 'the gateway-made signature is dropped, not sent upstream');

  await gateway.ledgerSettled(user);
  const rows = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from transactions where user_id = ${user} and payment_method = 'usage' order by created_at`;
  const answered = results.filter((result) => result.message);
  t.same(rows.map((row) => -row.credits_nano), answered.map((result) => costOf(OTHER_FAMILY_MODEL, result.message!.usage)), 'each answer charged at its usage and the model\'s prices; count_tokens free');
  const money = await moneyView(gateway, user);
  t.equal(money.ledgerSum, money.credits);
  t.equal(money.held, 0n);
});
