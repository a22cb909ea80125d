// A Responses-style request as the chat-completions request the chat pipeline serves. Pure.
import * as v from 'valibot';
import { ApiError, badRequest } from '../errors.js';
import { validationError, parseWith } from '../schemas/issues.js';
import type { ChatMessage, ChatRequest } from '../schemas/chat.js';
import { FunctionToolSchema, ResponsesRequestSchema, type ResponsesContentPart, type ResponsesInputItem, type ResponsesRequest } from '../schemas/responses.js';

/** Fields a chat-pipeline error may name, as a Responses caller knows them. */
export const RESPONSES_FIELD_NAMES: Readonly<Record<string, string>> = Object.freeze({
  max_tokens: 'max_output_tokens',
  max_completion_tokens: 'max_output_tokens',
  messages: 'input',
  response_format: 'text.format',
  reasoning_effort: 'reasoning.effort',
});

/** The 400 for a request that refers to server-side state this stateless endpoint does not keep. */
export function statefulRequestError(field: string): ApiError {
  return new ApiError(
    400, 'previous_response_not_supported',
    `'${field}' is not supported: this endpoint is stateless and stores no responses. Send the full item history in 'input' on every turn ` +
    `(earlier messages, the function_call items you received and your function_call_output items), and leave '${field}' out.`,
    field,
  );
}

/** Refuses the fields that name server-side state (`previous_response_id`, `conversation`) and background mode. */
export function refuseStatefulFields(body: Record<string, unknown>): void {
  for (const field of ['previous_response_id', 'conversation'] as const) {
    if (body[field] != null) throw statefulRequestError(field);
  }
  if (body.background === true) throw badRequest("'background' is not supported: this endpoint answers synchronously.", 'background', 'unsupported_parameter');
}

/** An `item_reference` in `input`: its position and the id it names. */
export interface ItemReference {
  readonly index: number;
  readonly id: string;
}

/** `{type: "item_reference", id}`, or (as the spec allows) `{id}` with neither `type` nor `role`. */
function isItemReference(item: unknown): item is { id?: unknown } {
  if (item === null || typeof item !== 'object' || Array.isArray(item)) return false;
  const { type } = item as { type?: unknown };
  return type === 'item_reference' || (type == null && !('role' in item) && 'id' in item);
}

/** The `item_reference` items of a body's `input`, in order (400 naming `input[i].id` for one without a string id). */
export function itemReferencesOf(body: Record<string, unknown>, max: number): ItemReference[] {
  const input = body.input;
  if (!Array.isArray(input)) return [];
  const references: ItemReference[] = [];
  input.forEach((item: unknown, index) => {
    if (!isItemReference(item)) return;
    if (typeof item.id !== 'string' || item.id === '') {
      throw badRequest(`Invalid value for 'input[${index}].id': an item_reference must name an item by its id (a non-empty string).`, `input[${index}].id`);
    }
    references.push({ index, id: item.id });
  });
  if (references.length > max) throw badRequest(`Invalid value for 'input': at most ${max} item references per request (${references.length} given); send the items themselves.`, 'input');
  return references;
}

/** The 400 for a reference to an item the gateway does not hold for this caller. */
export function unknownItemError(reference: ItemReference, ttlSeconds: number): ApiError {
  const field = `input[${reference.index}].id`;
  const shown = reference.id.length > 80 ? `${reference.id.slice(0, 80)}...` : reference.id;
  return new ApiError(
    400, 'item_not_found',
    `Invalid value for '${field}': no item '${shown}' is held for you. This endpoint is stateless, but it resolves an item_reference to an output item ` +
    `it issued to the same user in the last ${Math.round(ttlSeconds / 60)} minutes (renewed on use; not kept when the request set store: false). ` +
    `Send the item itself instead: {role: "assistant", content} for a message, {type: "function_call", call_id, name, arguments} for a call ` +
    `(with the Vercel AI SDK, providerOptions: {openai: {store: false}}).`,
    field,
  );
}

/**
 * The body with each reference replaced by the item it names: `items[i]` is the stored item JSON of
 * `references[i]`, or null for an item not held (400 naming `input[i].id`).
 */
export function withReferencedItems(body: Record<string, unknown>, references: readonly ItemReference[], items: readonly (string | null)[], ttlSeconds: number): Record<string, unknown> {
  const input = [...(body.input as unknown[])];
  references.forEach((reference, i) => {
    const json = items[i];
    if (json == null) throw unknownItemError(reference, ttlSeconds);
    input[reference.index] = JSON.parse(json) as unknown;
  });
  return { ...body, input };
}

type TextPart = { type: 'text'; text: string };
type ImagePart = { type: 'image_url'; image_url: { url: string; detail?: 'auto' | 'low' | 'high' } };

/** Parts of a user message: text and images. */
function userContent(content: string | ResponsesContentPart[], at: string): string | (TextPart | ImagePart)[] {
  if (typeof content === 'string') return content;
  return content.map((part, i) => {
    switch (part.type) {
      case 'input_text':
      case 'output_text':
        return { type: 'text', text: part.text } as TextPart;
      case 'refusal':
        return { type: 'text', text: part.refusal } as TextPart;
      case 'input_image':
        return { type: 'image_url', image_url: { url: part.image_url, ...(part.detail ? { detail: part.detail } : {}) } } as ImagePart;
      default:
        throw badRequest(`Invalid value for '${at}[${i}].type'.`, `${at}[${i}].type`);
    }
  });
}

