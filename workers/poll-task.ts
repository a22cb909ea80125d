/** piscina task: asks a vendor how one of its tasks stands. Plain data in and out. */
import type { MediaConfig } from '../src/config.js';
import type { VendorRefusal, VendorTarget, VendorTaskState } from '../src/providers/video/adapter.js';
import { builtRequest, exchange, MAX_ANSWER_BYTES } from '../src/tasks/vendor-exchange.js';
import { taskApiOf } from '../src/tasks/task-apis.js';
import { threadMediaStorage } from '../src/media/open.js';
import { sniffMediaType } from '../src/media/sniff.js';
import { SpanKind } from '../src/tracing/tracing.js';
import { inWorkerSpan, startWorkerTracing, type WorkerTrace } from '../src/tasks/worker-spans.js';

export interface PollTaskInput {
  readonly family: string;
  readonly upstreamId: string;
  readonly target: VendorTarget;
  readonly timeoutMs: number;
  /** Where a result the answer carries itself is stored (Veo on Vertex AI). */
  readonly media: MediaConfig;
  /** The largest such result (MEDIA_MAX_BYTES: it is held whole, and its base64 answer with it). */
  readonly maxInlineBytes: number;
  /** Loopback vendors (the built-in mock) and tests, for a guarded target. */
  readonly allowLoopback: boolean;
  /** The poll step's span (tracing on): the exchanges are part of the task's trace. */
  readonly trace?: WorkerTrace;
}

export type PollTaskOutput =
  | Exclude<VendorTaskState, { readonly kind: 'inline' }>
  /** The result the answer carried, stored on the media host. */
  | { readonly kind: 'stored'; readonly status: string; readonly url: string; readonly seconds?: number }
  /** The answer carried a result that cannot be stored (too large, not a video, storage off or failing): tried again, then failed. */
  | { readonly kind: 'unavailable'; readonly status: string; readonly reason: string; readonly message: string }
  | VendorRefusal;

/** Room in an answer for the JSON around a base64 result. */
const ANSWER_OVERHEAD_BYTES = 64 * 1024;
const base64Length = (bytes: number) => 4 * Math.ceil(bytes / 3);

await startWorkerTracing();

export default function pollTask(input: PollTaskInput): Promise<PollTaskOutput> {
  return inWorkerSpan(input.trace, 'vendor.poll', SpanKind.INTERNAL, () => polled(input), (output) => ({
    attributes: { 'gateway.task_api': input.family, 'gateway.poll_outcome': output.kind, ...('status' in output && typeof output.status === 'string' ? { 'gateway.upstream_status': output.status } : {}) },
    ...(output.kind === 'refused' ? { error: output.code } : {}),
  }));
}

async function polled(input: PollTaskInput): Promise<PollTaskOutput> {
  const api = taskApiOf(input.family);
  if (!api) return { kind: 'refused', retryable: false, code: 'family_not_served', message: `No adapter for the ${input.family} task API.`, httpStatus: 0 };
  const request = builtRequest(() => api.poll(input.upstreamId, input.target));
  if ('kind' in request) return request;
  const maxBytes = api.resultsInAnswer ? Math.max(MAX_ANSWER_BYTES, base64Length(input.maxInlineBytes) + ANSWER_OVERHEAD_BYTES) : MAX_ANSWER_BYTES;
  const answer = await exchange(request, input.timeoutMs, { maxBytes, allowLoopback: input.allowLoopback });
  if (answer.kind !== 'answer') return answer;
  const state = api.polled(answer.status, answer.body, input.target);
  if (state.kind === 'inline') return storeInline(state, input);
  if (state.kind !== 'retrieve') return state;
  // The vendor says where the result is in a second answer (MiniMax's file record).
  const retrieved = await exchange(state.request, input.timeoutMs, { allowLoopback: input.allowLoopback });
  if (retrieved.kind !== 'answer') return retrieved;
  const found = api.retrieved ? api.retrieved(retrieved.status, retrieved.body, state.status) : { kind: 'unknown', status: state.status } as const;
  return found.kind === 'inline' ? storeInline(found, input) : found;
}

/** A result carried in the answer: checked for size before it is decoded, sniffed to be a video, stored. */
async function storeInline(state: Extract<VendorTaskState, { readonly kind: 'inline' }>, input: PollTaskInput): Promise<PollTaskOutput> {
  const { status } = state;
  const tooLarge = { kind: 'unavailable', status, reason: 'too_large', message: `The vendor's result is larger than ${input.maxInlineBytes} bytes.` } as const;
  if (state.base64.length > base64Length(input.maxInlineBytes)) return tooLarge;
  const bytes = Buffer.from(state.base64, 'base64');
  if (bytes.length > input.maxInlineBytes) return tooLarge;
  const contentType = sniffMediaType(bytes)?.contentType;
  if (!contentType?.startsWith('video/')) return { kind: 'unavailable', status, reason: 'not_media', message: `The vendor's result is not a video (${contentType ?? 'unknown type'}).` };
  try {
    const store = await threadMediaStorage(input.media);
    if (!store) return { kind: 'unavailable', status, reason: 'storage_off', message: 'Media storage is off.' };
    const stored = await store.put(bytes, contentType);
    return { kind: 'stored', status, url: stored.url, ...(state.seconds === undefined ? {} : { seconds: state.seconds }) };
  } catch (error) {
    return { kind: 'unavailable', status, reason: 'storage', message: (error as Error).message };
  }
}
