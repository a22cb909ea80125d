import { createHmac } from 'node:crypto';
import type { RequestContext, RequestHeaders } from '../router.js';
import type { Services } from '../../services.js';
import type { CatalogModel, Family } from '../../catalog/model.js';
import { ApiError, badRequest, modelNotFound, requireJson } from '../errors.js';
import { parseJsonObject, presentFieldsParser } from '../schemas/issues.js';
import { ChatRequestSchema, type ChatRequest } from '../schemas/chat.js';
import { pipeEvents, sseCallHeaders, sseErrorEvent } from '../sse.js';
import type { AnswerOptions, CacheScope, ChatFamily, ChatStreamRelay, FinishedCompletion, UpstreamRequest, UpstreamTarget } from '../../providers/family.js';
import { UpstreamError, type UpstreamResponse } from '../../providers/upstream-client.js';
import { UpstreamSession } from '../../routing/upstream-session.js';
import { admitOwnCredentialsFirst } from '../../providers/byok-attempts.js';
import { MAX_CHARS_PER_TOKEN } from '../../providers/pending-event.js';
import { nanoToUsd, worstCaseCostNano } from '../../billing/pricing.js';
import { countTokens } from '../../billing/token-count.js';
import { promptTokenEstimate } from '../../billing/token-estimate.js';
import { keyLimitsOf } from '../../billing/credit-period.js';
import { MeteredCall, NO_USAGE } from '../../billing/metered-call.js';
import { upstreamErrorAsIs, upstreamFailure, upstreamUnreachable } from '../../providers/upstream-errors.js';
import type { NormalizedUsage } from '../../providers/usage.js';
import { childrenOf, seconds, usageRecorder } from '../../metrics.js';
import { log } from '../../log.js';
import { UpstreamModels, answerHeaders, callHeaders, exhausted, withAttempts, type CallHeaders } from '../../routing/routing.js';
import { modelChain } from '../../routing/model-chain.js';
import type { RouteTarget } from '../../routing/targets.js';
import { retryableAnswer } from '../../routing/retryable.js';
import { tracer, withSpan } from '../../tracing/tracing.js';
import { describeCall, startChildSpan } from '../../tracing/call-spans.js';

/**
 * What an endpoint served by the chat pipeline makes of it: how its body becomes a chat request,
 * and how the finished completion or the chunk stream is rendered. Chat completions leave the
 * family's output as it is (no render, no stream wrapper: nothing added to its path).
 */
export interface ChatOutput {
  /** The request log's and ledger event's endpoint name. */
  readonly endpoint: string;
  /**
   * The validated chat request for a JSON body of `userId`'s (400 naming the field otherwise); a
   * promise when the body names state to read first (the Responses endpoint's `item_reference`).
   */
  parse(body: Record<string, unknown>, userId: string, services: Services, headers: RequestHeaders): ChatRequest | Promise<ChatRequest>;
  /** Prompt bytes a parsed request carries beyond its body (items it named by reference), for the worst case. */
  addedPromptBytes?(request: ChatRequest): number;
  /** Chat fields named in the pipeline's own 400s, as this endpoint's callers know them. */
  readonly fieldNames?: Readonly<Record<string, string>>;
  /** The response body for a finished chat.completion body and its usage (a promise: written once it resolves). */
  render?(completionJson: string, usage: NormalizedUsage, call: MeteredCall, request: ChatRequest, services: Services): string | Promise<string>;
  /** A relay over the family's chunk relay, rendering this endpoint's events (bounded by `options.maxGeneratedChars`). */
  stream?(relay: ChatStreamRelay, call: MeteredCall, request: ChatRequest, services: Services, options: AnswerOptions): OutputRelay;
  /**
   * Families that speak this endpoint's own wire format (Anthropic's for /v1/messages), by catalog
   * family: a model of one is served by this family instead of the chat one, and its answers pass
   * through as the upstream sent them, neither rendered nor wrapped (its relay renders its own errors).
   */
  readonly native?: Readonly<Partial<Record<Family, ChatFamily>>>;
}

