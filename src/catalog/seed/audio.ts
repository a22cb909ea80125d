import type { MediaSeed } from './types.js';

/**
 * Audio and music models (shared/reference/model-catalog-facts.md §5). Price lines:
 * `audio_character` per input character (TTS), `audio_second` per second of output (music billed per
 * minute upstream, 1/60 of it here, exact), `request` per generation, or tokens (`input_token`,
 * `audio_output_token`) for token-billed speech models.
 */
/**
 * What a speech model takes (POST /v1/audio/speech, src/http/schemas/audio.ts): `voices` (a list) or
 * `voicePattern` (vendor voice ids), `formats` the gateway can store and time (mp3, wav), the longest
 * `input` in characters, whether `instructions` steer it, and the `speed` range. A music model: its
 * `formats`, `maxPromptChars`, whether it takes `lyrics` and `instrumental`, and the `duration` range
 * in seconds where the caller sets it (`wholeSeconds`: only whole numbers of them).
 */
// tts-1* take the first nine; the last four are gpt-4o-mini-tts only (OpenAI speech reference).
const OPENAI_VOICES = ['alloy', 'ash', 'coral', 'echo', 'fable', 'onyx', 'nova', 'sage', 'shimmer', 'ballad', 'verse', 'marin', 'cedar'];
const OPENAI_SPEECH = { formats: ['mp3', 'wav'], maxInputChars: 4_096, speed: [0.25, 4] };
// The Gemini API's 30 prebuilt voices (speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName).
const GEMINI_VOICES = [
  'Zephyr', 'Puck', 'Charon', 'Kore', 'Fenrir', 'Leda', 'Orus', 'Aoede', 'Callirrhoe', 'Autonoe', 'Enceladus', 'Iapetus', 'Umbriel', 'Algieba', 'Despina',
  'Erinome', 'Algenib', 'Rasalgethi', 'Laomedeia', 'Achernar', 'Alnilam', 'Schedar', 'Gacrux', 'Pulcherrima', 'Achird', 'Zubenelgenubi', 'Vindemiatrix',
  'Sadachbia', 'Sadaltager', 'Sulafat',
];
// ElevenLabs voices are 20-character ids; speed is voice_settings.speed (0.7-1.2).
const ELEVENLABS_SPEECH = { voicePattern: '^[A-Za-z0-9]{20}$', defaultVoice: 'JBFqnCBsd6RMkjVDRZzb', formats: ['mp3'], instructions: false, speed: [0.7, 1.2] };

