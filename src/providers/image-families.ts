import type { ImageFamily } from './image-family.js';
import { OPENAI_IMAGES } from './openai-images/family.js';
import { BFL_IMAGES } from './bfl/family.js';
import { GEMINI_IMAGES } from './gemini-images/family.js';
import { QWEN_IMAGES } from './qwen-images/family.js';
import { RUNWAY_IMAGES } from './runway-images/family.js';
import { LUMA_IMAGES } from './luma-images/family.js';

/** The image APIs this gateway speaks, by the catalog's `family` of an image model. */
export const IMAGE_FAMILIES: Readonly<Record<string, ImageFamily | undefined>> = Object.freeze({
  'openai-images': OPENAI_IMAGES,
  bfl: BFL_IMAGES,
  'gemini-images': GEMINI_IMAGES,
  dashscope: QWEN_IMAGES,
  runway: RUNWAY_IMAGES,
  luma: LUMA_IMAGES,
});
