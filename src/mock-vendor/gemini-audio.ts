// The mock's Gemini audio models. Speech: a generateContent request whose
// `generationConfig.responseModalities` holds AUDIO answers the text spoken as one `inlineData` part of
// raw 16-bit mono PCM at 24 kHz (`audio/L16;codec=pcm;rate=24000`), as Gemini 2.5 Flash TTS does; the
// voice (`speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName`) must be one of Google's 30 prebuilt
// voices; the speech lasts as the other mock speech does (60 ms a character without directives, at
// least 500 ms) unless `audio_ms=N` says otherwise; usage reports 32 audio tokens a second. Music: a
// request to a `lyria*` model answers lyrics as a text part and the song as an `audio/mpeg` part
// (an MP3 of `audio_ms`, default 30 s, as Lyria 3 Clip makes).
import { directivePairs } from './directives.js';
import { mockMp3, mockPcm16 } from './audio-files.js';
import { defaultSpeechMs } from './audio.js';

type Part = Record<string, any>;
interface SpeechBody {
  contents?: { role?: string; parts?: Part[] }[];
  generationConfig?: { responseModalities?: unknown; speechConfig?: { voiceConfig?: { prebuiltVoiceConfig?: { voiceName?: unknown } } } };
}

const VOICES = new Set([
  'Zephyr', 'Puck', 'Charon', 'Kore', 'Fenrir', 'Leda', 'Orus', 'Aoede', 'Callirrhoe', 'Autonoe', 'Enceladus', 'Iapetus', 'Umbriel', 'Algieba', 'Despina',
  'Erinome', 'Algenib', 'Rasalgethi', 'Laomedeia', 'Achernar', 'Alnilam', 'Schedar', 'Gacrux', 'Pulcherrima', 'Achird', 'Zubenelgenubi', 'Vindemiatrix',
  'Sadachbia', 'Sadaltager', 'Sulafat',
]);
const RATE = 24_000;
const AUDIO_TOKENS_PER_SECOND = 32;

/** Whether a generateContent body asks for speech. */
export const asksForSpeech = (body: SpeechBody): boolean =>
  Array.isArray(body.generationConfig?.responseModalities) && (body.generationConfig!.responseModalities as unknown[]).includes('AUDIO');

const textOf = (body: SpeechBody) => (body.contents ?? []).flatMap((content) => content.parts ?? []).map((part) => (typeof part.text === 'string' ? part.text : '')).join('');

/** Google's message for a bad speech request, or undefined. */
export function speechRequestError(body: SpeechBody): string | undefined {
  const voice = body.generationConfig?.speechConfig?.voiceConfig?.prebuiltVoiceConfig?.voiceName;
  if (voice !== undefined && !VOICES.has(String(voice))) return `* GenerateContentRequest.generation_config.speech_config.voice_config.prebuilt_voice_config.voice_name: unknown voice '${String(voice)}'.`;
  if (textOf(body).trim() === '') return '* GenerateContentRequest.contents: the text to speak is empty.';
  return undefined;
}

/** The 200 answer of a speech request. */
export function speechAnswerJson(body: SpeechBody, model: string, responseId: string): string {
  const text = textOf(body);
  const asked = directivePairs(text).get('audio_ms');
  const seconds = (asked !== undefined && /^\d{1,9}$/.test(asked) ? Number(asked) : defaultSpeechMs(text)) / 1000;
  const pcm = mockPcm16(seconds, responseId, RATE);
  const audioTokens = Math.ceil(seconds * AUDIO_TOKENS_PER_SECOND);
  const promptTokens = Math.max(1, Math.ceil(text.length / 4));
  return JSON.stringify({
    candidates: [{ content: { parts: [{ inlineData: { mimeType: `audio/L16;codec=pcm;rate=${RATE}`, data: pcm.toString('base64') } }], role: 'model' }, finishReason: 'STOP', index: 0 }],
    usageMetadata: {
      promptTokenCount: promptTokens, candidatesTokenCount: audioTokens, totalTokenCount: promptTokens + audioTokens,
      candidatesTokensDetails: [{ modality: 'AUDIO', tokenCount: audioTokens }],
    },
    modelVersion: model, responseId,
  });
}

/** Whether the request is for a Lyria music model. */
export const asksForMusic = (model: string): boolean => model.startsWith('lyria');

const SONG_MS = 30_000;

/** The 200 answer of a music request: lyrics as text, the song as an MP3. */
export function musicAnswerJson(body: SpeechBody, model: string, responseId: string): string | undefined {
  const text = textOf(body);
  if (text.trim() === '') return undefined;
  const asked = directivePairs(text).get('audio_ms');
  const seconds = (asked !== undefined && /^\d{1,9}$/.test(asked) ? Number(asked) : SONG_MS) / 1000;
  const parts = [
    { text: '[Verse]\nLa la la, the mock is singing.' },
    { inlineData: { mimeType: 'audio/mpeg', data: mockMp3(seconds, responseId).toString('base64') } },
  ];
  return JSON.stringify({ candidates: [{ content: { parts, role: 'model' }, finishReason: 'STOP', index: 0 }], modelVersion: model, responseId });
}