/** A stream relay that may add a tail once the call is settled and render its own error event. */
export interface OutputRelay extends ChatStreamRelay {
  /** The bytes that close the stream, given the settled usage (a promise: written once it resolves). */
  end?(usage: NormalizedUsage): Buffer | Promise<Buffer>;
  /**
   * The event telling the client the stream broke, or that the call failed (`failure`): written instead
   * of `end`. Empty when the relay already ended the stream with an error of its own.
   */
  errorEvent?(code: string, message: string): string;
}

export const CHAT_COMPLETIONS_OUTPUT: ChatOutput = Object.freeze({
  endpoint: 'chat.completions',
  parse: presentFieldsParser(ChatRequestSchema),
});

/** An endpoint's output for models whose answers are already in its format: nothing rendered or wrapped. */
const passThroughOutputs = new WeakMap<ChatOutput, ChatOutput>();
function passingThrough(output: ChatOutput): ChatOutput {
  let through = passThroughOutputs.get(output);
  if (!through) {
    through = Object.freeze<ChatOutput>({ endpoint: output.endpoint, parse: output.parse, fieldNames: output.fieldNames });
    passThroughOutputs.set(output, through);
  }
  return through;
}

/** Runs `check`, naming the fields of its 400 as the endpoint's callers know them. */
function withFieldNames<T>(names: Readonly<Record<string, string>>, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof ApiError) || error.param == null) throw error;
    const head = /^[A-Za-z_]+/.exec(error.param)?.[0] ?? '';
    const renamed = names[head];
    if (!renamed) throw error;
    const param = renamed + error.param.slice(head.length);
    throw new ApiError(error.status, error.code, error.message.replaceAll(`'${error.param}'`, `'${param}'`).replaceAll(`'${head}'`, `'${renamed}'`), param, error.headers);
  }
}

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
  // As OpenAI answers it for a model without reasoning (every family: none would honour it).
  if (request.reasoning_effort != null && !caps.reasoning) {
    throw badRequest(`Unsupported parameter: 'reasoning_effort' is not supported with this model (${model.id} does not reason).`, 'reasoning_effort', 'unsupported_parameter');
  }
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
 * The worst case a call can use, for its credit reservation: a token is at least one byte, so the
 * body's size bounds the prompt's tokens; images at the model's worst image cost; the whole output
 * allowance for each choice.
 */
function worstCaseTokens(request: ChatRequest, model: CatalogModel, bodyBytes: number, imageParts: number): { prompt: number; output: number } {
  return { prompt: bodyBytes + imageParts * model.capabilities.maxImageTokens, output: outputAllowance(request, model) };
}

/** The most output tokens a call may be charged: its cap (or the model's) for each choice. */
function outputAllowance(request: ChatRequest, model: CatalogModel): number {
  return (request.max_completion_tokens ?? request.max_tokens ?? model.capabilities.maxOutputTokens) * (request.n ?? 1);
}

/**
 * The tokens a key's token budget reserves for a call: the prompt's tight estimate (counted, see
 * token-estimate.ts) plus the bytes of prompt text not counted (what the family adds, items named by
 * reference: a token is at least a byte), and the output allowance. The byte bound when the count fails.
 */
async function budgetTokens(userId: string, request: ChatRequest, model: CatalogModel, uncountedBytes: number, worst: { prompt: number; output: number }): Promise<number> {
  try {
    return (await promptTokenEstimate(userId, request, model.family, model.capabilities.maxImageTokens)) + uncountedBytes + worst.output;
  } catch (error) {
    log.warn('prompt token estimate failed; the byte bound is reserved', { model: model.id, error });
    return worst.prompt + worst.output;
  }
}

