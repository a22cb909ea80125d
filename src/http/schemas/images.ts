import * as v from 'valibot';
import { textPassesThrough } from './text.js';

/** Longest prompt taken (OpenAI's GPT Image limit; vendors with shorter limits answer 400 upstream). */
export const MAX_IMAGE_PROMPT_CHARS = 32_000;
export const MAX_NEGATIVE_PROMPT_CHARS = 2_000;

const text = (max: number) => v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(max, `must be at most ${max} characters`));
const choice = v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(64, 'must be at most 64 characters'));

/**
 * `POST /v1/images/generations`: the spec's fields plus what the OpenAI SDK sends (`size`,
 * `response_format`, `user`). Types are checked here; what each model takes is checked against its
 * capabilities (`imageJobOf`, src/providers/image-family.ts). Unknown fields are refused: a field the gateway does not
 * know could change what the upstream charges. The prompt goes to the vendor and is never stored
 * (`textPassesThrough`).
 */
export const ImageRequestSchema = textPassesThrough(v.strictObject({
  model: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty')),
  prompt: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(MAX_IMAGE_PROMPT_CHARS, `must be at most ${MAX_IMAGE_PROMPT_CHARS} characters`)),
  n: v.optional(v.nullable(v.pipe(v.number('must be an integer'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1')))),
  size: v.optional(v.nullable(choice)),
  aspect_ratio: v.optional(v.nullable(choice)),
  resolution: v.optional(v.nullable(choice)),
  quality: v.optional(v.nullable(choice)),
  style: v.optional(v.nullable(choice)),
  negative_prompt: v.optional(v.nullable(text(MAX_NEGATIVE_PROMPT_CHARS))),
  image_urls: v.optional(v.nullable(v.pipe(
    v.array(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')), 'must be an array of URLs'),
    v.minLength(1, 'must not be empty'),
  ))),
  response_format: v.optional(v.nullable(v.picklist(['url'], "must be 'url': images are returned as URLs (on this gateway's media host)"))),
  user: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(256)))),
}));

export type ImageRequest = v.InferOutput<typeof ImageRequestSchema>;
