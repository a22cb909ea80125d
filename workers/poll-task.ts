/** piscina task: asks a vendor how one of its tasks stands. Plain data in and out. */
import type { VendorRefusal, VendorTarget, VendorTaskState } from '../src/providers/video/adapter.js';
import { exchange } from '../src/tasks/vendor-exchange.js';
import { taskApiOf } from '../src/tasks/task-apis.js';

export interface PollTaskInput {
  readonly family: string;
  readonly upstreamId: string;
  readonly target: VendorTarget;
  readonly timeoutMs: number;
}

export type PollTaskOutput = VendorTaskState | VendorRefusal;

export default async function pollTask(input: PollTaskInput): Promise<PollTaskOutput> {
  const api = taskApiOf(input.family);
  if (!api) return { kind: 'refused', retryable: false, code: 'family_not_served', message: `No adapter for the ${input.family} task API.`, httpStatus: 0 };
  const answer = await exchange(api.poll(input.upstreamId, input.target), input.timeoutMs);
  if (answer.kind !== 'answer') return answer;
  const state = api.polled(answer.status, answer.body, input.target);
  if (state.kind !== 'retrieve') return state;
  // The vendor says where the result is in a second answer (MiniMax's file record).
  const retrieved = await exchange(state.request, input.timeoutMs);
  if (retrieved.kind !== 'answer') return retrieved;
  return api.retrieved ? api.retrieved(retrieved.status, retrieved.body, state.status) : { kind: 'unknown', status: state.status };
}
