/**
 * OpenAI `POST {base}/audio/speech` (shared/reference/media-vendor-apis.md §6c): a JSON body, the
 * audio file as the answer; errors in OpenAI's `{error: {message, type, param, code}}` envelope.
 */
import type { AudioAdapter } from './adapter.js';
import type { AudioJob } from '../../tasks/audio-job.js';
import { codeOf, jsonRequest, objectAt, refusalOf, textOf, trimBase, type ErrorReader } from '../video/wire.js';

const readError: ErrorReader = (body) => {
  const error = objectAt(body, 'error');
  return { code: codeOf(error?.code) ?? codeOf(error?.type), message: textOf(error?.message) };
};

function speechBody(job: AudioJob): Record<string, unknown> {
  if (job.task !== 'speech') throw new Error('OpenAI makes speech only.');
  return { model: job.upstreamModel, input: job.input, voice: job.voice, response_format: job.format, speed: job.speed, instructions: job.instructions };
}

export const OPENAI_AUDIO = Object.freeze({
  family: 'openai-audio',
  runsAsTask: () => false,
  generate(job, target) {
    return jsonRequest('POST', `${trimBase(target.baseUrl)}/audio/speech`, { authorization: `Bearer ${target.apiKey}` }, speechBody(job));
  },
  // A 2xx body is taken as the file: storing it checks it is audio the gateway can time.
  generated(httpStatus, _contentType, body) {
    if (httpStatus < 200 || httpStatus > 299) return refusalOf('submit', httpStatus, body.toString('utf8'), readError);
    return { kind: 'bytes', bytes: body };
  },
} satisfies AudioAdapter);
