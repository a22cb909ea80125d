import type {
  ContentBlockParam, ImageBlockParam, MessageCreateParamsBase, MessageParam, TextBlockParam, ToolChoice, ToolResultBlockParam, ToolUnion,
} from '@anthropic-ai/sdk/resources/messages';
import type { CatalogModel } from '../../catalog/model.js';
import type { ChatMessage, ChatRequest } from '../../http/schemas/chat.js';
import { badRequest } from '../../http/errors.js';
import { cacheSalt } from '../family.js';
import { toolArgumentsObject } from '../tool-arguments.js';

export const ANTHROPIC_VERSION = '2023-06-01';

/** The tool a `json_schema` response format is forced through; its input is the answer (see README). */
export const JSON_RESPONSE_TOOL = 'gateway_json_response';

/** Thinking budgets per `reasoning_effort`; at least Anthropic's minimum of 1024, always below `max_tokens`. */
export const THINKING_BUDGETS = Object.freeze({ minimal: 1024, low: 4096, medium: 12_288, high: 32_768 });
const MIN_THINKING_BUDGET = 1024;

export const JSON_OBJECT_INSTRUCTION = 'Respond with a single valid JSON object and nothing else: no prose, no Markdown code fences.';
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

type Body = MessageCreateParamsBase;
type Part = Exclude<Extract<ChatMessage, { role: 'user' }>['content'], string>[number];

/**
 * The Messages API body for a chat-completions request. Pure: throws a 400 naming the field for
 * what Anthropic cannot do (never a silent clamp or drop of something that changes the answer).
 * `cachePartition` salts the system prefix and marks its end as the cache breakpoint, so one
 * user's repeats hit the cache and two users never share one.
 */
export function buildAnthropicBody(request: ChatRequest, model: CatalogModel, stream: boolean, cachePartition: string): Body {
  refuseUnsupported(request);
  const cap = request.max_completion_tokens ?? request.max_tokens ?? model.capabilities.maxOutputTokens;
  const capField = request.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens';
  const { system, messages } = translateMessages(request.messages);
  const format = request.response_format?.type;
  if (format === 'json_object') system.push({ type: 'text', text: JSON_OBJECT_INSTRUCTION });
  // The salt leads the cached prefix; the breakpoint closes the system prompt.
  system.unshift({ type: 'text', text: cacheSalt(cachePartition) });
  system[system.length - 1] = { ...system[system.length - 1]!, cache_control: { type: 'ephemeral' } };

  const body: Body = { model: model.upstreamModel, max_tokens: cap, system, messages, metadata: { user_id: cachePartition } };
  if (stream) body.stream = true;
  if (request.stop != null) body.stop_sequences = typeof request.stop === 'string' ? [request.stop] : [...request.stop];

  const thinking = request.reasoning_effort != null;
  if (thinking) {
    if (!model.capabilities.reasoning) throw badRequest(`Model ${model.id} does not reason; remove 'reasoning_effort'.`, 'reasoning_effort', 'unsupported_parameter');
    const budget = Math.min(THINKING_BUDGETS[request.reasoning_effort!], cap - 1);
    if (budget < MIN_THINKING_BUDGET) {
      throw badRequest(`'${capField}' is ${cap}; with 'reasoning_effort' it must be at least ${MIN_THINKING_BUDGET + 1} (the thinking budget counts against it).`, capField);
    }
    body.thinking = { type: 'enabled', budget_tokens: budget };
    if (request.temperature != null) throw badRequest(`'temperature' cannot be set together with 'reasoning_effort' for ${model.id}.`, 'temperature');
    if (request.top_p != null && request.top_p < 0.95) throw badRequest(`'top_p' must be at least 0.95 with 'reasoning_effort' for ${model.id}.`, 'top_p');
  }
  if (request.temperature != null) {
    if (request.temperature > 1) throw badRequest(`'temperature' is ${request.temperature}; ${model.id} accepts 0 to 1.`, 'temperature');
    body.temperature = request.temperature;
  }
  if (request.top_p != null) {
    if (request.temperature != null) throw badRequest(`'temperature' and 'top_p' cannot both be set for ${model.id}; use one.`, 'top_p');
    body.top_p = request.top_p;
  }

  const tools = request.tools ?? [];
  if (format === 'json_schema') {
    if (tools.length > 0) throw badRequest(`'response_format' json_schema cannot be combined with 'tools' for ${model.id}.`, 'response_format', 'unsupported_parameter');
    if (thinking) throw badRequest(`'response_format' json_schema cannot be combined with 'reasoning_effort' for ${model.id}.`, 'reasoning_effort', 'unsupported_parameter');
    const spec = (request.response_format as { json_schema: { name: string; schema?: Record<string, unknown> } }).json_schema;
    const schema = spec.schema ?? { type: 'object' };
    if (schema.type !== 'object') throw badRequest(`'response_format.json_schema.schema' must describe an object for ${model.id}.`, 'response_format');
    body.tools = [{ name: JSON_RESPONSE_TOOL, description: `Answer with a ${spec.name} object.`, input_schema: schema as { type: 'object' } }];
    body.tool_choice = { type: 'tool', name: JSON_RESPONSE_TOOL };
    return body;
  }
  if (tools.length > 0) {
    body.tools = tools.map((tool): ToolUnion => {
      if (tool.function.name === JSON_RESPONSE_TOOL) throw badRequest(`The tool name '${JSON_RESPONSE_TOOL}' is reserved.`, 'tools');
      const out: ToolUnion = { name: tool.function.name, input_schema: (tool.function.parameters ?? { type: 'object', properties: {} }) as { type: 'object' } };
      if (tool.function.description) out.description = tool.function.description;
      return out;
    });
    const choice = toolChoice(request, thinking);
    if (choice) body.tool_choice = choice;
  } else if (request.tool_choice != null && request.tool_choice !== 'none' && request.tool_choice !== 'auto') {
    throw badRequest("'tool_choice' requires 'tools'.", 'tool_choice');
  }
  return body;
}

