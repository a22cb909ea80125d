/**
 * Stability AI's Stable Audio (docs/vendors/stability.md): `POST {base}/audio/stable-audio-2/text-to-audio`
 * (the base ends at `/v2beta`), a `multipart/form-data` body of text fields, the key as a Bearer token,
 * and `Accept: audio/*`, so the answer is the file itself, made in the one exchange. Errors are
 * `{id, name, errors: [...]}`; a 403 named `content_moderation` is the vendor's content filter.
 */
import type { AudioAdapter } from './adapter.js';
import type { AudioJob } from '../../tasks/audio-job.js';
import { formRequest, refusalOf, textOf, trimBase, type ErrorReader } from '../video/wire.js';

const readError: ErrorReader = (body) => {
  const name = textOf(body.name);
  const errors = Array.isArray(body.errors) ? body.errors.filter((error): error is string => typeof error === 'string' && error.trim() !== '') : [];
  return { code: name === 'content_moderation' ? 'content_policy_violation' : name, message: errors.length > 0 ? errors.join('; ') : undefined };
};

function musicOf(job: AudioJob) {
  if (job.task !== 'music') throw new Error('Stable Audio makes music and sound, not speech.');
  return job;
}

export const STABILITY_AUDIO = Object.freeze({
  family: 'stability',
  runsAsTask: () => false,
  generate(job, target) {
    const music = musicOf(job);
    return formRequest('POST', `${trimBase(target.baseUrl)}/audio/stable-audio-2/text-to-audio`, { authorization: `Bearer ${target.apiKey}`, accept: 'audio/*' }, {
      prompt: music.prompt, model: music.upstreamModel, duration: music.duration, output_format: music.format,
    });
  },
  // A 2xx body is taken as the file: storing it checks it is audio the gateway can time.
  generated(httpStatus, _contentType, body) {
    if (httpStatus < 200 || httpStatus > 299) return refusalOf('submit', httpStatus, body.toString('utf8'), readError);
    return { kind: 'bytes', bytes: body };
  },
} satisfies AudioAdapter);
