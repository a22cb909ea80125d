// An Anthropic Messages API request as the chat-completions request the chat pipeline serves, for
// the families that are not Anthropic's (OpenAI, Gemini, ...). Pure.
import * as v from 'valibot';
import { ApiError, badRequest } from '../errors.js';
import { parseWith } from '../schemas/issues.js';
import { textPassesThrough } from '../schemas/text.js';
import { ChatRequestSchema, FallbackModels, MAX_STOP_SEQUENCES, MAX_TOOLS, type ChatMessage, type ChatRequest } from '../schemas/chat.js';
import { THINKING_BUDGETS } from '../../providers/anthropic/request.js';

/** Fields a chat-pipeline error may name, as a Messages caller knows them. */
export const MESSAGES_FIELD_NAMES: Readonly<Record<string, string>> = Object.freeze({
  max_completion_tokens: 'max_tokens',
  stop: 'stop_sequences',
  reasoning_effort: 'thinking',
  include_reasoning: 'thinking',
  user: 'metadata.user_id',
  parallel_tool_calls: 'tool_choice.disable_parallel_tool_use',
});

/** Image types the Messages API takes (its `media_type` enum). */
const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;
/** Anthropic's minimum thinking budget. */
const MIN_THINKING_BUDGET = 1024;

const text = () => v.string('must be a string');
const number = (min: number, max: number) => v.pipe(v.number('must be a number'), v.minValue(min, `must be at least ${min}`), v.maxValue(max, `must be at most ${max}`));
const positiveInteger = (min = 1) => v.pipe(v.number('must be an integer'), v.integer('must be an integer'), v.minValue(min, `must be at least ${min}`));
/** A string, or an array of `item` (chosen by the input's type, so an issue inside the array names its path). */
const stringOr = <TItem extends v.GenericSchema>(item: TItem, message: string) =>
  v.lazy((input) => (typeof input === 'string' ? v.string() : Array.isArray(input) ? v.array(item) : v.custom<never>(() => false, message)));

