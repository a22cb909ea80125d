import type { RequestContext, RequestHeaders } from '../router.js';
import type { Services } from '../../services.js';
import type { ChatRequest } from '../schemas/chat.js';
import type { ChatOutput } from './chat-completions.js';
import { ApiError, modelNotFound, requireJson } from '../errors.js';
import { parseJsonObject } from '../schemas/issues.js';
import { catalogModelId } from '../messages/model-ids.js';
import { MESSAGES_FIELD_NAMES, messagesToChatRequest } from '../messages/to-chat.js';
import { messageFromCompletion, messageIdOf } from '../messages/message-object.js';
import { MessagesEventRelay } from '../messages/event-stream.js';
import { nativeAnthropicFamily, type NativeMessages } from '../../providers/anthropic/native.js';
import { ANTHROPIC_VERSION } from '../../providers/anthropic/request.js';
import { countTokens } from '../../billing/token-count.js';
import { nanoToUsd } from '../../billing/pricing.js';
import { UpstreamAbort, endpointFor } from '../../providers/upstream-client.js';
import { upstreamErrorAsIs, upstreamUnreachable } from '../../providers/upstream-errors.js';

/** The caller's own request behind each parsed one, for the models whose upstream speaks it (Anthropic's). */
const natives = new WeakMap<ChatRequest, NativeMessages>();
const nativeOf = (request: ChatRequest): NativeMessages => {
  const native = natives.get(request);
  if (!native) throw new Error('a /v1/messages request reached the Anthropic family without its body');
  return native;
};

/** The body with its model, and the models it may fall back to, as the catalog names them (see catalogModelId). */
function withCatalogModel(body: Record<string, unknown>, services: Services): Record<string, unknown> {
  const catalog = services.catalog();
  const resolved = (name: unknown) => (typeof name === 'string' ? catalogModelId(name, catalog) : name);
  const model = resolved(body.model);
  const fallbacks = Array.isArray(body.models) ? body.models : undefined;
  const models = fallbacks?.map(resolved);
  const renamed = model !== body.model || models?.some((name, i) => name !== fallbacks![i]) === true;
  return renamed ? { ...body, model, ...(models ? { models } : {}) } : body;
}

/**
 * Whether every model the body names (`model`, and the `models` it may fall back to) is served by a
 * family that speaks Messages natively: then nothing of it need translate, and what no chat family
 * takes is left to Anthropic instead of refused.
 */
function passesThrough(body: Record<string, unknown>, services: Services): boolean {
  const catalog = services.catalog();
  const names = [body.model, ...(Array.isArray(body.models) ? body.models : [])];
  return names.every((name) => typeof name === 'string' && catalog.get(name)?.family === 'anthropic');
}

function parse(body: Record<string, unknown>, _userId: string, services: Services, headers: RequestHeaders): ChatRequest {
  const resolved = withCatalogModel(body, services);
  const request = messagesToChatRequest(resolved, { passThrough: passesThrough(resolved, services) });
  natives.set(request, { body: resolved, version: headers.anthropic?.version ?? '', beta: headers.anthropic?.beta ?? '' });
  return request;
}

/**
 * POST /v1/messages: Anthropic's Messages API, served by the chat pipeline (the same admission, BYOK,
 * routing, settlement and logging). Anthropic models take the caller's body and answer with the
 * upstream's own bytes (the native family); every other model's answer is translated from the chat
 * completion or its chunk stream into a Message or Anthropic's stream events.
 */
export const MESSAGES_OUTPUT: ChatOutput = Object.freeze<ChatOutput>({
  endpoint: 'messages',
  parse,
  fieldNames: MESSAGES_FIELD_NAMES,
  render: (completionJson, usage, call) => messageFromCompletion(completionJson, usage, { id: messageIdOf(call.identity.callId), model: call.identity.model.id, costOf: (counted) => nanoToUsd(call.chargeFor(counted)) }),
  stream: (relay, call, _request, _services, options) => new MessagesEventRelay(relay, { id: messageIdOf(call.identity.callId), model: call.identity.model.id, costOf: options.costOf }, options.maxGeneratedChars),
  native: Object.freeze({ anthropic: nativeAnthropicFamily(nativeOf) }),
});

/** The longest a vendor's token count may take before the gateway gives up on it. */
const COUNT_TIMEOUT_MS = 30_000;

/**
 * POST /v1/messages/count_tokens: the prompt's input tokens, uncharged (counted in the key's request
 * window as any other call). Exact for Anthropic models with a platform credential of Anthropic's own
 * API (the vendor's count_tokens endpoint); an estimate for the rest: the o200k count of the messages
 * as the chat pipeline counts a prompt, plus the tool definitions' JSON.
 */
export function countMessageTokens(services: Services) {
  return async (ctx: RequestContext): Promise<void> => {
    const found = services.auth.apiKey(ctx);
    if (found instanceof Promise) await found;
    requireJson(ctx.headers.contentType);
    const body = withCatalogModel(parseJsonObject(await ctx.body()), services);
    const { max_tokens: _max, stream: _stream, ...counted } = body;
    const request = messagesToChatRequest({ ...counted, max_tokens: 1 }, { passThrough: passesThrough(body, services) });
    const model = services.catalog().get(request.model);
    if (!model) throw modelNotFound(request.model);
    const target = model.family === 'anthropic' ? services.routing.targetsOf(model)?.find((candidate) => candidate.cloud === undefined && candidate.apiKey !== '') : undefined;
    if (!target) {
      // The tool definitions counted as text, where Anthropic counts them with the prompt.
      const { promptTokens, completionTokens } = await countTokens(request.messages, request.tools?.length ? JSON.stringify(request.tools) : '');
      ctx.reply.json(200, { input_tokens: promptTokens + completionTokens });
      return;
    }
    const abort = new UpstreamAbort();
    ctx.reply.onAbort(() => abort.abort());
    const timer = setTimeout(() => abort.abort(), COUNT_TIMEOUT_MS);
    const anthropic = ctx.headers.anthropic;
    const headers: Record<string, string> = { 'x-api-key': target.apiKey, 'anthropic-version': anthropic?.version || ANTHROPIC_VERSION, 'content-type': 'application/json' };
    if (anthropic?.beta) headers['anthropic-beta'] = anthropic.beta;
    try {
      let response;
      try {
        response = await services.upstream.post(endpointFor(`${target.baseUrl}/messages/count_tokens`, target.guarded === true), headers, JSON.stringify({ ...counted, model: target.model ?? model.upstreamModel }), abort);
      } catch (error) {
        throw upstreamUnreachable(error, model.upstreamVendor, target.guarded === true);
      }
      if (response.status !== 200) throw await upstreamErrorAsIs(response, model.upstreamVendor);
      let inputTokens: unknown;
      try {
        inputTokens = (JSON.parse(await response.text()) as { input_tokens?: unknown }).input_tokens;
      } catch (error) {
        throw upstreamUnreachable(error, model.upstreamVendor, target.guarded === true);
      }
      if (typeof inputTokens !== 'number' || !Number.isSafeInteger(inputTokens) || inputTokens < 0) {
        throw new ApiError(502, 'upstream_invalid_response', `The upstream vendor ${model.upstreamVendor} answered the token count without a count.`);
      }
      ctx.reply.json(200, { input_tokens: inputTokens });
    } finally {
      clearTimeout(timer);
    }
  };
}
