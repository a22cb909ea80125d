/** piscina task: asks a vendor to cancel one of its tasks, where its API has a cancel. Plain data in and out. */
import type { VendorRefusal, VendorTarget } from '../src/providers/video/adapter.js';
import { exchange } from '../src/tasks/vendor-exchange.js';
import { taskApiOf } from '../src/tasks/task-apis.js';

export interface CancelTaskInput {
  readonly family: string;
  readonly upstreamId: string;
  readonly target: VendorTarget;
  readonly timeoutMs: number;
}

/** `sent`: the vendor's answer status (a vendor may refuse to cancel a task already running: nothing more to do). */
export type CancelTaskOutput = { readonly kind: 'sent'; readonly httpStatus: number } | { readonly kind: 'no_cancel' } | VendorRefusal;

export default async function cancelTask(input: CancelTaskInput): Promise<CancelTaskOutput> {
  const api = taskApiOf(input.family);
  if (!api?.cancel) return { kind: 'no_cancel' };
  const answer = await exchange(api.cancel(input.upstreamId, input.target), input.timeoutMs);
  return answer.kind === 'answer' ? { kind: 'sent', httpStatus: answer.status } : answer;
}
