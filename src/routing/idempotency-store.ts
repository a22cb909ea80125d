/**
 * The Idempotency-Key records in Redis: one per (user, key), under the user's hash tag, moved between
 * states only by the three idempotency_*.lua scripts (claim or read, keep the answer, release).
 */
import type { ScriptedRedis } from '../admission/scripts.js';
import type { RedisKeys } from '../admission/keys.js';

/** An answer as it is kept and replayed. */
export interface KeptAnswer {
  readonly status: number;
  /** The response headers a client needs, `content-type` among them. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export type ClaimResult =
  | { readonly kind: 'claimed' }
  | { readonly kind: 'reused' }
  | { readonly kind: 'in_progress'; readonly claimLeftMs: number }
  | { readonly kind: 'kept'; readonly answer: KeptAnswer }
  | { readonly kind: 'too_large'; readonly status: number };

/** The one mapping from idempotency_claim.lua's numeric codes to typed results. */
export function claimResultOf([code, status, head, body]: readonly (number | string | null)[]): ClaimResult {
  switch (code) {
    case 0: return { kind: 'claimed' };
    case 1: return { kind: 'reused' };
    case 2: return { kind: 'in_progress', claimLeftMs: Math.max(0, Number(status)) };
    case 3: return { kind: 'kept', answer: { status: Number(status), headers: JSON.parse(String(head)) as Record<string, string>, body: String(body ?? '') } };
    case 4: return { kind: 'too_large', status: Number(status) };
    default: throw new Error(`idempotency_claim.lua returned unknown code ${String(code)}`);
  }
}

/** One request's hold on one Idempotency-Key of one user. */
export interface IdempotencyClaim {
  /** Its record's Redis key. */
  readonly record: string;
  readonly fingerprint: string;
  /** A random id of the request (the claim's owner). */
  readonly owner: string;
}

export class IdempotencyStore {
  constructor(private readonly redis: ScriptedRedis, private readonly keys: RedisKeys) {}

  recordOf(userId: string, keyDigest: string): string {
    return this.keys.idempotency(userId, keyDigest);
  }

  /** Claims the key (or renews this owner's claim) for `lifeMs`, or says what holds it. */
  async claim(claim: IdempotencyClaim, lifeMs: number): Promise<ClaimResult> {
    return claimResultOf(await this.redis.idempotency_claim(claim.record, claim.fingerprint, claim.owner, lifeMs));
  }

  /** Keeps the answer for `keepMs` (or, when it is undefined, notes that it was too large to keep); false when another request holds the key now. */
  async complete(claim: IdempotencyClaim, keepMs: number, status: number, answer: { headers: Readonly<Record<string, string>>; body: Buffer } | undefined): Promise<boolean> {
    const kept = await this.redis.idempotency_complete(
      claim.record, claim.owner, claim.fingerprint, keepMs, answer ? 'done' : 'big', status, answer ? JSON.stringify(answer.headers) : '{}', answer?.body ?? '',
    );
    return kept === 1;
  }

  /** Lets the key go without keeping an answer (a repeat runs again). */
  async release(claim: IdempotencyClaim): Promise<boolean> {
    return (await this.redis.idempotency_release(claim.record, claim.owner)) === 1;
  }
}
