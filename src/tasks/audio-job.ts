import type { AudioCall, AudioOutcome } from '../billing/media-pricing.js';

/** Container formats the gateway stores and times (src/media/audio-duration.ts). */
export const AUDIO_FORMATS = ['mp3', 'wav'] as const;
export type AudioFormat = (typeof AUDIO_FORMATS)[number];

/** A validated `POST /v1/audio/speech`, defaults filled in. Plain data: stored with the task row and handed to workers. */
export interface SpeechJob {
  readonly task: 'speech';
  /** The catalog model id the caller named. */
  readonly model: string;
  /** The vendor's own model name (catalog `upstreamModel`). */
  readonly upstreamModel: string;
  readonly input: string;
  readonly voice: string;
  readonly format: AudioFormat;
  readonly speed?: number;
  readonly instructions?: string;
  /** Token-billed models: the input's tokens and the bound on audio output tokens the hold covers. */
  readonly inputTokens?: number;
  readonly maxOutputTokens?: number;
}

/** A validated `POST /v1/audio/generations` (music and sound). */
export interface MusicJob {
  readonly task: 'music';
  readonly model: string;
  readonly upstreamModel: string;
  readonly prompt: string;
  readonly lyrics?: string;
  /** Seconds asked for, where the model takes a length. */
  readonly duration?: number;
  readonly instrumental?: boolean;
  readonly format: AudioFormat;
}

export type AudioJob = SpeechJob | MusicJob;

/** Characters as billed: code points (an emoji is one). */
export const characterCount = (text: string) => [...text].length;

/**
 * What the price sheet needs of a job (billing/media-pricing.ts): the characters of a speech input,
 * the seconds of music asked for, and for token-billed speech its input tokens and an output bound.
 */
export function audioCallOf(job: AudioJob): AudioCall {
  if (job.task === 'music') return { kind: 'audio', seconds: job.duration };
  return { kind: 'audio', characters: characterCount(job.input), inputTokens: job.inputTokens, maxOutputTokens: job.maxOutputTokens };
}

/** What was delivered: the measured seconds, and for token-billed speech the audio tokens those seconds make. */
export function audioOutcomeOf(seconds: number | undefined, audioTokensPerSecond: number | undefined): AudioOutcome {
  if (seconds === undefined) return { kind: 'audio' };
  return audioTokensPerSecond === undefined ? { kind: 'audio', seconds } : { kind: 'audio', seconds, outputTokens: Math.ceil(seconds * audioTokensPerSecond) };
}

/**
 * The longest speech `characters` can plausibly make at `speed`, for the reservation of a model billed
 * by audio output: a slow reader's 4 characters a second at speed 1, plus 5 seconds of lead and tail.
 */
export function speechSecondsBound(characters: number, speed = 1): number {
  return Math.ceil(characters / (4 * speed)) + 5;
}
