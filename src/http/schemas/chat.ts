import * as v from 'valibot';
import { textPassesThrough } from './text.js';
import { MAX_MODELS_PER_CALL } from '../../routing/limits.js';

export const MAX_CHOICES = 8;
export const MAX_STOP_SEQUENCES = 4;
export const MAX_TOOLS = 128;

const number = (min: number, max: number) => v.pipe(v.number('must be a number'), v.minValue(min, `must be at least ${min}`), v.maxValue(max, `must be at most ${max}`));
const positiveInteger = (max = Number.MAX_SAFE_INTEGER) =>
  v.pipe(v.number('must be an integer'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'), v.maxValue(max, `must be at most ${max}`));

const TextPart = v.object({ type: v.literal('text'), text: v.string('must be a string') });
const ImagePart = v.object({
  type: v.literal('image_url'),
  image_url: v.object({
    url: v.pipe(v.string(), v.regex(/^(https?:\/\/|data:image\/)/, 'must be an http(s) URL or a data:image/ URI')),
    detail: v.optional(v.picklist(['auto', 'low', 'high'])),
  }),
});
const ContentPart = v.variant('type', [TextPart, ImagePart], 'content part type must be text or image_url');

const Content = v.union([v.string(), v.pipe(v.array(ContentPart), v.minLength(1, 'must not be empty'))], 'must be a string or an array of content parts');

const ToolCall = v.looseObject({
  id: v.string(),
  type: v.literal('function'),
  function: v.looseObject({ name: v.string(), arguments: v.string() }),
});

// Messages keep unknown fields (name, refusal, ...) so they pass upstream untouched.
const Message = v.variant('role', [
  v.looseObject({ role: v.picklist(['system', 'developer']), content: Content }),
  v.looseObject({ role: v.literal('user'), content: Content }),
  v.looseObject({
    role: v.literal('assistant'),
    content: v.optional(v.nullable(Content)),
    tool_calls: v.optional(v.array(ToolCall)),
  }),
  v.looseObject({ role: v.literal('tool'), content: Content, tool_call_id: v.string('must be a string') }),
], 'role must be one of system, developer, user, assistant, tool');

const Tool = v.object({
  type: v.literal('function'),
  function: v.object({
    name: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, _ or -')),
    description: v.optional(v.string()),
    parameters: v.optional(v.record(v.string(), v.unknown())),
    strict: v.optional(v.nullable(v.boolean())),
  }),
});

const ToolChoice = v.union([
  v.picklist(['none', 'auto', 'required']),
  v.object({ type: v.literal('function'), function: v.object({ name: v.string() }) }),
], "must be 'none', 'auto', 'required' or {type: 'function', function: {name}}");

const ResponseFormat = v.variant('type', [
  v.object({ type: v.literal('text') }),
  v.object({ type: v.literal('json_object') }),
  v.object({ type: v.literal('json_schema'), json_schema: v.looseObject({ name: v.string(), schema: v.optional(v.record(v.string(), v.unknown())), strict: v.optional(v.nullable(v.boolean())) }) }),
], "type must be 'text', 'json_object' or 'json_schema'");

/**
 * A sampling seed: an integer JSON numbers carry exactly. OpenAI takes any 64-bit integer, but past
 * 2^53 a JSON number is no longer exact (`1e300` is an "integer" to JavaScript, and would reach the
 * vendor as `1e+300`), so the range is that of exact integers. Families with a narrower seed check
 * their own (Gemini: 32 bits).
 */
export const MAX_CHAT_SEED = Number.MAX_SAFE_INTEGER;
const chatSeed = v.pipe(
  v.number('must be an integer'), v.integer('must be an integer'),
  v.minValue(-MAX_CHAT_SEED, `must be an integer from ${-MAX_CHAT_SEED} to ${MAX_CHAT_SEED}`),
  v.maxValue(MAX_CHAT_SEED, `must be an integer from ${-MAX_CHAT_SEED} to ${MAX_CHAT_SEED}`),
);

/** `logit_bias` maps token ids (decimal integers as JSON keys) to a bias from -100 to 100, as OpenAI takes it. */
const LogitBias = v.pipe(
  v.record(v.string(), number(-100, 100), 'must be an object of token ids to numbers'),
  v.check((bias) => Object.keys(bias).every((key) => /^(0|[1-9]\d{0,9})$/.test(key)), 'keys must be token ids (decimal integers)'),
);

/**
 * Models to try, in order, after `model` when it fails retryably (OpenRouter's `models`; docs/routing.md):
 * catalog ids or virtual models.
 */
export const FallbackModels = v.optional(v.nullable(v.pipe(
  v.array(v.pipe(v.string('must be an array of model ids'), v.minLength(1, 'must not contain an empty id'), v.maxLength(256, 'must not contain an id longer than 256 characters')), 'must be an array of model ids'),
  v.maxLength(MAX_MODELS_PER_CALL, `must list at most ${MAX_MODELS_PER_CALL} models`),
)));

/**
 * The chat-completions request. Unknown top-level fields are refused (strict): a field the gateway
 * does not know could change what the upstream charges. Its text goes to the vendor and is never
 * stored, so it may hold any character JSON carries (`textPassesThrough`).
 */
export const ChatRequestSchema = textPassesThrough(v.strictObject({
  model: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty')),
  models: FallbackModels,
  messages: v.pipe(v.array(Message, 'is required and must be an array'), v.minLength(1, 'must contain at least one message')),
  temperature: v.optional(v.nullable(number(0, 2))),
  top_p: v.optional(v.nullable(number(0, 1))),
  presence_penalty: v.optional(v.nullable(number(-2, 2))),
  frequency_penalty: v.optional(v.nullable(number(-2, 2))),
  max_tokens: v.optional(v.nullable(positiveInteger())),
  max_completion_tokens: v.optional(v.nullable(positiveInteger())),
  n: v.optional(v.nullable(positiveInteger(MAX_CHOICES))),
  stream: v.optional(v.nullable(v.boolean('must be a boolean'))),
  stream_options: v.optional(v.nullable(v.object({ include_usage: v.optional(v.boolean()) }))),
  stop: v.optional(v.nullable(v.union([v.string(), v.pipe(v.array(v.string()), v.maxLength(MAX_STOP_SEQUENCES, `at most ${MAX_STOP_SEQUENCES} sequences`))], 'must be a string or an array of strings'))),
  seed: v.optional(v.nullable(chatSeed)),
  response_format: v.optional(v.nullable(ResponseFormat)),
  tools: v.optional(v.nullable(v.pipe(v.array(Tool), v.maxLength(MAX_TOOLS, `at most ${MAX_TOOLS} tools`)))),
  tool_choice: v.optional(v.nullable(ToolChoice)),
  parallel_tool_calls: v.optional(v.nullable(v.boolean())),
  logprobs: v.optional(v.nullable(v.boolean())),
  top_logprobs: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(20)))),
  logit_bias: v.optional(v.nullable(LogitBias)),
  reasoning_effort: v.optional(v.nullable(v.picklist(['minimal', 'low', 'medium', 'high']))),
  user: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(256)))),
  metadata: v.optional(v.nullable(v.record(v.string(), v.string()))),
  store: v.optional(v.nullable(v.boolean())),
  // Tiers that change the upstream price are refused; only the standard tier is billed correctly.
  service_tier: v.optional(v.nullable(v.picklist(['auto', 'default'], "only 'auto' and 'default' are supported"))),
  include_reasoning: v.optional(v.nullable(v.boolean('must be a boolean'))),
  prompt_cache_key: v.optional(v.nullable(v.pipe(v.string(), v.minLength(1), v.maxLength(256)))),
}));

export type ChatRequest = v.InferOutput<typeof ChatRequestSchema>;
export type ChatMessage = ChatRequest['messages'][number];
