import type { MediaSeed } from './types.js';

/** FLUX.2 output shapes the gateway asks for (about one megapixel: the price lines are the 1 MP rates). */
const FLUX2_ASPECT_RATIOS = ['1:1', '16:9', '9:16', '4:3', '3:4'];

/** `imageConfig.aspectRatio` values of the Gemini image models (docs/vendors/google-media.md). */
const GEMINI_PRO_IMAGE_RATIOS = ['1:1', '2:3', '3:2', '3:4', '4:3', '4:5', '5:4', '9:16', '16:9', '21:9'];
const GEMINI_FLASH_IMAGE_RATIOS = [...GEMINI_PRO_IMAGE_RATIOS, '1:4', '4:1', '1:8', '8:1'];

/**
 * Image models (shared/reference/model-catalog-facts.md §3). Price lines: component `image`, per image;
 * tiers name the request parameters that set the price (`size`, `quality`, `resolution`, `mode`).
 * `maxN` is the gateway's cap on `n` (the vendor's where known, else 1). The request fields a model
 * takes follow from its capabilities: `sizes` → `size`, `qualities` → `quality`, `resolutions` →
 * `resolution`, `aspectRatios` → `aspect_ratio`, `imageInput` → `image_urls` (at most
 * `maxReferenceImages`, required when `requiresImage`); anything else is refused by name.
 */
