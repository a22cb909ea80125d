import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import type { EmbeddingModel } from '../../catalog/model.js';
import { ApiError, badRequest, modelNotFound, requireJson } from '../errors.js';
import { parseJsonObject, parseWith } from '../schemas/issues.js';
import { EmbeddingRequestSchema, embeddingInputsOf, inputCount, type EmbeddingInputs, type EmbeddingRequest } from '../schemas/embeddings.js';
import { EMBEDDING_FAMILIES } from '../../providers/embeddings/index.js';
import type { EmbeddingAnswer, EmbeddingFamily, EmbeddingJob } from '../../providers/embeddings/family.js';
import { UpstreamError, type UpstreamResponse } from '../../providers/upstream-client.js';
import { admitOwnCredentialsFirst } from '../../providers/byok-attempts.js';
import { upstreamErrorAsIs, upstreamFailure, upstreamUnreachable } from '../../providers/upstream-errors.js';
import { worstCaseCostNano } from '../../billing/pricing.js';
import { countTexts } from '../../billing/token-count.js';
import { keyLimitsOf } from '../../billing/credit-period.js';
import { MeteredCall, NO_USAGE, type CallIdentity } from '../../billing/metered-call.js';
import { usageRecorder } from '../../metrics.js';
import { UpstreamModels, callHeaders, exhausted, withAttempts, type CallHeaders } from '../../routing/routing.js';
import { retryableAnswer } from '../../routing/retryable.js';
import { UpstreamSession } from '../../routing/upstream-session.js';
import { tracer } from '../../tracing/tracing.js';
import { describeCall, startChildSpan } from '../../tracing/call-spans.js';

/** The request log's and ledger event's endpoint name. */
const ENDPOINT = 'embeddings';

/** The embedding model a call names: a chat or media model, or an unknown id, is the caller's 4xx. */
function embeddingModelFor(services: Services, id: string): EmbeddingModel {
  const catalog = services.catalog();
  const model = catalog.embedding(id);
  if (model) return model;
  if (catalog.get(id) || catalog.media(id)) throw badRequest(`'${id}' is not an embedding model.`, 'model', 'model_not_supported');
  throw modelNotFound(id);
}

/** Checks the request against what the model takes (dimensions, token input, how many inputs); 400s name the field. */
function checkAgainstModel(request: EmbeddingRequest, inputs: EmbeddingInputs, model: EmbeddingModel): void {
  const caps = model.capabilities;
  const dimensions = request.dimensions ?? undefined;
  if (dimensions !== undefined) {
    if (caps.dimensionsRange) {
      const [min, max] = caps.dimensionsRange;
      if (dimensions < min || dimensions > max) throw badRequest(`Invalid value for 'dimensions': ${model.id} takes ${min} to ${max}, got ${dimensions}.`, 'dimensions');
    } else if (caps.dimensionsChoices) {
      if (!caps.dimensionsChoices.includes(dimensions)) throw badRequest(`Invalid value for 'dimensions': ${model.id} takes one of ${caps.dimensionsChoices.join(', ')}, got ${dimensions}.`, 'dimensions');
    } else {
      throw badRequest(`Unsupported parameter: 'dimensions' is not supported with ${model.id} (its vectors are ${caps.dimensions} long).`, 'dimensions', 'unsupported_parameter');
    }
  }
  const count = inputCount(inputs);
  if (count > caps.maxInputs) throw badRequest(`Invalid value for 'input': ${model.id} takes at most ${caps.maxInputs} inputs per request, got ${count}.`, 'input');
  if (inputs.kind === 'tokens') {
    if (!caps.tokenInput) throw badRequest(`Invalid value for 'input': ${model.id} takes text only, not token arrays (token ids are OpenAI's tokenizer's).`, 'input', 'unsupported_content');
    // An array of token arrays names each (`input[2]`); a single token array is `input` itself.
    const nested = Array.isArray((request.input as unknown[])[0]);
    inputs.tokens.forEach((tokens, i) => {
      const param = nested ? `input[${i}]` : 'input';
      if (tokens.length > caps.maxInputTokens) throw badRequest(`Invalid value for '${param}': ${tokens.length} tokens, above the ${caps.maxInputTokens} of ${model.id}.`, param);
      const max = caps.maxTokenId ?? Number.MAX_SAFE_INTEGER;
      const bad = tokens.findIndex((id) => id > max);
      if (bad >= 0) throw badRequest(`Invalid value for '${param}[${bad}]': token id ${tokens[bad]} is out of range (0 to ${max}).`, `${param}[${bad}]`);
    });
  }
}

