import { cacheSalt, type ChatFamily } from '../family.js';
import type { ChatRequest } from '../../http/schemas/chat.js';
import { ANTHROPIC_VERSION, JSON_OBJECT_INSTRUCTION, buildAnthropicBody } from './request.js';

/**
 * Anthropic adds a system prompt of its own (a few hundred tokens) to any call with tools, which the
 * caller's body does not contain; a JSON schema is sent as a forced tool, so it counts too.
 */
const TOOL_SYSTEM_PROMPT_BYTES = 1024;
/** Each added system block's framing, beyond its text. */
const BLOCK_OVERHEAD_BYTES = 16;

/** Prompt text Anthropic bills that the caller's body does not hold (see UpstreamRequest.addedPromptBytes). */
export function addedPromptBytes(request: ChatRequest, partition: string): number {
  let bytes = Buffer.byteLength(cacheSalt(partition)) + BLOCK_OVERHEAD_BYTES;
  const format = request.response_format?.type;
  if (format === 'json_object') bytes += JSON_OBJECT_INSTRUCTION.length + BLOCK_OVERHEAD_BYTES;
  if (request.tools?.length || format === 'json_schema') bytes += TOOL_SYSTEM_PROMPT_BYTES;
  return bytes;
}
import { finishAnthropicMessage } from './answer.js';
import { AnthropicStreamRelay } from './stream-relay.js';
import { BedrockStreamRelay, bedrockRequest } from './bedrock.js';
import { vertexRequest } from './vertex.js';

/**
 * Anthropic's Messages API behind chat completions: every request and answer is translated. Claude
 * on Bedrock and on Vertex AI (whose stream is Anthropic's own SSE) are the same API in another frame.
 */
export const anthropicFamily: ChatFamily = {
  request(request, model, stream, target, cache) {
    if (target.cloud?.kind === 'bedrock') {
      return { ...bedrockRequest(request, model, stream, target, target.cloud, cache), addedPromptBytes: addedPromptBytes(request, cache.partition) };
    }
    if (target.cloud?.kind === 'vertex') {
      return { ...vertexRequest(request, model, stream, target, target.cloud, cache), addedPromptBytes: addedPromptBytes(request, cache.partition) };
    }
    return {
      url: `${target.baseUrl}/messages`,
      headers: { 'x-api-key': target.apiKey, 'anthropic-version': ANTHROPIC_VERSION, 'content-type': 'application/json' },
      body: JSON.stringify(buildAnthropicBody(request, model, stream, cache.partition)),
      addedPromptBytes: addedPromptBytes(request, cache.partition),
      guarded: target.guarded === true,
    };
  },
  finish(upstreamText, model, options) {
    return finishAnthropicMessage(upstreamText, model.id, options);
  },
  relay(model, options, target) {
    return target?.cloud?.kind === 'bedrock' ? new BedrockStreamRelay(new AnthropicStreamRelay(model.id, options)) : new AnthropicStreamRelay(model.id, options);
  },
};
