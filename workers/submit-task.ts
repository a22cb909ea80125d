/** piscina task: submits a job to its vendor's task API and reads the vendor's task id from the answer. Plain data in and out. */
import type { VendorRefusal, VendorTarget } from '../src/providers/video/adapter.js';
import { builtRequest, exchange } from '../src/tasks/vendor-exchange.js';
import { taskApiOf, type TaskJob } from '../src/tasks/task-apis.js';

export interface SubmitTaskInput {
  readonly family: string;
  readonly job: TaskJob;
  readonly target: VendorTarget;
  readonly timeoutMs: number;
  /** Where the vendor may call back with status hints (vendors that take one). */
  readonly vendorCallbackUrl?: string;
  /** Loopback vendors (the built-in mock) and tests, for a guarded target. */
  readonly allowLoopback: boolean;
}

export type SubmitTaskOutput = { readonly kind: 'submitted'; readonly upstreamId: string } | VendorRefusal;

export default async function submitTask(input: SubmitTaskInput): Promise<SubmitTaskOutput> {
  const api = taskApiOf(input.family);
  if (!api) return { kind: 'refused', retryable: false, code: 'family_not_served', message: `No adapter for the ${input.family} task API.`, httpStatus: 0 };
  const request = builtRequest(() => api.submit(input.job, input.target, input.vendorCallbackUrl));
  if ('kind' in request) return request;
  const answer = await exchange(request, input.timeoutMs, { allowLoopback: input.allowLoopback });
  return answer.kind === 'answer' ? api.submitted(answer.status, answer.body, input.job) : answer;
}