// Blocks keep unknown fields: `cache_control` (accepted anywhere, nothing to do for these families),
// `citations` on text a client echoes back, and whatever Anthropic adds to blocks later.
const TextBlock = v.looseObject({ type: v.literal('text'), text: text() });
const ImageBlock = v.looseObject({
  type: v.literal('image'),
  source: v.variant('type', [
    v.looseObject({ type: v.literal('base64'), media_type: v.picklist(IMAGE_TYPES, `must be one of ${IMAGE_TYPES.join(', ')}`), data: v.pipe(text(), v.minLength(1, 'must not be empty')) }),
    v.looseObject({ type: v.literal('url'), url: v.pipe(text(), v.regex(/^https?:\/\//, 'must be an http(s) URL')) }),
  ], "type must be 'base64' or 'url' (file sources are not supported)"),
});
/** A document; its source is checked where it is translated (only text can reach these families). */
const DocumentBlock = v.looseObject({ type: v.literal('document'), source: v.looseObject({ type: text() }, 'must be an object') });
const ToolResultBlock = v.looseObject({
  type: v.literal('tool_result'),
  tool_use_id: v.pipe(text(), v.minLength(1, 'must not be empty')),
  content: v.optional(v.nullable(stringOr(v.variant('type', [TextBlock, ImageBlock, DocumentBlock], "type must be 'text', 'image' or 'document'"), 'must be a string or an array of blocks'))),
  is_error: v.optional(v.nullable(v.boolean('must be a boolean'))),
});
const ToolUseBlock = v.looseObject({
  type: v.literal('tool_use'),
  id: v.pipe(text(), v.minLength(1, 'must not be empty')),
  name: v.pipe(text(), v.minLength(1, 'must not be empty')),
  input: v.record(v.string(), v.unknown(), 'must be an object'),
});
// Thinking is checked no further: it is dropped, and a client sending back what it got must never see a 400 for it.
const ThinkingBlock = v.looseObject({ type: v.literal('thinking') });
const RedactedThinkingBlock = v.looseObject({ type: v.literal('redacted_thinking') });

const KnownBlock = v.variant('type', [TextBlock, ImageBlock, DocumentBlock, ToolResultBlock, ToolUseBlock, ThinkingBlock, RedactedThinkingBlock],
  "type must be one of text, image, document, tool_use, tool_result, thinking, redacted_thinking");
/** Any other block, which only an Anthropic model reads (server tool use and results, search results, blocks added later). */
const OtherBlock = v.looseObject({ type: v.pipe(text(), v.minLength(1, 'must not be empty')) });
type Block = v.InferOutput<typeof KnownBlock> | (v.InferOutput<typeof OtherBlock> & { type: '' });
const KNOWN_BLOCK_TYPES = new Set(['text', 'image', 'document', 'tool_result', 'tool_use', 'thinking', 'redacted_thinking']);

const messageSchema = <TBlock extends v.GenericSchema>(block: TBlock) => v.looseObject({
  role: v.picklist(['user', 'assistant'], "must be 'user' or 'assistant'"),
  content: stringOr(block, 'must be a string or an array of content blocks'),
});
const Message = messageSchema(KnownBlock);
/** A block of a request passed through to Anthropic: a known one is checked as such, any other only for its `type`. */
const PassedBlock = v.lazy((input) => (KNOWN_BLOCK_TYPES.has((input as { type?: unknown } | null)?.type as string) ? KnownBlock : OtherBlock));

/** A custom tool, or a server tool (any other `type`: refused where the request is translated). */
const Tool = v.looseObject({
  type: v.optional(v.nullable(text())),
  name: v.pipe(v.string('is required and must be a string'), v.regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, _ or -')),
  description: v.optional(v.nullable(text())),
  input_schema: v.optional(v.record(v.string(), v.unknown(), 'must be an object')),
});

const ToolChoice = v.variant('type', [
  v.object({ type: v.literal('auto'), disable_parallel_tool_use: v.optional(v.nullable(v.boolean('must be a boolean'))) }),
  v.object({ type: v.literal('any'), disable_parallel_tool_use: v.optional(v.nullable(v.boolean('must be a boolean'))) }),
  v.object({ type: v.literal('tool'), name: v.pipe(text(), v.minLength(1, 'must not be empty')), disable_parallel_tool_use: v.optional(v.nullable(v.boolean('must be a boolean'))) }),
  v.object({ type: v.literal('none') }),
], "type must be 'auto', 'any', 'tool' or 'none'");

const Thinking = v.variant('type', [
  v.looseObject({ type: v.literal('enabled'), budget_tokens: positiveInteger(MIN_THINKING_BUDGET) }),
  v.looseObject({ type: v.literal('disabled') }),
], "type must be 'enabled' or 'disabled'");

const FIELDS = {
  model: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty')),
  models: FallbackModels,
  max_tokens: positiveInteger(),
  messages: v.pipe(v.array(Message, 'is required and must be an array'), v.minLength(1, 'must contain at least one message')),
  system: v.optional(v.nullable(stringOr(TextBlock, 'must be a string or an array of text blocks'))),
  stop_sequences: v.optional(v.nullable(v.pipe(v.array(text(), 'must be an array of strings'), v.maxLength(MAX_STOP_SEQUENCES, `at most ${MAX_STOP_SEQUENCES} sequences for this model`)))),
  stream: v.optional(v.nullable(v.boolean('must be a boolean'))),
  temperature: v.optional(v.nullable(number(0, 1))),
  top_p: v.optional(v.nullable(number(0, 1))),
  top_k: v.optional(v.nullable(positiveInteger(0))),
  tools: v.optional(v.nullable(v.pipe(v.array(Tool, 'must be an array of tools'), v.maxLength(MAX_TOOLS, `at most ${MAX_TOOLS} tools`)))),
  tool_choice: v.optional(v.nullable(ToolChoice)),
  thinking: v.optional(v.nullable(Thinking)),
  metadata: v.optional(v.nullable(v.looseObject({ user_id: v.optional(v.nullable(v.pipe(text(), v.maxLength(256, 'must be at most 256 characters')))) }))),
  service_tier: v.optional(v.nullable(v.picklist(['auto', 'standard_only'], "must be 'auto' or 'standard_only'"))),
};

/**
 * The Messages request, as far as these families can serve it. Unknown top-level fields are refused
 * (strict), as on the chat and Responses endpoints: a field the gateway does not know could change
 * what the upstream does or charges. Its text goes to the vendor and is never stored (`textPassesThrough`).
 */
export const MessagesRequestSchema = textPassesThrough(v.strictObject(FIELDS));
export type MessagesRequest = v.InferOutput<typeof MessagesRequestSchema>;

/**
 * A request for an Anthropic model, which goes upstream as sent: the fields the gateway reads are
 * checked as above (the pipeline needs `max_tokens`, the messages, tools and thinking to size and
 * route the call); fields, blocks and values it does not read are Anthropic's to judge.
 */
const PassedRequestSchema = textPassesThrough(v.looseObject({
  ...FIELDS,
  messages: v.pipe(v.array(messageSchema(PassedBlock), 'is required and must be an array'), v.minLength(1, 'must contain at least one message')),
  thinking: v.optional(v.nullable(v.looseObject({ type: text() }))),
  service_tier: v.optional(v.unknown()),
}));

type TextPart = { type: 'text'; text: string };
type ImagePart = { type: 'image_url'; image_url: { url: string } };
type Part = TextPart | ImagePart;
type ToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };

const unsupported = (field: string, message: string) => badRequest(`Invalid value for '${field}': ${message}`, field, 'unsupported_content');

function imagePart(block: Extract<Block, { type: 'image' }>): ImagePart {
  const source = block.source;
  return { type: 'image_url', image_url: { url: source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url } };
}

/**
 * A document as chat parts. Plain text (a `text` source) and custom content (a `content` source)
 * translate; a PDF (base64 or URL) or a file has no chat part these families take, so it is a 400
 * naming its `source` (Anthropic models read them: the route passes their requests through untranslated).
 */
function documentParts(block: Extract<Block, { type: 'document' }>, at: string, passThrough: boolean): Part[] {
  const source = block.source as { type: string; data?: unknown; content?: unknown };
  if (source.type === 'text') {
    if (typeof source.data !== 'string') throw badRequest(`Invalid value for '${at}.source.data': must be a string.`, `${at}.source.data`);
    const title = typeof block.title === 'string' && block.title !== '' ? `${block.title}\n\n` : '';
    return [{ type: 'text', text: title + source.data }];
  }
  if (source.type === 'content') {
    if (typeof source.content === 'string') return [{ type: 'text', text: source.content }];
    const content = v.safeParse(v.array(v.variant('type', [TextBlock, ImageBlock])), source.content);
    if (!content.success) throw badRequest(`Invalid value for '${at}.source.content': must be a string or an array of text and image blocks.`, `${at}.source.content`);
    return content.output.map((inner) => (inner.type === 'text' ? { type: 'text', text: inner.text } : imagePart(inner)));
  }
  if (passThrough) return []; // read by Anthropic; its bytes are in the body the reservation counts
  throw unsupported(`${at}.source`, `a ${source.type} document (a PDF or a file) can be read only by Anthropic models; send its text as a text source or a text block.`);
}

/** Parts of user content: text, images, documents (empty text left out, as Anthropic refuses it). */
function partsOf(block: Block, at: string, passThrough: boolean): Part[] {
  switch (block.type) {
    case 'text': return block.text === '' ? [] : [{ type: 'text', text: block.text }];
    case 'image': return [imagePart(block)];
    case 'document': return documentParts(block, at, passThrough);
    default:
      if (passThrough) return [];
      throw unsupported(`${at}.type`, `a ${block.type} block cannot appear here.`);
  }
}

/** A tool result's content: its text for the tool message, its images for the user message after it. */
function toolResultOf(block: Extract<Block, { type: 'tool_result' }>, at: string, passThrough: boolean): { text: string; images: ImagePart[] } {
  let text = '';
  const images: ImagePart[] = [];
  if (typeof block.content === 'string') text = block.content;
  else {
    (block.content ?? []).forEach((inner, k) => {
      for (const part of partsOf(inner, `${at}.content[${k}]`, passThrough)) {
        if (part.type === 'text') text += text === '' ? part.text : `\n${part.text}`;
        else images.push(part);
      }
    });
  }
  // Chat has no error flag on a tool message: the text says so, which is all the model reads of it.
  if (block.is_error) text = text === '' ? 'Error' : `Error: ${text}`;
  return { text, images };
}

/**
 * A user turn: its `tool_result` blocks become `tool` messages (first, as chat needs them right after
 * the assistant's calls), then the rest (and the results' images, which chat tool messages cannot
 * carry) one user message.
 */
function userMessages(content: string | Block[], at: string, passThrough: boolean): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const tools: ChatMessage[] = [];
  const parts: Part[] = [];
  content.forEach((block, j) => {
    const blockAt = `${at}[${j}]`;
    if (block.type === 'tool_result') {
      const result = toolResultOf(block, blockAt, passThrough);
      tools.push({ role: 'tool', tool_call_id: block.tool_use_id, content: result.text });
      parts.push(...result.images);
    } else {
      parts.push(...partsOf(block, blockAt, passThrough));
    }
  });
  if (parts.length === 0) return tools;
  const user: ChatMessage = parts.every((part) => part.type === 'text')
    ? { role: 'user', content: parts.map((part) => (part as TextPart).text).join('\n') }
    : { role: 'user', content: parts };
  return [...tools, user];
}

/** An assistant turn: text joined, `tool_use` blocks as tool calls; thinking dropped (these families cannot take it back). */
function assistantMessage(content: string | Block[], at: string, passThrough: boolean): ChatMessage | undefined {
  if (typeof content === 'string') return { role: 'assistant', content };
  let text = '';
  const calls: ToolCall[] = [];
  content.forEach((block, j) => {
    switch (block.type) {
      case 'text':
        text += block.text;
        return;
      case 'tool_use':
        calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input) } });
        return;
      case 'thinking':
      case 'redacted_thinking':
        return;
      default:
        if (passThrough) return;
        throw unsupported(`${at}[${j}].type`, `an assistant message cannot carry a ${block.type} block.`);
    }
  });
  if (calls.length > 0) return { role: 'assistant', content: text === '' ? null : text, tool_calls: calls };
  // A turn that held only thinking says nothing these families can take back.
  return text === '' && content.length > 0 ? undefined : { role: 'assistant', content: text };
}

