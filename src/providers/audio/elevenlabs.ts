/**
 * ElevenLabs (shared/reference/media-vendor-apis.md §6a, §6b): `POST {base}/text-to-speech/{voice_id}`
 * and `POST {base}/music`, the format in the `output_format` query, the key in `xi-api-key`; the
 * answer is the audio. Errors are `{detail: {status, message}}`, or a list of field errors on a 422.
 */
import type { AudioAdapter } from './adapter.js';
import type { AudioJob } from '../../tasks/audio-job.js';
import { idSegment, jsonRequest, objectAt, refusalOf, textOf, trimBase, type ErrorReader } from '../video/wire.js';

const OUTPUT_FORMATS = { mp3: 'mp3_44100_128', wav: 'wav_44100' } as const;

const readError: ErrorReader = (body) => {
  const detail = objectAt(body, 'detail');
  if (detail) return { code: textOf(detail.status), message: textOf(detail.message) };
  // 422: `detail` is a list of `{loc, msg, type}`.
  const first = Array.isArray(body.detail) ? body.detail[0] as Record<string, unknown> | undefined : undefined;
  const where = Array.isArray(first?.loc) ? first.loc.join('.') : undefined;
  return { code: 'validation_error', message: textOf(first?.msg) && `${where ? `${where}: ` : ''}${first!.msg as string}` };
};

function request(job: AudioJob): { path: string; body: Record<string, unknown> } {
  if (job.task === 'speech') {
    return {
      path: `/text-to-speech/${idSegment(job.voice)}`,
      body: { text: job.input, model_id: job.upstreamModel, ...(job.speed === undefined ? {} : { voice_settings: { speed: job.speed } }) },
    };
  }
  return {
    path: '/music',
    body: { prompt: job.prompt, model_id: job.upstreamModel, music_length_ms: job.duration === undefined ? undefined : Math.round(job.duration * 1000), force_instrumental: job.instrumental },
  };
}

export const ELEVENLABS_AUDIO = Object.freeze({
  family: 'elevenlabs',
  runsAsTask: () => false,
  generate(job, target) {
    const { path, body } = request(job);
    return jsonRequest('POST', `${trimBase(target.baseUrl)}${path}?output_format=${OUTPUT_FORMATS[job.format]}`, { 'xi-api-key': target.apiKey }, body);
  },
  // A 2xx body is taken as the file: storing it checks it is audio the gateway can time.
  generated(httpStatus, _contentType, body) {
    if (httpStatus < 200 || httpStatus > 299) return refusalOf('submit', httpStatus, body.toString('utf8'), readError);
    return { kind: 'bytes', bytes: body };
  },
} satisfies AudioAdapter);
