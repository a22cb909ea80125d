/**
 * `POST /v1/audio/speech` and `POST /v1/audio/generations`: one strict valibot schema per model, built
 * from the model's catalog capabilities (voices, formats, input length, speed range, lyrics, duration)
 * and kept per model object. A field the model does not take is a 400 naming it and the model; a
 * `null` field counts as not sent (as elsewhere). Speech takes OpenAI's body; music the gateway's own.
 */
import * as v from 'valibot';
import type { MediaModel } from '../../catalog/model.js';
import { badRequest } from '../errors.js';
import { parseWith } from './issues.js';
import { callbackUrl, defined } from './videos.js';
import { AUDIO_FORMATS, characterCount, type AudioFormat, type MusicJob, type SpeechJob } from '../../tasks/audio-job.js';

const quoted = (values: readonly (string | number)[]) => values.map((value) => `'${value}'`).join(', ');

const text = (max: number) => v.pipe(
  v.string('must be a string.'),
  v.minLength(1, 'must not be empty.'),
  v.check((value) => characterCount(value) <= max, (issue) => `must be at most ${max} characters (${characterCount(issue.input as string)} sent).`),
);

const range = ([min, max]: readonly [number, number], unit = '') => {
  const message = `must be a number from ${min} to ${max}${unit}.`;
  return v.pipe(v.number(message), v.finite(message), v.minValue(min, message), v.maxValue(max, message));
};

const flag = v.boolean('must be true or false.');

/** Formats the model lists that the gateway can also store and time; mp3 first (the default). */
function formatsOf(model: MediaModel): [AudioFormat, ...AudioFormat[]] {
  const listed = Array.isArray(model.capabilities.formats) ? model.capabilities.formats : ['mp3'];
  const formats = AUDIO_FORMATS.filter((format) => listed.includes(format));
  return (formats.length > 0 ? formats : ['mp3']) as [AudioFormat, ...AudioFormat[]];
}

const numberPair = (value: unknown): [number, number] | undefined =>
  Array.isArray(value) && value.length === 2 && value.every((n) => typeof n === 'number') ? value as [number, number] : undefined;

/** Capability fields that decide which request fields a model takes, refused by name when it takes none. */
function refuseUnsupported(body: Record<string, unknown>, model: MediaModel, fields: Readonly<Record<string, boolean>>): void {
  for (const [field, supported] of Object.entries(fields)) {
    if (!supported && body[field] !== undefined) throw badRequest(`The model '${model.id}' does not take '${field}'.`, field);
  }
}

const sentFields = (body: Record<string, unknown>) => Object.fromEntries(Object.entries(body).filter(([, value]) => value !== null));

// ---- speech ----

type SpeechFields = { input: string; voice?: string; response_format: AudioFormat; speed?: number; instructions?: string };
const speechSchemas = new WeakMap<MediaModel, v.GenericSchema<unknown, SpeechFields>>();

function speechSchema(model: MediaModel): v.GenericSchema<unknown, SpeechFields> {
  const cached = speechSchemas.get(model);
  if (cached) return cached;
  const caps = model.capabilities;
  const formats = formatsOf(model);
  const voices = Array.isArray(caps.voices) ? caps.voices as [string, ...string[]] : undefined;
  const pattern = typeof caps.voicePattern === 'string' ? new RegExp(caps.voicePattern) : /^[\w-]{1,64}$/;
  const voiceSchema = voices
    ? v.picklist(voices, `must be one of ${quoted(voices)}.`)
    : v.pipe(v.string('must be a string.'), v.regex(pattern, `must be a voice id of this vendor (${pattern.source}).`));
  const hasDefaultVoice = typeof caps.defaultVoice === 'string';
  const schema = v.strictObject({
    model: v.string(),
    input: text(typeof caps.maxInputChars === 'number' ? caps.maxInputChars : 4096),
    voice: hasDefaultVoice ? v.optional(voiceSchema) : voiceSchema,
    response_format: v.optional(v.picklist(formats, `must be one of ${quoted(formats)} (the formats this gateway stores for this model).`), formats[0]),
    speed: v.optional(range(numberPair(caps.speed) ?? [0.25, 4])),
    instructions: v.optional(text(4096)),
    // The OpenAI SDK's `stream_format`: only whole files are made here, as with its default.
    stream_format: v.optional(v.picklist(['audio'], "must be 'audio': speech is made as one file and polled for.")),
    callback_url: v.optional(callbackUrl),
  }) as v.GenericSchema<unknown, SpeechFields>;
  speechSchemas.set(model, schema);
  return schema;
}