function messagesOf(request: MessagesRequest, passThrough: boolean): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const system = typeof request.system === 'string' ? request.system : (request.system ?? []).map((block) => block.text).filter((t) => t !== '').join('\n\n');
  // One system message: every chat family takes that (some vendors refuse several, or parts).
  if (system !== '') messages.push({ role: 'system', content: system });
  request.messages.forEach((message, i) => {
    const at = `messages[${i}].content`;
    if (message.role === 'user') messages.push(...userMessages(message.content, at, passThrough));
    else {
      const assistant = assistantMessage(message.content, at, passThrough);
      if (assistant) messages.push(assistant);
    }
  });
  if (messages.every((message) => message.role === 'system')) {
    throw badRequest("Invalid value for 'messages': it must contain at least one message with content.", 'messages');
  }
  return messages;
}

function toolsOf(tools: NonNullable<MessagesRequest['tools']>, passThrough: boolean): NonNullable<ChatRequest['tools']> {
  // Anthropic's server tools (web search, bash, text editor, code execution, ...) run at Anthropic.
  const isServerTool = (tool: (typeof tools)[number]) => tool.type != null && tool.type !== 'custom';
  return (passThrough ? tools.filter((tool) => !isServerTool(tool)) : tools).map((tool, i) => {
    if (isServerTool(tool)) {
      throw badRequest(`Invalid value for 'tools[${i}].type': '${tool.type}' is a tool Anthropic runs, available only with Anthropic models; describe it as a custom tool (name, description, input_schema) instead.`, `tools[${i}].type`, 'unsupported_parameter');
    }
    if (tool.input_schema == null) throw badRequest(`Missing required parameter 'tools[${i}].input_schema'.`, `tools[${i}].input_schema`);
    return {
      type: 'function' as const,
      function: { name: tool.name, ...(tool.description != null ? { description: tool.description } : {}), parameters: tool.input_schema },
    };
  });
}