export const IMAGE_MODELS: readonly MediaSeed[] = Object.freeze([
  {
    id: 'openai/gpt-image-2', name: 'GPT Image 2', provider: 'OpenAI', modality: 'image',
    description: 'OpenAI GPT Image 2: text-to-image and image editing with reference images; priced per image by size and quality.',
    tags: ['image', 'text-to-image', 'edit'], family: 'openai-images', upstreamVendor: 'openai', upstreamModel: 'gpt-image-2',
    capabilities: { maxN: 10, sizes: ['1024x1024', '1024x1536', '1536x1024'], qualities: ['low', 'medium', 'high'], imageInput: true, maxReferenceImages: 16, sync: true },
    prices: [
      { component: 'image', tier: 'quality=low,size=1024x1024', usd: '0.006', confidence: 'B' },
      { component: 'image', tier: 'quality=medium,size=1024x1024', usd: '0.053', confidence: 'B' },
      { component: 'image', tier: 'quality=high,size=1024x1024', usd: '0.211', confidence: 'B' },
      { component: 'image', tier: 'quality=low,size=1024x1536', usd: '0.005', confidence: 'B' },
      { component: 'image', tier: 'quality=medium,size=1024x1536', usd: '0.041', confidence: 'B' },
      { component: 'image', tier: 'quality=high,size=1024x1536', usd: '0.165', confidence: 'B' },
      { component: 'image', tier: 'quality=low,size=1536x1024', usd: '0.005', confidence: 'B' },
      { component: 'image', tier: 'quality=medium,size=1536x1024', usd: '0.041', confidence: 'B' },
      { component: 'image', tier: 'quality=high,size=1536x1024', usd: '0.165', confidence: 'B' },
    ],
    isPopular: true, source: 'Portkey openai.json image block (portrait cheaper than square: possible data error, re-check)',
  },
  {
    id: 'openai/gpt-image-1.5', name: 'GPT Image 1.5', provider: 'OpenAI', modality: 'image',
    description: 'OpenAI GPT Image 1.5 text-to-image and editing. Deprecated upstream: shutdown 2026-12-01.',
    tags: ['image', 'text-to-image', 'edit', 'deprecated-upstream'], family: 'openai-images', upstreamVendor: 'openai', upstreamModel: 'gpt-image-1.5',
    capabilities: { maxN: 10, sizes: ['1024x1024', '1024x1536', '1536x1024'], qualities: ['low', 'medium', 'high'], imageInput: true, maxReferenceImages: 16, sync: true },
    prices: [
      { component: 'image', tier: 'quality=low,size=1024x1024', usd: '0.009', confidence: 'A' },
      { component: 'image', tier: 'quality=medium,size=1024x1024', usd: '0.034', confidence: 'A' },
      { component: 'image', tier: 'quality=high,size=1024x1024', usd: '0.133', confidence: 'A' },
      { component: 'image', tier: 'quality=low,size=1024x1536', usd: '0.013', confidence: 'A' },
      { component: 'image', tier: 'quality=medium,size=1024x1536', usd: '0.05', confidence: 'A' },
      { component: 'image', tier: 'quality=high,size=1024x1536', usd: '0.20', confidence: 'A' },
      { component: 'image', tier: 'quality=low,size=1536x1024', usd: '0.013', confidence: 'A' },
      { component: 'image', tier: 'quality=medium,size=1536x1024', usd: '0.05', confidence: 'A' },
      { component: 'image', tier: 'quality=high,size=1536x1024', usd: '0.20', confidence: 'A' },
    ],
    isPopular: false, status: 'deprecated', retiredAt: '2026-12-01', source: 'LiteLLM per-size entries + Portkey agree; OpenAI deprecations',
  },
  {
    id: 'google/gemini-3-pro-image', name: 'Nano Banana Pro (Gemini 3 Pro Image)', provider: 'Google', modality: 'image',
    description: 'Google Nano Banana Pro (Gemini 3 Pro Image): high-quality generation and multi-image editing at 1K, 2K or 4K, priced per image by resolution.',
    tags: ['image', 'text-to-image', 'edit', 'nano-banana'], family: 'gemini-images', upstreamVendor: 'gemini', upstreamModel: 'gemini-3-pro-image',
    capabilities: {
      maxN: 1, resolutions: ['1K', '2K', '4K'], defaultResolution: '1K', aspectRatios: GEMINI_PRO_IMAGE_RATIOS,
      imageInput: true, maxReferenceImages: 14, sync: true,
    },
    prices: [
      { component: 'image', tier: 'resolution=1K', usd: '0.134', confidence: 'A' },
      { component: 'image', tier: 'resolution=2K', usd: '0.134', confidence: 'A' },
      { component: 'image', tier: 'resolution=4K', usd: '0.24', confidence: 'A' },
      { component: 'input_image', usd: '0.0011', confidence: 'A' },
    ],
    isPopular: true, source: 'Gemini API pricing page; LiteLLM; Portkey (docs/vendors/google-media.md)',
  },
  {
    id: 'google/gemini-3.1-flash-image', name: 'Nano Banana 2 (Gemini 3.1 Flash Image)', provider: 'Google', modality: 'image',
    description: 'Google Nano Banana 2 (Gemini 3.1 Flash Image): fast, cheap generation and editing from 512 px to 4K, priced per image by resolution.',
    tags: ['image', 'text-to-image', 'edit', 'nano-banana', 'cheap'], family: 'gemini-images', upstreamVendor: 'gemini', upstreamModel: 'gemini-3.1-flash-image',
    capabilities: {
      maxN: 1, resolutions: ['512', '1K', '2K', '4K'], defaultResolution: '1K', aspectRatios: GEMINI_FLASH_IMAGE_RATIOS,
      imageInput: true, maxReferenceImages: 14, sync: true,
    },
    // Google bills image output at 60 USD per 1M tokens: 747 / 1,120 / 1,680 / 2,520 tokens per image by size.
    prices: [
      { component: 'image', tier: 'resolution=512', usd: '0.045', confidence: 'B' },
      { component: 'image', tier: 'resolution=1K', usd: '0.067', confidence: 'B' },
      { component: 'image', tier: 'resolution=2K', usd: '0.101', confidence: 'B' },
      { component: 'image', tier: 'resolution=4K', usd: '0.151', confidence: 'B' },
    ],
    isPopular: true, source: 'LiteLLM gemini/gemini-3.1-flash-image (0.045, the 512 px image); Gemini API pricing page as quoted by xairouter (60 USD per 1M image tokens: 0.067 / 0.101 / 0.151) (docs/vendors/google-media.md)',
  },
  {
    id: 'google/imagen-4', name: 'Imagen 4', provider: 'Google', modality: 'image',
    description: 'Google Imagen 4 text-to-image (fast and ultra variants). Retired: Google shut down every Imagen 4 model on the Gemini API on 2026-08-17; use Nano Banana 2 or Nano Banana Pro.',
    tags: ['image', 'text-to-image', 'retired'], family: 'imagen', upstreamVendor: 'gemini', upstreamModel: 'imagen-4.0-generate-001',
    capabilities: { maxN: 4, imageInput: false, sync: true },
    prices: [{ component: 'image', usd: '0.04', confidence: 'A' }],
    isPopular: false, isActive: false, status: 'retired', retiredAt: '2026-08-17', source: 'LiteLLM + Portkey agree; Gemini API deprecations page (shutdown 2026-08-17) (docs/vendors/google-media.md)',
  },
  {
    id: 'black-forest-labs/flux-2-pro', name: 'FLUX.2 [pro]', provider: 'Black Forest Labs', modality: 'image',
    description: 'Black Forest Labs FLUX.2 [pro]: text-to-image and editing with up to 8 reference images; priced from the 1-megapixel rate.',
    tags: ['image', 'text-to-image', 'edit', 'flux'], family: 'bfl', upstreamVendor: 'bfl', upstreamModel: 'flux-2-pro',
    capabilities: { maxN: 1, aspectRatios: FLUX2_ASPECT_RATIOS, imageInput: true, maxReferenceImages: 8, sync: false },
    prices: [
      { component: 'image', tier: 'mode=generate', usd: '0.03', confidence: 'A' },
      { component: 'image', tier: 'mode=edit', usd: '0.045', confidence: 'A' },
    ],
    isPopular: true, source: 'docs.bfl.ai/quick_start/pricing ("from" prices, megapixel-based)',
  },
  {
    id: 'black-forest-labs/flux-2-max', name: 'FLUX.2 [max]', provider: 'Black Forest Labs', modality: 'image',
    description: 'Black Forest Labs FLUX.2 [max]: the highest-quality FLUX.2 for generation and editing.',
    tags: ['image', 'text-to-image', 'edit', 'flux'], family: 'bfl', upstreamVendor: 'bfl', upstreamModel: 'flux-2-max',
    capabilities: { maxN: 1, aspectRatios: FLUX2_ASPECT_RATIOS, imageInput: true, maxReferenceImages: 8, sync: false },
    prices: [{ component: 'image', usd: '0.07', confidence: 'A' }],
    isPopular: false, source: 'docs.bfl.ai/quick_start/pricing ("from" price)',
  },
  {
    id: 'black-forest-labs/flux-kontext-pro', name: 'FLUX.1 Kontext [pro]', provider: 'Black Forest Labs', modality: 'image',
    description: 'Black Forest Labs FLUX.1 Kontext [pro]: in-context image editing model (previous generation).',
    tags: ['image', 'edit', 'flux'], family: 'bfl', upstreamVendor: 'bfl', upstreamModel: 'flux-kontext-pro',
    capabilities: { maxN: 1, aspectRatios: ['1:1', '16:9', '9:16', '4:3', '3:4', '21:9', '9:21'], imageInput: true, requiresImage: true, maxReferenceImages: 1, sync: false },
    prices: [{ component: 'image', usd: '0.04', confidence: 'A' }],
    isPopular: false, status: 'legacy', source: 'LiteLLM (bfl.ai/pricing); fal; Portkey',
  },
  {
    id: 'bytedance/seedream-4.5', name: 'Seedream 4.5', provider: 'ByteDance', modality: 'image',
    description: 'ByteDance Seedream 4.5 on BytePlus ModelArk: generation with multiple reference images.',
    tags: ['image', 'text-to-image', 'edit'], family: 'openai-images', upstreamVendor: 'bytedance', upstreamModel: 'seedream-4-5-251128',
    capabilities: { maxN: 1, imageInput: true, maxReferenceImages: 10, sync: true },
    prices: [{ component: 'image', usd: '0.04', confidence: 'B' }],
    isPopular: false, source: 'Portkey byteplus.json',
  },
  {
    id: 'bytedance/seedream-5.0-lite', name: 'Seedream 5.0 Lite', provider: 'ByteDance', modality: 'image',
    description: 'ByteDance Seedream 5.0 Lite on BytePlus ModelArk: fast generation and editing.',
    tags: ['image', 'text-to-image', 'edit', 'cheap'], family: 'openai-images', upstreamVendor: 'bytedance', upstreamModel: 'seedream-5-0-lite-260128',
    capabilities: { maxN: 1, imageInput: true, maxReferenceImages: 10, sync: true },
    prices: [{ component: 'image', usd: '0.035', confidence: 'B' }],
    isPopular: false, source: 'Portkey byteplus.json',
  },
  {
    id: 'alibaba/qwen-image-2.0-pro', name: 'Qwen-Image 2.0 Pro', provider: 'Alibaba', modality: 'image',
    description: 'Alibaba Qwen-Image 2.0 Pro on DashScope: text-to-image with strong Chinese and English text rendering, and editing or combining up to 3 input images; up to 4 images per call, 2K by default.',
    tags: ['image', 'text-to-image', 'edit', 'typography'], family: 'dashscope', upstreamVendor: 'alibaba', upstreamModel: 'qwen-image-2.0-pro',
    capabilities: {
      maxN: 4, sizes: ['2048x2048', '2048x1152', '1152x2048', '2048x1536', '1536x2048'], imageInput: true, maxReferenceImages: 3, negativePrompt: true, sync: true,
    },
    prices: [{ component: 'image', usd: '0.075', confidence: 'C' }],
    isPopular: false,
    source: 'empiriolabs ("was" price, its Singapore list) and eachlabs agree on 0.075 per image; Model Studio lists CNY 0.50 per image (crazyrouter) (docs/vendors/wan-vidu-seedance.md)',
  },
  {
    id: 'xai/grok-imagine-image', name: 'Grok Imagine Image', provider: 'xAI', modality: 'image',
    description: 'xAI Grok Imagine Image generation and editing. Not offered: only a reseller price is known.',
    tags: ['image', 'text-to-image', 'edit', 'price-unverified'], family: 'openai-images', upstreamVendor: 'xai', upstreamModel: 'grok-imagine-image',
    capabilities: { maxN: 1, imageInput: true, sync: true },
    prices: [{ component: 'image', usd: '0.05', confidence: 'unverified' }],
    isPopular: false, isActive: false, source: 'muapi (reseller)',
  },
  {
    id: 'runway/gen4-image', name: 'Runway Gen-4 Image', provider: 'Runway', modality: 'image',
    description: 'Runway Gen-4 Image: generation guided by up to 3 reference images, at 720p or 1080p in six aspect ratios.',
    tags: ['image', 'text-to-image', 'reference'], family: 'runway', upstreamVendor: 'runway', upstreamModel: 'gen4_image',
    capabilities: {
      maxN: 1, resolutions: ['720p', '1080p'], aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'], imageInput: true, maxReferenceImages: 3, sync: false,
    },
    prices: [
      { component: 'image', tier: 'resolution=720p', usd: '0.05', confidence: 'B' },
      { component: 'image', tier: 'resolution=1080p', usd: '0.08', confidence: 'B' },
    ],
    isPopular: false, source: 'LiteLLM (docs.dev.runwayml.com pricing: 5 and 8 credits at 0.01); API: docs/vendors/runway.md',
  },
  {
    id: 'luma/uni-1', name: 'Luma UNI-1', provider: 'Luma AI', modality: 'image',
    description: 'Luma UNI-1: 2K image generation and editing with several reference images.',
    tags: ['image', 'text-to-image', 'edit', 'reference'], family: 'luma', upstreamVendor: 'luma', upstreamModel: 'uni-1',
    capabilities: {
      maxN: 1, imageInput: true, maxReferenceImages: 7, sync: false,
      aspectRatios: ['3:1', '2:1', '21:9', '16:9', '4:3', '3:2', '1:1', '3:4', '2:3', '9:16', '1:2', '1:3'],
    },
    prices: [
      { component: 'image', tier: 'mode=generate', usd: '0.0404', confidence: 'A' },
      { component: 'image', tier: 'mode=edit', usd: '0.0434', confidence: 'A' },
      { component: 'reference_image', usd: '0.003', confidence: 'A' },
    ],
    isPopular: false, source: 'docs.agents.lumalabs.ai/guides/pricing (edit price includes one reference; each extra reference adds 0.003); API: docs/vendors/luma.md',
  },
].map((seed) => Object.freeze(seed)) as MediaSeed[]);
