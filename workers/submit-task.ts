/** piscina task: submits a video job to its vendor and reads the vendor's task id from the answer. Plain data in and out. */
import type { VendorRefusal, VendorTarget } from '../src/providers/video/adapter.js';
import { VIDEO_ADAPTERS } from '../src/providers/video/index.js';
import { exchange } from '../src/tasks/vendor-exchange.js';
import type { VideoJob } from '../src/tasks/video-job.js';

export interface SubmitTaskInput {
  readonly family: string;
  readonly job: VideoJob;
  readonly target: VendorTarget;
  readonly timeoutMs: number;
  /** Where the vendor may call back with status hints (vendors that take one). */
  readonly vendorCallbackUrl?: string;
}

export type SubmitTaskOutput = { readonly kind: 'submitted'; readonly upstreamId: string } | VendorRefusal;

export default async function submitTask(input: SubmitTaskInput): Promise<SubmitTaskOutput> {
  const adapter = VIDEO_ADAPTERS[input.family];
  if (!adapter) return { kind: 'refused', retryable: false, code: 'family_not_served', message: `No adapter for the ${input.family} task API.`, httpStatus: 0 };
  const answer = await exchange(adapter.submit(input.job, input.target, input.vendorCallbackUrl), input.timeoutMs);
  return answer.kind === 'answer' ? adapter.submitted(answer.status, answer.body) : answer;
}