/** The efforts that always think: `minimal` turns thinking off on some families (Gemini 2.5 Flash), which `enabled` never means. */
const THINKING_EFFORTS = ['low', 'medium', 'high'] as const;

/**
 * The chat `reasoning_effort` for a thinking budget: of low, medium and high, the effort whose budget
 * in THINKING_BUDGETS (what the Anthropic family sends for each effort) is nearest on a log scale, so
 * Claude Code's usual 4k / 10k / 32k land on low / medium / high, and Anthropic's least (1024) on low.
 */
export function effortForBudget(budget: number): (typeof THINKING_EFFORTS)[number] {
  let best: (typeof THINKING_EFFORTS)[number] = 'low';
  for (const effort of THINKING_EFFORTS) {
    if (Math.abs(Math.log(budget / THINKING_BUDGETS[effort])) < Math.abs(Math.log(budget / THINKING_BUDGETS[best]))) best = effort;
  }
  return best;
}

function toolChoiceOf(request: MessagesRequest, chat: Record<string, unknown>, hasTools: boolean): void {
  const choice = request.tool_choice;
  if (choice == null) return;
  if (!hasTools) {
    if (choice.type === 'any' || choice.type === 'tool') throw badRequest(`Invalid value for 'tool_choice.type': '${choice.type}' requires 'tools'.`, 'tool_choice.type');
    return; // 'auto' and 'none' without tools say the same as nothing
  }
  if (choice.type === 'auto') chat.tool_choice = 'auto';
  else if (choice.type === 'none') chat.tool_choice = 'none';
  else if (choice.type === 'any') chat.tool_choice = 'required';
  else {
    if (!request.tools!.some((tool) => tool.name === choice.name)) {
      throw badRequest(`Invalid value for 'tool_choice.name': '${choice.name}' is not among the tools.`, 'tool_choice.name');
    }
    chat.tool_choice = { type: 'function', function: { name: choice.name } };
  }
  if (choice.type !== 'none' && choice.disable_parallel_tool_use === true) chat.parallel_tool_calls = false;
}

