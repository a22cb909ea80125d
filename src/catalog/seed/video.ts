import type { MediaSeed } from './types.js';

/**
 * Video models (shared/reference/model-catalog-facts.md §4). Price lines: `video_second` per second of
 * output, tiered by `resolution` (and `audio` where the vendor prices sound separately); `video` per
 * clip for flat-priced models (tier by `duration`); add-ons as their own component (`audio` per clip).
 * `profile` names the spec's video profile a model implements (R2V-A, R2V-B, R2V-C, R2V-D, I2V-A, I2V-B):
 * its request schema (src/http/schemas/videos.ts); the profile's limits are repeated here for the catalog.
 */
const R2V_A_SIZES = {
  '1920*1080': '1080p', '1080*1920': '1080p', '1440*1440': '1080p', '1632*1248': '1080p', '1248*1632': '1080p',
  '1280*720': '720p', '720*1280': '720p', '960*960': '720p', '1088*832': '720p', '832*1088': '720p',
};

const perSecond = (rates: Record<string, string>, confidence: MediaSeed['prices'][number]['confidence']) =>
  Object.entries(rates).map(([tier, usd]) => ({ component: 'video_second', tier, usd, confidence }));

export const VIDEO_MODELS: readonly MediaSeed[] = Object.freeze([
  {
    id: 'alibaba/wan2.6-r2v', name: 'Wan 2.6 Reference-to-Video', provider: 'Alibaba', modality: 'video',
    description: 'Alibaba Wan 2.6 reference-to-video: up to 5 reference images and 3 reference videos become the characters of a 2 to 10 second clip with native audio (profile R2V-A).',
    tags: ['video', 'reference-to-video', 'r2v', 'audio', 'multi-reference'], family: 'dashscope', upstreamVendor: 'alibaba', upstreamModel: 'wan2.6-r2v',
    capabilities: {
      profile: 'R2V-A', task: 'reference-to-video', durations: { min: 2, max: 10, default: 5 }, sizes: R2V_A_SIZES, defaultSize: '1920*1080',
      shotTypes: ['single', 'multi'], audio: true, maxImages: 5, maxVideos: 3, maxPromptChars: 1500, maxNegativePromptChars: 500,
    },
    prices: perSecond({ 'resolution=720p': '0.10', 'resolution=1080p': '0.15' }, 'B'),
    isPopular: true, source: 'spec R2V-A; lumenfall; empiriolabs; Model Studio r2v guide (2026-03-15)',
  },
  {
    id: 'alibaba/wan2.6-r2v-flash', name: 'Wan 2.6 R2V Flash', provider: 'Alibaba', modality: 'video',
    description: 'Alibaba Wan 2.6 reference-to-video Flash: the cheaper, faster multi-reference variant of Wan 2.6 R2V (same fields), up to 5 reference images and 3 reference videos, 2 to 10 seconds, priced by resolution and by whether it makes sound.',
    tags: ['video', 'reference-to-video', 'r2v', 'audio', 'multi-reference', 'cheap'], family: 'dashscope', upstreamVendor: 'alibaba', upstreamModel: 'wan2.6-r2v-flash',
    capabilities: {
      profile: 'WAN-R2V-FLASH', task: 'reference-to-video', durations: { min: 2, max: 10, default: 5 }, sizes: R2V_A_SIZES, defaultSize: '1920*1080',
      shotTypes: ['single', 'multi'], audio: 'optional', maxImages: 5, maxVideos: 3, maxPromptChars: 1500, maxNegativePromptChars: 500,
    },
    prices: perSecond({
      'audio=true,resolution=720p': '0.05', 'audio=false,resolution=720p': '0.025',
      'audio=true,resolution=1080p': '0.075', 'audio=false,resolution=1080p': '0.0375',
    }, 'C'),
    isPopular: false, source: 'empiriolabs ("was" prices, the Singapore list: its standard R2V rates equal Model Studio\'s); uniall model names; Vercel AI Gateway (same fields as R2V) (docs/vendors/wan-vidu-seedance.md)',
  },
  {
    id: 'shengshu/viduq2-r2v', name: 'Vidu Q2 Reference-to-Video', provider: 'ShengShu', modality: 'video',
    description: 'ShengShu Vidu Q2 reference-to-video: 1 to 7 subjects addressed as @1, @2 in the prompt, up to 1080p, optional audio and background music (profile R2V-C).',
    tags: ['video', 'reference-to-video', 'r2v', 'multi-reference', 'vidu'], family: 'vidu', upstreamVendor: 'shengshu', upstreamModel: 'viduq2',
    capabilities: {
      // Vidu also renders q2 at 540p, but no 540p rate of it is known: the gateway does not offer what it cannot price.
      profile: 'R2V-C', task: 'reference-to-video', durations: { min: 1, max: 10, default: 5 }, resolutions: ['720p', '1080p'], defaultResolution: '720p',
      aspectRatios: ['16:9', '9:16', '1:1'], audio: 'optional', bgm: true, movementAmplitudes: ['auto', 'small', 'medium', 'high'],
      minImages: 1, maxImages: 7, maxPromptChars: 2000,
    },
    // Vidu does not publish a q2 reference-to-video rate: the q2-pro image-to-video rates stand in (no 540p rate known).
    prices: [
      ...perSecond({ 'resolution=720p': '0.10', 'resolution=1080p': '0.20' }, 'unverified'),
      { component: 'audio', usd: '0.064', confidence: 'B' },
    ],
    isPopular: true, source: 'spec R2V-C (audio add-on 0.064); Vidu reference2video doc copy; 302.ai q2-pro i2v rates',
  },
  {
    id: 'shengshu/viduq1-r2v', name: 'Vidu Q1 Reference-to-Video', provider: 'ShengShu', modality: 'video',
    description: 'ShengShu Vidu Q1 reference-to-video: 1 to 7 reference images, fixed 5 seconds at 1080p, flat price per video (profile R2V-D).',
    tags: ['video', 'reference-to-video', 'r2v', 'multi-reference', 'vidu', 'flat-price'], family: 'vidu', upstreamVendor: 'shengshu', upstreamModel: 'viduq1',
    capabilities: {
      profile: 'R2V-D', task: 'reference-to-video', durations: [5], resolutions: ['1080p'], aspectRatios: ['16:9', '9:16', '1:1'],
      movementAmplitudes: ['auto', 'small', 'medium', 'large'], bgm: true, minImages: 1, maxImages: 7, maxPromptChars: 1500,
    },
    prices: [{ component: 'video', tier: 'duration=5,resolution=1080p', usd: '0.34', listUsd: '0.40', confidence: 'B' }],
    isPopular: false, source: 'spec R2V-D (0.40 list, 0.34 charged); 302.ai (80 credits x 0.005)',
  },
  {
    id: 'shengshu/viduq3-r2v', name: 'Vidu Q3 Reference-to-Video', provider: 'ShengShu', modality: 'video',
    description: 'ShengShu Vidu Q3 reference-to-video: 1 to 7 subjects addressed as @1, @2 in the prompt, 3 to 16 seconds at 540p, 720p or 1080p, with sound unless turned off.',
    tags: ['video', 'reference-to-video', 'r2v', 'multi-reference', 'vidu', 'audio'], family: 'vidu', upstreamVendor: 'shengshu', upstreamModel: 'viduq3',
    capabilities: {
      profile: 'VIDU-Q3-R2V', task: 'reference-to-video', durations: { min: 3, max: 16, default: 5 }, resolutions: ['540p', '720p', '1080p'], defaultResolution: '720p',
      aspectRatios: ['16:9', '9:16', '1:1'], audio: 'optional', minImages: 1, maxImages: 7, maxPromptChars: 2000,
    },
    prices: perSecond({ 'resolution=540p': '0.05', 'resolution=720p': '0.10', 'resolution=1080p': '0.125' }, 'A'),
    isPopular: false, source: 'Vidu reference2video doc copy, pricing table; Tencent Cloud TokenHub Vidu guide (durations, resolutions) (docs/vendors/wan-vidu-seedance.md)',
  },
  {
    id: 'shengshu/viduq3-pro-i2v', name: 'Vidu Q3 Pro Image-to-Video', provider: 'ShengShu', modality: 'video',
    description: 'ShengShu Vidu Q3 Pro image-to-video: one image animated for 1 to 16 seconds with native audio, flat per-second price by resolution (profile I2V-A).',
    tags: ['video', 'image-to-video', 'i2v', 'vidu', 'audio'], family: 'vidu', upstreamVendor: 'shengshu', upstreamModel: 'viduq3-pro',
    capabilities: {
      profile: 'I2V-A', task: 'image-to-video', durations: { min: 1, max: 16, default: 5 }, resolutions: ['540p', '720p', '1080p'], defaultResolution: '720p',
      movementAmplitudes: ['auto', 'small', 'medium', 'high'], audio: true, minImages: 1, maxImages: 1, maxPromptChars: 2000,
    },
    prices: perSecond({ 'resolution=540p': '0.07', 'resolution=720p': '0.15', 'resolution=1080p': '0.16' }, 'B'),
    isPopular: true, source: '302.ai (points); resellers at 80-92 %',
  },
  {
    id: 'shengshu/viduq3-turbo-i2v', name: 'Vidu Q3 Turbo Image-to-Video', provider: 'ShengShu', modality: 'video',
    description: 'ShengShu Vidu Q3 Turbo image-to-video: the faster, cheaper Q3; one image animated for 1 to 16 seconds at 540p, 720p or 1080p, with sound unless turned off.',
    tags: ['video', 'image-to-video', 'i2v', 'vidu', 'audio', 'cheap'], family: 'vidu', upstreamVendor: 'shengshu', upstreamModel: 'viduq3-turbo',
    capabilities: {
      profile: 'VIDU-Q3-I2V', task: 'image-to-video', durations: { min: 1, max: 16, default: 5 }, resolutions: ['540p', '720p', '1080p'], defaultResolution: '720p',
      audio: 'optional', minImages: 1, maxImages: 1, maxPromptChars: 2000,
    },
    prices: perSecond({ 'resolution=540p': '0.04', 'resolution=720p': '0.06', 'resolution=1080p': '0.08' }, 'C'),
    isPopular: false, source: 'muapi; shortapi (80 %); Tencent Cloud TokenHub Vidu guide (durations, resolutions) (docs/vendors/wan-vidu-seedance.md)',
  },
  {
    id: 'bytedance/seedance-1.0-pro-fast', name: 'Seedance 1.0 Pro Fast', provider: 'ByteDance', modality: 'video',
    description: 'ByteDance Seedance 1.0 Pro Fast image-to-video: one image, 720p only through the gateway, 3 to 12 seconds (profile I2V-B).',
    tags: ['video', 'image-to-video', 'i2v', 'text-to-video', 'seedance', 'cheap'], family: 'modelark', upstreamVendor: 'bytedance', upstreamModel: 'seedance-1-0-pro-fast-251015',
    capabilities: {
      profile: 'I2V-B', task: 'image-to-video', durations: { min: 3, max: 12, default: 5 }, resolutions: ['720p'],
      ratios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'], minImages: 1, maxImages: 1, maxPromptChars: 5000,
      billing: 'upstream bills tokens = width x height x 24 fps x seconds / 1024; the per-second rate is derived',
    },
    prices: perSecond({ 'resolution=720p': '0.015' }, 'C'),
    isPopular: true, source: 'Vercel AI Gateway ("72 % lower cost than Pro"); BytePlus token formula',
  },
  {
    id: 'bytedance/seedance-1.0-lite-r2v-2k', name: 'Seedance Reference-to-Video 2K', provider: 'ByteDance', modality: 'video',
    description: 'ByteDance Seedance reference-to-video at 2K: one subject image (not used as the first frame) becomes a 6 or 10 second clip in any of seven aspect ratios (profile R2V-B).',
    tags: ['video', 'reference-to-video', 'r2v', 'seedance', '2k', 'price-unverified'], family: 'modelark', upstreamVendor: 'bytedance', upstreamModel: 'seedance-1-0-lite-i2v-250428',
    capabilities: {
      profile: 'R2V-B', task: 'reference-to-video', durations: [6, 10], resolutions: ['2K'], aspectRatios: ['16:9', '4:3', '1:1', '3:4', '9:16', '21:9', 'adaptive'],
      minImages: 1, maxImages: 1, maxPromptChars: 7000,
    },
    prices: perSecond({ 'resolution=2K': '0.216' }, 'unverified'),
    isPopular: false,
    source: "spec R2V-B; upstream not identified by the reference (model-catalog-facts §R2V-B): served through Ark's reference_image mode; price derived from the BytePlus token formula (2560x1440 x 24 fps / 1024 = 86,400 tokens per second) at the Seedance 1.0 Pro rate of 2.50 USD per 1M tokens",
  },
  {
    id: 'bytedance/seedance-1.0-pro', name: 'Seedance 1.0 Pro', provider: 'ByteDance', modality: 'video',
    description: 'ByteDance Seedance 1.0 Pro text-to-video, or image-to-video from a first frame and optionally a last frame: 2 to 12 seconds at 720p or 1080p, silent.',
    tags: ['video', 'image-to-video', 'i2v', 'text-to-video', 'seedance'], family: 'modelark', upstreamVendor: 'bytedance', upstreamModel: 'seedance-1-0-pro-250528',
    capabilities: {
      profile: 'SEEDANCE-1.0-PRO', task: 'image-to-video', durations: { min: 2, max: 12, default: 5 }, resolutions: ['720p', '1080p'], defaultResolution: '720p',
      ratios: ['16:9', '4:3', '1:1', '3:4', '9:16', '21:9', 'adaptive'], minImages: 0, maxImages: 2, maxPromptChars: 5000,
      billing: 'token-billed upstream (2.50 per 1M tokens); per-second rates derived',
    },
    prices: perSecond({ 'resolution=720p': '0.054', 'resolution=1080p': '0.12' }, 'B'),
    isPopular: false, source: 'third-party write-up of ModelArk rates; 302.ai; Replicate and ComfyUI schemas (model id, fields) (docs/vendors/wan-vidu-seedance.md)',
  },
  {
    id: 'bytedance/seedance-1.5-pro', name: 'Seedance 1.5 Pro', provider: 'ByteDance', modality: 'video',
    description: 'ByteDance Seedance 1.5 Pro text-to-video, or image-to-video from a first frame and optionally a last frame, with native audio unless turned off: 4 to 12 seconds at 720p.',
    tags: ['video', 'image-to-video', 'i2v', 'text-to-video', 'seedance', 'audio'], family: 'modelark', upstreamVendor: 'bytedance', upstreamModel: 'seedance-1-5-pro-251215',
    capabilities: {
      profile: 'SEEDANCE-1.5-PRO', task: 'image-to-video', durations: { min: 4, max: 12, default: 5 }, resolutions: ['720p'], defaultResolution: '720p',
      ratios: ['16:9', '4:3', '1:1', '3:4', '9:16', '21:9', 'adaptive'], audio: 'optional', minImages: 0, maxImages: 2, maxPromptChars: 5000,
      billing: 'token-billed upstream (1.20 silent / 2.40 with audio per 1M tokens); per-second rates derived',
    },
    prices: perSecond({ 'audio=false,resolution=720p': '0.026', 'audio=true,resolution=720p': '0.052' }, 'B'),
    isPopular: false, source: 'third-party write-up of ModelArk rates; Comfy pricing table; Replicate and ComfyUI schemas (generate_audio) (docs/vendors/wan-vidu-seedance.md)',
  },
  {
    id: 'bytedance/seedance-2.0', name: 'Seedance 2.0', provider: 'ByteDance', modality: 'video',
    description: 'ByteDance Seedance 2.0 with omni-reference: a prompt with up to 9 reference images and 3 reference videos, 4 to 15 seconds at 480p or 720p, with audio. Not offered: its official USD rate is unknown (Volcengine bills CNY per token).',
    tags: ['video', 'reference-to-video', 'text-to-video', 'seedance', 'audio', 'price-unverified'], family: 'modelark', upstreamVendor: 'bytedance', upstreamModel: 'dreamina-seedance-2-0-260128',
    capabilities: {
      profile: 'SEEDANCE-2.0', task: 'reference-to-video', durations: { min: 4, max: 15, default: 5 }, resolutions: ['480p', '720p'], defaultResolution: '720p',
      ratios: ['16:9', '4:3', '1:1', '3:4', '9:16', '21:9', 'adaptive'], audio: 'optional', minImages: 0, maxImages: 9, maxVideos: 3, maxPromptChars: 5000,
    },
    prices: perSecond({ '': '0.10' }, 'unverified'),
    isPopular: false, isActive: false, source: 'resellers (crazyrouter, piapi); laozhang and crazyrouter API pages (model id, content roles, limits) (docs/vendors/wan-vidu-seedance.md)',
  },
  {
    id: 'kuaishou/kling-v3', name: 'Kling 3.0', provider: 'Kuaishou', modality: 'video',
    description: 'Kuaishou Kling 3.0 text-to-video and image-to-video, 3 to 15 seconds, std (720p) or pro (1080p) mode, optional audio.',
    tags: ['video', 'image-to-video', 'text-to-video', 'kling', 'audio'], family: 'kling', upstreamVendor: 'kuaishou', upstreamModel: 'kling-v3',
    capabilities: {
      profile: 'KLING', task: 'text-to-video', durations: { min: 3, max: 15, default: 5 }, modes: ['std', 'pro'], defaultMode: 'std',
      aspectRatios: ['16:9', '9:16', '1:1'], audio: 'optional', minImages: 0, maxImages: 1, maxPromptChars: 2500,
    },
    // Kling bills the API in prepaid resource-pack units, not USD: these are the per-clip costs a pricing
    // guide gives at pack rates (std 5 s 0.42, pro 5 s 0.56, pro 10 s with audio 1.68), std with audio
    // by the 1.5 audio ratio that reseller tables share (docs/vendors/kling.md).
    prices: perSecond({
      'audio=false,mode=std': '0.084', 'audio=false,mode=pro': '0.112',
      'audio=true,mode=std': '0.126', 'audio=true,mode=pro': '0.168',
    }, 'C'),
    isPopular: false,
    source: 'derived: atlascloud Kling API pricing guide (2026, per-clip costs at resource-pack rates); std with audio by krea\'s Kling 3.0 audio ratio (2026-11); API: docs/vendors/kling.md',
  },
  {
    id: 'minimax/hailuo-2.3', name: 'MiniMax Hailuo 2.3', provider: 'MiniMax', modality: 'video',
    description: 'MiniMax Hailuo 2.3 text-to-video and image-to-video, 6 or 10 second clips at 768p, priced per clip.',
    tags: ['video', 'image-to-video', 'text-to-video', 'hailuo'], family: 'minimax-video', upstreamVendor: 'minimax', upstreamModel: 'MiniMax-Hailuo-2.3',
    capabilities: {
      profile: 'HAILUO', task: 'image-to-video', durations: [6, 10], resolutions: ['768P'], defaultResolution: '768P',
      minImages: 0, maxImages: 1, maxPromptChars: 2000, promptOptimizer: true,
    },
    prices: [
      { component: 'video', tier: 'duration=6,resolution=768p', usd: '0.28', confidence: 'C' },
      { component: 'video', tier: 'duration=10,resolution=768p', usd: '0.56', confidence: 'C' },
    ],
    isPopular: false, source: 'eachlabs (2026-05-25); 1080P price unverified, not offered; API: docs/vendors/minimax-hailuo.md',
  },
  {
    id: 'google/veo-3.1', name: 'Veo 3.1', provider: 'Google', modality: 'video',
    description: 'Google Veo 3.1 text-to-video, or image-to-video from a PNG or JPEG first frame, with native audio: 4, 6 or 8 seconds at 720p, 1080p or 4K (1080p and 4K: 8 seconds), 16:9 or 9:16.',
    tags: ['video', 'text-to-video', 'image-to-video', 'audio', 'veo'], family: 'gemini-video', upstreamVendor: 'gemini', upstreamModel: 'veo-3.1-generate-preview',
    capabilities: { profile: 'VEO', task: 'text-to-video', durations: [4, 6, 8], resolutions: ['720p', '1080p', '4k'], defaultResolution: '720p', aspectRatios: ['16:9', '9:16'], audio: true, maxPromptChars: 4000 },
    prices: perSecond({ 'resolution=720p': '0.40', 'resolution=1080p': '0.40', 'resolution=4k': '0.60' }, 'A'),
    isPopular: true, source: 'Gemini API pricing page; LiteLLM; Portkey vertex-ai.json (docs/vendors/google-media.md)',
  },
  {
    id: 'google/veo-3.1-fast', name: 'Veo 3.1 Fast', provider: 'Google', modality: 'video',
    description: 'Google Veo 3.1 Fast text-to-video, or image-to-video from a PNG or JPEG first frame, with native audio: faster and cheaper than Veo 3.1, 720p, 1080p or 4K (1080p and 4K: 8 seconds).',
    tags: ['video', 'text-to-video', 'image-to-video', 'audio', 'veo'], family: 'gemini-video', upstreamVendor: 'gemini', upstreamModel: 'veo-3.1-fast-generate-preview',
    capabilities: { profile: 'VEO', task: 'text-to-video', durations: [4, 6, 8], resolutions: ['720p', '1080p', '4k'], defaultResolution: '720p', aspectRatios: ['16:9', '9:16'], audio: true, maxPromptChars: 4000 },
    // Google cut the Fast rates on 2026-04-07 (from 0.15 / 0.35 at 4K, the figure LiteLLM still lists).
    prices: [
      ...perSecond({ 'resolution=720p': '0.10', 'resolution=4k': '0.30' }, 'C'),
      ...perSecond({ 'resolution=1080p': '0.12' }, 'B'),
    ],
    isPopular: false,
    source: 'Gemini API pricing page after the 2026-04-07 cut: 0.12 at 1080p as quoted by ddsboston (page updated 2026-04-09); 720p and 4K from the cut quoted as 14 to 33 % off 0.15 and 0.35 (docs/vendors/google-media.md)',
  },
  {
    id: 'google/veo-3.1-lite', name: 'Veo 3.1 Lite', provider: 'Google', modality: 'video',
    description: 'Google Veo 3.1 Lite: the cheapest Veo, text-to-video or image-to-video from a PNG or JPEG first frame, with native audio at 720p or 1080p (1080p: 8 seconds), 16:9 or 9:16 (preview).',
    tags: ['video', 'text-to-video', 'image-to-video', 'audio', 'veo', 'cheap', 'preview'], family: 'gemini-video', upstreamVendor: 'gemini', upstreamModel: 'veo-3.1-lite-generate-preview',
    capabilities: { profile: 'VEO-LITE', task: 'text-to-video', durations: [4, 6, 8], resolutions: ['720p', '1080p'], defaultResolution: '720p', aspectRatios: ['16:9', '9:16'], audio: true, maxPromptChars: 4000 },
    prices: perSecond({ 'resolution=720p': '0.05', 'resolution=1080p': '0.08' }, 'A'),
    isPopular: false, status: 'preview', source: 'LiteLLM + Portkey agree; Google launch (2026-03-31) as reported by xainflow and wideframe (docs/vendors/google-media.md)',
  },
  {
    id: 'openai/sora-2', name: 'Sora 2', provider: 'OpenAI', modality: 'video',
    description: 'OpenAI Sora 2 text-to-video and image-to-video at 720p with audio. Retired: OpenAI shut down the Sora 2 models and its Videos API on 2026-09-24, with no replacement API; use Veo 3.1, Seedance or Wan.',
    tags: ['video', 'text-to-video', 'image-to-video', 'audio', 'sora', 'retired'], family: 'openai-videos', upstreamVendor: 'openai', upstreamModel: 'sora-2',
    capabilities: { task: 'text-to-video', durations: [4, 8, 12], resolutions: ['720p'], audio: true },
    prices: perSecond({ 'resolution=720p': '0.10' }, 'A'),
    isPopular: false, isActive: false, status: 'retired', retiredAt: '2026-09-24',
    source: 'LiteLLM + Portkey agree; OpenAI sora-2 model page and deprecations page (shut down 2026-09-24)',
  },
  {
    id: 'openai/sora-2-pro', name: 'Sora 2 Pro', provider: 'OpenAI', modality: 'video',
    description: 'OpenAI Sora 2 Pro: higher-quality text-to-video and image-to-video at 720p or 1080p. Retired: OpenAI shut down the Sora 2 models and its Videos API on 2026-09-24, with no replacement API; use Veo 3.1, Seedance or Wan.',
    tags: ['video', 'text-to-video', 'image-to-video', 'audio', 'sora', 'retired'], family: 'openai-videos', upstreamVendor: 'openai', upstreamModel: 'sora-2-pro',
    capabilities: { task: 'text-to-video', durations: [4, 8, 12], resolutions: ['720p', '1080p'], audio: true },
    prices: perSecond({ 'resolution=720p': '0.30', 'resolution=1080p': '0.50' }, 'A'),
    isPopular: false, isActive: false, status: 'retired', retiredAt: '2026-09-24',
    source: 'LiteLLM + Portkey agree; OpenAI sora-2-pro model page and deprecations page (shut down 2026-09-24)',
  },
  {
    id: 'runway/gen4-turbo', name: 'Runway Gen-4 Turbo', provider: 'Runway', modality: 'video',
    description: 'Runway Gen-4 Turbo image-to-video: one first frame animated for 2 to 10 seconds in six aspect ratios.',
    tags: ['video', 'image-to-video', 'i2v', 'runway'], family: 'runway', upstreamVendor: 'runway', upstreamModel: 'gen4_turbo',
    capabilities: {
      profile: 'RUNWAY-I2V', task: 'image-to-video', durations: { min: 2, max: 10, default: 5 }, aspectRatios: ['16:9', '9:16', '4:3', '3:4', '1:1', '21:9'],
      minImages: 1, maxImages: 1, maxPromptChars: 1000,
    },
    prices: perSecond({ '': '0.05' }, 'A'),
    isPopular: false, source: 'docs.dev.runwayml.com pricing (5 credits per second, 0.01 USD per credit); LiteLLM agrees; API: docs/vendors/runway.md',
  },
  {
    id: 'runway/gen4-aleph', name: 'Runway Aleph', provider: 'Runway', modality: 'video',
    description: 'Runway Aleph (Gen-4) video-to-video editing: one input MP4 of up to 5 seconds restyled or changed by a prompt, billed per second of the input video.',
    tags: ['video', 'video-to-video', 'edit', 'runway'], family: 'runway', upstreamVendor: 'runway', upstreamModel: 'gen4_aleph',
    capabilities: {
      profile: 'RUNWAY-V2V', task: 'video-to-video', aspectRatios: ['16:9', '9:16', '4:3', '3:4', '1:1', '21:9'],
      minVideos: 1, maxVideos: 1, maxInputSeconds: 5, maxPromptChars: 1000,
    },
    prices: perSecond({ '': '0.15' }, 'B'),
    isPopular: false, source: 'LiteLLM (0.15 USD per second of input video); Runway lists 15 credits per second at 0.01 USD a credit, not re-checked here; API: docs/vendors/runway.md',
  },
  {
    id: 'luma/ray-3.2', name: 'Luma Ray 3.2', provider: 'Luma AI', modality: 'video',
    description: 'Luma Ray 3.2 text-to-video and image-to-video from a first frame, 5 or 10 seconds at 540p to 1080p, SDR or HDR.',
    tags: ['video', 'text-to-video', 'image-to-video', 'luma', 'hdr'], family: 'luma', upstreamVendor: 'luma', upstreamModel: 'ray-3.2',
    capabilities: {
      profile: 'LUMA-RAY', task: 'text-to-video', durations: [5, 10], resolutions: ['540p', '720p', '1080p'], defaultResolution: '720p', dynamicRanges: ['sdr', 'hdr'],
      aspectRatios: ['16:9', '9:16', '4:3', '3:4', '1:1', '21:9'], minImages: 0, maxImages: 1, maxPromptChars: 6000,
    },
    prices: perSecond({
      'dynamic_range=sdr,resolution=540p': '0.144', 'dynamic_range=sdr,resolution=720p': '0.216', 'dynamic_range=sdr,resolution=1080p': '0.432',
      'dynamic_range=hdr,resolution=720p': '0.432', 'dynamic_range=hdr,resolution=1080p': '0.864',
    }, 'C'),
    isPopular: false, source: 'fal price text for luma ray v3.2 (HDR 2x); API: docs/vendors/luma.md',
  },
].map((seed) => Object.freeze(seed)) as MediaSeed[]);
