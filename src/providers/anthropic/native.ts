import type { Message } from '@anthropic-ai/sdk/resources/messages';
import type { ChatRequest } from '../../http/schemas/chat.js';
import { cacheSalt, type ChatFamily, type UpstreamRequest } from '../family.js';
import { signSigV4 } from '../cloud/sigv4.js';
import { vertexAuthorization, vertexModelUrl } from '../cloud/vertex.js';
import { readAnthropicUsage } from './answer.js';
import { BEDROCK_ANTHROPIC_VERSION, BedrockStreamRelay, bedrockModelId } from './bedrock.js';
import { addedPromptBytes } from './family.js';
import { AnthropicPassThroughRelay } from './pass-through-relay.js';
import { ANTHROPIC_VERSION } from './request.js';
import { VERTEX_ANTHROPIC_VERSION } from './vertex.js';

/** A Messages API request as its caller sent it: the body (its `model` a catalog id) and the two headers passed on. */
export interface NativeMessages {
  readonly body: Readonly<Record<string, unknown>>;
  /** `anthropic-version` ('' when not sent: the gateway's own then). */
  readonly version: string;
  /** `anthropic-beta`, comma-separated ('' when not sent). */
  readonly beta: string;
}

/**
 * The caller's system prompt with the cache-scope block ahead of it (as the chat path salts it), so
 * that prefixes cached upstream are never shared between two users; the caller's own blocks and
 * `cache_control` breakpoints follow unchanged.
 */
function saltedSystem(system: unknown, partition: string): unknown[] {
  const salt = { type: 'text', text: cacheSalt(partition) };
  if (typeof system === 'string') return system === '' ? [salt] : [salt, { type: 'text', text: system }];
  return Array.isArray(system) ? [salt, ...system] : [salt];
}

/**
 * Anthropic's Messages API spoken to a client of the same API (/v1/messages): the caller's body goes
 * upstream as sent apart from `model` (the upstream's id), the cache-scope system block and
 * `metadata.user_id` (the user's opaque cache partition, as on chat); the answer, whole or streamed,
 * comes back as the upstream's bytes, read only for usage. On Bedrock and Vertex AI the body takes
 * their `anthropic_version` instead of `model` (Bedrock: the betas in `anthropic_beta`), and Bedrock's
 * event stream is re-framed as Anthropic's SSE. `nativeOf` gives the caller's request behind a parsed one.
 */
export function nativeAnthropicFamily(nativeOf: (request: ChatRequest) => NativeMessages): ChatFamily {
  return {
    request(request, model, stream, target, cache): UpstreamRequest {
      const native = nativeOf(request);
      // `models` is the gateway's own (fallbacks), not Anthropic's.
      const { model: _model, models: _models, stream: _stream, ...rest } = native.body;
      const body: Record<string, unknown> = { ...rest, system: saltedSystem(rest.system, cache.partition), metadata: { user_id: cache.partition } };
      const added = addedPromptBytes(request, cache.partition);
      const guarded = target.guarded === true;
      const betas = native.beta.split(',').map((beta) => beta.trim()).filter((beta) => beta !== '');
      const cloud = target.cloud;
      if (cloud?.kind === 'bedrock') {
        delete body.metadata;
        const json = JSON.stringify({ anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...body, ...(betas.length > 0 ? { anthropic_beta: betas } : {}) });
        const url = `${target.baseUrl}/model/${encodeURIComponent(bedrockModelId(model, cloud.modelMap))}/${stream ? 'invoke-with-response-stream' : 'invoke'}`;
        const headers: Record<string, string> = { 'content-type': 'application/json', accept: stream ? 'application/vnd.amazon.eventstream' : 'application/json' };
        return { url, headers: { ...headers, ...signSigV4({ method: 'POST', url, headers, body: json, region: cloud.region, service: 'bedrock' }, cloud, new Date()) }, body: json, addedPromptBytes: added, guarded };
      }
      if (stream) body.stream = true;
      const betaHeader: Record<string, string> = betas.length > 0 ? { 'anthropic-beta': betas.join(',') } : {};
      if (cloud?.kind === 'vertex') {
        return {
          url: vertexModelUrl(target.baseUrl, cloud, 'anthropic', model.upstreamModel, stream ? 'streamRawPredict' : 'rawPredict'),
          headers: { authorization: vertexAuthorization(target), 'content-type': 'application/json', ...betaHeader },
          body: JSON.stringify({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...body }),
          addedPromptBytes: added, guarded,
        };
      }
      return {
        url: `${target.baseUrl}/messages`,
        headers: { 'x-api-key': target.apiKey, 'anthropic-version': native.version || ANTHROPIC_VERSION, 'content-type': 'application/json', ...betaHeader },
        body: JSON.stringify({ model: model.upstreamModel, ...body }),
        addedPromptBytes: added, guarded,
      };
    },
    finish(upstreamText) {
      const message = JSON.parse(upstreamText) as Message;
      if (typeof message !== 'object' || message === null || message.type !== 'message' || !Array.isArray(message.content)) throw new Error('not an Anthropic message');
      let generated = '';
      for (const block of message.content) {
        if (block.type === 'text') generated += block.text;
        else if (block.type === 'thinking') generated += block.thinking;
        else if (block.type === 'tool_use') generated += block.name + JSON.stringify(block.input ?? {});
      }
      return { body: upstreamText, usage: readAnthropicUsage(message.usage), generated };
    },
    relay(_model, options, target) {
      const relay = new AnthropicPassThroughRelay(options.maxEventBytes, options.maxGeneratedChars);
      return target?.cloud?.kind === 'bedrock' ? new BedrockStreamRelay(relay) : relay;
    },
  };
}
