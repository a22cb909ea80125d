/**
 * `POST /v1/videos/generations`: one strict valibot schema per model profile of the spec (R2V-A,
 * R2V-B, R2V-C, R2V-D, I2V-A, I2V-B), built once, chosen by the model's `capabilities.profile`. Each
 * turns a request into a `VideoJob` with every default filled in; a wrong value is a 400 naming the
 * field and what it may be. Durations are JSON numbers (R2V-B's are the strings "6" and "10", numbers
 * accepted too, as SDK users send them); nothing is silently clamped.
 */
import * as v from 'valibot';
import type { MediaModel } from '../../catalog/model.js';
import { ApiError, badRequest } from '../errors.js';
import { parseWith } from './issues.js';
import { VIDEO_PROFILES, type VideoJob, type VideoProfile } from '../../tasks/video-job.js';

const SEED_MAX = 2_147_483_647;
const quoted = (values: readonly string[]) => values.map((value) => `'${value}'`).join(', ');

const prompt = (max: number) => v.pipe(
  v.string('must be a string'), v.minLength(1, 'must not be empty'),
  v.check((text) => [...text].length <= max, `must be at most ${max} characters`),
);
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) => v.picklist(values, `must be one of ${quoted(values)}`);
const integer = (min: number, max: number) => v.pipe(
  v.number(`must be a whole number from ${min} to ${max}`), v.integer(`must be a whole number from ${min} to ${max}`),
  v.minValue(min, `must be a whole number from ${min} to ${max}`), v.maxValue(max, `must be a whole number from ${min} to ${max}`),
);
const flag = v.boolean('must be true or false');
const seed = integer(0, SEED_MAX);

/** http too: an upload on this gateway's media host may be plain http (a local gateway); the route refuses plain http anywhere else. */
const HTTPS = /^https?:\/\/[^\s]+$/i;
const DATA_IMAGE = /^data:image\/(?:png|jpeg|jpg|webp);base64,/i;
const httpsUrl = v.pipe(v.string('must be a string'), v.maxLength(2048, 'must be at most 2048 characters'), v.regex(HTTPS, 'must be an https URL'));
const imageEntry = (inline: boolean) => v.pipe(
  v.string('must be a string'), v.minLength(1, 'must not be empty'),
  v.check((entry) => HTTPS.test(entry) || (inline && DATA_IMAGE.test(entry)),
    inline ? 'must be an https URL or a base64 data:image/png, jpeg or webp URI' : 'must be a public https URL'),
);
const list = <T extends v.GenericSchema>(entry: T, min: number, max: number) => v.pipe(
  v.array(entry, 'must be an array'),
  v.minLength(min, min === max ? `must have exactly ${min} element${min === 1 ? '' : 's'}` : `must have ${min} to ${max} elements`),
  v.maxLength(max, min === max ? `must have exactly ${max} element${max === 1 ? '' : 's'}` : `must have ${min} to ${max} elements`),
);
/** `callback_url`: only its shape here; the route checks that its host is public. */
const callbackUrl = v.pipe(v.string('must be a string'), v.maxLength(2048, 'must be at most 2048 characters'), v.regex(/^https?:\/\/[^\s]+$/i, 'must be an https URL'));

const common = { model: v.string(), callback_url: v.optional(callbackUrl) };

const R2V_A_SIZES = ['1920*1080', '1080*1920', '1440*1440', '1632*1248', '1248*1632', '1280*720', '720*1280', '960*960', '1088*832', '832*1088'] as const;
const RATIOS_3 = ['16:9', '9:16', '1:1'] as const;
const R2V_B_RATIOS = ['16:9', '4:3', '1:1', '3:4', '9:16', '21:9', 'adaptive'] as const;
const I2V_B_RATIOS = ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'] as const;
const TIERS = ['540p', '720p', '1080p'] as const;

