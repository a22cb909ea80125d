import type { CatalogModel } from '../../catalog/model.js';
import type { ChatRequest } from '../../http/schemas/chat.js';
import { readOpenAiUsage, renderUsage, type NormalizedUsage } from '../usage.js';

const SAMPLING_FIELDS = ['temperature', 'top_p', 'presence_penalty', 'frequency_penalty', 'logprobs', 'top_logprobs', 'logit_bias'] as const;

/** The upstream body for an OpenAI-wire vendor: the caller's request with the gateway's own fields mapped or removed. */
export function buildOpenAiChatBody(request: ChatRequest, model: CatalogModel, stream: boolean): string {
  const body: Record<string, unknown> = { ...request, model: model.upstreamModel };
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

export interface FinishedCompletion {
  readonly body: string;
  readonly usage: NormalizedUsage | undefined;
}

/** Rewrites a non-streaming upstream completion: the gateway's model id, usage as the spec words it, reasoning removed on request. */
export function finishOpenAiCompletion(upstreamText: string, modelId: string, includeReasoning: boolean): FinishedCompletion {
  const completion = JSON.parse(upstreamText) as Record<string, any>;
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
  return { body: JSON.stringify(completion), usage };
}
