import type { CatalogModel } from '../../catalog/model.js';
import type { ChatRequest } from '../../http/schemas/chat.js';
import { readOpenAiUsage, renderUsage } from '../usage.js';
import { cacheSalt, type FinishedCompletion } from '../family.js';

const SAMPLING_FIELDS = ['temperature', 'top_p', 'presence_penalty', 'frequency_penalty', 'logprobs', 'top_logprobs', 'logit_bias'] as const;

/**
 * The upstream body for an OpenAI-wire vendor: the caller's request with the gateway's own fields
 * mapped or removed, and its prompt cache kept to the caller's partition (see `promptCache`).
 * `withModel: false` leaves `model` out (an Azure deployment names it).
 */
export function buildOpenAiChatBody(request: ChatRequest, model: CatalogModel, stream: boolean, cachePartition: string, withModel = true): string {
  const body: Record<string, unknown> = { ...request, model: model.upstreamModel };
  // An Azure deployment names the model itself.
  if (!withModel) delete body.model;
  switch (model.capabilities.promptCache) {
    case 'key': body.prompt_cache_key = cachePartition; break;
    case 'prefix': body.messages = [{ role: 'system', content: cacheSalt(cachePartition) }, ...request.messages]; break;
    default: delete body.prompt_cache_key;
  }
  delete body.include_reasoning;
  delete body.max_tokens;
  delete body.max_completion_tokens;
  const cap = request.max_completion_tokens ?? request.max_tokens;
  if (cap != null) body[model.capabilities.maxTokensField] = cap;
  if (!model.capabilities.sampling) for (const field of SAMPLING_FIELDS) delete body[field];
  if (!model.capabilities.reasoning) delete body.reasoning_effort;
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  } else {
    delete body.stream;
    delete body.stream_options;
  }
  return JSON.stringify(body);
}

/** Rewrites a non-streaming upstream completion: the gateway's model id, usage as the spec words it, reasoning removed on request. */
export function finishOpenAiCompletion(upstreamText: string, modelId: string, includeReasoning: boolean): FinishedCompletion {
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
  if (usage) completion.usage = renderUsage(usage);
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
