// Stability AI's Stable Audio text-to-audio as the mock plays it (docs/vendors/stability.md): the
// multipart/form-data fields checked as Stability documents them, and its `{id, name, errors}` error
// body. Pure; audio.ts routes the request and makes the file.
import { randomBytes } from 'node:crypto';
import { MultipartError, formParts, multipartBoundary } from '../media/multipart.js';

export const STABILITY_TEXT_TO_AUDIO = '/stability/v1/audio/stable-audio-2/text-to-audio';

/** Models and the diffusion steps each takes (Stable Audio 2.5 is distilled: 4 to 8). */
const MODEL_STEPS: Readonly<Record<string, readonly [number, number]>> = { 'stable-audio-2': [30, 100], 'stable-audio-2.5': [4, 8] };
const MAX_PROMPT_CHARS = 10_000;
const MAX_SEED = 4_294_967_294;

export interface StabilityAudioRequest {
  readonly prompt: string;
  readonly seconds: number;
  readonly format: 'mp3' | 'wav';
  /** The answer: the file (`audio/*`, the default) or JSON with it in base64. */
  readonly json: boolean;
  readonly seed: number;
}

/** Stability's error body. */
export function stabilityError(name: string, ...errors: string[]): string {
  return JSON.stringify({ id: randomBytes(16).toString('hex'), name, errors });
}

/** The error body of a failure status (`fail=` and status faults), named as Stability names them. */
export function stabilityFailure(status: number): string {
  if (status === 401) return stabilityError('unauthorized', 'authorization: invalid or missing API key');
  if (status === 403) return stabilityError('content_moderation', 'Your request was flagged by our content moderation system, as a result your request was denied and you were not charged.');
  if (status === 413) return stabilityError('payload_too_large', 'body: payloads cannot be larger than 10MiB in size');
  if (status === 429) return stabilityError('rate_limit_exceeded', 'You have exceeded the rate limit of 150 requests within a 10 second period (mock).');
  if (status >= 500) return stabilityError('internal_error', `An unexpected server error has occurred, please try again later (mock ${status}).`);
  return stabilityError('bad_request', `Mock request failure (${status}).`);
}

/** The form's text fields; the first of a repeated name wins. */
function formFields(text: string, contentType: string | undefined): Record<string, string> | string {
  try {
    const boundary = multipartBoundary(contentType ?? '');
    if (boundary === undefined) return 'content-type: must be multipart/form-data';
    const fields: Record<string, string> = {};
    for (const part of formParts(Buffer.from(text, 'utf8'), boundary)) {
      if (part.name !== undefined && !Object.hasOwn(fields, part.name)) fields[part.name] = part.bytes.toString('utf8');
    }
    return fields;
  } catch (error) {
    if (error instanceof MultipartError) return `body: ${error.message}`;
    throw error;
  }
}

const wholeNumber = (value: string, min: number, max: number) => /^\d{1,10}$/.test(value) && Number(value) >= min && Number(value) <= max;

/**
 * The request's fields (for the request record) and what to make, or the message of a 400
 * `bad_request`, in Stability's `field: problem` form.
 */
export function readStabilityAudio(text: string, contentType: string | undefined, accept: string | undefined): { fields: Record<string, string>; request: StabilityAudioRequest | string } | string {
  const fields = formFields(text, contentType);
  if (typeof fields === 'string') return fields;
  const check = (): StabilityAudioRequest | string => {
    const wanted = (accept ?? 'audio/*').split(',')[0]!.split(';')[0]!.trim().toLowerCase();
    if (wanted !== 'application/json' && !wanted.startsWith('audio/')) return "accept: must be 'audio/*' or 'application/json'";
    const prompt = fields.prompt ?? '';
    if (prompt.trim() === '') return 'prompt: is required';
    if ([...prompt].length > MAX_PROMPT_CHARS) return `prompt: must be at most ${MAX_PROMPT_CHARS} characters`;
    const model = fields.model ?? 'stable-audio-2';
    const steps = Object.hasOwn(MODEL_STEPS, model) ? MODEL_STEPS[model]! : undefined;
    if (!steps) return `model: must be one of ${Object.keys(MODEL_STEPS).join(', ')}`;
    const duration = fields.duration ?? '190';
    if (!wholeNumber(duration, 1, 190)) return 'duration: must be an integer from 1 to 190';
    if (fields.seed !== undefined && !wholeNumber(fields.seed, 0, MAX_SEED)) return `seed: must be an integer from 0 to ${MAX_SEED}`;
    if (fields.steps !== undefined && !wholeNumber(fields.steps, steps[0], steps[1])) return `steps: must be an integer from ${steps[0]} to ${steps[1]} for ${model}`;
    const cfg = fields.cfg_scale === undefined ? 1 : Number(fields.cfg_scale);
    if (fields.cfg_scale !== undefined && (fields.cfg_scale.trim() === '' || !(cfg >= 1 && cfg <= 25))) return 'cfg_scale: must be a number from 1 to 25';
    const format = fields.output_format ?? 'mp3';
    if (format !== 'mp3' && format !== 'wav') return "output_format: must be 'mp3' or 'wav'";
    const seed = fields.seed === undefined || fields.seed === '0' ? Math.floor(Math.random() * MAX_SEED) : Number(fields.seed);
    return { prompt, seconds: Number(duration), format, json: wanted === 'application/json', seed };
  };
  return { fields, request: check() };
}
