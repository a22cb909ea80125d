import type { CatalogModel } from '../../catalog/model.js';
import type { ChatRequest } from '../../http/schemas/chat.js';
import { readOpenAiUsage, renderUsage, type NormalizedUsage } from '../usage.js';
import { cacheSalt, type FinishedCompletion } from '../family.js';

const SAMPLING_FIELDS: ReadonlySet<string> = new Set(['temperature', 'top_p', 'presence_penalty', 'frequency_penalty', 'logprobs', 'top_logprobs', 'logit_bias']);
/** The gateway's own fields, or fields it sets itself below. */
const NOT_COPIED: ReadonlySet<string> = new Set(['model', 'include_reasoning', 'max_tokens', 'max_completion_tokens', 'prompt_cache_key', 'stream', 'stream_options', 'reasoning_effort']);

/**
 * The upstream body for an OpenAI-wire vendor: the caller's request with the gateway's own fields
 * mapped or removed, and its prompt cache kept to the caller's partition (see `promptCache`).
 * `withModel: false` leaves `model` out (an Azure deployment names it).
 */
export function buildOpenAiChatBody(request: ChatRequest, model: CatalogModel, stream: boolean, cachePartition: string, withModel = true): string {
  const caps = model.capabilities;
  // Built field by field rather than copied and pruned: an object that loses properties turns slow to serialise.
  // An Azure deployment names the model itself.
  const body: Record<string, unknown> = withModel ? { model: model.upstreamModel } : {};
  const fields = request as Record<string, unknown>;
  for (const name in fields) {
    if (NOT_COPIED.has(name) || (!caps.sampling && SAMPLING_FIELDS.has(name))) continue;
    body[name] = fields[name];
  }
  if (caps.promptCache === 'key') body.prompt_cache_key = cachePartition;
  else if (caps.promptCache === 'prefix') body.messages = [{ role: 'system', content: cacheSalt(cachePartition) }, ...request.messages];
  const cap = request.max_completion_tokens ?? request.max_tokens;
  if (cap != null) body[caps.maxTokensField] = cap;
  if (caps.reasoning && request.reasoning_effort !== undefined) body.reasoning_effort = request.reasoning_effort;
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return JSON.stringify(body);
}

/** Rewrites a non-streaming upstream completion: the gateway's model id, usage as the spec words it, reasoning removed on request. */
export function finishOpenAiCompletion(upstreamText: string, modelId: string, includeReasoning: boolean, costOf?: (usage: NormalizedUsage) => number): FinishedCompletion {
  const completion = JSON.parse(upstreamText) as Record<string, any>;
  if (typeof completion !== 'object' || completion === null || !Array.isArray(completion.choices)) throw new Error('not a chat completion');
  let generated = '';
  for (const choice of completion.choices) {
    const message = choice?.message ?? {};
    generated += (message.reasoning_content ?? '') + (message.content ?? '');
    for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) generated += (call?.function?.name ?? '') + (call?.function?.arguments ?? '');
  }
  completion.model = modelId;
  const usage = readOpenAiUsage(completion.usage);
  if (usage) completion.usage = renderUsage(usage, costOf?.(usage));
  if (!includeReasoning && Array.isArray(completion.choices)) {
    for (const choice of completion.choices) {
      if (choice?.message) {
        delete choice.message.reasoning_content;
        delete choice.message.reasoning;
      }
    }
  }
  return { body: JSON.stringify(completion), usage, generated };
}
