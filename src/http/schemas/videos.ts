/**
 * `POST /v1/videos/generations`: one strict valibot schema per model profile of the spec (R2V-A,
 * R2V-B, R2V-C, R2V-D, I2V-A, I2V-B), and per vendor schema of a model outside them (VEO, VEO-LITE,
 * HAILUO, KLING, RUNWAY-I2V, RUNWAY-V2V, LUMA-RAY: the general video table mapped onto each vendor's parameters),
 * built once at load from shared field builders and chosen by the model's `capabilities.profile`. A
 * request becomes a `VideoJob` with every default filled in; a wrong
 * value is a 400 naming the field and what it may be; nothing is clamped.
 *
 * Each profile takes its own fields, `model`, `callback_url`, and the general table's fields it does
 * not rule out: `aspect_ratio` is I2V-B's `ratio` under its general name (and R2V-B's declared name
 * for the `ratio` of the spec's sample); on R2V-A, `resolution` and `aspect_ratio` pick the `size`;
 * R2V-D takes `duration` and `resolution` at its fixed values only; I2V-A has no aspect ratio to set.
 * A `null` field counts as not sent (as in the image schema). Durations are JSON numbers: the string
 * "5" is refused, not coerced, except on R2V-B, whose spec type is the string enum "6" / "10" (the
 * numbers 6 and 10 are taken too, as SDK users send them).
 */
import * as v from 'valibot';
import type { MediaModel } from '../../catalog/model.js';
import { ApiError, badRequest } from '../errors.js';
import { parseWith } from './issues.js';
import { VENDOR_VIDEO_SCHEMAS, VIDEO_PROFILES, type VideoJob, type VideoSchemaName } from '../../tasks/video-job.js';

// ---- field builders ----

const quoted = (values: readonly (string | number)[]) => values.map((value) => `'${value}'`).join(', ');
const codePoints = (text: string) => [...text].length;

/** A prompt-like text of at most `max` characters, counted as code points (an emoji is one). */
const text = (max: number) => v.pipe(
  v.string('must be a string.'),
  v.minLength(1, 'must not be empty.'),
  v.check((value) => codePoints(value) <= max, (issue) => `must be at most ${max} characters (${codePoints(issue.input as string)} sent).`),
);

const oneOf = <const T extends readonly [string, ...string[]]>(values: T) => v.picklist(values, `must be one of ${quoted(values)}.`);

/** A field the profile fixes: the one value it may have, and why no other. */
const only = <const T extends string | number>(value: T, why: string) => v.picklist([value], `must be ${quoted([value])}: ${why}.`);

const wholeNumber = (min: number, max: number) => {
  const message = `must be a whole number from ${min} to ${max}.`;
  return v.pipe(v.number(message), v.integer(message), v.minValue(min, message), v.maxValue(max, message));
};

const flag = v.boolean('must be true or false.');
const seed = wholeNumber(0, 2_147_483_647);

/** Durations the spec types as strings ("6", "10"), also taken as the JSON numbers they spell. */
const numericStringEnum = <const T extends readonly [string, ...string[]]>(values: T) => v.pipe(
  v.union([v.picklist(values), v.picklist(values.map(Number) as [number, ...number[]])], `must be one of ${quoted(values)}.`),
  v.transform(Number),
);

// ---- URLs ----

const MAX_URL_CHARS = 2048;
const LOOPBACK_HOST = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;
/** Extensions of media files, to tell a URL that names some other kind of file than the profile takes. */
const MEDIA_EXTENSIONS = new Set([
  'png', 'jpg', 'jpeg', 'gif', 'webp', 'avif', 'bmp', 'tif', 'tiff', 'heic', 'heif', 'svg',
  'mp4', 'm4v', 'mov', 'webm', 'mkv', 'avi', 'flv', 'wmv', 'mp3', 'wav', 'm4a', 'aac', 'ogg', 'flac',
]);