/**
 * The most input tokens a call can be billed: a token is at least one byte, so for text the body's
 * size bounds them (quotes and commas included: room for a vendor's per-input marker); token arrays
 * count exactly.
 */
function worstCaseTokens(inputs: EmbeddingInputs, bodyBytes: number): number {
  return inputs.kind === 'text' ? bodyBytes : inputs.tokens.reduce((sum, tokens) => sum + tokens.length, 0);
}

/** The input tokens of a call whose vendor reported none: counted with the gateway's tokenizer (token arrays exactly). */
async function countedTokens(inputs: EmbeddingInputs): Promise<number> {
  if (inputs.kind === 'tokens') return inputs.tokens.reduce((sum, tokens) => sum + tokens.length, 0);
  return (await countTexts(inputs.texts)).reduce((sum, count) => sum + count, 0);
}

/** A vector as OpenAI's base64 encoding gives it: little-endian float32. */
function base64Of(vector: readonly number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes.toString('base64');
}

/** The answer in OpenAI's shape, `model` the gateway's id. */
function renderAnswer(model: EmbeddingModel, vectors: readonly (readonly number[])[], base64: boolean, promptTokens: number): string {
  return JSON.stringify({
    object: 'list',
    data: vectors.map((vector, index) => ({ object: 'embedding', index, embedding: base64 ? base64Of(vector) : vector })),
    model: model.id,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  });
}

/**
 * `POST /v1/embeddings`: OpenAI's wire format for every embedding model of the catalog. It goes
 * through the same admission, BYOK, routing and settlement as chat: the worst-case input tokens are
 * reserved at the model's input price, the caller's own credentials (BYOK) are tried first, the
 * platform's targets in routing order (a retryable failure goes to the next), and the call is
 * settled for the input tokens the vendor reports (counted here when it reports none).
 */