const SCHEMAS = {
  'R2V-A': v.strictObject({
    ...common,
    prompt: prompt(1500),
    image_urls: v.optional(list(imageEntry(false), 0, 5)),
    video_urls: v.optional(list(httpsUrl, 0, 3)),
    size: v.optional(oneOf(R2V_A_SIZES), '1920*1080'),
    duration: v.optional(integer(2, 10), 5),
    shot_type: v.optional(oneOf(['single', 'multi'] as const), 'single'),
    audio: v.optional(flag, true),
    negative_prompt: v.optional(prompt(500)),
    watermark: v.optional(flag, false),
    seed: v.optional(seed),
  }),
  'R2V-B': v.strictObject({
    ...common,
    prompt: prompt(7000),
    image_urls: list(imageEntry(true), 1, 1),
    duration: v.optional(v.pipe(
      v.union([v.picklist(['6', '10']), v.picklist([6, 10])], "must be one of '6', '10'"), v.transform(Number),
    ), 6),
    resolution: v.optional(oneOf(['2K'] as const), '2K'),
    aspect_ratio: v.optional(oneOf(R2V_B_RATIOS)),
    ratio: v.optional(oneOf(R2V_B_RATIOS)),
    seed: v.optional(seed),
  }),
  'R2V-C': v.strictObject({
    ...common,
    prompt: prompt(2000),
    image_urls: list(imageEntry(true), 1, 7),
    duration: v.optional(integer(1, 10), 5),
    resolution: v.optional(oneOf(TIERS), '720p'),
    aspect_ratio: v.optional(oneOf(RATIOS_3), '16:9'),
    audio: v.optional(flag, false),
    movement_amplitude: v.optional(oneOf(['auto', 'small', 'medium', 'high'] as const), 'auto'),
    bgm: v.optional(flag, false),
    seed: v.optional(seed),
  }),
  'R2V-D': v.strictObject({
    ...common,
    prompt: prompt(1500),
    image_urls: list(imageEntry(true), 1, 7),
    duration: v.optional(v.picklist([5], 'must be 5: this model makes 5-second clips only'), 5),
    resolution: v.optional(v.picklist(['1080p'], "must be '1080p': this model makes 1080p clips only"), '1080p'),
    aspect_ratio: v.optional(oneOf(RATIOS_3), '16:9'),
    movement_amplitude: v.optional(oneOf(['auto', 'small', 'medium', 'large'] as const), 'auto'),
    bgm: v.optional(flag, false),
    seed: v.optional(seed),
  }),
  'I2V-A': v.strictObject({
    ...common,
    prompt: v.optional(prompt(2000)),
    image_urls: list(imageEntry(true), 1, 1),
    duration: v.optional(integer(1, 16), 5),
    resolution: v.optional(oneOf(TIERS), '720p'),
    movement_amplitude: v.optional(oneOf(['auto', 'small', 'medium', 'high'] as const), 'auto'),
    seed: v.optional(seed),
  }),
  'I2V-B': v.strictObject({
    ...common,
    prompt: prompt(5000),
    image_urls: list(imageEntry(false), 1, 1),
    resolution: v.optional(v.picklist(['720p'], "must be '720p': 1080p is not available for this model"), '720p'),
    ratio: v.optional(oneOf(I2V_B_RATIOS)),
    aspect_ratio: v.optional(oneOf(I2V_B_RATIOS)),
    duration: v.optional(integer(3, 12), 5),
    seed: v.optional(seed),
  }),
} satisfies Record<VideoProfile, v.GenericSchema>;

/** `ratio` and `aspect_ratio` name one setting (the spec's sample uses one, its table the other): both given must agree. */
function ratioOf(request: { ratio?: string; aspect_ratio?: string }, fallback: string): string {
  if (request.ratio !== undefined && request.aspect_ratio !== undefined && request.ratio !== request.aspect_ratio) {
    throw badRequest(`Invalid value for 'ratio': '${request.ratio}' contradicts aspect_ratio '${request.aspect_ratio}'; send one of them.`, 'ratio');
  }
  return request.ratio ?? request.aspect_ratio ?? fallback;
}

