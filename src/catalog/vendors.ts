/**
 * The 18 vendors of the catalog (shared/reference/model-catalog-facts.md §1): the display name is the
 * exact string of a model's `provider` field and of the `provider=` filter; the slug is the `<vendor>`
 * part of catalog ids.
 */
export interface Vendor {
  readonly name: string;
  readonly slug: string;
  readonly baseUrl: string;
}

export const CATALOG_VENDORS: readonly Vendor[] = Object.freeze([
  { name: 'OpenAI', slug: 'openai', baseUrl: 'https://api.openai.com/v1' },
  { name: 'Anthropic', slug: 'anthropic', baseUrl: 'https://api.anthropic.com/v1' },
  { name: 'Google', slug: 'google', baseUrl: 'https://generativelanguage.googleapis.com/v1beta' },
  { name: 'xAI', slug: 'xai', baseUrl: 'https://api.x.ai/v1' },
  { name: 'DeepSeek', slug: 'deepseek', baseUrl: 'https://api.deepseek.com' },
  { name: 'Alibaba', slug: 'alibaba', baseUrl: 'https://dashscope-intl.aliyuncs.com/api/v1' },
  { name: 'Moonshot AI', slug: 'moonshot', baseUrl: 'https://api.moonshot.ai/v1' },
  { name: 'Zhipu AI', slug: 'zhipu', baseUrl: 'https://api.z.ai/api/paas/v4' },
  { name: 'MiniMax', slug: 'minimax', baseUrl: 'https://api.minimax.io/v1' },
  { name: 'Mistral', slug: 'mistral', baseUrl: 'https://api.mistral.ai/v1' },
  { name: 'ByteDance', slug: 'bytedance', baseUrl: 'https://ark.ap-southeast.bytepluses.com/api/v3' },
  { name: 'Kuaishou', slug: 'kuaishou', baseUrl: 'https://api-singapore.klingai.com' },
  { name: 'ShengShu', slug: 'shengshu', baseUrl: 'https://api.vidu.com/ent/v2' },
  { name: 'Runway', slug: 'runway', baseUrl: 'https://api.dev.runwayml.com/v1' },
  { name: 'Luma AI', slug: 'luma', baseUrl: 'https://agents.lumalabs.ai/v1' },
  { name: 'Black Forest Labs', slug: 'black-forest-labs', baseUrl: 'https://api.bfl.ai/v1' },
  { name: 'ElevenLabs', slug: 'elevenlabs', baseUrl: 'https://api.elevenlabs.io/v1' },
  { name: 'Stability AI', slug: 'stability', baseUrl: 'https://api.stability.ai' },
].map((vendor) => Object.freeze(vendor)));

export const PROVIDER_NAMES: readonly string[] = Object.freeze(CATALOG_VENDORS.map((vendor) => vendor.name));
/** The spec's four modalities. */
export const MODALITIES = Object.freeze(['chat', 'image', 'video', 'audio'] as const);
/** What a catalog model's `modality` (and the `task` filter) may be: the spec's four and `embedding`, this gateway's extension. */
export const CATALOG_MODALITIES = Object.freeze([...MODALITIES, 'embedding'] as const);
