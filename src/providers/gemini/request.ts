import type { CatalogModel } from '../../catalog/model.js';
import type { ChatMessage, ChatRequest } from '../../http/schemas/chat.js';
import { badRequest } from '../../http/errors.js';
import { cacheSalt } from '../family.js';
import { toolArgumentsObject } from '../tool-arguments.js';
import { thinkingBudget } from './thinking.js';
import type { GeminiContent, GeminiGenerationConfig, GeminiPart, GeminiRequestBody, GeminiToolConfig } from './wire.js';

/** Image types Gemini takes, by file extension (an https image is sent as `fileData`, which needs its type). */
const IMAGE_TYPES: Readonly<Record<string, string>> = Object.freeze({
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', heic: 'image/heic', heif: 'image/heif', gif: 'image/gif',
});

/** Fields Gemini has no counterpart for; refused rather than dropped. */
const REFUSED_FIELDS = ['logprobs', 'top_logprobs', 'logit_bias'] as const;

type ContentPart = Exclude<ChatMessage['content'], string | null | undefined>[number];

/** The mime type of an image URL from its path's extension; undefined when there is none we know. */
export function imageTypeOfUrl(url: string): string | undefined {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return undefined;
  }
  const dot = path.lastIndexOf('.');
  return dot === -1 ? undefined : IMAGE_TYPES[path.slice(dot + 1).toLowerCase()];
}

function imagePart(url: string, param: string): GeminiPart {
  if (url.startsWith('data:')) {
    const match = /^data:(image\/[A-Za-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]*)$/.exec(url);
    if (!match) throw badRequest(`${param}: a data: image URI must be base64 (data:image/<type>;base64,...).`, param, 'invalid_image_url');
    return { inlineData: { mimeType: match[1]!, data: match[2]!.replace(/\s+/g, '') } };
  }
  const mimeType = imageTypeOfUrl(url);
  if (!mimeType) {
    throw badRequest(`${param}: the image type cannot be told from the URL's extension (png, jpg, jpeg, webp, heic, heif, gif); send it as a data: URI instead.`, param, 'invalid_image_url');
  }
  return { fileData: { fileUri: url, mimeType } };
}

function contentParts(content: ChatMessage['content'], param: string, imagesAllowed: boolean): GeminiPart[] {
  if (content == null) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  return content.map((part: ContentPart, i) => {
    if (part.type === 'text') return { text: part.text };
    if (!imagesAllowed) throw badRequest(`${param}[${i}]: only text parts are accepted in this message's role.`, `${param}[${i}]`, 'unsupported_content');
    return imagePart(part.image_url.url, `${param}[${i}].image_url.url`);
  });
}

function textOf(content: ChatMessage['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((part: ContentPart) => (part.type === 'text' ? part.text : '')).join('');
}

/** A tool result as Gemini's `functionResponse.response`: a JSON object as sent, anything else under `content`. */
function toolResponse(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // plain text
  }
  return { content: text };
}

/** Messages as `systemInstruction` (every system/developer message, in order) and `contents` (same-role turns merged). */
function translateMessages(messages: ChatRequest['messages'], salt: string | undefined): { system: GeminiPart[]; contents: GeminiContent[] } {
  const system: GeminiPart[] = salt === undefined ? [] : [{ text: salt }];
  const contents: GeminiContent[] = [];
  const toolNames = new Map<string, string>();
  const append = (role: 'user' | 'model', parts: GeminiPart[]) => {
    if (parts.length === 0) return;
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts!.push(...parts);
    else contents.push({ role, parts });
  };
  messages.forEach((message, i) => {
    const param = `messages[${i}]`;
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...contentParts(message.content, `${param}.content`, false));
        break;
      case 'user':
        append('user', contentParts(message.content, `${param}.content`, true));
        break;
      case 'assistant': {
        const parts = contentParts(message.content, `${param}.content`, false);
        (message.tool_calls ?? []).forEach((call, j) => {
          toolNames.set(call.id, call.function.name);
          parts.push({ functionCall: { name: call.function.name, args: toolArgumentsObject(call.function.arguments, `${param}.tool_calls[${j}].function.arguments`) } });
        });
        append('model', parts);
        break;
      }
      case 'tool': {
        const name = toolNames.get(message.tool_call_id);
        if (name === undefined) throw badRequest(`${param}.tool_call_id '${message.tool_call_id}' answers no earlier assistant tool call.`, `${param}.tool_call_id`);
        append('user', [{ functionResponse: { name, response: toolResponse(textOf(message.content)) } }]);
        break;
      }
    }
  });
  if (contents.length === 0) throw badRequest('messages must contain at least one user, assistant or tool message besides system messages.', 'messages');
  return { system, contents };
}