/**
 * An absolute http(s) URL as written: `scheme://host…`, no whitespace, at most MAX_URL_CHARS. The
 * prefix test refuses what the URL parser would repair (`https:/host`, `https:///host`, backslashes).
 */
const urlOf = (value: string): URL | undefined => {
  if (value.length > MAX_URL_CHARS || /\s/.test(value) || !/^https?:\/\/[^/\\?#]/i.test(value)) return undefined;
  try {
    const url = new URL(value);
    return url.hostname === '' ? undefined : url;
  } catch {
    return undefined;
  }
};

/** The media extension a URL's path ends in, if any (`/a/b.PNG` → `png`; `/render?id=3` → none). */
const mediaExtensionOf = (url: URL): string | undefined => {
  const extension = /\.([a-z0-9]{1,5})$/i.exec(url.pathname)?.[1]?.toLowerCase();
  return extension !== undefined && MEDIA_EXTENSIONS.has(extension) ? extension : undefined;
};

interface UrlRule {
  /** `data:` URIs of these image subtypes are taken (decoded and hosted by the route). */
  readonly inline?: readonly string[];
  /** A URL whose path names a media file must name one of these extensions; a path naming none is left to the vendor. */
  readonly extensions?: readonly string[];
  /** What the entry must be, for the message. */
  readonly what: string;
}

/**
 * A reference image or video. Plain `http://` passes here on purpose: an upload on this gateway's own
 * media host may be plain http (a local gateway), which only the route can recognise; the route refuses
 * plain http anywhere else (400 `invalid_image_url`), and checks that the host is public.
 */
const reference = (rule: UrlRule) => {
  const inline = rule.inline === undefined ? undefined : new RegExp(`^data:image/(?:${rule.inline.join('|')});base64,.`, 'i');
  return v.pipe(
    v.string('must be a string.'),
    v.minLength(1, 'must not be empty.'),
    v.rawCheck(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      const entry = dataset.value;
      if (/^data:/i.test(entry)) {
        if (inline === undefined) addIssue({ message: `must be ${rule.what}; data: URIs are not taken by this model.` });
        else if (!inline.test(entry)) addIssue({ message: `must be ${rule.what}; a data: URI must start data:image/${rule.inline!.join('|')};base64, and carry its bytes.` });
        return;
      }
      const url = urlOf(entry);
      if (url === undefined) {
        addIssue({ message: `must be ${rule.what}.` });
        return;
      }
      const extension = mediaExtensionOf(url);
      if (rule.extensions !== undefined && extension !== undefined && !rule.extensions.includes(extension)) {
        addIssue({ message: `must be ${rule.what}; this URL names a .${extension} file.` });
      }
    }),
  );
};

/**
 * `callback_url`: its shape only (the route checks that the host is public). An absolute https URL;
 * plain http only to a loopback host, which the route refuses unless loopback is allowed (tests).
 */
export const callbackUrl = v.pipe(
  v.string('must be a string.'),
  v.check((value) => {
    const url = urlOf(value);
    return url !== undefined && (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOST.test(url.hostname)));
  }, `must be an absolute https:// URL of at most ${MAX_URL_CHARS} characters.`),
);

const list = <T extends v.GenericSchema<unknown, string>>(entry: T, min: number, max: number) => {
  const count = min === max ? `exactly ${min} ${min === 1 ? 'entry' : 'entries'}` : min === 0 ? `at most ${max} entries` : `${min} to ${max} entries`;
  return v.pipe(v.array(entry, `must be an array of ${count}.`), v.minLength(min, `must have ${count}.`), v.maxLength(max, `must have ${count}.`));
};

const HTTPS_URL = 'a public https:// URL';
const IMAGE_ANY = 'a public https:// URL or a base64 data:image/png, jpeg or webp URI';
/** What most profiles take: https images or inline PNG, JPEG or WebP. */
const images = (min: number, max: number) => list(reference({ what: IMAGE_ANY, inline: ['png', 'jpeg', 'webp'] }), min, max);

// ---- the spec's enums ----

