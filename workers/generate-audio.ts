/**
 * piscina task: makes a job's audio at a vendor that answers with it at once (OpenAI speech,
 * ElevenLabs, MiniMax music, Stable Audio), downloads it where the answer is a link, times it and stores it on the
 * media host. Plain data in and out; the storage is opened once per worker thread.
 */
import type { MediaConfig } from '../src/config.js';
import { threadMediaStorage } from '../src/media/open.js';
import { storeAudio } from '../src/media/audio-store.js';
import { UrlGuardError, fetchGuarded } from '../src/media/url-guard.js';
import { AUDIO_ADAPTERS } from '../src/providers/audio/index.js';
import type { VendorRefusal, VendorTarget } from '../src/providers/video/adapter.js';
import type { AudioJob } from '../src/tasks/audio-job.js';
import { exchangeBytes } from '../src/tasks/vendor-exchange.js';
import { SpanKind } from '../src/tracing/tracing.js';
import { inWorkerSpan, startWorkerTracing, type WorkerTrace } from '../src/tasks/worker-spans.js';

export interface GenerateAudioInput {
  readonly family: string;
  readonly job: AudioJob;
  readonly target: VendorTarget;
  /** The whole generation (a song takes minutes) and, separately, the download of a linked result. */
  readonly timeoutMs: number;
  readonly media: MediaConfig;
  readonly maxBytes: number;
  /** Loopback vendors (the built-in mock) and tests. */
  readonly allowLoopback: boolean;
  /** The make step's span (tracing on): the exchange and download are part of the task's trace. */
  readonly trace?: WorkerTrace;
}

export type GenerateAudioOutput =
  | { readonly kind: 'stored'; readonly url: string; readonly bytes: number; readonly format: string; readonly seconds: number }
  /** The vendor made it, but it could not be fetched or is not audio the gateway can read: tried again, then failed. */
  | { readonly kind: 'unavailable'; readonly reason: string; readonly message: string }
  | VendorRefusal;

await startWorkerTracing();

export default function generateAudio(input: GenerateAudioInput): Promise<GenerateAudioOutput> {
  return inWorkerSpan(input.trace, 'vendor.generate', SpanKind.INTERNAL, () => generated(input), (output) => {
    if (output.kind === 'stored') return { attributes: { 'gateway.task_api': input.family, 'gateway.result_bytes': output.bytes, 'gateway.result_seconds': output.seconds } };
    return { attributes: { 'gateway.task_api': input.family }, error: output.kind === 'refused' ? output.code : output.reason };
  });
}

async function generated(input: GenerateAudioInput): Promise<GenerateAudioOutput> {
  const adapter = Object.hasOwn(AUDIO_ADAPTERS, input.family) ? AUDIO_ADAPTERS[input.family] : undefined;
  if (!adapter) return { kind: 'refused', retryable: false, code: 'family_not_served', message: `No adapter for the ${input.family} audio API.`, httpStatus: 0 };
  const store = await threadMediaStorage(input.media);
  if (!store) return { kind: 'unavailable', reason: 'storage_off', message: 'Media storage is off.' };

  const answer = await exchangeBytes(adapter.generate(input.job, input.target), input.timeoutMs, input.maxBytes);
  if (answer.kind === 'refused') return answer;
  const made = adapter.generated(answer.status, answer.contentType, answer.body);
  if (made.kind === 'refused') return made;
  try {
    const bytes = made.kind === 'bytes' ? made.bytes : (await fetchGuarded(made.url, { maxBytes: input.maxBytes, timeoutMs: input.timeoutMs, allowLoopback: input.allowLoopback })).bytes;
    const stored = await storeAudio(store, bytes);
    if (!stored.ok) return { kind: 'unavailable', reason: stored.reason, message: stored.message };
    return { kind: 'stored', url: stored.url, bytes: stored.bytes, format: stored.format, seconds: stored.seconds };
  } catch (error) {
    if (error instanceof UrlGuardError) return { kind: 'unavailable', reason: error.reason, message: error.message };
    return { kind: 'unavailable', reason: 'storage', message: (error as Error).message };
  }
}
