import type { AudioAdapter } from './adapter.js';
import { ELEVENLABS_AUDIO } from './elevenlabs.js';
import { GEMINI_AUDIO } from './gemini.js';
import { MINIMAX_AUDIO } from './minimax.js';
import { OPENAI_AUDIO } from './openai.js';
import { STABILITY_AUDIO } from './stability.js';

/** The audio adapters by catalog `family`. */
export const AUDIO_ADAPTERS: Readonly<Record<string, AudioAdapter>> = Object.freeze({
  [OPENAI_AUDIO.family]: OPENAI_AUDIO,
  [ELEVENLABS_AUDIO.family]: ELEVENLABS_AUDIO,
  [MINIMAX_AUDIO.family]: MINIMAX_AUDIO,
  [GEMINI_AUDIO.family]: GEMINI_AUDIO,
  [STABILITY_AUDIO.family]: STABILITY_AUDIO,
});