/**
 * Validates a Messages body (400 naming the Messages field) and translates it to a chat request for
 * a non-Anthropic family. See docs/api.md (POST /v1/messages) for what each field becomes; in short:
 * `system` leads as one system message, `tool_result` blocks become tool messages, `tool_use` blocks
 * tool calls, thinking blocks are dropped, `cache_control` and `service_tier` are ignored, `top_k`
 * (no chat counterpart) is a 400, server tools are a 400, PDFs and files are a 400.
 * `passThrough`: the request goes to an Anthropic model as sent, and the chat request only sizes and
 * routes it: what no chat family could take (unknown fields and blocks, server tools, PDFs, `top_k`)
 * is left out of it instead of refused.
 */
export function messagesToChatRequest(body: Record<string, unknown>, { passThrough = false }: { passThrough?: boolean } = {}): ChatRequest {
  const request = passThrough ? parseWith(PassedRequestSchema, body) as MessagesRequest : parseWith(MessagesRequestSchema, body);
  if (request.top_k != null && !passThrough) {
    throw badRequest("'top_k' is not supported for this model: only Anthropic models sample with top-k; leave it out (or use 'top_p').", 'top_k', 'unsupported_parameter');
  }
  const chat: Record<string, unknown> = { model: request.model, messages: messagesOf(request, passThrough), max_tokens: request.max_tokens };
  if (request.models?.length) chat.models = request.models;
  if (request.stop_sequences?.length) chat.stop = request.stop_sequences;
  if (request.stream === true) chat.stream = true;
  if (request.temperature != null) chat.temperature = request.temperature;
  if (request.top_p != null) chat.top_p = request.top_p;
  const tools = request.tools?.length ? toolsOf(request.tools, passThrough) : [];
  if (tools.length > 0) chat.tools = tools;
  toolChoiceOf(request, chat, tools.length > 0);
  // Anthropic answers with thinking blocks only when asked: reasoning is left out otherwise, even from a model that reasons anyway.
  if (request.thinking?.type === 'enabled' && typeof request.thinking.budget_tokens === 'number') chat.reasoning_effort = effortForBudget(request.thinking.budget_tokens);
  else chat.include_reasoning = false;
  if (request.metadata?.user_id != null) chat.user = request.metadata.user_id;
  try {
    return parseWith(ChatRequestSchema, chat);
  } catch (error) {
    // Checked above as Messages fields already; anything left is named as a Messages caller knows it.
    if (!(error instanceof ApiError) || error.param == null) throw error;
    const head = /^[A-Za-z_]+/.exec(error.param)?.[0] ?? '';
    const param = (MESSAGES_FIELD_NAMES[head] ?? head) + error.param.slice(head.length);
    throw new ApiError(error.status, error.code, error.message.replaceAll(`'${error.param}'`, `'${param}'`), param, error.headers);
  }
}