/** The tokens a budgeted key reserves for a call that may be served by any of `legs`: the most any of them needs. */
async function legsBudgetTokens(userId: string, request: ChatRequest, legs: readonly RouteLeg[], worsts: readonly { prompt: number; output: number }[]): Promise<number> {
  if (legs.length === 1) return budgetTokens(userId, request, legs[0]!.model, legs[0]!.upstreamRequest.addedPromptBytes ?? 0, worsts[0]!);
  return Math.max(...await Promise.all(legs.map((leg, i) => budgetTokens(userId, request, leg.model, leg.upstreamRequest.addedPromptBytes ?? 0, worsts[i]!))));
}

/** Usage counted with the tokenizer when the upstream reported none. */
async function countedUsage(request: ChatRequest, generated: string): Promise<NormalizedUsage> {
  return { ...NO_USAGE, ...(await countTokens(request.messages, generated)) };
}


/**
 * A user's prompt-cache partition: an HMAC of the user id (and the caller's own `prompt_cache_key`,
 * a partition inside the user's space) under the server secret, so the upstream never sees a user id
 * and no caller can name another user's partition.
 */
function promptCachePartitions(secret: string): (userId: string, callerKey: string | null | undefined) => string {
  const ofUser = new Map<string, string>();
  const derive = (text: string) => createHmac('sha256', secret).update(text).digest('base64url').slice(0, 32);
  return (userId, callerKey) => {
    if (callerKey) return derive(`prompt-cache\n${userId}\n${callerKey}`);
    let partition = ofUser.get(userId);
    if (partition === undefined) {
      if (ofUser.size >= 10_000) ofUser.clear();
      partition = derive(`prompt-cache\n${userId}`);
      ofUser.set(userId, partition);
    }
    return partition;
  };
}

/** One model a call may be served by, ready for its first attempt. */
interface RouteLeg {
  readonly model: CatalogModel;
  readonly family: ChatFamily;
  /** The endpoint's output as this model serves it: as is, or passing a native family's answers through. */
  readonly output: ChatOutput;
  readonly targets: readonly RouteTarget[];
  readonly imageParts: number;
  /** Its first target, chosen (not taken) before admission, and that target's request. */
  readonly firstIndex: number;
  readonly upstreamRequest: UpstreamRequest;
}

/**
 * The chat pipeline (auth, validation, admission, BYOK, the families, settlement, streaming) for
 * every model whose wire family this gateway speaks: POST /v1/chat/completions as it is, and any
 * endpoint that translates to it through a `ChatOutput` (POST /v1/responses).
 */
