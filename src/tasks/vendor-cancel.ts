/** Asks a vendor to cancel one of its tasks, where its API has a cancel (the cancel route decides from the answer whether the cancel is free). */
import type { VendorRefusal, VendorTarget } from '../providers/video/adapter.js';
import { exchange } from './vendor-exchange.js';
import { taskApiOf } from './task-apis.js';

export interface CancelTaskInput {
  readonly family: string;
  readonly upstreamId: string;
  readonly target: VendorTarget;
  readonly timeoutMs: number;
}

/** `sent`: the vendor's answer status (a vendor may refuse to cancel a task already running); `no_cancel`: its API has none. */
export type CancelTaskOutput = { readonly kind: 'sent'; readonly httpStatus: number } | { readonly kind: 'no_cancel' } | VendorRefusal;

export async function cancelAtVendor(input: CancelTaskInput): Promise<CancelTaskOutput> {
  const api = taskApiOf(input.family);
  if (!api?.cancel) return { kind: 'no_cancel' };
  const answer = await exchange(api.cancel(input.upstreamId, input.target), input.timeoutMs);
  return answer.kind === 'answer' ? { kind: 'sent', httpStatus: answer.status } : answer;
}
