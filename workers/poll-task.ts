/** piscina task: asks a vendor how one of its tasks stands. Plain data in and out. */
import type { VendorRefusal, VendorTarget, VendorTaskState } from '../src/providers/video/adapter.js';
import { VIDEO_ADAPTERS } from '../src/providers/video/index.js';
import { exchange } from '../src/tasks/vendor-exchange.js';

export interface PollTaskInput {
  readonly family: string;
  readonly upstreamId: string;
  readonly target: VendorTarget;
  readonly timeoutMs: number;
  /** Ask the vendor to cancel instead of polling (where it has a cancel). */
  readonly cancel?: boolean;
}

export type PollTaskOutput = VendorTaskState | VendorRefusal;

export default async function pollTask(input: PollTaskInput): Promise<PollTaskOutput> {
  const adapter = VIDEO_ADAPTERS[input.family];
  if (!adapter) return { kind: 'refused', retryable: false, code: 'family_not_served', message: `No adapter for the ${input.family} task API.`, httpStatus: 0 };
  const answer = await exchange(adapter.poll(input.upstreamId, input.target), input.timeoutMs);
  return answer.kind === 'answer' ? adapter.polled(answer.status, answer.body) : answer;
}