/** R2V-A sizes: each sets the aspect ratio and the price tier (about 2M pixels: 1080p; about 0.9M: 720p). */
const R2V_A_SIZES = {
  '1920*1080': ['1080p', '16:9'], '1080*1920': ['1080p', '9:16'], '1440*1440': ['1080p', '1:1'], '1632*1248': ['1080p', '4:3'], '1248*1632': ['1080p', '3:4'],
  '1280*720': ['720p', '16:9'], '720*1280': ['720p', '9:16'], '960*960': ['720p', '1:1'], '1088*832': ['720p', '4:3'], '832*1088': ['720p', '3:4'],
} as const satisfies Record<string, readonly [string, string]>;
type R2vASize = keyof typeof R2V_A_SIZES;
const R2V_A_SIZE_NAMES = Object.keys(R2V_A_SIZES) as [R2vASize, ...R2vASize[]];
const R2V_A_DEFAULT_SIZE: R2vASize = '1920*1080';

const TIERS = ['540p', '720p', '1080p'] as const;
const RATIOS_3 = ['16:9', '9:16', '1:1'] as const;
const R2V_B_RATIOS = ['16:9', '4:3', '1:1', '3:4', '9:16', '21:9', 'adaptive'] as const;
const I2V_B_RATIOS = ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'] as const;
const AMPLITUDES_HIGH = ['auto', 'small', 'medium', 'high'] as const;
const AMPLITUDES_LARGE = ['auto', 'small', 'medium', 'large'] as const;

// ---- profiles ----

/** What any profile's schema yields: the request's fields, defaults filled. */
interface Fields {
  readonly prompt?: string;
  readonly negative_prompt?: string;
  readonly image_urls?: readonly string[];
  readonly video_urls?: readonly string[];
  readonly duration: number;
  readonly size?: string;
  readonly resolution?: string;
  readonly aspect_ratio?: string;
  readonly ratio?: string;
  readonly shot_type?: 'single' | 'multi';
  readonly audio?: boolean;
  readonly watermark?: boolean;
  readonly seed?: number;
  readonly movement_amplitude?: string;
  readonly bgm?: boolean;
  readonly camera_fixed?: boolean;
  readonly prompt_optimizer?: boolean;
  readonly mode?: string;
  readonly dynamic_range?: 'sdr' | 'hdr';
}

interface Profile {
  readonly schema: v.GenericSchema<unknown, Fields>;
  /** Rules across fields and aliases, applied to what the schema yields; throws the 400. */
  readonly settle?: (fields: Fields) => Fields;
}

const COMMON = {
  model: v.pipe(v.string('must be a string.'), v.minLength(1, 'must not be empty.')),
  callback_url: v.optional(callbackUrl),
};

/** A field that may be left out, with the default it then takes (none: the vendor's own). */
const opt = v.optional;

/** A profile: its strict schema (which must yield `Fields`, checked by the compiler) and its cross-field rules. */
const profile = (schema: v.GenericSchema<unknown, Fields>, settle?: Profile['settle']): Profile => Object.freeze({ schema, settle });

/**
 * `ratio` and `aspect_ratio` name one setting (R2V-B declares `aspect_ratio` and its sample says
 * `ratio`; I2V-B declares `ratio` and the general table says `aspect_ratio`): either may be sent, both
 * only if they agree; a disagreement names the profile's alias. The job holds it as `aspectRatio`.
 */
const oneRatio = (alias: 'ratio' | 'aspect_ratio', fallback: string) => (fields: Fields): Fields => {
  const { ratio, aspect_ratio: aspectRatio } = fields;
  if (ratio !== undefined && aspectRatio !== undefined && ratio !== aspectRatio) {
    const other = alias === 'ratio' ? 'aspect_ratio' : 'ratio';
    throw badRequest(`Invalid value for '${alias}': '${fields[alias]}' contradicts ${other} '${fields[other]}'; they name the same setting, send one of them.`, alias);
  }
  return { ...fields, aspect_ratio: aspectRatio ?? ratio ?? fallback, ratio: undefined };
};

