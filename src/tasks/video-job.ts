import type { VideoCall } from '../billing/media-pricing.js';

/**
 * The video request profiles; a catalog model names its profile in `capabilities.profile`. The spec's
 * six (R2V-*, I2V-*), then one per vendor model family outside them: the general video table plus
 * the parameters its vendor documents.
 */
export const SPEC_VIDEO_PROFILES = ['R2V-A', 'R2V-B', 'R2V-C', 'R2V-D', 'I2V-A', 'I2V-B'] as const;
export const VIDEO_PROFILES = [
  ...SPEC_VIDEO_PROFILES,
  'HAILUO',
  'KLING',
  'RUNWAY-I2V',
  'LUMA-RAY',
] as const;
export type SpecVideoProfile = (typeof SPEC_VIDEO_PROFILES)[number];
export type VideoProfile = (typeof VIDEO_PROFILES)[number];

/**
 * A validated video request, normalised across profiles: every default filled in, field names the
 * gateway's own (the vendor adapters map them to each wire format). Plain data: it is stored with the
 * task row (jsonb) and handed to the worker pool.
 */
export interface VideoJob {
  readonly profile: VideoProfile;
  /** The catalog model id the caller named. */
  readonly model: string;
  /** The vendor's own model name (catalog `upstreamModel`). */
  readonly upstreamModel: string;
  /** Absent only where the profile makes it optional (I2V-A). */
  readonly prompt?: string;
  readonly negativePrompt?: string;
  /** Reference or first-frame images, in the caller's order: https URLs or `data:` URIs. */
  readonly imageUrls: readonly string[];
  /** Reference videos (R2V-A): https URLs. */
  readonly videoUrls: readonly string[];
  /** Seconds of output. */
  readonly duration: number;
  /** Pixel size `W*H` (R2V-A). */
  readonly size?: string;
  /** `540p`, `720p`, `1080p`, `2K`, as the profile spells it. */
  readonly resolution?: string;
  /** `16:9` and so on; I2V-B's `ratio` and R2V-B's `ratio` alias land here too. */
  readonly aspectRatio?: string;
  readonly shotType?: 'single' | 'multi';
  readonly audio?: boolean;
  readonly watermark?: boolean;
  readonly seed?: number;
  readonly movementAmplitude?: string;
  readonly bgm?: boolean;
  /** Let the vendor rewrite the prompt (MiniMax `prompt_optimizer`). */
  readonly promptOptimizer?: boolean;
  /** The vendor's quality mode (Kling `std` / `pro`). */
  readonly mode?: string;
  /** `sdr` or `hdr` (Luma Ray), a price tier too. */
  readonly dynamicRange?: 'sdr' | 'hdr';
}

/** What the price sheet needs of a job (billing/media-pricing.ts). */
export function videoCallOf(job: VideoJob): VideoCall {
  return { kind: 'video', seconds: job.duration, resolution: job.size === undefined ? job.resolution : undefined, size: job.size, audio: job.audio, dynamicRange: job.dynamicRange };
}