export function chatCompletions(services: Services) {
  const { admission, auth, metrics, upstream, routing } = services;
  const upstreamModels = new UpstreamModels();
  const ttfbOf = childrenOf(metrics.upstreamTtfb);
  const recordUsage = usageRecorder(metrics);
  const cachePartition = promptCachePartitions(services.config.keySecret);
  const maxEventBytes = services.config.upstreamMaxEventBytes;

  /** Non-streaming: the whole completion, rewritten; the call settles (and is journaled) just before it is written. */
  async function complete(ctx: RequestContext, call: MeteredCall, family: ChatFamily, request: ChatRequest, response: UpstreamResponse, options: AnswerOptions, headers: CallHeaders, output: ChatOutput): Promise<void> {
    const { model } = call.identity;
    let text: string;
    try {
      text = response.receivedText() ?? await response.text();
    } catch (error) {
      if (call.clientAborted) {
        // The client left while the answer arrived: it pays for the prompt, as a stream's client does.
        call.status = 499;
        call.settle(await countedUsage(request, ''));
        return;
      }
      throw unreadableAnswer(error, model.upstreamVendor, response.guarded === true);
    }
    call.firstByte();
    let finished: FinishedCompletion;
    try {
      finished = family.finish(text, model, options);
    } catch {
      metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: 'invalid_body' });
      throw new ApiError(502, 'upstream_invalid_response', `The upstream vendor ${model.upstreamVendor} answered with a body that is not a valid answer of its API.`);
    }
    const usage = finished.usage ?? (await countedUsage(request, finished.generated));
    const rendered = output.render ? output.render(finished.body, usage, call, request, services) : finished.body;
    call.settle(usage);
    ctx.reply.send(200, typeof rendered === 'string' ? rendered : await rendered, 'application/json', answerHeaders(headers, nanoToUsd(call.chargeFor(usage))));
  }

  /** Streaming: bytes flow through as they come; the usage event settles the call before the stream ends. */
  async function relay(ctx: RequestContext, call: MeteredCall, family: ChatFamily, request: ChatRequest, response: UpstreamResponse, options: AnswerOptions, upstreamStarted: bigint, headers: CallHeaders, target: UpstreamTarget, output: ChatOutput): Promise<void> {
    const { model } = call.identity;
    const chunks = family.relay(model, options, target);
    const events: OutputRelay = output.stream ? output.stream(chunks, call, request, services, options) : chunks;
    ctx.reply.beginStream(200, sseCallHeaders(headers));
    metrics.activeStreams.inc();
    try {
      await pipeEvents(response, ctx.reply, events, () => {
        if (call.firstByte()) ttfbOf(model.upstreamVendor).observe(seconds(upstreamStarted));
        if (events.usage && !call.usage) {
          if (events.failure !== undefined) failedInStream(call, events.failure);
          call.settle(events.usage);
        }
      });
      const rest = events.flush();
      if (rest) ctx.reply.write(rest);
      if (events.failure !== undefined && !call.usage) failedInStream(call, events.failure);
      const usage = events.usage ?? (await countedUsage(request, events.generatedText()));
      call.settle(usage);
      if (events.failure !== undefined) {
        // The call failed (logged 502, charged nothing): a renderer's stream ends with its error event,
        // never with its success tail. Chat's own stream already carries the upstream's error chunk.
        if (events.errorEvent) ctx.reply.write(events.errorEvent(events.failure, `The upstream vendor ${model.upstreamVendor} reported an error in its stream; the call failed and is not charged.`));
      } else if (events.end) {
        const tail = events.end(usage);
        ctx.reply.write(tail instanceof Promise ? await tail : tail);
      }
      ctx.reply.end();
    } catch (error) {
      if (call.clientAborted) {
        // The client left: it pays for the prompt and what was generated before it left.
        call.status = 499;
        call.settle(events.usage ?? (await countedUsage(request, events.generatedText())));
        return;
      }
      call.fail(502, 'upstream_stream_broken');
      metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: 'stream_broken' });
      log.warn('upstream stream broke', { model: model.id, error });
      const message = 'The upstream stream ended unexpectedly.';
      ctx.reply.write(events.errorEvent ? events.errorEvent('upstream_stream_broken', message) : sseErrorEvent('upstream_stream_broken', message));
      ctx.reply.end();
    } finally {
      metrics.activeStreams.dec();
    }
  }

  /** The upstream said in its stream that the call failed: logged as a 502 with its code, charged nothing. */
  function failedInStream(call: MeteredCall, failure: string): void {
    call.fail(502, failure);
    metrics.upstreamErrors.inc({ vendor: call.identity.model.upstreamVendor, reason: 'stream_error' });
  }

  /** A successful answer whose body could not be read whole: too large, cut off, or past the deadline. */
  function unreadableAnswer(error: unknown, vendor: string, guarded: boolean): ApiError {
    if (error instanceof UpstreamError && error.reason === 'too_large') {
      metrics.upstreamErrors.inc({ vendor, reason: 'too_large' });
      return new ApiError(502, 'upstream_response_too_large', `The upstream vendor ${vendor} answered with a body larger than ${services.config.upstreamMaxBodyBytes} bytes.`);
    }
    metrics.upstreamErrors.inc({ vendor, reason: 'body' });
    return upstreamUnreachable(error, vendor, guarded);
  }

  /** How the family renders the call's answer; built while the upstream works, off the path from its answer to ours. */
  function answerOptions(call: MeteredCall, request: ChatRequest): AnswerOptions {
    return {
      includeReasoning: request.include_reasoning !== false, id: `chatcmpl-${call.identity.callId.replaceAll('-', '')}`, created: Math.floor(call.startedAtMs / 1000),
      maxEventBytes, maxGeneratedChars: outputAllowance(request, call.identity.model) * MAX_CHARS_PER_TOKEN,
      costOf: (usage) => nanoToUsd(call.chargeFor(usage)),
    };
  }

  /** Answers the client from a 200 upstream response, whole or streamed. */
  async function serve(ctx: RequestContext, call: MeteredCall, family: ChatFamily, request: ChatRequest, response: UpstreamResponse, options: AnswerOptions, upstreamStarted: bigint, headers: CallHeaders, target: UpstreamTarget, output: ChatOutput): Promise<void> {
    const { model, stream } = call.identity;
    if (!stream) {
      await complete(ctx, call, family, request, response, options, headers, output);
      ttfbOf(model.upstreamVendor).observe(seconds(upstreamStarted));
    } else {
      await relay(ctx, call, family, request, response, options, upstreamStarted, headers, target, output);
    }
  }

  /** An upstream answer other than 200 as an error of ours (counted). */
  async function refused(call: MeteredCall, response: UpstreamResponse): Promise<ApiError> {
    const vendor = call.identity.model.upstreamVendor;
    metrics.upstreamErrors.inc({ vendor, reason: String(response.status) });
    return upstreamFailure(response, vendor);
  }

  /**
   * The models a call may be served by, in order (`model`, then `models`, virtual models expanded:
   * see routing/model-chain.ts), each with its family, its targets and its first target's request,
   * chosen now (synchronously) so that it sizes the reservation. A model that cannot take the
   * request (no family or vendor here, a capability it lacks) is left out; when none can, the first
   * one's 400 is the answer.
   */
  function routeLegs(request: ChatRequest, stream: boolean, cache: CacheScope, output: ChatOutput): RouteLeg[] {
    const catalog = services.catalog();
    const virtualModels = routing.virtualModels;
    if (!request.models?.length && !virtualModels?.[request.model]) {
      const model = catalog.get(request.model);
      if (!model) throw modelNotFound(request.model);
      return [routeLeg(request, model, stream, cache, output)];
    }
    const legs: RouteLeg[] = [];
    let refusal: unknown;
    for (const model of modelChain(request.model, request.models, (id) => catalog.get(id), virtualModels)) {
      try {
        legs.push(routeLeg(request, model, stream, cache, output));
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 400) throw error;
        refusal ??= error;
      }
    }
    if (legs.length === 0) throw refusal;
    return legs;
  }

  function routeLeg(request: ChatRequest, model: CatalogModel, stream: boolean, cache: CacheScope, endpointOutput: ChatOutput): RouteLeg {
    const native = endpointOutput.native?.[model.family];
    const family = native ?? services.families[model.family];
    const output = native ? passingThrough(endpointOutput) : endpointOutput;
    const targets = routing.targetsOf(model);
    if (!family || !targets) {
      throw badRequest(`The model '${model.id}' is served through the ${model.family} wire family, which this gateway does not serve yet.`, 'model', 'model_not_supported');
    }
    const imageParts = output.fieldNames ? withFieldNames(output.fieldNames, () => checkCapabilities(request, model)) : checkCapabilities(request, model);
    const firstIndex = routing.first(targets);
    const target = targets[firstIndex]!;
    const upstreamModel = upstreamModels.of(model, target);
    const upstreamRequest = output.fieldNames
      ? withFieldNames(output.fieldNames, () => family.request(request, upstreamModel, stream, target, cache))
      : family.request(request, upstreamModel, stream, target, cache);
    return { model, family, output, targets, imageParts, firstIndex, upstreamRequest };
  }

  return async (ctx: RequestContext, output: ChatOutput = CHAT_COMPLETIONS_OUTPUT): Promise<void> => {
    const found = auth.apiKey(ctx);
    const key = found instanceof Promise ? await found : found;
    requireJson(ctx.headers.contentType);
    const body = await ctx.body();
    const parsed = output.parse(parseJsonObject(body), key.userId, services, ctx.headers);
    const request = parsed instanceof Promise ? await parsed : parsed;
    const stream = request.stream === true;
    const cache = { partition: cachePartition(key.userId, request.prompt_cache_key) };
    const legs = routeLegs(request, stream, cache, output);
    const { model, family, output: firstOutput } = legs[0]!;
    if (ctx.span) {
      describeCall(ctx.span, {
        operation: 'chat', vendor: model.upstreamVendor, model: request.model, keyId: key.id, stream,
        maxTokens: request.max_completion_tokens ?? request.max_tokens,
      });
    }
    // For the credit reservation, the caller's body bounds the prompt's tokens, plus any prompt text the
    // family added (a cache salt, an instruction) and the items the body named by reference. A call
    // that may fall back to other models reserves for the dearest of them.
    const referencedBytes = output.addedPromptBytes?.(request) ?? 0;
    const worsts: ReturnType<typeof worstCaseTokens>[] = [];
    let reservedNano = 0n;
    for (const leg of legs) {
      const worst = worstCaseTokens(request, leg.model, body.length + (leg.upstreamRequest.addedPromptBytes ?? 0) + referencedBytes, leg.imageParts);
      const cost = worstCaseCostNano(leg.model.prices, worst.prompt, worst.output);
      if (cost > reservedNano) reservedNano = cost;
      worsts.push(worst);
    }
    const limits = keyLimitsOf(key.row, Date.now());
    // Only a key with a token budget reserves tokens, at the prompt's tight estimate (counted off this
    // thread); the referenced items are in `request.messages`, so only the family's additions stay in bytes.
    const budgeted = limits.tph !== null || limits.tpd !== null;
    // Tracing on: the token count (on the counter thread) and the admission's steps are the `admission` span's.
    const admissionSpan = ctx.span && startChildSpan('admission');
    const reservedTokens = !budgeted ? 0
      : admissionSpan ? await withSpan(admissionSpan, () => legsBudgetTokens(key.userId, request, legs, worsts))
      : await legsBudgetTokens(key.userId, request, legs, worsts);
    admissionSpan?.setAttributes({ 'gateway.reserved_usd': nanoToUsd(reservedNano), 'gateway.reserved_tokens': reservedTokens });
    // The request id is the call id: the key of its request log and of its usage transaction.
    const callId = ctx.requestId;
    const identity = { userId: key.userId, keyId: key.id, model, endpoint: output.endpoint, stream, callId, reservedNano, reservedTokens, span: ctx.span };
    const session = new UpstreamSession(ctx.reply, upstream, metrics);
    // A key revoked while this request waited must not reach the upstream, at any attempt.
    const checkRevoked = () => auth.requireNotRevoked(key);

    const admitting = admitOwnCredentialsFirst({
      admission, byok: services.byok, recordUsage, identity, limits, checkRevoked,
      attempt: async (candidate, call) => {
        const started = process.hrtime.bigint();
        const ownRequest = family.request(request, model, stream, candidate.target, cache);
        const label = tracer && { target: 'byok', model: model.upstreamModel, attempt: call.attempts };
        const responding = session.send(call, ownRequest, candidate.target.guarded === true || ownRequest.guarded === true, undefined, label).catch((error: unknown) => {
          if (call.clientAborted) throw error;
          return error as ApiError;
        });
        const options = answerOptions(call, request);
        const response = await responding;
        if (response instanceof ApiError) return response;
        if (response.status !== 200) {
          metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: String(response.status) });
          return upstreamErrorAsIs(response, model.upstreamVendor);
        }
        return (headers) => session.relayed(call, serve(ctx, call, family, request, response, options, started, headers, candidate.target, firstOutput));
      },
    });
    const admittedInSpan = session.admitted(admitting, admissionSpan);
    const platform = admittedInSpan instanceof Promise ? await admittedInSpan : admittedInSpan;
    ctx.windowKey = undefined; // counted in its window by admission
    if (!platform) return;
    const { admitted, identity: platformIdentity, ownAttempts } = platform;
    const call = new MeteredCall(admission, admitted, recordUsage, platformIdentity);
    await call.run(async () => {
      // Attempts on each model's targets in turn until one answers, all within one admission and one
      // metered call: only the attempt that served is charged. Never once a byte has reached the client.
      const routed = legs.length > 1 || legs[0]!.targets.length > 1;
      let attempts = 0;
      let options: AnswerOptions | undefined;
      let last: ApiError | undefined;
      for (let legIndex = 0; legIndex < legs.length; legIndex++) {
        const leg = legs[legIndex]!;
        const { targets } = leg;
        if (legIndex > 0) {
          if (Date.now() - call.startedAtMs >= routing.config.deadlineMs) break;
          routing.fellBack(legs[legIndex - 1]!.model.id, leg.model.id);
          call.serveAs(leg.model);
          options = undefined; // its output allowance is the new model's
        }
        let index = leg.firstIndex;
        let target = targets[index]!;
        let upstreamRequest = leg.upstreamRequest;
        let tried = 0;
        for (let onLeg = 1; ; onLeg++) {
          checkRevoked();
          if (onLeg === 1 && targets.length > 1) {
            const taken = routing.take(targets, index);
            if (taken !== index) {
              // Its probe went to another call meanwhile: another target, as if this one were cooled down.
              index = taken;
              target = targets[index]!;
              upstreamRequest = leg.family.request(request, upstreamModels.of(leg.model, target), stream, target, cache);
            }
          }
          if (++attempts > 1) routing.retried(leg.model.id);
          call.attempts = ownAttempts + attempts;
          const started = process.hrtime.bigint();
          const label = tracer && { target: target.name, model: target.model ?? leg.model.upstreamModel, attempt: call.attempts };
          const responding = session.send(call, upstreamRequest, upstreamRequest.guarded === true, target.headTimeoutMs, label);
          options ??= answerOptions(call, request);
          let response: UpstreamResponse | ApiError;
          try {
            response = await responding;
          } catch (error) {
            if (call.clientAborted || !(error instanceof ApiError)) throw error;
            response = error; // no answer (refused, reset, no head in time): another target may give one
          }
          if (!(response instanceof ApiError) && response.status === 200) {
            routing.answered(target);
            await session.relayed(call, serve(ctx, call, leg.family, request, response, options, started, callHeaders(admitted.headers, platformIdentity.callId, call.attempts), target, leg.output));
            return;
          }
          const failure = response instanceof ApiError ? response : await refused(call, response);
          if (!(response instanceof ApiError) && !retryableAnswer(response.status, failure)) {
            routing.answered(target);
            throw withAttempts(failure, call.attempts);
          }
          routing.failed(target, leg.model.id, attempts, failure);
          last = failure;
          tried |= 1 << index;
          const inTime = Date.now() - call.startedAtMs < routing.config.deadlineMs;
          const next = onLeg < routing.config.maxAttempts && inTime ? routing.pick(targets, tried) : -1;
          if (next < 0) break; // this model's targets are spent: the next model, if any
          index = next;
          target = targets[next]!;
          upstreamRequest = leg.family.request(request, upstreamModels.of(leg.model, target), stream, target, cache);
        }
      }
      throw withAttempts(exhausted(last!, attempts, routed), call.attempts);
    });
  };
}