/** `@N` in the prompt addresses the N-th image: a number past the images sent is the caller's mistake. */
const referencesInRange = (fields: Fields): Fields => {
  const count = fields.image_urls?.length ?? 0;
  for (const match of (fields.prompt ?? '').matchAll(/@(\d+)/g)) {
    const n = Number(match[1]);
    if (n < 1 || n > count) {
      throw badRequest(`Invalid value for 'prompt': it refers to @${match[1]}, but ${count} image${count === 1 ? ' was' : 's were'} sent (use @1 to @${count}).`, 'prompt');
    }
  }
  return fields;
};

/**
 * R2V-A: at least one reference (the spec's "should": without one there is nothing to refer to), and
 * the `size` from `resolution` and `aspect_ratio` when those general fields are sent instead (each
 * must agree with a `size` sent too).
 */
const r2vA = (fields: Fields): Fields => {
  if ((fields.image_urls?.length ?? 0) + (fields.video_urls?.length ?? 0) === 0) {
    throw badRequest("Invalid request: send at least one reference, an image in 'image_urls' or a video in 'video_urls'.", 'image_urls');
  }
  const { resolution, aspect_ratio: aspectRatio } = fields;
  let size = fields.size as R2vASize | undefined;
  if (size === undefined) {
    const [tier, ratio] = R2V_A_SIZES[R2V_A_DEFAULT_SIZE];
    const wanted = [resolution ?? tier, aspectRatio ?? ratio];
    size = R2V_A_SIZE_NAMES.find((name) => R2V_A_SIZES[name][0] === wanted[0] && R2V_A_SIZES[name][1] === wanted[1])!;
  }
  const [tier, ratio] = R2V_A_SIZES[size];
  for (const [param, sent, implied] of [['resolution', resolution, tier], ['aspect_ratio', aspectRatio, ratio]] as const) {
    if (sent !== undefined && sent !== implied) {
      throw badRequest(`Invalid value for '${param}': size '${size}' is ${implied}, not ${sent}; send the size alone, or a size that is ${sent}.`, param);
    }
  }
  return { ...fields, size, resolution: undefined, aspect_ratio: undefined };
};

/** Text-to-video or image-to-video by what is sent: a prompt, a first frame, or both, never neither. */
const promptOrImage = (fields: Fields): Fields => {
  if (fields.prompt === undefined && (fields.image_urls?.length ?? 0) === 0) {
    throw badRequest("Invalid request: send a 'prompt' (text-to-video), a first frame in 'image_urls' (image-to-video), or both.", 'prompt');
  }
  return fields;
};

/** Kling: `aspect_ratio` shapes a text-to-video clip only (a first frame sets the shape), default 16:9. */
const klingShape = (fields: Fields): Fields => {
  const withImage = (fields.image_urls?.length ?? 0) > 0;
  if (withImage && fields.aspect_ratio !== undefined) {
    throw badRequest("Invalid value for 'aspect_ratio': with a first frame in 'image_urls' the clip takes the image's shape; leave it out.", 'aspect_ratio');
  }
  return promptOrImage({ ...fields, aspect_ratio: withImage ? undefined : (fields.aspect_ratio ?? '16:9') });
};

/**
 * Luma Ray: a first frame takes 5 s only; HDR needs 720p or 1080p and 5 s (Luma's rules, refused here
 * rather than by the vendor after the hold).
 */
const lumaRules = (fields: Fields): Fields => {
  if ((fields.image_urls?.length ?? 0) > 0 && fields.duration !== 5) {
    throw badRequest("Invalid value for 'duration': with a first frame in 'image_urls' the clip is 5 seconds; leave it out or send 5.", 'duration');
  }
  if (fields.dynamic_range === 'hdr' && (fields.resolution === '540p' || fields.duration !== 5)) {
    throw badRequest("Invalid value for 'dynamic_range': 'hdr' needs resolution '720p' or '1080p' and a 5-second clip.", 'dynamic_range');
  }
  return fields;
};

