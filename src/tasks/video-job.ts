import type { VideoCall } from '../billing/media-pricing.js';

/** The spec's video model profiles; a catalog model names its profile in `capabilities.profile`. */
export const VIDEO_PROFILES = ['R2V-A', 'R2V-B', 'R2V-C', 'R2V-D', 'I2V-A', 'I2V-B'] as const;
export type VideoProfile = (typeof VIDEO_PROFILES)[number];

/**
 * Request schemas of video models outside the spec's profiles: the spec's general video table mapped
 * onto what the vendor documents (src/http/schemas/videos.ts). A catalog model names one in
 * `capabilities.profile` as it names a profile.
 */
export const VENDOR_VIDEO_SCHEMAS = [
  'VEO', 'VEO-LITE', 'WAN-R2V-FLASH', 'VIDU-Q3-R2V', 'VIDU-Q3-I2V', 'SEEDANCE-1.0-PRO', 'SEEDANCE-1.5-PRO', 'SEEDANCE-2.0',
  'HAILUO', 'KLING', 'RUNWAY-I2V', 'RUNWAY-V2V', 'LUMA-RAY',
] as const;
export type VideoSchemaName = VideoProfile | (typeof VENDOR_VIDEO_SCHEMAS)[number];

/**
 * Schemas of video-to-video models billed per second of the caller's input video: the request names
 * no duration; the route measures the input (its MP4 movie header) and sets the job's `duration` to
 * its seconds rounded up before pricing and holding it.
 */
export const PRICED_BY_INPUT_VIDEO: readonly VideoSchemaName[] = ['RUNWAY-V2V'];

/**
 * A validated video request, normalised across profiles: every default filled in, field names the
 * gateway's own (the vendor adapters map them to each wire format). Plain data: it is stored with the
 * task row (jsonb) and handed to the worker pool.
 */
export interface VideoJob {
  readonly profile: VideoSchemaName;
  /** The catalog model id the caller named. */
  readonly model: string;
  /** The vendor's own model name (catalog `upstreamModel`). */
  readonly upstreamModel: string;
  /** Absent only where the profile makes it optional (I2V-A). */
  readonly prompt?: string;
  readonly negativePrompt?: string;
  /** Reference or first-frame images, in the caller's order: https URLs or `data:` URIs. */
  readonly imageUrls: readonly string[];
  /** Reference videos (R2V-A, Seedance 2.0) or the video to edit (RUNWAY-V2V): https URLs. */
  readonly videoUrls: readonly string[];
  /** Seconds of output; on a schema PRICED_BY_INPUT_VIDEO, the input video's seconds rounded up. */
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
  /** Seedance: hold the camera still. */
  readonly cameraFixed?: boolean;
  /** Let the vendor rewrite the prompt (MiniMax `prompt_optimizer`). */
  readonly promptOptimizer?: boolean;
  /** The vendor's quality mode (Kling `std` / `pro`). */
  readonly mode?: string;
  /** `sdr` or `hdr` (Luma Ray), a price tier too. */
  readonly dynamicRange?: 'sdr' | 'hdr';
}

/** What the price sheet needs of a job (billing/media-pricing.ts). */
export function videoCallOf(job: VideoJob): VideoCall {
  return { kind: 'video', seconds: job.duration, resolution: job.size === undefined ? job.resolution : undefined, size: job.size, audio: job.audio, dynamicRange: job.dynamicRange, mode: job.mode };
}