/** Text-only content (system, assistant, tool output): the text parts joined. */
function textContent(content: string | ResponsesContentPart[], at: string): string {
  if (typeof content === 'string') return content;
  let text = '';
  content.forEach((part, i) => {
    if (part.type === 'input_image') throw badRequest(`Invalid value for '${at}[${i}]': images are accepted only in user messages.`, `${at}[${i}].type`, 'unsupported_content');
    text += part.type === 'refusal' ? part.refusal : part.text;
  });
  return text;
}

function messagesOf(request: ResponsesRequest): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (request.instructions) messages.push({ role: 'system', content: request.instructions });
  if (typeof request.input === 'string') {
    messages.push({ role: 'user', content: request.input });
    return messages;
  }
  request.input.forEach((item: ResponsesInputItem, i) => {
    const at = `input[${i}]`;
    switch (item.type) {
      case 'message':
        if (item.role === 'user') messages.push({ role: 'user', content: userContent(item.content, `${at}.content`) });
        else if (item.role === 'assistant') messages.push({ role: 'assistant', content: textContent(item.content, `${at}.content`) });
        else messages.push({ role: 'system', content: textContent(item.content, `${at}.content`) });
        return;
      case 'function_call': {
        const call = { id: item.call_id, type: 'function' as const, function: { name: item.name, arguments: item.arguments } };
        // Calls the model made in one turn go back as one assistant message, after its text if any.
        const last = messages[messages.length - 1] as { role: string; content?: unknown; tool_calls?: unknown[] } | undefined;
        if (last?.role === 'assistant') {
          (last.tool_calls ??= []).push(call);
          if (last.content === '') last.content = null;
        } else {
          messages.push({ role: 'assistant', content: null, tool_calls: [call] });
        }
        return;
      }
      case 'function_call_output':
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: textContent(item.output, `${at}.output`) });
        return;
      case 'reasoning':
        return; // accepted and skipped: reasoning is not replayed upstream
    }
  });
  if (messages.every((message) => message.role === 'system')) {
    throw badRequest("Invalid value for 'input': it must contain at least one message, function call or function call output.", 'input');
  }
  return messages;
}

function toolsOf(tools: NonNullable<ResponsesRequest['tools']>): NonNullable<ChatRequest['tools']> {
  const out: NonNullable<ChatRequest['tools']> = [];
  tools.forEach((tool, i) => {
    if (tool.type !== 'function') return; // hosted tools (web search, ...) are accepted and dropped
    const result = v.safeParse(FunctionToolSchema, tool, { abortEarly: true });
    if (!result.success) {
      const error = validationError(result.issues);
      const field = error.param ? `tools[${i}].${error.param}` : `tools[${i}]`;
      throw badRequest(`Invalid value for '${field}': ${result.issues[0]!.message}`, field);
    }
    const { name, description, parameters, strict } = result.output;
    out.push({
      type: 'function',
      function: { name, ...(description != null ? { description } : {}), ...(parameters != null ? { parameters } : {}), ...(strict != null ? { strict } : {}) },
    });
  });
  return out;
}

/**
 * Validates a Responses-style body and translates it. `instructions` lead as a system message,
 * `developer` messages become system ones, consecutive `function_call` items one assistant message
 * with `tool_calls`, `function_call_output` items tool messages; `reasoning` items are skipped.
 * `item_reference` items must have been replaced by their items first (`withReferencedItems`).
 */
export function toChatRequest(body: Record<string, unknown>): ChatRequest {
  refuseStatefulFields(body);
  const { background: _background, previous_response_id: _previous, conversation: _conversation, ...rest } = body;
  const request = parseWith(ResponsesRequestSchema, rest);
  const chat: Record<string, unknown> = { model: request.model, messages: messagesOf(request) };
  if (request.models?.length) chat.models = request.models;
  if (request.max_output_tokens != null) chat.max_completion_tokens = request.max_output_tokens;
  if (request.temperature != null) chat.temperature = request.temperature;
  if (request.top_p != null) chat.top_p = request.top_p;
  if (request.stream === true) chat.stream = true;
  const tools = request.tools ? toolsOf(request.tools) : [];
  if (tools.length > 0) {
    chat.tools = tools;
    if (request.parallel_tool_calls != null) chat.parallel_tool_calls = request.parallel_tool_calls;
  }
  const choice = request.tool_choice;
  if (choice != null) {
    if (typeof choice === 'string') {
      // Without function tools left there is nothing to choose: 'none' and 'auto' say the same.
      if (tools.length > 0 || choice === 'required') chat.tool_choice = choice;
      if (choice === 'required' && tools.length === 0) throw badRequest("'tool_choice' is 'required' but the request has no function tools.", 'tool_choice');
    } else {
      if (!tools.some((tool) => tool.function.name === choice.name)) {
        throw badRequest(`'tool_choice' names the function '${choice.name}', which is not among the function tools.`, 'tool_choice.name');
      }
      chat.tool_choice = { type: 'function', function: { name: choice.name } };
    }
  }
  if (request.user != null) chat.user = request.user;
  const format = request.text?.format;
  if (format) {
    chat.response_format = format.type === 'json_schema'
      ? { type: 'json_schema', json_schema: { name: format.name, ...(format.schema ? { schema: format.schema } : {}), ...(format.description ? { description: format.description } : {}), ...(format.strict != null ? { strict: format.strict } : {}) } }
      : { type: format.type };
  }
  if (request.reasoning?.effort) chat.reasoning_effort = request.reasoning.effort;
  if (request.prompt_cache_key != null) chat.prompt_cache_key = request.prompt_cache_key;
  if (request.service_tier != null) chat.service_tier = request.service_tier;
  // `store`, `metadata`, `include`, `truncation: disabled` and `stream_options`: accepted, nothing to do statelessly.
  return chat as ChatRequest;
}
