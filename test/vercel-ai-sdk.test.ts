// The Vercel AI SDK (`ai` + `@ai-sdk/openai`), unchanged and at its defaults, against a real gateway:
// generateText and streamText with a tool that runs, several steps so the tool result goes back,
// on the chat completions model (`openai.chat`), the Responses model (`openai.responses`) and the
// provider's default (`openai(...)`, Responses in this version). At its default `store: true` the
// SDK's Responses model sends earlier assistant output back as `{type: "item_reference", id}`: the
// gateway resolves those to the caller's own items and refuses any other with a 400 naming the field.
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, generateText, jsonSchema, stepCountIs, streamText, tool, type LanguageModel, type LanguageModelUsage, type StepResult, type ToolSet } from 'ai';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { fastUser, TEST_JWT_SECRET } from './helpers/http-tools.js';
import { envelopeProblems } from './helpers/billing-checks.js';

// List prices in nano-USD per token (input, cached input, output).
const MODELS = [
  { id: 'openai/gpt-4o-mini', price: { input: 150n, cached: 75n, output: 600n } },
  { id: 'anthropic/claude-sonnet-4-5', price: { input: 3000n, cached: 300n, output: 15_000n } },
  { id: 'google/gemini-2.5-flash', price: { input: 300n, cached: 30n, output: 2_500n } },
] as const;
type Price = (typeof MODELS)[number]['price'];
/** The mock says three words (" alpha beta gamma") before its call, as a model that narrates does. */
const ASK = 'What is the weather in Paris? [[mock tool=get_weather tool_text=3]]';
const PREAMBLE = ' alpha beta gamma';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET } }); });
t.teardown(async () => { if (process.env.GW_DEBUG) console.error(gateway.output); await gateway.close(); });

interface Sent { path: string; body: any }

/** A provider at its defaults; `fetch` only records what the SDK sends (path and body), passing it on unchanged. */
function provider(key: string, sent: Sent[]) {
  return createOpenAI({
    baseURL: gateway.v1,
    apiKey: key,
    fetch: async (input, init) => {
      const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      sent.push({ path: url.pathname, body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined });
      return fetch(input, init);
    },
  });
}

/** The weather tool; `runs` counts its executions. */
function weatherTool(marker: string, runs: { count: number }) {
  return {
    get_weather: tool({
      description: 'The weather of a city',
      inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }),
      execute: async ({ city }) => {
        runs.count++;
        return { city, forecast: `sunny ${marker}` };
      },
    }),
  } satisfies ToolSet;
}

function costOf(usage: LanguageModelUsage, price: Price): bigint {
  const cached = BigInt(usage.inputTokenDetails?.cacheReadTokens ?? 0);
  return (BigInt(usage.inputTokens ?? 0) - cached) * price.input + cached * price.cached + BigInt(usage.outputTokens ?? 0) * price.output;
}

