import type { TaskApi, VendorRefusal, VendorRequest, VendorTarget } from '../video/adapter.js';
import type { AudioJob } from '../../tasks/audio-job.js';

/** What a synchronous vendor's answer carries: the audio itself, or where to download it. */
export type GeneratedAudio =
  | { readonly kind: 'bytes'; readonly bytes: Buffer }
  | { readonly kind: 'url'; readonly url: string };

/**
 * An audio vendor's wire format, pure: a job is either made in one exchange whose answer is the audio
 * (OpenAI speech, ElevenLabs, MiniMax music, Stable Audio) or run as the vendor's task, submitted and polled like a
 * video (MiniMax async speech). The worker pool does the I/O (workers/generate-audio.ts, submit-task,
 * poll-task).
 */
export interface AudioAdapter {
  /** The catalog `family` it serves (`openai-audio`, `elevenlabs`, `minimax`, `gemini-audio`, `stability`). */
  readonly family: string;
  /** The vendor's task API, where jobs run as vendor tasks (every such job: `runsAsTask`). */
  readonly tasks?: TaskApi<AudioJob>;
  /** Whether `job` is submitted and polled (else made in one exchange). */
  runsAsTask(job: AudioJob): boolean;
  generate(job: AudioJob, target: VendorTarget): VendorRequest;
  generated(httpStatus: number, contentType: string | undefined, body: Buffer): GeneratedAudio | VendorRefusal;
}
