import * as v from 'valibot';
import { textPassesThrough } from './text.js';
import { FallbackModels, MAX_TOOLS } from './chat.js';

const number = (min: number, max: number) => v.pipe(v.number('must be a number'), v.minValue(min, `must be at least ${min}`), v.maxValue(max, `must be at most ${max}`));
const positiveInteger = () => v.pipe(v.number('must be an integer'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'));
const text = () => v.string('must be a string');

// Parts and items keep unknown fields: clients echo a previous response's output back as input,
// with fields such as `annotations`, `logprobs`, `status` or the SDK's `parsed_arguments`.
const InputText = v.looseObject({ type: v.literal('input_text'), text: text() });
const OutputText = v.looseObject({ type: v.literal('output_text'), text: text() });
const Refusal = v.looseObject({ type: v.literal('refusal'), refusal: text() });
const InputImage = v.looseObject({
  type: v.literal('input_image'),
  image_url: v.pipe(v.string('is required (file_id images are not supported)'), v.regex(/^(https?:\/\/|data:image\/)/, 'must be an http(s) URL or a data:image/ URI')),
  detail: v.optional(v.nullable(v.picklist(['auto', 'low', 'high'], "must be 'auto', 'low' or 'high'"))),
});
const ContentPart = v.variant('type', [InputText, OutputText, Refusal, InputImage], 'content part type must be input_text, output_text, refusal or input_image');
/** A string, or an array of `item` (chosen by the input's type, so an issue inside the array names its path). */
const stringOr = <TItem extends v.GenericSchema>(text: v.GenericSchema<string>, item: TItem, message: string) =>
  v.lazy((input) => (typeof input === 'string' ? text : Array.isArray(input) ? v.array(item) : v.custom<never>(() => false, message)));
const Content = stringOr(v.string(), ContentPart, 'must be a string or an array of content parts');
export type ResponsesContentPart = v.InferOutput<typeof ContentPart>;

const MessageItem = v.looseObject({
  type: v.literal('message'),
  role: v.picklist(['user', 'assistant', 'system', 'developer'], 'role must be one of user, assistant, system, developer'),
  content: Content,
});
const FunctionCallItem = v.looseObject({
  type: v.literal('function_call'),
  call_id: v.pipe(text(), v.minLength(1, 'must not be empty')),
  name: v.pipe(text(), v.minLength(1, 'must not be empty')),
  arguments: text(),
});
const FunctionCallOutputItem = v.looseObject({
  type: v.literal('function_call_output'),
  call_id: v.pipe(text(), v.minLength(1, 'must not be empty')),
  output: stringOr(v.string(), ContentPart, 'must be a string or an array of content parts'),
});
const ReasoningItem = v.looseObject({ type: v.literal('reasoning') });

/** An input item; a `{role, content}` object without `type` is a message (the "easy" form). */
const InputItem = v.pipe(
  v.looseObject({ type: v.optional(v.string('must be a string')) }, 'must be an object'),
  v.transform((item) => (item.type === undefined && 'role' in item ? { ...item, type: 'message' } : item)),
  v.variant('type', [MessageItem, FunctionCallItem, FunctionCallOutputItem, ReasoningItem], 'item type must be message, function_call, function_call_output or reasoning'),
);
export type ResponsesInputItem = v.InferOutput<typeof InputItem>;

/** A function tool in the flat form. Other tool types pass the request schema and are dropped. */
export const FunctionToolSchema = v.looseObject({
  type: v.literal('function'),
  name: v.pipe(v.string('is required and must be a string'), v.regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, _ or -')),
  description: v.optional(v.nullable(v.string('must be a string'))),
  parameters: v.optional(v.nullable(v.record(v.string(), v.unknown(), 'must be an object'))),
  strict: v.optional(v.nullable(v.boolean('must be a boolean'))),
});

const ToolChoice = v.union([
  v.picklist(['none', 'auto', 'required']),
  v.object({ type: v.literal('function'), name: v.string() }),
], "must be 'none', 'auto', 'required' or {type: 'function', name}");

const TextFormat = v.variant('type', [
  v.object({ type: v.literal('text') }),
  v.object({ type: v.literal('json_object') }),
  v.object({ type: v.literal('json_schema'), name: v.string(), schema: v.optional(v.record(v.string(), v.unknown())), description: v.optional(v.string()), strict: v.optional(v.nullable(v.boolean())) }),
], "type must be 'text', 'json_object' or 'json_schema'");

/**
 * The stateless Responses-style request. Unknown top-level fields are refused, as for chat: a field
 * the gateway does not know could change what the upstream charges. `previous_response_id` is
 * answered before this schema runs (see `toChatRequest`). Its text goes to the vendor and is never
 * stored in Postgres, as for chat (`textPassesThrough`).
 */
export const ResponsesRequestSchema = textPassesThrough(v.strictObject({
  model: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty')),
  models: FallbackModels,
  input: v.lazy((input) => (typeof input === 'string'
    ? v.pipe(v.string(), v.minLength(1, 'must not be empty'))
    : Array.isArray(input)
      ? v.pipe(v.array(InputItem), v.minLength(1, 'must contain at least one item'))
      : v.custom<never>(() => false, 'is required and must be a string or an array of items'))),
  instructions: v.optional(v.nullable(text())),
  max_output_tokens: v.optional(v.nullable(positiveInteger())),
  temperature: v.optional(v.nullable(number(0, 2))),
  top_p: v.optional(v.nullable(number(0, 1))),
  stream: v.optional(v.nullable(v.boolean('must be a boolean'))),
  tools: v.optional(v.nullable(v.pipe(v.array(v.looseObject({ type: v.string('is required and must be a string') }, 'must be an object')), v.maxLength(MAX_TOOLS, `at most ${MAX_TOOLS} tools`)))),
  tool_choice: v.optional(v.nullable(ToolChoice)),
  parallel_tool_calls: v.optional(v.nullable(v.boolean('must be a boolean'))),
  store: v.optional(v.nullable(v.boolean('must be a boolean'))),
  metadata: v.optional(v.nullable(v.record(v.string(), v.string()))),
  user: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(256)))),
  text: v.optional(v.nullable(v.object({ format: v.optional(v.nullable(TextFormat)) }))),
  reasoning: v.optional(v.nullable(v.object({ effort: v.optional(v.nullable(v.picklist(['minimal', 'low', 'medium', 'high']))), summary: v.optional(v.nullable(v.string())) }))),
  prompt_cache_key: v.optional(v.nullable(v.pipe(v.string(), v.minLength(1), v.maxLength(256)))),
  service_tier: v.optional(v.nullable(v.picklist(['auto', 'default'], "only 'auto' and 'default' are supported"))),
  truncation: v.optional(v.nullable(v.literal('disabled', "only 'disabled' is supported (the gateway never drops input)"))),
  include: v.optional(v.nullable(v.array(v.string()))),
  stream_options: v.optional(v.nullable(v.looseObject({}))),
}));

export type ResponsesRequest = v.InferOutput<typeof ResponsesRequestSchema>;
