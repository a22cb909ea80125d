/**
 * Dashboard sessions (docs/security.md "What is stored"): one Redis string per signed-in browser,
 * named by the SHA-256 of the session cookie's random value (a Redis dump holds no usable cookie),
 * holding the account id and e-mail claim, expiring SIGNIN_SESSION_TTL_SECONDS after sign-in
 * (absolute: using a session does not extend it). The session JWTs minted from it carry that hash as
 * `sid`; /api/v1 refuses a JWT whose session is gone, so sign-out ends its JWTs at once.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { RedisClient } from '../store/redis-connect.js';

export interface SessionAccount {
  readonly userId: string;
  readonly email?: string;
  readonly emailVerified?: boolean;
}

/** A session cookie value: 32 random bytes, base64url. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** A `sid` claim: the token's SHA-256, base64url. */
const SID_PATTERN = TOKEN_PATTERN;

export const sessionIdOf = (token: string) => createHash('sha256').update(token).digest('base64url');

export class DashboardSessions {
  constructor(private readonly redis: RedisClient, private readonly prefix: string) {}

  private key(sid: string): string {
    return `${this.prefix}signin:session:${sid}`;
  }

  /** Starts a session; answers the cookie value (shown to no one but the browser). */
  async start(account: SessionAccount, ttlSeconds: number): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    await this.redis.set(this.key(sessionIdOf(token)), JSON.stringify(account), 'EX', ttlSeconds);
    return token;
  }

  /** The session of a cookie value, with its id and seconds left; undefined when unknown or ended. */
  async find(token: string): Promise<{ sid: string; account: SessionAccount; secondsLeft: number } | undefined> {
    if (!TOKEN_PATTERN.test(token)) return undefined;
    const sid = sessionIdOf(token);
    const [stored, ttl] = await Promise.all([this.redis.get(this.key(sid)), this.redis.ttl(this.key(sid))]);
    if (stored === null || ttl <= 0) return undefined;
    return { sid, account: JSON.parse(stored) as SessionAccount, secondsLeft: ttl };
  }

  /** Ends the session of a cookie value (nothing when there is none). */
  async end(token: string): Promise<void> {
    if (TOKEN_PATTERN.test(token)) await this.redis.del(this.key(sessionIdOf(token)));
  }

  /** Whether the session a JWT's `sid` names is still open. */
  async isLive(sid: string): Promise<boolean> {
    return SID_PATTERN.test(sid) && (await this.redis.exists(this.key(sid))) === 1;
  }
}
