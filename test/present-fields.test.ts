// The chat request's fast validation (only the fields a request has) against the whole schema: the
// same output for every valid request and the same 400 (code, message, field) for every invalid one.
import t from 'tap';
import { ChatRequestSchema } from '../src/http/schemas/chat.js';
import { parseWith, presentFieldsParser } from '../src/http/schemas/issues.js';
import { ApiError } from '../src/http/errors.js';

const fast = presentFieldsParser(ChatRequestSchema);
const outcome = (parse: () => unknown) => {
  try {
    return { ok: parse() };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { status: error.status, code: error.code, message: error.message, param: error.param };
  }
};

const base = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
/** Per field: values the schema accepts and values it refuses. */
const VALUES: Record<string, unknown[]> = {
  model: ['x', '', 3, null],
  messages: [[], 'hi', [{ role: 'user' }], [{ role: 'robot', content: 'x' }], [{ role: 'user', content: [{ type: 'text', text: 'a' }] }]],
  temperature: [0, 2, 2.5, -1, '1', null],
  top_p: [0.5, 1.5, null],
  max_tokens: [1, 0, 1.5, '5', null],
  max_completion_tokens: [64, -3, null],
  n: [1, 2, 1000, null],
  stream: [true, false, 'yes', null],
  stream_options: [{ include_usage: true }, { include_usage: 'x' }, 5, null],
  stop: ['x', ['a', 'b'], [1], Array(20).fill('s'), null],
  seed: [7, 7.5, null],
  response_format: [{ type: 'json_object' }, { type: 'xml' }, null],
  tools: [[], [{ type: 'function', function: { name: 'f' } }], [{ type: 'nope' }], null],
  tool_choice: ['auto', 'none', 'bad', null],
  logit_bias: [{ 12: 5 }, { 12: 500 }, null],
  reasoning_effort: ['low', 'extreme', null],
  user: ['u', 'x'.repeat(300), null],
  metadata: [{ a: 'b' }, { a: 1 }, null],
  service_tier: ['auto', 'flex', null],
  include_reasoning: [false, 'no', null],
  prompt_cache_key: ['k', '', null],
  unknown_field: [1],
  ['__proto__']: [{}],
};

t.test('each field alone on a valid request, in both key orders', async (t) => {
  let cases = 0;
  for (const [field, values] of Object.entries(VALUES)) {
    for (const value of values) {
      for (const body of [{ ...base, [field]: value }, { [field]: value, ...base }]) {
        const copy = JSON.parse(JSON.stringify(body)) as Record<string, unknown>;
        t.same(outcome(() => fast(copy)), outcome(() => parseWith(ChatRequestSchema, copy)), `${field}=${JSON.stringify(value)}`);
        cases++;
      }
    }
  }
  t.ok(cases > 150);
});

t.test('required fields missing, and several bad fields at once (the first one named is the same)', async (t) => {
  const bodies: Record<string, unknown>[] = [
    {},
    { model: 'm' },
    { messages: base.messages },
    { temperature: 9, model: 'm', messages: [] },
    { ...base, top_p: 7, temperature: 9, n: 0 },
    { ...base, stop: [1], tools: 'x', zzz: 1 },
    { stream: true, ...base, max_tokens: 100, temperature: 0.2, user: 'u' },
  ];
  for (const body of bodies) t.same(outcome(() => fast(body)), outcome(() => parseWith(ChatRequestSchema, body)), JSON.stringify(body));
});