/** Whole seconds from a short list (Hailuo's 6 or 10), as JSON numbers. */
const secondsIn = <const T extends readonly [number, ...number[]]>(values: T) => v.picklist(values, `must be one of ${values.join(', ')} (seconds, a number).`);

/**
 * Google Veo 3.1 (docs/vendors/google-media.md): text-to-video, or image-to-video from one first
 * frame (PNG or JPEG, sent to Google as bytes), at 4, 6 or 8 seconds, 16:9 or 9:16; 1080p and 4K
 * clips are 8 seconds long. Veo makes its audio unasked (the Gemini API has no switch for it), so
 * `audio` is not taken.
 */
const veo = (resolutions: readonly [string, ...string[]]) => profile(v.strictObject({
  ...COMMON,
  prompt: text(4000),
  negative_prompt: opt(text(1000)),
  image_urls: opt(list(reference({ what: `${HTTPS_URL} of a PNG or JPEG image, or a base64 data:image/png or jpeg URI`, inline: ['png', 'jpeg'], extensions: ['png', 'jpg', 'jpeg'] }), 0, 1)),
  duration: opt(v.picklist([4, 6, 8], `must be one of ${quoted([4, 6, 8])} (seconds).`), 8),
  resolution: opt(oneOf(resolutions), '720p'),
  aspect_ratio: opt(oneOf(['16:9', '9:16'] as const), '16:9'),
  seed: opt(seed),
}), (fields) => {
  if (fields.resolution !== '720p' && fields.duration !== 8) {
    throw badRequest(`Invalid value for 'duration': ${fields.resolution} clips are 8 seconds long; send duration 8, or resolution '720p' for ${fields.duration} seconds.`, 'duration');
  }
  return fields;
});

/** Vidu Q3's image-to-video fields (I2V-A's Q3 Pro and Q3 Turbo); the general table's `aspect_ratio` is refused: the clip takes its image's shape. */
const VIDU_Q3_IMAGE_TO_VIDEO = {
  ...COMMON,
  prompt: opt(text(2000)),
  image_urls: images(1, 1),
  duration: opt(wholeNumber(1, 16), 5),
  resolution: opt(oneOf(TIERS), '720p'),
  aspect_ratio: opt(v.never('this model takes no aspect ratio: the clip keeps the shape of its image; leave it out.')),
  seed: opt(seed),
};

/**
 * ByteDance Seedance on Ark (docs/vendors/wan-vidu-seedance.md): text-to-video, or image-to-video
 * with a first frame and optionally a last frame; `aspect_ratio` (or its alias `ratio`) defaults to
 * 16:9 without an image and to `adaptive` (the image's shape) with one. Only the resolutions the
 * catalog prices are taken.
 */
const SEEDANCE_RATIOS = ['16:9', '4:3', '1:1', '3:4', '9:16', '21:9', 'adaptive'] as const;
const seedance = (durations: { min: number; max: number }, resolutions: readonly [string, ...string[]], withAudio: boolean) => profile(v.strictObject({
  ...COMMON,
  prompt: opt(text(5000)),
  image_urls: opt(images(0, 2)),
  duration: opt(wholeNumber(durations.min, durations.max), 5),
  resolution: opt(oneOf(resolutions), '720p'),
  aspect_ratio: opt(oneOf(SEEDANCE_RATIOS)),
  ratio: opt(oneOf(SEEDANCE_RATIOS)),
  camera_fixed: opt(flag),
  watermark: opt(flag, false),
  seed: opt(seed),
  audio: withAudio ? opt(flag, true) : opt(v.never('this model makes silent clips only; leave audio out.')),
}), (fields) => {
  const imageCount = fields.image_urls?.length ?? 0;
  if (fields.prompt === undefined && imageCount === 0) {
    throw badRequest("Invalid request: send a 'prompt', an image in 'image_urls' (the first frame), or both.", 'prompt');
  }
  return oneRatio('aspect_ratio', imageCount === 0 ? '16:9' : 'adaptive')(fields);
});

