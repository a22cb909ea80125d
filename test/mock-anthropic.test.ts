// The mock vendor's Anthropic Messages route over real HTTP: auth, errors, event order, directives, cache.
import t from 'tap';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { CONTENT_WORDS } from '../src/mock-vendor/words.js';

let mock: MockVendor;
t.before(async () => { mock = await startMockVendor({ port: 0 }); });
t.teardown(() => mock.close());

const HEADERS = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
const post = async (body: unknown, headers: Record<string, string> = HEADERS) => {
  const response = await fetch(`${mock.url}/anthropic/v1/messages`, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: response.status, headers: response.headers, text: await response.text() };
};
const ask = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content }], ...extra });

t.test('authentication, validation and simulated failures in Anthropic\'s error shape', async (t) => {
  const noKey = await post(ask('hi'), { 'anthropic-version': '2023-06-01', 'content-type': 'application/json' });
  t.equal(noKey.status, 401);
  t.same(JSON.parse(noKey.text), { type: 'error', error: { type: 'authentication_error', message: 'x-api-key header is required' } });
  t.equal((await post({ model: 'm', messages: [{ role: 'user', content: 'x' }] })).status, 400, 'max_tokens is required');
  t.equal((await post(ask('x', { messages: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }] }))).status, 400, 'roles must alternate');
  t.equal((await post(ask('x', { thinking: { type: 'enabled', budget_tokens: 1024 }, max_tokens: 1024 }))).status, 400, 'budget below max_tokens');
  const limited = await post(ask('x [[mock fail=429]]'));
  t.equal(limited.status, 429);
  t.equal(limited.headers.get('retry-after'), '1');
  t.equal(JSON.parse(limited.text).error.type, 'rate_limit_error');
  t.equal(JSON.parse((await post(ask('x [[mock fail=529]]'))).text).error.type, 'overloaded_error');
});

t.test('a message, and the same as an SSE stream in the documented event order', async (t) => {
  const thinking = { thinking: { type: 'enabled', budget_tokens: 1024 }, max_tokens: 2000 };
  const message = JSON.parse((await post(ask('x [[mock chunks=3 reasoning=2]]', thinking))).text);
  t.equal(message.type, 'message');
  t.match(message.id, /^msg_/);
  t.equal(message.model, 'claude-sonnet-4-5-20250929');
  t.same(message.content.map((b: { type: string }) => b.type), ['thinking', 'text']);
  t.equal(message.stop_reason, 'end_turn');
  t.equal(message.usage.output_tokens, 5);
  t.equal(JSON.parse((await post(ask('x [[mock chunks=3 reasoning=2]]'))).text).usage.output_tokens, 3, 'no thinking unless enabled');

  const stream = await post(ask('x [[mock tool=get_weather]]', { stream: true, tools: [{ name: 'get_weather', input_schema: { type: 'object' } }] }));
  const types = [...stream.text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
  t.same(types, ['message_start', 'ping', 'content_block_start', ...Array(6).fill('content_block_delta'), 'content_block_stop', 'message_delta', 'message_stop']);
  const args = [...stream.text.matchAll(/"partial_json":("(?:[^"\\]|\\.)*")/g)].map((m) => JSON.parse(m[1]!) as string).join('');
  t.same(JSON.parse(args), { city: 'Paris' });
  t.match(stream.text, /"stop_reason":"tool_use"/);
  t.equal(mock.requests().at(-1)!.stream, true);
});

t.test('the prompt cache: breakpoint prefixes of 1024+ tokens, written once, read on a repeat, per prefix', async (t) => {
  const long = Array.from({ length: 1200 }, (_, i) => CONTENT_WORDS[i % CONTENT_WORDS.length]).join('');
  const withSystem = (salt: string, marked = true) => ask('q', { system: [{ type: 'text', text: salt }, { type: 'text', text: long, ...(marked ? { cache_control: { type: 'ephemeral' } } : {}) }] });
  const usage = async (body: unknown) => JSON.parse((await post(body)).text).usage;
  const first = await usage(withSystem('user-a'));
  t.equal(first.cache_read_input_tokens, 0);
  t.ok(first.cache_creation_input_tokens >= 1200);
  const repeat = await usage(withSystem('user-a'));
  t.equal(repeat.cache_read_input_tokens, first.cache_creation_input_tokens);
  t.equal(repeat.cache_creation_input_tokens, 0);
  t.equal(repeat.input_tokens, first.input_tokens);
  const other = await usage(withSystem('user-b'));
  t.equal(other.cache_read_input_tokens, 0, 'another salt is another prefix');
  const unmarked = await usage(withSystem('user-c', false));
  t.same([unmarked.cache_read_input_tokens, unmarked.cache_creation_input_tokens], [0, 0], 'no breakpoint, no cache');
  const short = await usage(ask('q', { system: [{ type: 'text', text: 'short', cache_control: { type: 'ephemeral' } }] }));
  t.equal(short.cache_creation_input_tokens, 0, 'below 1024 tokens nothing is cached');
  t.equal((await usage(ask('q [[mock cached=5]]'))).cache_read_input_tokens, 5, 'the cached directive forces a read');
});
