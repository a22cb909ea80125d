/**
 * Google's audio models through the Gemini API's `generateContent`, one exchange each. Speech
 * (Gemini 2.5 Flash TTS): the text as the one user part, `generationConfig.responseModalities:
 * ["AUDIO"]` and the voice in `speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName`; the answer is
 * raw 16-bit little-endian PCM (`audio/L16;codec=pcm;rate=24000`), wrapped in a WAV header here so the
 * gateway can store and time it. Music (Lyria): the prompt as the one user part; the answer holds the
 * song as an MP3 `inlineData` part beside its lyrics as text. Sources: docs/vendors/google-media.md.
 */
import type { AudioAdapter } from './adapter.js';
import type { AudioJob } from '../../tasks/audio-job.js';
import { garbled, jsonRequest, objectAt, parseObject, readGoogleError, refusalOf, textOf, trimBase } from '../video/wire.js';

function requestBody(job: AudioJob): Record<string, unknown> {
  if (job.task === 'music') return { contents: [{ role: 'user', parts: [{ text: job.prompt }] }] };
  return {
    contents: [{ role: 'user', parts: [{ text: job.input }] }],
    generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: job.voice } } } },
  };
}

const MP3_TYPES = new Set(['audio/mpeg', 'audio/mp3']);

/** A WAV file of 16-bit little-endian PCM samples. */
export function wavOfPcm16(pcm: Buffer, sampleRate: number, channels: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + pcm.length, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * channels * 2, 28);
  header.writeUInt16LE(channels * 2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([header, pcm]);
}

/** `audio/L16;codec=pcm;rate=24000` → its rate and channels (Google's defaults: 24 kHz, mono); undefined for another type. */
export function pcmFormatOf(mimeType: string): { sampleRate: number; channels: number } | undefined {
  const [type, ...params] = mimeType.split(';').map((part) => part.trim().toLowerCase());
  if (type !== 'audio/l16' && type !== 'audio/pcm') return undefined;
  const param = (name: string) => params.find((p) => p.startsWith(`${name}=`))?.slice(name.length + 1);
  const sampleRate = Number(param('rate') ?? 24_000);
  const channels = Number(param('channels') ?? 1);
  if (!Number.isInteger(sampleRate) || sampleRate < 8_000 || sampleRate > 192_000 || !Number.isInteger(channels) || channels < 1 || channels > 2) return undefined;
  return { sampleRate, channels };
}

export const GEMINI_AUDIO = Object.freeze({
  family: 'gemini-audio',
  runsAsTask: () => false,
  generate(job, target) {
    return jsonRequest('POST', `${trimBase(target.baseUrl)}/models/${encodeURIComponent(job.upstreamModel)}:generateContent`, { 'x-goog-api-key': target.apiKey }, requestBody(job));
  },
  generated(httpStatus, _contentType, body) {
    const text = body.toString('utf8');
    if (httpStatus < 200 || httpStatus > 299) return refusalOf('submit', httpStatus, text, readGoogleError);
    const answer = parseObject(text);
    if (!answer) return garbled(httpStatus, "The vendor's answer is not a JSON object.");
    const blocked = textOf(objectAt(answer, 'promptFeedback')?.blockReason);
    if (blocked !== undefined) return { kind: 'refused', retryable: false, code: 'content_policy_violation', message: `The vendor refused the text: ${blocked}.`, httpStatus };
    const candidate = Array.isArray(answer.candidates) ? answer.candidates[0] : undefined;
    const parts = objectAt(candidate, 'content')?.parts;
    for (const part of Array.isArray(parts) ? parts : []) {
      const inline = objectAt(part, 'inlineData');
      const data = textOf(inline?.data);
      if (data === undefined) continue;
      const mimeType = textOf(inline?.mimeType) ?? '';
      // An MP3 is stored as sent (storing checks it is audio the gateway can time).
      if (MP3_TYPES.has(mimeType.toLowerCase())) return { kind: 'bytes', bytes: Buffer.from(data, 'base64') };
      const format = pcmFormatOf(mimeType);
      if (format) return { kind: 'bytes', bytes: wavOfPcm16(Buffer.from(data, 'base64'), format.sampleRate, format.channels) };
    }
    return garbled(httpStatus, "The vendor's answer holds no audio.");
  },
} satisfies AudioAdapter);