function toolConfig(request: ChatRequest): GeminiToolConfig | undefined {
  const choice = request.tool_choice;
  if (choice == null) return undefined;
  const names = new Set((request.tools ?? []).map((tool) => tool.function.name));
  if (choice === 'none') return { functionCallingConfig: { mode: 'NONE' } };
  if (choice === 'auto') return { functionCallingConfig: { mode: 'AUTO' } };
  if (names.size === 0) throw badRequest(`tool_choice needs tools.`, 'tool_choice');
  if (choice === 'required') return { functionCallingConfig: { mode: 'ANY' } };
  if (!names.has(choice.function.name)) throw badRequest(`tool_choice names '${choice.function.name}', which is not in tools.`, 'tool_choice');
  return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.function.name] } };
}

function generationConfig(request: ChatRequest, model: CatalogModel): GeminiGenerationConfig {
  const config: GeminiGenerationConfig = {};
  const cap = request.max_completion_tokens ?? request.max_tokens ?? model.capabilities.maxOutputTokens;
  config.maxOutputTokens = cap;
  if (request.temperature != null) config.temperature = request.temperature;
  if (request.top_p != null) config.topP = request.top_p;
  if (request.presence_penalty != null) config.presencePenalty = request.presence_penalty;
  if (request.frequency_penalty != null) config.frequencyPenalty = request.frequency_penalty;
  if (request.seed != null) {
    // Gemini's seed is a 32-bit integer; a larger one is the caller's 400 here, not the vendor's.
    if (request.seed < -2_147_483_648 || request.seed > 2_147_483_647) {
      throw badRequest(`Invalid value for 'seed': ${model.id} takes a seed from -2147483648 to 2147483647.`, 'seed');
    }
    config.seed = request.seed;
  }
  if (request.n != null && request.n > 1) config.candidateCount = request.n;
  if (request.stop != null) {
    const stops = typeof request.stop === 'string' ? [request.stop] : request.stop;
    if (stops.length > 0) config.stopSequences = stops;
  }
  const format = request.response_format;
  if (format?.type === 'json_object' || format?.type === 'json_schema') config.responseMimeType = 'application/json';
  if (format?.type === 'json_schema' && format.json_schema.schema) config.responseJsonSchema = format.json_schema.schema;
  if (model.capabilities.reasoning) {
    config.thinkingConfig = { thinkingBudget: thinkingBudget(request, model, cap), includeThoughts: request.include_reasoning !== false };
  }
  return config;
}

/**
 * A chat-completions request as a Gemini generateContent body. Pure; throws a 400 naming the field
 * for what Gemini cannot do. `cachePartition`, when the model caches prefixes, becomes the first
 * part of `systemInstruction`, so users never share an implicitly cached prefix.
 */
export function buildGeminiBody(request: ChatRequest, model: CatalogModel, cachePartition: string): GeminiRequestBody {
  for (const field of REFUSED_FIELDS) {
    const value = request[field];
    if (value != null && value !== false) throw badRequest(`'${field}' is not supported by ${model.id}.`, field, 'unsupported_parameter');
  }
  if (request.parallel_tool_calls === false) {
    throw badRequest(`'parallel_tool_calls: false' is not supported by ${model.id}: Gemini may call several functions in one turn.`, 'parallel_tool_calls', 'unsupported_parameter');
  }
  const salt = model.capabilities.promptCache === 'none' ? undefined : cacheSalt(cachePartition);
  const { system, contents } = translateMessages(request.messages, salt);
  const body: GeminiRequestBody = { contents, generationConfig: generationConfig(request, model) };
  if (system.length > 0) body.systemInstruction = { parts: system };
  if (request.tools?.length) {
    body.tools = [{
      functionDeclarations: request.tools.map((tool) => ({
        name: tool.function.name,
        ...(tool.function.description !== undefined ? { description: tool.function.description } : {}),
        ...(tool.function.parameters !== undefined ? { parametersJsonSchema: tool.function.parameters } : {}),
      })),
    }];
  }
  const config = toolConfig(request);
  if (config) body.toolConfig = config;
  return body;
}
