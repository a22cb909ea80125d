// Validates an OpenAI Images request (`/images/generations`, and the JSON form of `/images/edits`)
// as OpenAI, ByteDance ModelArk and xAI take it. Pure: the body in, a request or an OpenAI-style
// error out. Unknown fields are accepted, as the vendors differ in their extras.
import { invalidParam, type MockError } from './errors.js';

export type ImageEndpoint = 'generations' | 'edits';

export interface ImageRequest {
  model: string;
  prompt: string;
  n: number;
  size: string | undefined;
  quality: string | undefined;
  responseFormat: 'url' | 'b64_json' | undefined;
  background: string | undefined;
  /** Reference images: ByteDance's `image` (generations) or the edit's `images[].image_url`. */
  referenceImages: string[];
}

/** OpenAI's GPT Image models: base64 only, token usage reported. */
export const isGptImage = (model: string): boolean => model.startsWith('gpt-image');

const MAX_N = 10;
const MAX_EDIT_IMAGES = 16;
const SIZE = /^(auto|\d{2,5}x\d{2,5}|[1-4]K)$/; // OpenAI's WxH and auto, ModelArk's 1K..4K
const GPT_IMAGE_SIZE = /^(auto|\d{2,5}x\d{2,5})$/;
const QUALITIES = ['auto', 'low', 'medium', 'high', 'standard', 'hd'];
const GPT_IMAGE_QUALITIES = ['auto', 'low', 'medium', 'high'];
const OUTPUT_FORMATS = ['png', 'jpeg', 'webp'];
const BACKGROUNDS = ['auto', 'transparent', 'opaque'];
const EDIT_IMAGE = /^(https?:\/\/\S+|data:image\/[a-z0-9.+-]+;base64,[A-Za-z0-9+/=]+)$/i;

const missing = (param: string): MockError => ({ ...invalidParam(param, `Missing required parameter: '${param}'.`), code: 'missing_required_parameter' });
const wrongType = (param: string, expected: string): MockError => ({ ...invalidParam(param, `Invalid type for '${param}': expected ${expected}.`), code: 'invalid_type' });
const notOneOf = (param: string, value: unknown, allowed: readonly string[]): MockError =>
  invalidParam(param, `Invalid value: '${String(value)}'. Supported values are: ${allowed.map((v) => `'${v}'`).join(', ')}.`);

function optionalEnum(req: Record<string, unknown>, param: string, allowed: readonly string[]): string | undefined | MockError {
  const value = req[param];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !allowed.includes(value)) return notOneOf(param, value, allowed);
  return value;
}

const isError = (value: unknown): value is MockError => typeof value === 'object' && value !== null && 'status' in value;

/** ByteDance's `image`: one reference image or a list of them. */
function referenceList(value: unknown): string[] | MockError {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  return wrongType('image', 'a string or an array of strings');
}

/** The edit's `images: [{image_url}]`: 1..16 entries, each an http(s) URL or a base64 image data URI. */
function editImages(value: unknown): string[] | MockError {
  if (value === undefined || value === null) return missing('images');
  if (!Array.isArray(value)) return wrongType('images', 'an array of objects');
  if (value.length === 0 || value.length > MAX_EDIT_IMAGES) return invalidParam('images', `Invalid 'images': expected between 1 and ${MAX_EDIT_IMAGES} images, got ${value.length}.`);
  const urls: string[] = [];
  for (let i = 0; i < value.length; i++) {
    const url: unknown = (value[i] as { image_url?: unknown } | null)?.image_url;
    if (typeof url !== 'string' || !EDIT_IMAGE.test(url)) {
      return invalidParam(`images[${i}].image_url`, `Invalid 'images[${i}].image_url': expected an http(s) URL or a base64 data URL of an image.`);
    }
    urls.push(url);
  }
  return urls;
}

export function parseImageRequest(body: unknown, endpoint: ImageEndpoint): ImageRequest | MockError {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return invalidParam('body', 'The request body must be a JSON object.');
  const req = body as Record<string, unknown>;
  if (req.model === undefined || req.model === null || req.model === '') return missing('model');
  if (typeof req.model !== 'string') return wrongType('model', 'a string');
  if (req.prompt === undefined || req.prompt === null) return missing('prompt');
  if (typeof req.prompt !== 'string') return wrongType('prompt', 'a string');
  if (req.prompt === '') return { ...invalidParam('prompt', "Invalid 'prompt': empty string. Expected a string with minimum length 1."), code: 'empty_string' };
  const n = req.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n)) return wrongType('n', 'an integer');
  if (n < 1) return { ...invalidParam('n', `Invalid 'n': integer below minimum value. Expected a value >= 1, but got ${n} instead.`), code: 'integer_below_min_value' };
  if (n > MAX_N) return { ...invalidParam('n', `Invalid 'n': integer above maximum value. Expected a value <= ${MAX_N}, but got ${n} instead.`), code: 'integer_above_max_value' };
  const gptImage = isGptImage(req.model);
  if (req.size !== undefined && req.size !== null && (typeof req.size !== 'string' || !(gptImage ? GPT_IMAGE_SIZE : SIZE).test(req.size))) {
    return invalidParam('size', `Invalid value: '${String(req.size)}'. Supported values are 'auto' and sizes like '1024x1024'.`);
  }
  const quality = optionalEnum(req, 'quality', gptImage ? GPT_IMAGE_QUALITIES : QUALITIES);
  if (isError(quality)) return quality;
  const responseFormat = optionalEnum(req, 'response_format', ['url', 'b64_json']);
  if (isError(responseFormat)) return responseFormat;
  // As OpenAI: GPT Image models always answer base64 and refuse the parameter outright.
  if (responseFormat !== undefined && gptImage) return { ...invalidParam('response_format', "Unknown parameter: 'response_format'."), code: 'unknown_parameter' };
  const outputFormat = optionalEnum(req, 'output_format', OUTPUT_FORMATS);
  if (isError(outputFormat)) return outputFormat;
  const background = optionalEnum(req, 'background', BACKGROUNDS);
  if (isError(background)) return background;
  if (req.watermark !== undefined && req.watermark !== null && typeof req.watermark !== 'boolean') return wrongType('watermark', 'a boolean');
  if (req.user !== undefined && req.user !== null && typeof req.user !== 'string') return wrongType('user', 'a string');
  const referenceImages = endpoint === 'edits' ? editImages(req.images) : referenceList(req.image);
  if (isError(referenceImages)) return referenceImages;
  return {
    model: req.model,
    prompt: req.prompt,
    n,
    size: typeof req.size === 'string' ? req.size : undefined,
    quality,
    responseFormat: responseFormat as ImageRequest['responseFormat'],
    background,
    referenceImages,
  };
}