export const AUDIO_MODELS: readonly MediaSeed[] = Object.freeze([
  {
    id: 'elevenlabs/eleven-v3', name: 'Eleven v3', provider: 'ElevenLabs', modality: 'audio',
    description: 'ElevenLabs Eleven v3 text-to-speech: the most expressive ElevenLabs voice model.',
    tags: ['audio', 'text-to-speech', 'tts', 'speech'], family: 'elevenlabs', upstreamVendor: 'elevenlabs', upstreamModel: 'eleven_v3',
    capabilities: { task: 'speech', sync: true, ...ELEVENLABS_SPEECH, maxInputChars: 5_000 },
    prices: [{ component: 'audio_character', usd: '0.10', per: 1_000, confidence: 'B' }],
    isPopular: true, source: 'developer.puter.com ElevenLabs API pricing (Jun 2026); LiteLLM says 0.18 per 1K',
  },
  {
    id: 'elevenlabs/eleven-flash-v2.5', name: 'Eleven Flash v2.5', provider: 'ElevenLabs', modality: 'audio',
    description: 'ElevenLabs Eleven Flash v2.5: low-latency text-to-speech.',
    tags: ['audio', 'text-to-speech', 'tts', 'speech', 'cheap'], family: 'elevenlabs', upstreamVendor: 'elevenlabs', upstreamModel: 'eleven_flash_v2_5',
    capabilities: { task: 'speech', sync: true, ...ELEVENLABS_SPEECH, maxInputChars: 40_000 },
    prices: [{ component: 'audio_character', usd: '0.05', per: 1_000, confidence: 'B' }],
    isPopular: false, source: 'developer.puter.com ElevenLabs API pricing (Jun 2026)',
  },
  {
    id: 'elevenlabs/eleven-music', name: 'Eleven Music', provider: 'ElevenLabs', modality: 'audio',
    description: 'ElevenLabs Eleven Music: songs and instrumentals from a text prompt.',
    tags: ['audio', 'music'], family: 'elevenlabs', upstreamVendor: 'elevenlabs', upstreamModel: 'music_v1',
    capabilities: { task: 'music', sync: true, formats: ['mp3'], maxPromptChars: 2_000, lyrics: false, instrumental: true, durationSeconds: [3, 600], defaultDurationSeconds: 30 },
    prices: [{ component: 'audio_second', usd: '0.005', confidence: 'B' }],
    isPopular: false, source: 'developer.puter.com (0.30 per minute)',
  },
  {
    id: 'minimax/speech-2.6-hd', name: 'MiniMax Speech 2.6 HD', provider: 'MiniMax', modality: 'audio',
    description: 'MiniMax Speech 2.6 HD text-to-speech, synchronous or asynchronous for long text.',
    tags: ['audio', 'text-to-speech', 'tts', 'speech'], family: 'minimax', upstreamVendor: 'minimax', upstreamModel: 'speech-2.6-hd',
    capabilities: {
      task: 'speech', sync: false, voicePattern: '^[A-Za-z][A-Za-z0-9_-]{0,63}$', defaultVoice: 'English_expressive_narrator',
      formats: ['mp3', 'wav'], maxInputChars: 100_000, instructions: false, speed: [0.5, 2],
    },
    prices: [{ component: 'audio_character', usd: '0.10', per: 1_000, confidence: 'A' }],
    isPopular: false, source: 'LiteLLM minimax/speech-2.6-hd; wavespeed; aigateway',
  },
  {
    id: 'minimax/music-2.5', name: 'MiniMax Music 2.5', provider: 'MiniMax', modality: 'audio',
    description: 'MiniMax Music 2.5: a song with vocals from lyrics and a style prompt, priced per song.',
    tags: ['audio', 'music'], family: 'minimax', upstreamVendor: 'minimax', upstreamModel: 'music-2.5',
    capabilities: { task: 'music', sync: true, formats: ['mp3', 'wav'], maxPromptChars: 2_000, lyrics: true, maxLyricsChars: 3_500, instrumental: true },
    prices: [{ component: 'request', usd: '0.15', confidence: 'C' }],
    isPopular: false, source: '302.ai price list',
  },
  {
    id: 'openai/gpt-4o-mini-tts', name: 'GPT-4o mini TTS', provider: 'OpenAI', modality: 'audio',
    description: 'OpenAI GPT-4o mini TTS: steerable text-to-speech billed by text and audio tokens.',
    tags: ['audio', 'text-to-speech', 'tts', 'speech'], family: 'openai-audio', upstreamVendor: 'openai', upstreamModel: 'gpt-4o-mini-tts',
    capabilities: { task: 'speech', sync: true, voices: OPENAI_VOICES, ...OPENAI_SPEECH, instructions: true, audioTokensPerSecond: 20 },
    prices: [
      { component: 'input_token', usd: '0.60', per: 1_000_000, confidence: 'A' },
      { component: 'audio_output_token', usd: '12.00', per: 1_000_000, confidence: 'A' },
    ],
    isPopular: true, source: 'LiteLLM + Portkey agree (legacy audio models retire 2027-01-20, exact list unverified)',
  },
  {
    id: 'openai/tts-1-hd', name: 'TTS-1 HD', provider: 'OpenAI', modality: 'audio',
    description: 'OpenAI TTS-1 HD text-to-speech (legacy).',
    tags: ['audio', 'text-to-speech', 'tts', 'speech'], family: 'openai-audio', upstreamVendor: 'openai', upstreamModel: 'tts-1-hd',
    capabilities: { task: 'speech', sync: true, voices: OPENAI_VOICES.slice(0, 9), ...OPENAI_SPEECH, instructions: false },
    prices: [{ component: 'audio_character', usd: '30.00', per: 1_000_000, confidence: 'A' }],
    isPopular: false, status: 'legacy', source: 'LiteLLM + Portkey agree',
  },
  {
    id: 'google/lyria-3.5', name: 'Lyria 3.5', provider: 'Google', modality: 'audio',
    description: 'Google Lyria 3.5: full songs with vocals and lyrics from a text prompt (length and words asked for in the prompt), 44.1 kHz stereo MP3, priced per song.',
    tags: ['audio', 'music'], family: 'gemini-audio', upstreamVendor: 'gemini', upstreamModel: 'lyria-3.5',
    // Lyria takes no separate lyrics, instrumental or length fields: the prompt says what to sing and for how long.
    capabilities: { task: 'music', sync: true, formats: ['mp3'], maxPromptChars: 4_000, lyrics: false, instrumental: false },
    prices: [{ component: 'request', usd: '0.08', confidence: 'A' }],
    isPopular: true, source: 'Gemini API pricing page; model and wire from the Gemini API music-generation guide (docs/vendors/google-media.md)',
  },
  {
    id: 'google/gemini-2.5-flash-tts', name: 'Gemini 2.5 Flash TTS', provider: 'Google', modality: 'audio',
    description: 'Google Gemini 2.5 Flash TTS (preview): natural speech in 30 prebuilt voices, billed by text and audio tokens. Deprecated upstream: shutdown 2026-12-18.',
    tags: ['audio', 'text-to-speech', 'tts', 'speech', 'preview', 'deprecated-upstream'], family: 'gemini-audio', upstreamVendor: 'gemini', upstreamModel: 'gemini-2.5-flash-preview-tts',
    // Google answers 24 kHz 16-bit PCM, stored as WAV; it has no speed or instruction field (style goes in the text itself).
    capabilities: {
      task: 'speech', sync: true, voices: GEMINI_VOICES, defaultVoice: 'Kore', formats: ['wav'], maxInputChars: 8_000,
      instructions: false, speed: false, audioTokensPerSecond: 32,
    },
    prices: [
      { component: 'input_token', usd: '0.50', per: 1_000_000, confidence: 'B' },
      { component: 'audio_output_token', usd: '10.00', per: 1_000_000, confidence: 'B' },
    ],
    isPopular: false, status: 'deprecated', retiredAt: '2026-12-18',
    source: 'Portkey google.json; 32 audio tokens a second (Gemini API token counting); shutdown date from the Google_GenerativeAI model table (docs/vendors/google-media.md)',
  },
  {
    id: 'stability/stable-audio-2.5', name: 'Stable Audio 2.5', provider: 'Stability AI', modality: 'audio',
    description: 'Stability AI Stable Audio 2.5: music and sound effects from a text prompt, up to 190 seconds of 44.1 kHz stereo, priced per generation whatever its length.',
    tags: ['audio', 'music', 'sound-effects'], family: 'stability', upstreamVendor: 'stability', upstreamModel: 'stable-audio-2.5',
    // Stability takes whole seconds (1-190, its default 190) and no lyrics or instrumental switch: the prompt says what to play.
    capabilities: {
      task: 'music', sync: true, formats: ['mp3', 'wav'], maxPromptChars: 10_000, lyrics: false, instrumental: false,
      durationSeconds: [1, 190], defaultDurationSeconds: 190, wholeSeconds: true,
    },
    prices: [{ component: 'request', usd: '0.20', confidence: 'C' }],
    isPopular: false,
    source: '20 credits a generation at 0.01 USD a credit (platform.stability.ai/pricing as the APIs.io Stability Audio FinOps profile reports it, 2026-05; fal.ai resells at 0.20); API: docs/vendors/stability.md',
  },
].map((seed) => Object.freeze(seed)) as MediaSeed[]);