function toolChoice(request: ChatRequest, thinking: boolean): ToolChoice | undefined {
  const choice = request.tool_choice;
  const serial = request.parallel_tool_calls === false ? { disable_parallel_tool_use: true } : {};
  if (thinking && choice != null && choice !== 'none' && choice !== 'auto') {
    throw badRequest("Only 'auto' and 'none' tool_choice work with 'reasoning_effort' (extended thinking).", 'tool_choice');
  }
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any', ...serial };
  if (typeof choice === 'object' && choice !== null) return { type: 'tool', name: choice.function.name, ...serial };
  return choice === 'auto' || request.parallel_tool_calls === false ? { type: 'auto', ...serial } : undefined;
}

/** Fields with no Anthropic counterpart: refused when they would change the answer, dropped when inert. */
function refuseUnsupported(request: ChatRequest): void {
  const refuse = (field: string, why: string) => { throw badRequest(`'${field}' is not supported by the Anthropic family: ${why}.`, field, 'unsupported_parameter'); };
  if (request.n != null && request.n > 1) refuse('n', 'Anthropic returns one choice');
  if (request.logprobs === true) refuse('logprobs', 'Anthropic returns no log probabilities');
  if (request.top_logprobs != null) refuse('top_logprobs', 'Anthropic returns no log probabilities');
  if (request.logit_bias != null && Object.keys(request.logit_bias).length > 0) refuse('logit_bias', 'Anthropic has no logit bias');
  if (request.seed != null) refuse('seed', 'Anthropic has no sampling seed');
  if (request.presence_penalty) refuse('presence_penalty', 'Anthropic has no presence penalty');
  if (request.frequency_penalty) refuse('frequency_penalty', 'Anthropic has no frequency penalty');
}

/** OpenAI messages -> Anthropic `system` blocks and alternating user/assistant turns. */
export function translateMessages(input: ChatRequest['messages']): { system: TextBlockParam[]; messages: MessageParam[] } {
  const system: TextBlockParam[] = [];
  const messages: MessageParam[] = [];
  const append = (role: 'user' | 'assistant', blocks: ContentBlockParam[]) => {
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    // Anthropic requires alternation: consecutive same-role turns become one.
    if (last && last.role === role) (last.content as ContentBlockParam[]).push(...blocks);
    else messages.push({ role, content: blocks });
  };
  input.forEach((message, i) => {
    const at = `messages[${i}]`;
    switch (message.role) {
      case 'system':
      case 'developer':
        for (const block of contentBlocks(message.content, at)) {
          if (block.type !== 'text') throw badRequest(`${at}: system and developer messages can carry text only.`, 'messages', 'unsupported_content');
          system.push(block);
        }
        break;
      case 'user':
        append('user', contentBlocks(message.content, at));
        break;
      case 'assistant': {
        const blocks: ContentBlockParam[] = message.content == null ? [] : contentBlocks(message.content, at);
        if (blocks.some((b) => b.type !== 'text')) throw badRequest(`${at}: assistant messages can carry text only.`, 'messages', 'unsupported_content');
        for (const call of message.tool_calls ?? []) {
          blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolArgumentsObject(call.function.arguments, 'messages', `${at}: tool_calls arguments`) });
        }
        append('assistant', blocks);
        break;
      }
      case 'tool': {
        const blocks = contentBlocks(message.content, at) as ToolResultBlockParam['content'];
        const result: ToolResultBlockParam = { type: 'tool_result', tool_use_id: message.tool_call_id };
        if (typeof blocks !== 'string' && blocks && blocks.length > 0) result.content = blocks;
        append('user', [result]);
        break;
      }
    }
  });
  if (messages.length === 0) throw badRequest('messages must contain at least one user or assistant message besides system messages.', 'messages');
  return { system, messages };
}

/** Content as blocks; empty text is left out (Anthropic refuses empty text blocks). */
function contentBlocks(content: string | readonly Part[], at: string): (TextBlockParam | ImageBlockParam)[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  const blocks: (TextBlockParam | ImageBlockParam)[] = [];
  for (const part of content) {
    if (part.type === 'text') {
      if (part.text !== '') blocks.push({ type: 'text', text: part.text });
    } else {
      blocks.push({ type: 'image', source: imageSource(part.image_url.url, at) });
    }
  }
  return blocks;
}

function imageSource(url: string, at: string): ImageBlockParam['source'] {
  if (!url.startsWith('data:')) return { type: 'url', url };
  const match = /^data:(image\/[a-z+.-]+);base64,(.*)$/is.exec(url);
  if (!match) throw badRequest(`${at}: an image data URI must be base64 (data:image/<type>;base64,...).`, 'messages', 'unsupported_content');
  const mediaType = match[1]!.toLowerCase();
  if (!IMAGE_TYPES.has(mediaType)) throw badRequest(`${at}: image type ${mediaType} is not supported (jpeg, png, gif, webp).`, 'messages', 'unsupported_content');
  return { type: 'base64', media_type: mediaType as 'image/png', data: match[2]! };
}
