import type { Family } from '../catalog/model.js';
import type { ChatFamily } from './family.js';
import { geminiFamily } from './gemini/family.js';
import { openAiFamily } from './openai/family.js';
import { anthropicFamily } from './anthropic/family.js';

/** Every wire family the gateway speaks, by the catalog's `family`. */
export const CHAT_FAMILIES: Readonly<Partial<Record<Family, ChatFamily>>> = Object.freeze({
  openai: openAiFamily,
  anthropic: anthropicFamily,
  gemini: geminiFamily,
});
