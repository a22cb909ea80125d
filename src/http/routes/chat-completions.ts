import { randomUUID } from 'node:crypto';
import type { RequestContext } from '../router.js';
import type { Services, VendorRoute } from '../../services.js';
import type { CatalogModel } from '../../catalog/model.js';
import { ApiError, badRequest } from '../errors.js';
import { parseJsonObject, parseWith } from '../schemas/issues.js';
import { ChatRequestSchema, type ChatRequest } from '../schemas/chat.js';
import { SSE_HEADERS, pipeEvents, sseErrorEvent } from '../sse.js';
import { worstCaseCostNano } from '../../billing/pricing.js';
import { countTokens } from '../../billing/token-count.js';
import { MeteredCall, NO_USAGE } from '../../billing/metered-call.js';
import { buildOpenAiChatBody, finishOpenAiCompletion, type FinishedCompletion } from '../../providers/openai/chat.js';
import { OpenAiStreamRelay, generatedText } from '../../providers/openai/stream-relay.js';
import { upstreamFailure } from '../../providers/upstream-errors.js';
import type { UpstreamResponse } from '../../providers/upstream-client.js';
import type { NormalizedUsage } from '../../providers/usage.js';
import { children, seconds, usageRecorder } from '../../metrics.js';
import { log } from '../../log.js';

/** Rejects what the model cannot do before anything is reserved; returns the number of image parts. */
function checkCapabilities(request: ChatRequest, model: CatalogModel): number {
  const caps = model.capabilities;
  let imageParts = 0;
  for (const message of request.messages) {
    const content = (message as { content?: unknown }).content;
    if (Array.isArray(content)) for (const part of content) if (part.type === 'image_url') imageParts++;
  }
  if (imageParts > 0 && !caps.vision) throw badRequest(`Model ${model.id} does not accept images.`, 'messages', 'unsupported_content');
  if (request.tools?.length && !caps.tools) throw badRequest(`Model ${model.id} does not support tools.`, 'tools', 'unsupported_parameter');
  const format = request.response_format?.type;
  if (format && format !== 'text' && !caps.jsonMode) throw badRequest(`Model ${model.id} does not support response_format ${format}.`, 'response_format', 'unsupported_parameter');
  const cap = request.max_completion_tokens ?? request.max_tokens;
  if (cap != null && cap > caps.maxOutputTokens) {
    const field = request.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens';
    throw badRequest(`'${field}' is ${cap}, above the maximum of ${caps.maxOutputTokens} output tokens of ${model.id}.`, field);
  }
  return imageParts;
}

/**
 * The worst case a call can cost: a token is at least one byte, so the body's size bounds the
 * prompt's tokens; images at the model's worst image cost; the whole output allowance for each choice.
 */
function reservationFor(request: ChatRequest, model: CatalogModel, bodyBytes: number, imageParts: number): bigint {
  const caps = model.capabilities;
  const maxOutput = (request.max_completion_tokens ?? request.max_tokens ?? caps.maxOutputTokens) * (request.n ?? 1);
  return worstCaseCostNano(model.prices, bodyBytes + imageParts * caps.maxImageTokens, maxOutput);
}

/** Usage counted with the tokenizer when the upstream reported none. */
async function countedUsage(request: ChatRequest, generated: string): Promise<NormalizedUsage> {
  return { ...NO_USAGE, ...(await countTokens(request.messages, generated)) };
}

function completionText(upstreamText: string): string {
  const completion = JSON.parse(upstreamText) as { choices?: { message?: { content?: string | null; reasoning_content?: string } }[] };
  return (completion.choices ?? []).map((choice) => (choice.message?.reasoning_content ?? '') + (choice.message?.content ?? '')).join('');
}

