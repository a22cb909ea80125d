import { cacheSalt, type ChatFamily } from '../family.js';
import { vertexAuthorization, vertexModelUrl } from '../cloud/vertex.js';

/** The salt is a part of its own in systemInstruction: its framing costs a few tokens beyond its text. */
const SALT_PART_OVERHEAD = 16;
import { buildGeminiBody } from './request.js';
import { finishGeminiCompletion } from './response.js';
import { GeminiStreamRelay } from './stream-relay.js';

/** Google's Gemini API (generateContent): requests and answers translated both ways. */
export const geminiFamily: ChatFamily = {
  request(request, model, stream, target, cache) {
    const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
    const cloud = target.cloud;
    // Vertex AI: the project's publisher model, authorised by the service account's access token.
    const vertex = cloud?.kind === 'vertex';
    return {
      url: vertex ? vertexModelUrl(target.baseUrl, cloud, 'google', model.upstreamModel, method) : `${target.baseUrl}/models/${encodeURIComponent(model.upstreamModel)}:${method}`,
      headers: vertex
        ? { authorization: vertexAuthorization(target), 'content-type': 'application/json' } as Record<string, string>
        : { 'x-goog-api-key': target.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify(buildGeminiBody(request, model, cache.partition)),
      addedPromptBytes: model.capabilities.promptCache === 'none' ? 0 : Buffer.byteLength(cacheSalt(cache.partition)) + SALT_PART_OVERHEAD,
      guarded: target.guarded === true,
    };
  },
  finish(upstreamText, model, options) {
    return finishGeminiCompletion(upstreamText, model, options);
  },
  relay(model, options) {
    const relay = new GeminiStreamRelay(model.id, options);
    return {
      get usage() { return relay.usage; },
      get failure() { return relay.failure; },
      push: (chunk) => relay.push(chunk),
      flush: () => relay.flush(),
      generatedText: () => relay.generatedText(),
    };
  },
};