/** `@N` in the prompt addresses the N-th image: one past the images sent is the caller's mistake. */
function checkReferences(text: string, images: number): void {
  for (const match of text.matchAll(/@(\d+)/g)) {
    const n = Number(match[1]);
    if (n < 1 || n > images) {
      throw badRequest(`Invalid value for 'prompt': it refers to @${match[1]}, but ${images} image${images === 1 ? ' was' : 's were'} sent (use @1 to @${images}).`, 'prompt');
    }
  }
}

const isProfile = (value: unknown): value is VideoProfile => typeof value === 'string' && (VIDEO_PROFILES as readonly string[]).includes(value);

/** The request as a job of `model`'s profile, or a 400 naming the field. */
export function parseVideoRequest(body: Record<string, unknown>, model: MediaModel): VideoJob {
  const profile = model.capabilities.profile;
  if (!isProfile(profile)) {
    throw new ApiError(400, 'model_not_supported', `The model '${model.id}' is not offered for video generation through this endpoint yet.`, 'model');
  }
  const base = { profile, model: model.id, upstreamModel: model.upstreamModel };
  switch (profile) {
    case 'R2V-A': {
      const r = parseWith(SCHEMAS['R2V-A'], body);
      const imageUrls = r.image_urls ?? [];
      const videoUrls = r.video_urls ?? [];
      if (imageUrls.length + videoUrls.length === 0) throw badRequest("Invalid request: send at least one reference in 'image_urls' or 'video_urls'.", 'image_urls');
      return {
        ...base, prompt: r.prompt, negativePrompt: r.negative_prompt, imageUrls, videoUrls, duration: r.duration, size: r.size,
        shotType: r.shot_type, audio: r.audio, watermark: r.watermark, seed: r.seed,
      };
    }
    case 'R2V-B': {
      const r = parseWith(SCHEMAS['R2V-B'], body);
      return { ...base, prompt: r.prompt, imageUrls: r.image_urls, videoUrls: [], duration: r.duration, resolution: r.resolution, aspectRatio: ratioOf(r, '16:9'), seed: r.seed };
    }
    case 'R2V-C': {
      const r = parseWith(SCHEMAS['R2V-C'], body);
      checkReferences(r.prompt, r.image_urls.length);
      return {
        ...base, prompt: r.prompt, imageUrls: r.image_urls, videoUrls: [], duration: r.duration, resolution: r.resolution, aspectRatio: r.aspect_ratio,
        audio: r.audio, movementAmplitude: r.movement_amplitude, bgm: r.bgm, seed: r.seed,
      };
    }
    case 'R2V-D': {
      const r = parseWith(SCHEMAS['R2V-D'], body);
      checkReferences(r.prompt, r.image_urls.length);
      return {
        ...base, prompt: r.prompt, imageUrls: r.image_urls, videoUrls: [], duration: r.duration, resolution: r.resolution, aspectRatio: r.aspect_ratio,
        movementAmplitude: r.movement_amplitude, bgm: r.bgm, seed: r.seed,
      };
    }
    case 'I2V-A': {
      const r = parseWith(SCHEMAS['I2V-A'], body);
      return { ...base, prompt: r.prompt, imageUrls: r.image_urls, videoUrls: [], duration: r.duration, resolution: r.resolution, movementAmplitude: r.movement_amplitude, seed: r.seed };
    }
    case 'I2V-B': {
      const r = parseWith(SCHEMAS['I2V-B'], body);
      return { ...base, prompt: r.prompt, imageUrls: r.image_urls, videoUrls: [], duration: r.duration, resolution: r.resolution, aspectRatio: ratioOf(r, '16:9'), seed: r.seed };
    }
  }
}