/** POST /v1/chat/completions for models of the OpenAI wire family. */
export function chatCompletions(services: Services) {
  const { admission, auth, metrics, upstream } = services;
  const ttfbOf = children((vendor) => metrics.upstreamTtfb.labels(vendor));
  const recordUsage = usageRecorder(metrics);

  /** Non-streaming: the whole completion, rewritten, after the settlement was sent. */
  async function complete(ctx: RequestContext, call: MeteredCall, request: ChatRequest, response: UpstreamResponse, includeReasoning: boolean, headers: Readonly<Record<string, string>>): Promise<void> {
    const { model } = call.identity;
    const text = await response.text();
    call.firstByte();
    let finished: FinishedCompletion;
    try {
      finished = finishOpenAiCompletion(text, model.id, includeReasoning);
    } catch {
      metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: 'invalid_body' });
      throw new ApiError(502, 'upstream_invalid_response', `The upstream vendor ${model.upstreamVendor} answered with a body that is not a chat completion.`);
    }
    call.settle(finished.usage ?? (await countedUsage(request, completionText(text))));
    ctx.reply.send(200, finished.body, 'application/json', headers);
  }

  /** Streaming: bytes flow through as they come; the usage event settles the call before the stream ends. */
  async function relay(ctx: RequestContext, call: MeteredCall, request: ChatRequest, response: UpstreamResponse, includeReasoning: boolean, upstreamStarted: bigint, headers: Readonly<Record<string, string>>): Promise<void> {
    const { model } = call.identity;
    const events = new OpenAiStreamRelay(model.id, includeReasoning);
    ctx.reply.beginStream(200, { ...SSE_HEADERS, ...headers });
    metrics.activeStreams.inc();
    try {
      await pipeEvents(response, ctx.reply, events, () => {
        if (call.firstByte()) ttfbOf(model.upstreamVendor).observe(seconds(upstreamStarted));
        if (events.usage && !call.usage) call.settle(events.usage);
      });
      const rest = events.flush();
      if (rest) ctx.reply.write(rest);
      call.settle(events.usage ?? (await countedUsage(request, generatedText(events.received))));
      ctx.reply.end();
    } catch (error) {
      if (call.clientAborted) {
        // The client left: it pays for the prompt and what was generated before it left.
        call.status = 499;
        call.settle(events.usage ?? (await countedUsage(request, generatedText(events.received))));
        return;
      }
      call.fail(502, 'upstream_stream_broken');
      metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: 'stream_broken' });
      log.warn('upstream stream broke', { model: model.id, error });
      ctx.reply.write(sseErrorEvent('upstream_stream_broken', 'The upstream stream ended unexpectedly.'));
      ctx.reply.end();
    } finally {
      metrics.activeStreams.dec();
    }
  }

  async function callUpstream(ctx: RequestContext, call: MeteredCall, vendor: VendorRoute, request: ChatRequest, upstreamBody: string, headers: Readonly<Record<string, string>>): Promise<void> {
    const { model, stream } = call.identity;
    const includeReasoning = request.include_reasoning !== false;
    // Only a stream is cut short when its client leaves (a signal for every call would cost CPU);
    // a non-streaming call runs to its usage.
    const abort = stream ? new AbortController() : undefined;
    if (abort) {
      ctx.reply.onAbort(() => {
        call.clientAborted = true;
        abort.abort();
      });
    }
    const upstreamStarted = process.hrtime.bigint();
    let response: UpstreamResponse;
    try {
      response = await upstream.post(vendor.chatCompletions, vendor.headers as Record<string, string>, upstreamBody, abort?.signal);
    } catch (error) {
      if (call.clientAborted) throw new ApiError(499, 'client_closed', 'The client closed the connection before the upstream answered.');
      metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: 'connect' });
      throw new ApiError(502, 'upstream_unreachable', `The upstream vendor ${model.upstreamVendor} could not be reached: ${(error as Error).message}`);
    }
    if (response.status !== 200) {
      metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: String(response.status) });
      throw await upstreamFailure(response, model.upstreamVendor);
    }
    if (!stream) {
      await complete(ctx, call, request, response, includeReasoning, headers);
      ttfbOf(model.upstreamVendor).observe(seconds(upstreamStarted));
    } else {
      await relay(ctx, call, request, response, includeReasoning, upstreamStarted, headers);
    }
  }

  return async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx.headers.authorization, ctx.clientAddress);
    if (ctx.headers.contentType.split(';', 1)[0]!.trim().toLowerCase() !== 'application/json') {
      throw new ApiError(415, 'unsupported_media_type', 'Content-Type must be application/json.');
    }
    const body = await ctx.body();
    const request = parseWith(ChatRequestSchema, parseJsonObject(body));
    const model = services.catalog().get(request.model);
    if (!model) throw new ApiError(404, 'model_not_found', `The model '${request.model}' does not exist or is not available.`, 'model');
    const vendor = model.family === 'openai' ? services.vendors[model.upstreamVendor] : undefined;
    if (!vendor) {
      throw badRequest(`The model '${model.id}' is served through the ${model.family} wire family, which this gateway does not serve yet.`, 'model', 'model_not_supported');
    }
    const imageParts = checkCapabilities(request, model);
    const reservedNano = reservationFor(request, model, body.length, imageParts);
    const callId = randomUUID();
    const stream = request.stream === true;
    const admitting = admission.admit(key.userId, key.id, reservedNano, key.row.rate_limit_rpm);
    // Built while admission may be making its round trip.
    const upstreamBody = buildOpenAiChatBody(request, model, stream);
    const admitted = await admitting;

    const call = new MeteredCall(admission, admitted, recordUsage, {
      userId: key.userId, keyId: key.id, model, endpoint: 'chat.completions', stream, callId, reservedNano,
    });
    try {
      // A key revoked while this request waited must not reach the upstream.
      if (auth.isRevoked(key.publicId)) throw new ApiError(401, 'key_revoked', 'This API key was revoked.');
      // The request id is the call id: the key of its request log and of its usage transaction.
      await callUpstream(ctx, call, vendor, request, upstreamBody, { ...admitted.headers, 'x-request-id': callId });
    } catch (error) {
      call.fail(error instanceof ApiError ? error.status : 500, error instanceof ApiError ? error.code : 'internal_error');
      throw error;
    } finally {
      call.settle();
    }
  };
}