const R2V_A = profile(v.strictObject({
  ...COMMON,
  prompt: text(1500),
  negative_prompt: opt(text(500)),
  image_urls: opt(list(reference({ what: `${HTTPS_URL} of a PNG or JPEG image`, extensions: ['png', 'jpg', 'jpeg'] }), 0, 5)),
  video_urls: opt(list(reference({ what: `${HTTPS_URL} of an MP4 video`, extensions: ['mp4'] }), 0, 3)),
  size: opt(oneOf(R2V_A_SIZE_NAMES)),
  resolution: opt(oneOf(['720p', '1080p'] as const)),
  aspect_ratio: opt(oneOf(['16:9', '9:16', '1:1', '4:3', '3:4'] as const)),
  duration: opt(wholeNumber(2, 10), 5),
  shot_type: opt(oneOf(['single', 'multi'] as const), 'single'),
  audio: opt(flag, true),
  watermark: opt(flag, false),
  seed: opt(seed),
}), r2vA);

const PROFILES: Readonly<Record<VideoSchemaName, Profile>> = Object.freeze({
  VEO: veo(['720p', '1080p', '4k']),
  'VEO-LITE': veo(['720p', '1080p']),
  'R2V-A': R2V_A,
  // Wan 2.6 R2V Flash takes the same parameters as Wan 2.6 R2V (docs/vendors/wan-vidu-seedance.md); its price is tiered by audio too.
  'WAN-R2V-FLASH': R2V_A,
  'R2V-B': profile(v.strictObject({
    ...COMMON,
    prompt: text(7000),
    image_urls: images(1, 1),
    duration: opt(numericStringEnum(['6', '10'] as const), 6),
    resolution: opt(oneOf(['2K'] as const), '2K'),
    aspect_ratio: opt(oneOf(R2V_B_RATIOS)),
    ratio: opt(oneOf(R2V_B_RATIOS)),
  }), oneRatio('ratio', '16:9')),
  'R2V-C': profile(v.strictObject({
    ...COMMON,
    prompt: text(2000),
    image_urls: images(1, 7),
    duration: opt(wholeNumber(1, 10), 5),
    // 720p and 1080p only: Vidu's Q2 540p has no known rate (see the catalog seed).
    resolution: opt(oneOf(['720p', '1080p'] as const), '720p'),
    aspect_ratio: opt(oneOf(RATIOS_3), '16:9'),
    audio: opt(flag, false),
    movement_amplitude: opt(oneOf(AMPLITUDES_HIGH), 'auto'),
    bgm: opt(flag, false),
    seed: opt(seed),
  }), referencesInRange),
  'R2V-D': profile(v.strictObject({
    ...COMMON,
    prompt: text(1500),
    image_urls: images(1, 7),
    duration: opt(only(5, 'this model makes 5-second clips only'), 5),
    resolution: opt(only('1080p', 'this model makes 1080p clips only'), '1080p'),
    aspect_ratio: opt(oneOf(RATIOS_3), '16:9'),
    movement_amplitude: opt(oneOf(AMPLITUDES_LARGE), 'auto'),
    bgm: opt(flag, false),
    seed: opt(seed),
  }), referencesInRange),
  'I2V-A': profile(v.strictObject({ ...VIDU_Q3_IMAGE_TO_VIDEO, movement_amplitude: opt(oneOf(AMPLITUDES_HIGH), 'auto') })),
  // Vidu Q3 (docs/vendors/wan-vidu-seedance.md): sound on by default; Q2's movement amplitude and background music are not Q3 switches.
  'VIDU-Q3-R2V': profile(v.strictObject({
    ...COMMON,
    prompt: text(2000),
    image_urls: images(1, 7),
    duration: opt(wholeNumber(3, 16), 5),
    resolution: opt(oneOf(TIERS), '720p'),
    aspect_ratio: opt(oneOf(RATIOS_3), '16:9'),
    audio: opt(flag, true),
    seed: opt(seed),
  }), referencesInRange),
  'VIDU-Q3-I2V': profile(v.strictObject({ ...VIDU_Q3_IMAGE_TO_VIDEO, audio: opt(flag, true) })),
  'SEEDANCE-1.0-PRO': seedance({ min: 2, max: 12 }, ['720p', '1080p'], false),
  'SEEDANCE-1.5-PRO': seedance({ min: 4, max: 12 }, ['720p'], true),
  // Seedance 2.0 (docs/vendors/wan-vidu-seedance.md): omni-reference; up to 9 reference images and 3
  // reference videos (referred to in the prompt as image 1, video 1…); the vendor's audio references are not taken.
  'SEEDANCE-2.0': profile(v.strictObject({
    ...COMMON,
    prompt: text(5000),
    image_urls: opt(images(0, 9)),
    video_urls: opt(list(reference({ what: `${HTTPS_URL} of an MP4 video`, extensions: ['mp4', 'mov'] }), 0, 3)),
    duration: opt(wholeNumber(4, 15), 5),
    resolution: opt(oneOf(['480p', '720p'] as const), '720p'),
    aspect_ratio: opt(oneOf(SEEDANCE_RATIOS)),
    ratio: opt(oneOf(SEEDANCE_RATIOS)),
    audio: opt(flag, true),
    watermark: opt(flag, false),
    seed: opt(seed),
  }), oneRatio('aspect_ratio', 'adaptive')),
  'I2V-B': profile(v.strictObject({
    ...COMMON,
    prompt: text(5000),
    image_urls: list(reference({ what: HTTPS_URL }), 1, 1),
    resolution: opt(only('720p', '1080p is not available for this model'), '720p'),
    ratio: opt(oneOf(I2V_B_RATIOS)),
    aspect_ratio: opt(oneOf(I2V_B_RATIOS)),
    duration: opt(wholeNumber(3, 12), 5),
    seed: opt(seed),
  }), oneRatio('aspect_ratio', '16:9')),
  // MiniMax Hailuo 2.3 (docs/vendors/minimax-hailuo.md): 768P, 6 or 10 s; the first frame is optional.
  HAILUO: profile(v.strictObject({
    ...COMMON,
    prompt: opt(text(2000)),
    image_urls: opt(images(0, 1)),
    duration: opt(secondsIn([6, 10] as const), 6),
    resolution: opt(only('768P', '1080P is not offered until its price is verified'), '768P'),
    aspect_ratio: opt(v.never('this model takes no aspect ratio: a text-to-video clip is 16:9, an image-to-video clip keeps the shape of its image; leave it out.')),
    prompt_optimizer: opt(flag, true),
  }), promptOrImage),
  // Kuaishou Kling 3.0 (docs/vendors/kling.md): text2video, or image2video with one first frame.
  KLING: profile(v.strictObject({
    ...COMMON,
    prompt: opt(text(2500)),
    negative_prompt: opt(text(2500)),
    image_urls: opt(list(reference({ what: `${HTTPS_URL} or a base64 data:image/png or jpeg URI of a PNG or JPEG image`, inline: ['png', 'jpeg'], extensions: ['png', 'jpg', 'jpeg'] }), 0, 1)),
    duration: opt(wholeNumber(3, 15), 5),
    mode: opt(oneOf(['std', 'pro'] as const), 'std'),
    aspect_ratio: opt(oneOf(RATIOS_3)),
    audio: opt(flag, false),
  }), klingShape),
  // Runway gen4_turbo (docs/vendors/runway.md): one first frame; the aspect ratio picks Runway's pixel `ratio`.
  'RUNWAY-I2V': profile(v.strictObject({
    ...COMMON,
    prompt: opt(text(1000)),
    image_urls: images(1, 1),
    duration: opt(wholeNumber(2, 10), 5),
    aspect_ratio: opt(oneOf(['16:9', '9:16', '4:3', '3:4', '1:1', '21:9'] as const), '16:9'),
    seed: opt(wholeNumber(0, 4_294_967_295)),
  })),
  // Runway gen4_aleph (docs/vendors/runway.md): edits one input video; the clip is as long as the
  // input, which the route measures (PRICED_BY_INPUT_VIDEO), so no duration is taken.
  'RUNWAY-V2V': profile(v.strictObject({
    ...COMMON,
    prompt: text(1000),
    video_urls: list(reference({ what: `${HTTPS_URL} of an MP4 video`, extensions: ['mp4'] }), 1, 1),
    // Not a number until the route measures the input: NaN, which no JSON body can send (valibot checks a default too).
    duration: opt(v.custom<number>(Number.isNaN, 'this model makes a clip as long as its input video; leave duration out.'), Number.NaN),
    aspect_ratio: opt(oneOf(['16:9', '9:16', '4:3', '3:4', '1:1', '21:9'] as const), '16:9'),
    seed: opt(wholeNumber(0, 4_294_967_295)),
  })),
  // Luma Ray 3.2 on the Agents API (docs/vendors/luma.md): text-to-video, or one first frame.
  'LUMA-RAY': profile(v.strictObject({
    ...COMMON,
    prompt: text(6000),
    image_urls: opt(list(reference({ what: `${HTTPS_URL} or a base64 data:image/png, jpeg or webp URI`, inline: ['png', 'jpeg', 'webp'], extensions: ['png', 'jpg', 'jpeg', 'webp'] }), 0, 1)),
    duration: opt(secondsIn([5, 10] as const), 5),
    resolution: opt(oneOf(TIERS), '720p'),
    aspect_ratio: opt(oneOf(['16:9', '9:16', '4:3', '3:4', '1:1', '21:9'] as const), '16:9'),
    dynamic_range: opt(oneOf(['sdr', 'hdr'] as const), 'sdr'),
  }), lumaRules),
});

