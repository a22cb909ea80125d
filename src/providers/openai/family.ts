import { cacheSalt, type ChatFamily, type UpstreamTarget } from '../family.js';

/** The salt goes in as a system message: its role and framing cost a few tokens beyond its text. */
const SALT_MESSAGE_OVERHEAD = 16;
import { buildOpenAiChatBody, finishOpenAiCompletion } from './chat.js';
import { OpenAiStreamRelay } from './stream-relay.js';

/**
 * A target's URL and headers, made once per target: a platform target lives as long as the process,
 * and the upstream client keeps the request head it serialised for a headers object it sees again.
 */
type TargetEndpoint = { readonly url: string; readonly headers: Readonly<Record<string, string>>; readonly guarded: boolean };
const targetEndpoints = new WeakMap<UpstreamTarget, TargetEndpoint>();
function targetEndpointOf(target: UpstreamTarget): TargetEndpoint {
  let endpoint = targetEndpoints.get(target);
  if (!endpoint) {
    endpoint = Object.freeze({
      url: `${target.baseUrl}/chat/completions`,
      headers: Object.freeze({ authorization: `Bearer ${target.apiKey}`, 'content-type': 'application/json' }),
      guarded: target.guarded === true,
    });
    targetEndpoints.set(target, endpoint);
  }
  return endpoint;
}

/** Vendors that speak OpenAI's chat completions: requests pass through nearly as sent, streams byte for byte. */
export const openAiFamily: ChatFamily = {
  request(request, model, stream, target, cache) {
    const cloud = target.cloud;
    if (cloud?.kind === 'azure') {
      // Azure OpenAI: the deployment names the model, so the body carries none.
      return {
        url: `${target.baseUrl}/openai/deployments/${encodeURIComponent(cloud.deployment)}/chat/completions?api-version=${encodeURIComponent(cloud.apiVersion)}`,
        headers: { 'api-key': target.apiKey, 'content-type': 'application/json' } as Record<string, string>,
        body: buildOpenAiChatBody(request, model, stream, cache.partition, false),
        addedPromptBytes: model.capabilities.promptCache === 'prefix' ? Buffer.byteLength(cacheSalt(cache.partition)) + SALT_MESSAGE_OVERHEAD : 0,
        guarded: target.guarded === true,
      };
    }
    return {
      ...targetEndpointOf(target),
      body: buildOpenAiChatBody(request, model, stream, cache.partition),
      addedPromptBytes: model.capabilities.promptCache === 'prefix' ? Buffer.byteLength(cacheSalt(cache.partition)) + SALT_MESSAGE_OVERHEAD : 0,
    };
  },
  finish(upstreamText, model, options) {
    return finishOpenAiCompletion(upstreamText, model.id, options.includeReasoning, options.costOf);
  },
  relay(model, options) {
    return new OpenAiStreamRelay(model.id, options.includeReasoning, options.maxEventBytes, options.maxGeneratedChars, options.costOf);
  },
};
