import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import type { CatalogModel } from '../../catalog/model.js';
import { ApiError, badRequest } from '../errors.js';
import { parseJsonObject, parseWith } from '../schemas/issues.js';
import { ChatRequestSchema, type ChatRequest } from '../schemas/chat.js';
import { tokenCostNano, worstCaseCostNano, nanoToUsd } from '../../billing/pricing.js';
import { countTokens } from '../../billing/token-count.js';
import { buildOpenAiChatBody, finishOpenAiCompletion, type FinishedCompletion } from '../../providers/openai/chat.js';
import { OpenAiStreamRelay, generatedText } from '../../providers/openai/stream-relay.js';
import type { NormalizedUsage } from '../../providers/usage.js';
import type { LedgerEvent } from '../../ledger/event.js';
import { children, seconds } from '../../metrics.js';
import { log } from '../../log.js';

const SSE_HEADERS = Object.freeze({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
const NO_USAGE: NormalizedUsage = Object.freeze({ promptTokens: 0, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });

/** Rejects what the model cannot do before anything is reserved. */
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

/** The upstream's error, as an error of ours: the caller's fault stays a 4xx, ours or the vendor's is a 502. */
async function upstreamFailure(response: Dispatcher.ResponseData, vendor: string): Promise<ApiError> {
  let detail = '';
  try {
    const text = await response.body.text();
    const parsed = JSON.parse(text) as { error?: { message?: string } };
    detail = parsed.error?.message ?? text.slice(0, 500);
  } catch {
    // an unreadable error body: the status says enough
  }
  const status = response.statusCode;
  const suffix = detail ? `: ${detail}` : '';
  if (status === 400 || status === 404 || status === 413 || status === 422) return new ApiError(400, 'upstream_rejected', `The upstream vendor rejected the request${suffix}`);
  if (status === 429) {
    const retryAfter = String(response.headers['retry-after'] ?? '1');
    return new ApiError(429, 'upstream_rate_limited', `The upstream vendor is rate limiting this gateway${suffix}`, null, { 'retry-after': retryAfter });
  }
  return new ApiError(502, 'upstream_error', `The upstream vendor ${vendor} failed with status ${status}${suffix}`);
}

export function chatCompletions(services: Services) {
  const { admission, auth, metrics, upstream } = services;
  const ttfbOf = children((vendor) => metrics.upstreamTtfb.labels(vendor));
  const tokensOf = children((model, kind) => metrics.tokens.labels(model, kind));
  const costOf = children((model) => metrics.cost.labels(model));

  return async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx.headers.authorization);
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
    const caps = model.capabilities;
    const choices = request.n ?? 1;
    const maxOutput = (request.max_completion_tokens ?? request.max_tokens ?? caps.maxOutputTokens) * choices;
    // A token is at least one byte, so the body's size bounds the prompt's tokens; images are priced by the model's worst case.
    const maxInput = body.length + imageParts * caps.maxImageTokens;
    const reservedNano = worstCaseCostNano(model.prices, maxInput, maxOutput);
    const reservationId = randomUUID();
    await admission.reserve(key.userId, key.id, reservationId, reservedNano);

    const stream = request.stream === true;
    const includeReasoning = request.include_reasoning !== false;
    const startedAtMs = Date.now();
    let ttfbMs: number | null = null;
    let usage: NormalizedUsage | undefined;
    let status = 200;
    let errorCode: string | null = null;
    let clientAborted = false;
    let upstreamFailed = false;

    let settled = false;
    /** Settles once. Sent before the response's last bytes, so a crash after the client has its answer cannot lose the charge. */
    const settleOnce = (): void => {
      if (settled) return;
      settled = true;
      settle().catch((error) => log.error('settlement failed; the reservation stays held until it expires', { reservationId, error }));
    };
    const settle = async (): Promise<void> => {
      const charge = upstreamFailed || !usage ? 0n : tokenCostNano(model.prices, usage);
      const counted = usage ?? NO_USAGE;
      const event: LedgerEvent = {
        userId: key.userId, keyId: key.id, model: model.id, endpoint: 'chat.completions', stream, status, errorCode,
        promptTokens: counted.promptTokens, completionTokens: counted.completionTokens, cachedTokens: counted.cachedTokens,
        reasoningTokens: counted.reasoningTokens, reservedNano: reservedNano.toString(), startedAtMs,
        durationMs: Date.now() - startedAtMs, ttfbMs, clientAborted,
      };
      const charged = await admission.settle(key.userId, reservationId, charge, JSON.stringify(event));
      if (charge > charged) log.error('charge exceeded its reservation', { reservationId, model: model.id, charge: String(charge), reserved: String(reservedNano) });
      if (charged > 0n) {
        tokensOf(model.id, 'prompt').inc(counted.promptTokens - counted.cachedTokens);
        if (counted.cachedTokens) tokensOf(model.id, 'cached').inc(counted.cachedTokens);
        tokensOf(model.id, 'completion').inc(counted.completionTokens);
        if (counted.reasoningTokens) tokensOf(model.id, 'reasoning').inc(counted.reasoningTokens);
        costOf(model.id).inc(nanoToUsd(charged));
      }
    };

    // Only a stream is cut short when its client leaves; creating a signal for every call costs CPU.
    const abort = stream ? new AbortController() : undefined;
    try {
      // A key revoked while this request waited must not reach the upstream.
      if (auth.isRevoked(key.publicId)) throw new ApiError(401, 'key_revoked', 'This API key was revoked.');
      if (stream) {
        // A streaming client that leaves stops the upstream at once; a non-streaming call runs to its usage.
        ctx.reply.onAbort(() => {
          clientAborted = true;
          abort!.abort();
        });
      }
      const upstreamStarted = process.hrtime.bigint();
      let response: Dispatcher.ResponseData;
      try {
        response = await upstream.post(vendor.chatCompletions, vendor.headers as Record<string, string>, buildOpenAiChatBody(request, model, stream), abort?.signal);
      } catch (error) {
        if (clientAborted) throw new ApiError(499, 'client_closed', 'The client closed the connection before the upstream answered.');
        metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: 'connect' });
        throw new ApiError(502, 'upstream_unreachable', `The upstream vendor ${model.upstreamVendor} could not be reached: ${(error as Error).message}`);
      }
      if (response.statusCode !== 200) {
        metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: String(response.statusCode) });
        throw await upstreamFailure(response, model.upstreamVendor);
      }
      if (!stream) {
        const text = await response.body.text();
        ttfbMs = Date.now() - startedAtMs;
        ttfbOf(model.upstreamVendor).observe(seconds(upstreamStarted));
        let finished: FinishedCompletion;
        try {
          finished = finishOpenAiCompletion(text, model.id, includeReasoning);
        } catch {
          metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: 'invalid_body' });
          throw new ApiError(502, 'upstream_invalid_response', `The upstream vendor ${model.upstreamVendor} answered with a body that is not a chat completion.`);
        }
        usage = finished.usage ?? (await countCompletion(request, JSON.parse(text)));
        settleOnce();
        ctx.reply.send(200, finished.body);
        return;
      }

      // Streaming: bytes flow through as they come, paused while the client is slow.
      const relay = new OpenAiStreamRelay(model.id, includeReasoning);
      const upstreamBody = response.body;
      ctx.reply.beginStream(200, SSE_HEADERS);
      metrics.activeStreams.inc();
      try {
        await new Promise<void>((resolve, reject) => {
          upstreamBody.on('data', (chunk: Buffer) => {
            if (ttfbMs === null) {
              ttfbMs = Date.now() - startedAtMs;
              ttfbOf(model.upstreamVendor).observe(seconds(upstreamStarted));
            }
            const out = relay.push(chunk);
            if (relay.usage && !usage) {
              usage = relay.usage;
              settleOnce();
            }
            if (out && !ctx.reply.write(out)) {
              upstreamBody.pause();
              ctx.reply.whenWritable(() => upstreamBody.resume());
            }
          });
          upstreamBody.on('end', resolve);
          upstreamBody.on('error', reject);
        });
        const rest = relay.flush();
        if (rest) ctx.reply.write(rest);
        usage = relay.usage ?? (await countStream(request, relay));
        settleOnce();
        ctx.reply.end();
      } catch (error) {
        if (clientAborted) {
          // The client left: it pays for the prompt and what was generated before it left.
          usage = relay.usage ?? (await countStream(request, relay));
          status = 499;
          return;
        }
        upstreamFailed = true;
        status = 502;
        errorCode = 'upstream_stream_broken';
        metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: 'stream_broken' });
        log.warn('upstream stream broke', { model: model.id, error });
        ctx.reply.write(`data: ${JSON.stringify({ error: { message: 'The upstream stream ended unexpectedly.', type: 'api_error', code: 'upstream_stream_broken' } })}\n\n`);
        ctx.reply.end();
      } finally {
        metrics.activeStreams.dec();
      }
    } catch (error) {
      upstreamFailed = true;
      status = error instanceof ApiError ? error.status : 500;
      errorCode = error instanceof ApiError ? error.code : 'internal_error';
      throw error;
    } finally {
      settleOnce();
    }
  };
}

/** Usage counted with the tokenizer when the upstream reported none. */
async function countCompletion(request: ChatRequest, completion: { choices?: { message?: { content?: string | null; reasoning_content?: string } }[] }): Promise<NormalizedUsage> {
  const text = (completion.choices ?? []).map((choice) => (choice.message?.reasoning_content ?? '') + (choice.message?.content ?? '')).join('');
  return { ...NO_USAGE, ...(await countTokens(request.messages, text)) };
}

async function countStream(request: ChatRequest, relay: OpenAiStreamRelay): Promise<NormalizedUsage> {
  return { ...NO_USAGE, ...(await countTokens(request.messages, generatedText(relay.received))) };
}