const SCHEMA_NAMES: readonly string[] = [...VIDEO_PROFILES, ...VENDOR_VIDEO_SCHEMAS];
const isProfile = (value: unknown): value is VideoSchemaName => typeof value === 'string' && SCHEMA_NAMES.includes(value);

/** The job's fields that are set (a job is stored as jsonb: no keys for what the request left open). */
export const defined = <T extends object>(record: T): T =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as T;

/**
 * The request as a job of `model`'s profile: validated by that profile's schema, every default filled
 * in. Throws `ApiError` 400: `model_not_supported` (param `model`) when the model names no known
 * profile, `invalid_request` naming the field otherwise.
 */
export function parseVideoRequest(body: Record<string, unknown>, model: MediaModel): VideoJob {
  const name = model.capabilities.profile;
  if (!isProfile(name)) {
    throw new ApiError(400, 'model_not_supported', `The model '${model.id}' is not offered for video generation through this endpoint yet.`, 'model');
  }
  const { schema, settle } = PROFILES[name];
  const sent = Object.fromEntries(Object.entries(body).filter(([, value]) => value !== null));
  const parsed = parseWith(schema, sent);
  const fields = settle ? settle(parsed) : parsed;
  return defined<VideoJob>({
    profile: name,
    model: model.id,
    upstreamModel: model.upstreamModel,
    prompt: fields.prompt,
    negativePrompt: fields.negative_prompt,
    imageUrls: fields.image_urls ?? [],
    videoUrls: fields.video_urls ?? [],
    duration: fields.duration,
    size: fields.size,
    resolution: fields.resolution,
    aspectRatio: fields.aspect_ratio,
    shotType: fields.shot_type,
    audio: fields.audio,
    watermark: fields.watermark,
    seed: fields.seed,
    movementAmplitude: fields.movement_amplitude,
    bgm: fields.bgm,
    cameraFixed: fields.camera_fixed,
    promptOptimizer: fields.prompt_optimizer,
    mode: fields.mode,
    dynamicRange: fields.dynamic_range,
  });
}