/** The request as a speech job of `model`. Throws `ApiError` 400 naming the field. */
export function parseSpeechRequest(body: Record<string, unknown>, model: MediaModel): SpeechJob {
  const sent = sentFields(body);
  refuseUnsupported(sent, model, { instructions: model.capabilities.instructions === true, speed: model.capabilities.speed !== false });
  const fields = parseWith(speechSchema(model), sent);
  const voice = fields.voice ?? (model.capabilities.defaultVoice as string);
  return defined<SpeechJob>({
    task: 'speech', model: model.id, upstreamModel: model.upstreamModel,
    input: fields.input, voice, format: fields.response_format, speed: fields.speed, instructions: fields.instructions,
  });
}

// ---- music ----

type MusicFields = { prompt: string; lyrics?: string; duration?: number; instrumental?: boolean; format: AudioFormat };
const musicSchemas = new WeakMap<MediaModel, v.GenericSchema<unknown, MusicFields>>();

function musicSchema(model: MediaModel): v.GenericSchema<unknown, MusicFields> {
  const cached = musicSchemas.get(model);
  if (cached) return cached;
  const caps = model.capabilities;
  const formats = formatsOf(model);
  const durations = numberPair(caps.durationSeconds);
  const schema = v.strictObject({
    model: v.string(),
    prompt: text(typeof caps.maxPromptChars === 'number' ? caps.maxPromptChars : 2000),
    lyrics: v.optional(text(typeof caps.maxLyricsChars === 'number' ? caps.maxLyricsChars : 3500)),
    // Seconds to the millisecond (the vendors take milliseconds), or whole ones where the vendor takes only those.
    duration: v.optional(caps.wholeSeconds === true
      ? v.pipe(range(durations ?? [0, 0], ' seconds'), v.integer(`must be a whole number of seconds from ${durations?.[0]} to ${durations?.[1]}.`))
      : v.pipe(range(durations ?? [0, 0], ' seconds'), v.transform((seconds) => Math.round(seconds * 1000) / 1000))),
    instrumental: v.optional(flag),
    format: v.optional(v.picklist(formats, `must be one of ${quoted(formats)} (the formats this gateway stores for this model).`), formats[0]),
    callback_url: v.optional(callbackUrl),
  }) as v.GenericSchema<unknown, MusicFields>;
  musicSchemas.set(model, schema);
  return schema;
}

/** The request as a music job of `model`. Throws `ApiError` 400 naming the field. */
export function parseMusicRequest(body: Record<string, unknown>, model: MediaModel): MusicJob {
  const caps = model.capabilities;
  const durations = numberPair(caps.durationSeconds);
  const sent = sentFields(body);
  refuseUnsupported(sent, model, { lyrics: caps.lyrics === true, instrumental: caps.instrumental === true, duration: durations !== undefined });
  const fields = parseWith(musicSchema(model), sent);
  // A song needs words to sing unless it is instrumental (MiniMax refuses it otherwise).
  if (caps.lyrics === true && fields.lyrics === undefined && fields.instrumental !== true) {
    throw badRequest(`Missing required parameter 'lyrics': the model '${model.id}' sings them (or send "instrumental": true).`, 'lyrics');
  }
  if (fields.lyrics !== undefined && fields.instrumental === true) {
    throw badRequest("Invalid value for 'lyrics': an instrumental has no lyrics; send one of the two.", 'lyrics');
  }
  const duration = fields.duration ?? (durations && typeof caps.defaultDurationSeconds === 'number' ? caps.defaultDurationSeconds : undefined);
  return defined<MusicJob>({
    task: 'music', model: model.id, upstreamModel: model.upstreamModel,
    prompt: fields.prompt, lyrics: fields.lyrics, duration, instrumental: fields.instrumental, format: fields.format,
  });
}
