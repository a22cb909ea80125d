/**
 * `Idempotency-Key` on the paid POSTs (Stripe's semantics; docs/routing.md "Idempotency-Key"): the
 * first request with a key runs and its answer is kept for the key's user; a repeat with the same
 * method, path and body gets that answer again, marked as a replay, and is neither admitted nor
 * charged; a repeat while the first still runs waits for it (bounded); the key with another body is
 * 422. Answers made before the call was admitted (validation, authentication, admission's refusals)
 * are not kept: the claim is released and a repeat runs again.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Handler, RequestContext } from '../http/router.js';
import type { Services } from '../services.js';
import { ApiError, badRequest } from '../http/errors.js';
import { hasControlCharacter } from '../http/schemas/text.js';
import { AnswerRecorder } from './idempotency-recorder.js';
import { IdempotencyStore, type ClaimResult, type IdempotencyClaim, type KeptAnswer } from './idempotency-store.js';
import { log } from '../log.js';
import { createIdempotencyMetrics } from '../metrics.js';

/** The header a replayed answer carries (Stripe's name). */
export const REPLAYED_HEADER = 'idempotent-replayed';
/**
 * A replayed failure is the same failure for as long as it is kept: this header (read by the openai
 * and anthropic SDKs) stops a client retrying it with the same key in vain.
 */
const NO_RETRY = Object.freeze({ 'x-should-retry': 'false' });
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/**
 * A running request's claim on its key lapses this long after it was last renewed; the request renews
 * it every CLAIM_RENEW_MS, so only a gateway that died mid-request leaves it to lapse.
 */
export const CLAIM_LIFE_MS = 30_000;
const CLAIM_RENEW_MS = 10_000;
/** A waiting repeat looks again after this long, doubling up to POLL_MAX_MS. */
const POLL_FIRST_MS = 20;
const POLL_MAX_MS = 250;

/** What is wrong with an Idempotency-Key value, or undefined when it is usable. */
export function idempotencyKeyProblem(value: string): string | undefined {
  if (value.length > MAX_IDEMPOTENCY_KEY_LENGTH) return `it is ${value.length} characters long, at most ${MAX_IDEMPOTENCY_KEY_LENGTH} are allowed`;
  if (hasControlCharacter(value)) return 'it holds a control character';
  return undefined;
}

/** What makes two requests the same request: method, path and the body's SHA-256. */
export function fingerprintOf(method: string, path: string, body: Buffer): string {
  return `${method.toUpperCase()} ${path} ${createHash('sha256').update(body).digest('hex')}`;
}

const digestOf = (text: string) => createHash('sha256').update(text).digest('hex');
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Whether a first request's answer is kept for its repeats: an answer made whole (a stream to its end,
 * with the client still there to take it), not 499, and either a success or made after the call was
 * admitted (a handler clears `windowKey` at admission; a refusal before it did no work).
 */
function keeps(ctx: RequestContext, recorder: AnswerRecorder): boolean {
  if (!recorder.complete || recorder.status === 499) return false;
  if (recorder.streamed && ctx.reply.aborted) return false;
  return recorder.status < 400 || ctx.windowKey === undefined;
}

