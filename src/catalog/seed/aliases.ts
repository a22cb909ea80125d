import type { AliasSeed } from './types.js';

/**
 * Deprecated `<task>_generate.<name>` identifiers (model-catalog-facts.md §6): each resolves to one
 * current model and is priced as it. The names are the reference's illustrative mappings.
 */
export const ALIASES: readonly AliasSeed[] = Object.freeze([
  { id: 'video_generate.wan26_r2v', aliasOf: 'alibaba/wan2.6-r2v', note: 'profile R2V-A' },
  { id: 'video_generate.vidu_q2_reference', aliasOf: 'shengshu/viduq2-r2v', note: 'profile R2V-C' },
  { id: 'video_generate.vidu_q1_reference', aliasOf: 'shengshu/viduq1-r2v', note: 'profile R2V-D' },
  { id: 'video_generate.vidu_q3_i2v', aliasOf: 'shengshu/viduq3-pro-i2v', note: 'profile I2V-A' },
  { id: 'video_generate.seedance_pro_fast_i2v', aliasOf: 'bytedance/seedance-1.0-pro-fast', note: 'profile I2V-B' },
  { id: 'image_generate.flux_kontext_pro', aliasOf: 'black-forest-labs/flux-kontext-pro', note: 'image edit model' },
  { id: 'audio_generate.eleven_v3', aliasOf: 'elevenlabs/eleven-v3', note: 'text-to-speech' },
  { id: 'chat_generate.deepseek_reasoner', aliasOf: 'deepseek/deepseek-v4-flash', note: 'DeepSeek Reasoner was V4 Flash with thinking' },
].map((alias) => Object.freeze(alias)));