async function usageCharges(user: string): Promise<bigint[]> {
  await gateway.ledgerSettled(user);
  const rows = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from transactions where user_id = ${user} and payment_method = 'usage'`;
  return rows.map((row) => -row.credits_nano).sort();
}

const sorted = (values: bigint[]) => [...values].sort();

/** The two steps of the tool round trip: the call (with the preamble text), then the answer to its result. */
function checkSteps(t: Test, steps: StepResult<ReturnType<typeof weatherTool>>[], marker: string): void {
  t.equal(steps.length, 2, 'two steps: the call, then the answer');
  const [first, second] = steps;
  t.equal(first!.text, PREAMBLE, 'the text said before the call');
  t.equal(first!.finishReason, 'tool-calls');
  t.equal(first!.toolCalls.length, 1);
  t.equal(first!.toolCalls[0]!.toolName, 'get_weather');
  t.same(first!.toolCalls[0]!.input, { city: 'Paris' });
  t.equal(first!.toolResults.length, 1);
  t.equal(first!.toolResults[0]!.toolCallId, first!.toolCalls[0]!.toolCallId);
  t.same(first!.toolResults[0]!.output, { city: 'Paris', forecast: `sunny ${marker}` }, 'the tool result');
  t.equal(second!.finishReason, 'stop');
  t.equal(second!.toolCalls.length, 0, 'no second call');
  t.match(second!.text, /^ alpha beta gamma( [a-z]+)*$/, 'the final answer');
}

const KINDS = [
  { kind: 'chat', path: '/v1/chat/completions', model: (openai: ReturnType<typeof createOpenAI>, id: string) => openai.chat(id) },
  { kind: 'responses', path: '/v1/responses', model: (openai: ReturnType<typeof createOpenAI>, id: string) => openai.responses(id) },
  { kind: 'default', path: '/v1/responses', model: (openai: ReturnType<typeof createOpenAI>, id: string) => openai(id) },
] as const;

for (const { id: MODEL, price } of MODELS) {
  for (const { kind, path, model: modelOf } of KINDS) {
    for (const streaming of [false, true]) {
      const mode = streaming ? 'streamText' : 'generateText';
      t.test(`${MODEL}, ${kind} model: ${mode} with a tool over several steps; each call charged`, async (t) => {
        const user = `sdk-${kind}-${streaming ? 's' : 'g'}-${MODEL.split('/')[0]}`;
        const { key } = await fastUser(gateway, user, '5');
        const sent: Sent[] = [];
        const model: LanguageModel = modelOf(provider(key, sent), MODEL);
        const marker = randomBytes(4).toString('hex');
        const runs = { count: 0 };
        const tools = weatherTool(marker, runs);
        const before = await gateway.balanceNano(user);

        let steps: StepResult<typeof tools>[];
        let text: string;
        let usages: LanguageModelUsage[];
        if (!streaming) {
          const result = await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: ASK });
          steps = result.steps;
          text = result.text;
          usages = result.steps.map((step) => step.usage);
        } else {
          const errors: unknown[] = [];
          const result = streamText({ model, tools, stopWhen: stepCountIs(3), prompt: ASK, onError: ({ error }) => { errors.push(error); } });
          let streamed = '';
          for await (const delta of result.textStream) streamed += delta;
          steps = await result.steps;
          text = await result.text;
          usages = steps.map((step) => step.usage);
          t.same(errors, [], 'no stream errors');
          t.equal(streamed, PREAMBLE + text, 'the text streamed over both steps');
        }
        checkSteps(t, steps, marker);
        t.equal(text, steps[1]!.text, 'the result text is the last step\'s');
        t.equal(runs.count, 1, 'the tool ran once');

        // What the SDK sent: two calls to the expected endpoint, the second carrying the tool result.
        t.same(sent.map((s) => s.path), [path, path]);
        const second = sent[1]!.body;
        t.ok(JSON.stringify(second).includes(`sunny ${marker}`), 'the tool result goes back');
        if (kind !== 'chat') {
          const reference = second.input.find((item: any) => item.type === 'item_reference');
          t.match(reference, { id: /^msg_[0-9a-f]{32}/ }, 'the SDK refers to its earlier message by item_reference (store: true by default)');
          t.notOk('store' in second || 'include' in second || 'previous_response_id' in second, 'nothing else stateful sent at defaults');
        }
        // The upstream saw the referred text again, in the assistant turn before the tool result.
        const upstream = gateway.mock.requests().filter((r) => JSON.stringify(r.body ?? '').includes(`sunny ${marker}`));
        t.equal(upstream.length, 1);
        t.ok(JSON.stringify(upstream[0]!.body).includes(PREAMBLE.trim()), 'the assistant text of the first step reaches the upstream');

        // Money: one usage transaction per call, at the usage the SDK reported, and the balance moved by their sum.
        const charges = await usageCharges(user);
        t.equal(charges.length, 2, 'each call charged once');
        t.same(charges, sorted(usages.map((usage) => costOf(usage, price))), 'each charge is the call\'s tokens at list price');
        const after = await gateway.balanceNano(user);
        t.equal(before.credits - after.credits, charges.reduce((a, b) => a + b, 0n), 'the balance moved by the charges');
        t.equal(after.held, 0n, 'nothing left held');
      });
    }
  }
}

t.test('a later turn refers to the earlier answer: resolved for its owner, as the SDK sends it', async (t) => {
  const user = 'sdk-turns';
  const { key } = await fastUser(gateway, user, '5');
  const sent: Sent[] = [];
  const openai = provider(key, sent);
  const first = await generateText({ model: openai('openai/gpt-4o-mini'), prompt: 'Hello [[mock chunks=4]]' });
  t.equal(first.text, ' alpha beta gamma delta');
  const again = await generateText({
    model: openai('openai/gpt-4o-mini'),
    messages: [{ role: 'user', content: 'Hello [[mock chunks=4]]' }, ...first.response.messages, { role: 'user', content: 'And again [[mock chunks=2]]' }],
  });
  t.equal(again.text, ' alpha beta');
  t.same(sent[1]!.body.input.map((item: any) => item.type ?? item.role), ['user', 'item_reference', 'user']);
  const upstream = gateway.mock.requests().find((r) => JSON.stringify(r.body ?? '').includes('And again'))!.body as any;
  t.same(upstream.messages.map((m: any) => [m.role, typeof m.content === 'string' ? m.content : m.content.map((p: any) => p.text).join('')]), [
    ['user', 'Hello [[mock chunks=4]]'], ['assistant', ' alpha beta gamma delta'], ['user', 'And again [[mock chunks=2]]'],
  ], 'the reference became the assistant message');
  t.equal((await usageCharges(user)).length, 2);

  // The item lives under the user's hash tag, with the documented TTL (renewed by the reference).
  const id = sent[1]!.body.input[1].id as string;
  const ttl = await gateway.redis.ttl(`${gateway.prefix}{u:${user}}:ritem:${id}`);
  t.ok(ttl > 3500 && ttl <= 3600, `TTL about an hour (${ttl} s)`);

  // With store: false the SDK sends the items themselves, and the gateway keeps nothing.
  const unstored = await generateText({ model: openai('openai/gpt-4o-mini'), prompt: 'Hi [[mock chunks=1]]', providerOptions: { openai: { store: false } } });
  t.equal(sent.at(-1)!.body.store, false);
  const itemId = (unstored.response.messages[0]!.content as any[])[0].providerOptions?.openai?.itemId as string;
  t.match(itemId, /^msg_/);
  t.equal(await gateway.redis.exists(`${gateway.prefix}{u:${user}}:ritem:${itemId}`), 0, 'not kept');
  const followUp = await generateText({
    model: openai('openai/gpt-4o-mini'), providerOptions: { openai: { store: false } },
    messages: [{ role: 'user', content: 'Hi' }, ...unstored.response.messages, { role: 'user', content: 'More [[mock chunks=1]]' }],
  });
  t.equal(followUp.text, ' alpha');
  t.equal(sent.at(-1)!.body.input[1].role, 'assistant', 'the item itself, not a reference');
});

t.test('a reference to another user\'s item, a forged or unknown id, or no id: 400 naming the field, nothing charged', async (t) => {
  const owner = await fastUser(gateway, 'sdk-owner', '5');
  const other = await fastUser(gateway, 'sdk-other', '5');
  const url = `${gateway.v1}/responses`;
  const answered = await postJson(url, owner.key, { model: 'openai/gpt-4o-mini', input: 'Hi [[mock tool=get_weather tool_text=2]]', tools: [{ type: 'function', name: 'get_weather' }] });
  t.equal(answered.status, 200);
  t.equal(answered.body.store, true, 'the items are kept (store echoed)');
  const [message, call] = answered.body.output as { id: string; type: string }[];
  t.equal(message!.type, 'message');
  t.equal(call!.type, 'function_call');
  const turn = (...items: unknown[]) => ({ model: 'openai/gpt-4o-mini', tools: [{ type: 'function', name: 'get_weather' }], input: [{ role: 'user', content: 'Hi' }, ...items, { role: 'user', content: 'Go on [[mock chunks=1]]' }] });

  // The owner's references resolve, in both spellings the spec allows.
  const own = await postJson(url, owner.key, turn({ type: 'item_reference', id: message!.id }, { id: call!.id }, { type: 'function_call_output', call_id: (answered.body.output[1] as any).call_id, output: 'sunny' }));
  t.equal(own.status, 200, JSON.stringify(own.body));

  const forgedHex = randomBytes(16).toString('hex');
  const cases: [unknown[], string][] = [
    [[{ type: 'item_reference', id: message!.id }], 'input[1].id'], // another user's message
    [[{ type: 'item_reference', id: message!.id }, { type: 'item_reference', id: call!.id }], 'input[1].id'],
    [[{ role: 'assistant', content: 'ok' }, { id: call!.id }], 'input[2].id'], // another user's call, short form
    [[{ type: 'item_reference', id: `msg_${forgedHex}` }], 'input[1].id'], // forged in the gateway's format
    [[{ type: 'item_reference', id: `fc_${forgedHex}_0` }], 'input[1].id'],
    [[{ type: 'item_reference', id: 'msg_abc' }], 'input[1].id'], // not an id this gateway issues
    [[{ type: 'item_reference', id: `rs_${'x'.repeat(5000)}` }], 'input[1].id'],
    [[{ type: 'item_reference' }], 'input[1].id'],
    [[{ type: 'item_reference', id: 42 }], 'input[1].id'],
    [[{ type: 'item_reference', id: '' }], 'input[1].id'],
  ];
  for (const [items, param] of cases) {
    const { status, body } = await postJson(url, other.key, turn(...items));
    t.equal(status, 400, `${JSON.stringify(items).slice(0, 120)} -> 400`);
    t.same(envelopeProblems(body, 400), [], 'the error envelope');
    t.equal(body.error?.param, param, `names ${param}`);
    t.ok(body.error.message.length < 1000, 'a bounded message');
  }
  const unknown = await postJson(url, other.key, turn({ type: 'item_reference', id: message!.id }));
  t.equal(unknown.body.error.code, 'item_not_found');
  t.match(unknown.body.error.message, /store: false/, 'the message says how to send the item instead');
  const streamed = await postJson(url, other.key, { ...turn({ type: 'item_reference', id: message!.id }), stream: true });
  t.equal(streamed.status, 400, 'streamed requests too, before any event');

  // Through the SDK: a forged itemId in the message history is the same 400, raised as an APICallError.
  const openai = provider(other.key, []);
  const refused = await generateText({
    model: openai('openai/gpt-4o-mini'), maxRetries: 0,
    messages: [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello', providerOptions: { openai: { itemId: `msg_${forgedHex}` } } }] },
      { role: 'user', content: 'Go on' },
    ],
  }).then(() => undefined, (error: unknown) => error);
  t.ok(APICallError.isInstance(refused), 'an APICallError');
  t.equal((refused as APICallError).statusCode, 400);
  t.equal(JSON.parse((refused as APICallError).responseBody!).error.param, 'input[1].id');

  // Still stateless in the spec's sense.
  const previous = await postJson(url, owner.key, { model: 'openai/gpt-4o-mini', input: 'Hi', previous_response_id: answered.body.id });
  t.equal(previous.status, 400);
  t.equal(previous.body.error.code, 'previous_response_not_supported');
  t.equal(previous.body.error.param, 'previous_response_id');

  t.same(await usageCharges('sdk-other'), [], 'nothing charged for the refusals');
  t.equal((await usageCharges('sdk-owner')).length, 2, 'the owner paid for its two calls');
});