export function embeddings(services: Services) {
  const { admission, auth, metrics, upstream, routing } = services;
  const upstreamModels = new UpstreamModels();
  const recordUsage = usageRecorder(metrics);

  /** The vectors of a 200 answer; an unreadable or malformed body is a 502 (the call is then charged nothing). */
  async function answerOf(response: UpstreamResponse, family: EmbeddingFamily, job: EmbeddingJob): Promise<EmbeddingAnswer> {
    const vendor = job.model.upstreamVendor;
    let text: string;
    try {
      text = response.receivedText() ?? await response.text();
    } catch (error) {
      if (error instanceof UpstreamError && error.reason === 'too_large') {
        metrics.upstreamErrors.inc({ vendor, reason: 'too_large' });
        throw new ApiError(502, 'upstream_response_too_large', `The upstream vendor ${vendor} answered with a body larger than ${services.config.upstreamMaxBodyBytes} bytes (UPSTREAM_MAX_BODY_BYTES); send fewer inputs per request.`);
      }
      metrics.upstreamErrors.inc({ vendor, reason: 'body' });
      throw upstreamUnreachable(error, vendor, response.guarded === true);
    }
    try {
      return family.read(text, job);
    } catch {
      metrics.upstreamErrors.inc({ vendor, reason: 'invalid_body' });
      throw new ApiError(502, 'upstream_invalid_response', `The upstream vendor ${vendor} answered with a body that is not the embeddings asked for.`);
    }
  }

  /**
   * Settles the call for its input tokens (not charged on the caller's own key) and writes the answer.
   * A client that leaves while the vectors arrive pays for its input, as a chat client does for its prompt.
   */
  async function serve(ctx: RequestContext, call: MeteredCall<EmbeddingModel>, family: EmbeddingFamily, job: EmbeddingJob, response: UpstreamResponse, base64: boolean, headers: CallHeaders): Promise<void> {
    let answer: EmbeddingAnswer;
    try {
      answer = await answerOf(response, family, job);
    } catch (error) {
      if (!call.clientAborted) throw error;
      call.status = 499;
      call.settle({ ...NO_USAGE, promptTokens: await countedTokens(job.inputs) });
      return;
    }
    call.firstByte();
    const promptTokens = answer.promptTokens ?? await countedTokens(job.inputs);
    const body = renderAnswer(call.identity.model, answer.vectors, base64, promptTokens);
    call.settle({ ...NO_USAGE, promptTokens });
    ctx.reply.send(200, body, 'application/json', headers);
  }

  return async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx);
    requireJson(ctx.headers.contentType);
    const raw = await ctx.body();
    const request = parseWith(EmbeddingRequestSchema, parseJsonObject(raw));
    const inputs = embeddingInputsOf(request.input);
    const model = embeddingModelFor(services, request.model);
    const family = EMBEDDING_FAMILIES[model.family];
    const targets = routing.mediaTargetsOf(model);
    if (!family || !targets) {
      throw badRequest(`The model '${model.id}' is served through the ${model.family} API, which this gateway does not serve yet.`, 'model', 'model_not_supported');
    }
    checkAgainstModel(request, inputs, model);
    const base64 = request.encoding_format === 'base64';
    const asked = { inputs, dimensions: request.dimensions ?? undefined, user: request.user ?? undefined };

    const worstTokens = worstCaseTokens(inputs, raw.length);
    const reservedNano = worstCaseCostNano(model.prices, worstTokens, 0);
    const limits = keyLimitsOf(key.row, Date.now());
    const budgeted = limits.tph !== null || limits.tpd !== null;
    const identity: CallIdentity<EmbeddingModel> = {
      userId: key.userId, keyId: key.id, model, endpoint: ENDPOINT, stream: false, callId: ctx.requestId, reservedNano,
      reservedTokens: budgeted ? worstTokens : 0, span: ctx.span,
    };
    if (ctx.span) describeCall(ctx.span, { operation: 'embeddings', vendor: model.upstreamVendor, model: model.id, keyId: key.id, stream: false });
    const checkRevoked = () => auth.requireNotRevoked(key);
    const session = new UpstreamSession(ctx.reply, upstream, metrics);

    const admissionSpan = ctx.span && startChildSpan('admission');
    const admitting = admitOwnCredentialsFirst({
      admission, byok: services.byok, recordUsage, identity, limits, checkRevoked,
      unusable: (candidate) => (candidate.target.cloud ? `its ${candidate.target.cloud.kind} form serves chat only` : undefined),
      attempt: async (candidate, call) => {
        const job: EmbeddingJob = { ...asked, model };
        let response: UpstreamResponse;
        try {
          const request = family.request(job, candidate.target);
          response = await session.send(call, request, request.guarded === true, undefined, tracer && { target: 'byok', model: model.upstreamModel, attempt: call.attempts, operation: 'embeddings' });
        } catch (error) {
          if (call.clientAborted || !(error instanceof ApiError)) throw error;
          return error;
        }
        if (response.status !== 200) {
          metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: String(response.status) });
          return upstreamErrorAsIs(response, model.upstreamVendor);
        }
        return (headers) => session.relayed(call, serve(ctx, call, family, job, response, base64, headers));
      },
    });
    const platform = await session.admitted(admitting, admissionSpan);
    ctx.windowKey = undefined; // counted in its window by admission
    if (!platform) return;
    const { admitted, identity: platformIdentity, ownAttempts } = platform;
    const call = new MeteredCall<EmbeddingModel>(admission, admitted, recordUsage, platformIdentity);
    await call.run(async () => {
      // Taken now, after admission: a call refused there must not hold a half-open target's probe.
      let index = targets.length === 1 ? 0 : routing.take(targets, routing.first(targets));
      let tried = 0;
      for (let attempt = 1; ; attempt++) {
        checkRevoked();
        call.attempts = ownAttempts + attempt;
        if (attempt > 1) routing.retried(model.id);
        const target = targets[index]!;
        const job: EmbeddingJob = { ...asked, model: upstreamModels.of(model, target) };
        let response: UpstreamResponse | ApiError;
        try {
          const request = family.request(job, target);
          const label = tracer && { target: target.name, model: job.model.upstreamModel, attempt: call.attempts, operation: 'embeddings' as const };
          response = await session.send(call, request, request.guarded === true, target.headTimeoutMs, label);
        } catch (error) {
          if (call.clientAborted || !(error instanceof ApiError)) throw error;
          response = error; // no answer: another target may give one
        }
        if (!(response instanceof ApiError) && response.status === 200) {
          routing.answered(target);
          await session.relayed(call, serve(ctx, call, family, job, response, base64, callHeaders(admitted.headers, platformIdentity.callId, call.attempts)));
          return;
        }
        let failure: ApiError;
        if (response instanceof ApiError) failure = response;
        else {
          metrics.upstreamErrors.inc({ vendor: model.upstreamVendor, reason: String(response.status) });
          failure = await upstreamFailure(response, model.upstreamVendor);
          if (!retryableAnswer(response.status, failure)) {
            routing.answered(target);
            throw withAttempts(failure, call.attempts);
          }
        }
        routing.failed(target, model.id, attempt, failure);
        tried |= 1 << index;
        const inTime = Date.now() - call.startedAtMs < routing.config.deadlineMs;
        const next = attempt < routing.config.maxAttempts && inTime ? routing.pick(targets, tried) : -1;
        if (next < 0) throw withAttempts(exhausted(failure, attempt, targets.length > 1), call.attempts);
        index = next;
      }
    });
  };
}