/** Wraps paid handlers: a request without `Idempotency-Key` goes straight to the handler (nothing added to its path). */
export function idempotentHandlers(services: Services): (handler: Handler) => Handler {
  const store = new IdempotencyStore(services.redis, services.keys);
  const { retentionMs, maxEntryBytes, waitMs } = services.config.idempotency;
  const metrics = createIdempotencyMetrics(services.metrics.registry);

  /** A repeat's refusal, counted by route and code. */
  function refusal(ctx: RequestContext, status: number, code: string, message: string, headers?: Readonly<Record<string, string>>): ApiError {
    metrics.refused(ctx.route, code);
    return new ApiError(status, code, message, 'Idempotency-Key', headers);
  }

  /** The key's claim, or what its first request left; undefined when the client left while waiting. */
  async function claimOrWait(ctx: RequestContext, claim: IdempotencyClaim): Promise<Exclude<ClaimResult, { kind: 'in_progress' }> | undefined> {
    const until = Date.now() + waitMs;
    let pause = POLL_FIRST_MS;
    for (;;) {
      const result = await store.claim(claim, CLAIM_LIFE_MS);
      if (result.kind !== 'in_progress') return result;
      const left = until - Date.now();
      if (left <= 0) {
        throw refusal(ctx, 409, 'idempotency_in_progress',
          'A request with this Idempotency-Key is still running; retry it shortly to get its answer.', { 'retry-after': '1' });
      }
      await sleep(Math.min(pause, left));
      if (ctx.reply.aborted) return undefined;
      pause = Math.min(pause * 2, POLL_MAX_MS);
    }
  }

  function replay(ctx: RequestContext, answer: KeptAnswer): void {
    metrics.replayed(ctx.route);
    const { 'content-type': contentType = 'application/json', ...headers } = answer.headers;
    ctx.reply.send(answer.status, answer.body, contentType, { ...headers, ...(answer.status >= 400 ? NO_RETRY : {}), [REPLAYED_HEADER]: 'true' });
  }

  /** Runs the first request with its answer recorded, then keeps the answer or releases the key. */
  async function runFirst(ctx: RequestContext, claim: IdempotencyClaim, handler: Handler): Promise<void> {
    const recorder = new AnswerRecorder(maxEntryBytes);
    ctx.reply.recorder = recorder;
    const renewal = setInterval(() => {
      store.claim(claim, CLAIM_LIFE_MS).catch((error: unknown) => log.warn('idempotency claim not renewed', { error }));
    }, CLAIM_RENEW_MS);
    let failure: unknown;
    try {
      await handler(ctx);
    } catch (error) {
      // After admission an ApiError is the call's answer (an upstream's, say): rendered here, where the
      // recorder sees it. Earlier ones, and failures of the gateway itself, go to the router as usual.
      if (error instanceof ApiError && ctx.windowKey === undefined) ctx.reply.error(error);
      else failure = error;
    } finally {
      clearInterval(renewal);
      ctx.reply.recorder = undefined;
    }
    try {
      if (failure === undefined && keeps(ctx, recorder)) await store.complete(claim, retentionMs, recorder.status, recorder.answer());
      else await store.release(claim);
    } catch (error) {
      // The claim lapses by itself within CLAIM_LIFE_MS; until then a repeat waits or gets 409.
      log.warn('idempotency record not updated', { error });
    }
    if (failure !== undefined) throw failure;
  }

  async function once(ctx: RequestContext, value: string, handler: Handler): Promise<void> {
    const found = services.auth.apiKey(ctx);
    const key = found instanceof Promise ? await found : found;
    const problem = idempotencyKeyProblem(value);
    if (problem) throw badRequest(`Invalid Idempotency-Key header: ${problem}.`, 'Idempotency-Key', 'invalid_idempotency_key');
    const body = await ctx.body();
    const claim: IdempotencyClaim = {
      record: store.recordOf(key.userId, digestOf(value)), fingerprint: fingerprintOf(ctx.method, ctx.path, body), owner: randomUUID(),
    };
    const result = await claimOrWait(ctx, claim);
    switch (result?.kind) {
      case undefined: return; // the client left while waiting
      case 'claimed': return runFirst(ctx, claim, handler);
      case 'kept': return replay(ctx, result.answer);
      case 'reused':
        throw refusal(ctx, 422, 'idempotency_key_reused',
          'This Idempotency-Key was used with another request (method, path or body); use a new key for a new request.');
      case 'too_large':
        throw refusal(ctx, 409, 'idempotency_replay_too_large',
          `The first request with this Idempotency-Key was answered (status ${result.status}), but its answer was larger than this gateway keeps (IDEMPOTENCY_MAX_ENTRY_BYTES), so it cannot be replayed; it is not run again either. Use a new key to run it again.`,
          NO_RETRY);
    }
  }

  return (handler) => (ctx) => {
    const value = ctx.headers.idempotencyKey;
    if (value === undefined || value === '') return handler(ctx);
    return once(ctx, value, handler);
  };
}
