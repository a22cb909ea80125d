import { randomUUID } from 'node:crypto';
import type { Admission, Admitted } from '../admission/admission.js';
import type { KeyLimits } from '../admission/scripts.js';
import { MeteredCall, type CalledModel, type CallIdentity, type UsageRecorder } from '../billing/metered-call.js';
import { ApiError } from '../http/errors.js';
import { NO_BYOK, byokProviderOf, type ByokCandidate, type ByokChoice, type ByokCredentials } from './byok-credentials.js';
import type { ByokProvider } from '../store/byok.js';
import { callHeaders, withAttempts, type CallHeaders } from '../routing/routing.js';

/** A model whose vendor may have BYOK rows. */
type VendorModel = CalledModel & { readonly upstreamVendor: string };

export interface OwnCredentialsFirst<M extends VendorModel> {
  readonly admission: Admission;
  readonly byok: ByokCredentials;
  readonly recordUsage: UsageRecorder;
  /** The platform call's identity (its `reservedNano` and `reservedTokens` are what the platform call reserves). */
  readonly identity: CallIdentity<M>;
  readonly limits: KeyLimits;
  /** Throws when the key was revoked meanwhile: checked before each attempt. */
  readonly checkRevoked: () => void;
  /** Why a row cannot serve this kind of call at all (besides its own `problem`), or undefined. */
  readonly unusable?: (candidate: ByokCandidate) => string | undefined;
  /**
   * One attempt on the caller's credential: resolves the error when the vendor refused (recorded, the
   * next row is tried), or, when it accepted, what answers the client from its response; throws what
   * must end the request (the client left, the caller's own input is bad).
   */
  readonly attempt: (candidate: ByokCandidate, call: MeteredCall<M>) => Promise<ApiError | ((headers: CallHeaders) => Promise<void>)>;
}

/**
 * The spec's BYOK selection ahead of the platform credential: the caller's rows of the model's
 * provider, in order, each tried once on a call admitted for the rate windows only (nothing reserved
 * or charged). Returns undefined when a row served the call; else the platform call's admission (its
 * credit reserved, the request not counted twice), identity (its own id: the failed attempts keep
 * theirs in the request log) and the upstream attempts made on the caller's rows, which the platform
 * call's count starts from. With `always_use`, the last refusal is thrown instead, as the vendor gave it.
 */
export function admitOwnCredentialsFirst<M extends VendorModel>(options: OwnCredentialsFirst<M>): PlatformCall<M> | undefined | Promise<PlatformCall<M> | undefined> {
  const { admission, byok, identity, limits } = options;
  const provider = byokProviderOf(identity.model.upstreamVendor);
  const found = provider ? byok.forCall(identity.userId, identity.keyId, provider) : NO_BYOK;
  // The common case, no BYOK row and a lease with room, is decided without a promise.
  if (!(found instanceof Promise) && found.candidates.length === 0 && !found.alwaysUse) {
    const admitted = admission.admitFromLease(identity.userId, identity.keyId, identity.reservedNano, limits, identity.reservedTokens);
    if (admitted) return { admitted, identity, ownAttempts: 0 };
  }
  return withOwnCredentials(options, provider, found);
}

type PlatformCall<M extends VendorModel> = { admitted: Admitted; identity: CallIdentity<M>; readonly ownAttempts: number };

async function withOwnCredentials<M extends VendorModel>(options: OwnCredentialsFirst<M>, provider: ByokProvider | undefined, found: ByokChoice | Promise<ByokChoice>): Promise<PlatformCall<M> | undefined> {
  const { admission, byok, identity, limits } = options;
  const choice = found instanceof Promise ? await found : found;
  if (choice.candidates.length === 0 && !choice.alwaysUse) {
    return { admitted: await admission.admit(identity.userId, identity.keyId, identity.reservedNano, limits, identity.reservedTokens), identity, ownAttempts: 0 };
  }
  const own = await admission.admit(identity.userId, identity.keyId, 0n, limits, identity.reservedTokens);
  const call = new MeteredCall<M>(admission, own, options.recordUsage, { ...identity, reservedNano: 0n, ownCredential: true });
  // Counts the upstream calls made: a row that cannot call never reaches its vendor.
  call.attempts = 0;
  let served = false;
  await call.run(async () => {
    let last: ApiError | undefined;
    for (const candidate of choice.candidates) {
      options.checkRevoked();
      // A row that cannot call (no Vertex token, unreadable config, a form for another kind of call): a failed attempt, recorded like any.
      const problem = candidate.problem ?? options.unusable?.(candidate);
      let outcome: Awaited<ReturnType<typeof options.attempt>>;
      if (problem !== undefined) {
        outcome = new ApiError(502, 'byok_credential_unusable', `The ${provider} credential '${candidate.label}' cannot be used: ${problem}`);
      } else {
        call.attempts++;
        outcome = await options.attempt(candidate, call);
      }
      if (!(outcome instanceof ApiError)) {
        byok.succeeded(candidate);
        served = true;
        await outcome(callHeaders(own.headers, identity.callId, call.attempts));
        return;
      }
      last = outcome;
      byok.failed(candidate, `${last.status} ${last.message}`);
    }
    // No fallback to the platform credential: the upstream's own status and message, as it answered.
    if (choice.alwaysUse) {
      throw withAttempts(last ?? new ApiError(502, 'byok_unavailable', `No usable ${provider} credential of this account, and one of them is set to always_use.`), call.attempts);
    }
    call.fail(last?.status ?? 502, 'byok_fallback');
  });
  if (served) return undefined;
  return {
    admitted: await admission.admitCredit(identity.userId, identity.keyId, identity.reservedNano, limits, own.headers, identity.reservedTokens),
    identity: { ...identity, callId: randomUUID() },
    ownAttempts: call.attempts,
  };
}
