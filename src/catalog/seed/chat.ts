import type { CatalogModel, ChatCapabilities, TokenPrices } from '../model.js';
import type { Confidence, Lifecycle } from './types.js';

/**
 * Chat models, list prices in USD per 1M tokens (source: shared/reference/model-catalog-facts.md §2;
 * `confidence` says how sure, A when absent). `cacheWrite` "0" where the vendor has no separate write
 * price; a cache read the reference does not know ("?") is priced like input (never under-billed).
 * Every chat model is served by one of the gateway's families (openai, anthropic, gemini) through a
 * vendor of `VENDORS` (src/config.ts); the sync refuses a seed that breaks this.
 */
export type SeedPrices = Readonly<Record<Exclude<keyof TokenPrices, 'longContext'>, string>>;

export interface ChatSeed extends Omit<CatalogModel, 'modality' | 'prices' | 'isActive'> {
  /** Default true. False for a model the gateway must not serve (retired, or no price it can bill on). */
  readonly isActive?: boolean;
  /** The upstream's lifecycle (default `active`) and its retirement or announced shutdown date. */
  readonly status?: Lifecycle;
  readonly retiredAt?: string;
  /** Of the prices; A when absent. */
  readonly confidence?: Confidence;
  readonly source?: string;
  /** Decimal strings, so the conversion to nano-USD is exact. */
  readonly usdPerMillion: SeedPrices;
  /** Every token of a call with a prompt above `aboveTokens` at these prices instead. */
  readonly longContext?: { readonly aboveTokens: number; readonly usdPerMillion: SeedPrices };
}

const standard = (overrides: Partial<ChatCapabilities>): ChatCapabilities => Object.freeze({
  reasoning: false, vision: true, tools: true, jsonMode: true, sampling: true,
  contextTokens: 128_000, maxOutputTokens: 16_384, maxTokensField: 'max_tokens', maxImageTokens: 1_500, promptCache: 'key',
  ...overrides,
});

/** GPT-5.6 / GPT-6: reasoning models (no sampling knobs, `max_completion_tokens`), 1.05M context. */
const gpt6 = standard({ reasoning: true, sampling: false, contextTokens: 1_050_000, maxOutputTokens: 128_000, maxTokensField: 'max_completion_tokens' });
/** Claude 5.x: adaptive thinking, 1M context, cache breakpoints. */
const claude5 = standard({ reasoning: true, sampling: false, contextTokens: 1_000_000, maxOutputTokens: 128_000, maxImageTokens: 1_600, promptCache: 'breakpoint' });
const gemini3 = standard({ reasoning: true, contextTokens: 1_048_576, maxOutputTokens: 65_536, maxImageTokens: 1_300, promptCache: 'prefix' });
/** Other vendors' OpenAI-compatible APIs: automatic prefix caches, no `prompt_cache_key`. */
const compatible = (overrides: Partial<ChatCapabilities>) => standard({ promptCache: 'prefix', ...overrides });

export const CHAT_MODELS: readonly ChatSeed[] = Object.freeze([
  {
    id: 'openai/gpt-4o-mini', name: 'GPT-4o mini', provider: 'OpenAI',
    description: 'Small, fast and cheap multimodal GPT-4o model. Deprecated upstream: shutdown 2027-01-14.',
    tags: ['chat', 'vision', 'tools', 'deprecated-upstream'], family: 'openai', upstreamVendor: 'openai', upstreamModel: 'gpt-4o-mini',
    // gpt-4o-mini bills an image at about 33x the gpt-4o token count (up to ~48k tokens).
    capabilities: standard({ contextTokens: 128_000, maxOutputTokens: 16_384, maxImageTokens: 48_200 }),
    usdPerMillion: { input: '0.15', cachedInput: '0.075', cacheWrite: '0', output: '0.60' }, isPopular: true,
    status: 'deprecated', retiredAt: '2027-01-14',
  },
  {
    id: 'openai/gpt-4.1', name: 'GPT-4.1', provider: 'OpenAI',
    description: 'GPT-4.1 with a one-million-token context window. Deprecated upstream: shutdown 2027-01-14.',
    tags: ['chat', 'vision', 'tools', 'long-context', 'deprecated-upstream'], family: 'openai', upstreamVendor: 'openai', upstreamModel: 'gpt-4.1',
    capabilities: standard({ contextTokens: 1_047_576, maxOutputTokens: 32_768 }),
    usdPerMillion: { input: '2.00', cachedInput: '0.50', cacheWrite: '0', output: '8.00' }, isPopular: true,
    status: 'deprecated', retiredAt: '2027-01-14',
  },
  {
    id: 'openai/o4-mini', name: 'o4-mini', provider: 'OpenAI',
    description: 'Small reasoning model. Retired upstream on 2026-10-23 (replacement gpt-5.6-terra).',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'retired-upstream'], family: 'openai', upstreamVendor: 'openai', upstreamModel: 'o4-mini',
    capabilities: standard({ reasoning: true, sampling: false, contextTokens: 200_000, maxOutputTokens: 100_000, maxTokensField: 'max_completion_tokens' }),
    usdPerMillion: { input: '1.10', cachedInput: '0.275', cacheWrite: '0', output: '4.40' }, isPopular: false,
    isActive: false, status: 'retired', retiredAt: '2026-10-23',
  },
  {
    id: 'deepseek/deepseek-chat', name: 'DeepSeek Chat', provider: 'DeepSeek',
    description: 'DeepSeek V4 Flash without thinking (compatibility alias; retired upstream after 2026-07-24).',
    tags: ['chat', 'tools', 'retired-upstream'], family: 'openai', upstreamVendor: 'deepseek', upstreamModel: 'deepseek-chat',
    capabilities: standard({ vision: false, contextTokens: 1_000_000, maxOutputTokens: 384_000, promptCache: 'prefix' }),
    usdPerMillion: { input: '0.14', cachedInput: '0.0028', cacheWrite: '0', output: '0.28' }, isPopular: true,
    isActive: false, status: 'retired', retiredAt: '2026-07-24',
  },
  {
    id: 'deepseek/deepseek-reasoner', name: 'DeepSeek Reasoner', provider: 'DeepSeek',
    description: 'DeepSeek V4 Flash with thinking; returns its reasoning trace (compatibility alias; retired upstream after 2026-07-24).',
    tags: ['chat', 'reasoning', 'tools', 'retired-upstream'], family: 'openai', upstreamVendor: 'deepseek', upstreamModel: 'deepseek-reasoner',
    capabilities: standard({ reasoning: true, vision: false, sampling: false, contextTokens: 1_000_000, maxOutputTokens: 384_000, promptCache: 'prefix' }),
    usdPerMillion: { input: '0.14', cachedInput: '0.0028', cacheWrite: '0', output: '0.28' }, isPopular: false,
    isActive: false, status: 'retired', retiredAt: '2026-07-24',
  },
  {
    id: 'anthropic/claude-sonnet-4-5', name: 'Claude Sonnet 4.5', provider: 'Anthropic',
    description: 'Claude Sonnet 4.5 with extended thinking (legacy: superseded by Sonnet 5.5).',
    tags: ['chat', 'reasoning', 'vision', 'tools'], family: 'anthropic', upstreamVendor: 'anthropic', upstreamModel: 'claude-sonnet-4-5',
    capabilities: standard({ reasoning: true, contextTokens: 200_000, maxOutputTokens: 64_000, maxImageTokens: 1_600, promptCache: 'breakpoint' }),
    usdPerMillion: { input: '3.00', cachedInput: '0.30', cacheWrite: '3.75', output: '15.00' }, isPopular: true,
    status: 'legacy',
  },
  {
    id: 'anthropic/claude-haiku-4-5', name: 'Claude Haiku 4.5', provider: 'Anthropic',
    description: 'Claude Haiku 4.5, fast and small, with extended thinking (legacy: superseded by Haiku 5.5).',
    tags: ['chat', 'reasoning', 'vision', 'tools'], family: 'anthropic', upstreamVendor: 'anthropic', upstreamModel: 'claude-haiku-4-5',
    capabilities: standard({ reasoning: true, contextTokens: 200_000, maxOutputTokens: 64_000, maxImageTokens: 1_600, promptCache: 'breakpoint' }),
    usdPerMillion: { input: '1.00', cachedInput: '0.10', cacheWrite: '1.25', output: '5.00' }, isPopular: false,
    status: 'legacy',
  },
  {
    id: 'google/gemini-2.5-flash', name: 'Gemini 2.5 Flash', provider: 'Google',
    description: 'Gemini 2.5 Flash with thinking (text, image and video input price; retired upstream on 2026-12-01).',
    tags: ['chat', 'reasoning', 'vision', 'tools'], family: 'gemini', upstreamVendor: 'gemini', upstreamModel: 'gemini-2.5-flash',
    capabilities: standard({ reasoning: true, contextTokens: 1_048_576, maxOutputTokens: 65_535, maxImageTokens: 1_300, promptCache: 'prefix' }),
    usdPerMillion: { input: '0.30', cachedInput: '0.03', cacheWrite: '0', output: '2.50' }, isPopular: true,
    status: 'deprecated', retiredAt: '2026-12-01',
  },
  {
    id: 'google/gemini-2.5-pro', name: 'Gemini 2.5 Pro', provider: 'Google',
    description: 'Gemini 2.5 Pro with thinking; prompts above 200K tokens are billed at the long-context prices (retired upstream on 2026-12-01).',
    tags: ['chat', 'reasoning', 'vision', 'tools'], family: 'gemini', upstreamVendor: 'gemini', upstreamModel: 'gemini-2.5-pro',
    capabilities: standard({ reasoning: true, contextTokens: 1_048_576, maxOutputTokens: 65_535, maxImageTokens: 1_300, promptCache: 'prefix' }),
    usdPerMillion: { input: '1.25', cachedInput: '0.125', cacheWrite: '0', output: '10.00' }, isPopular: false,
    status: 'deprecated', retiredAt: '2026-12-01',
    longContext: { aboveTokens: 200_000, usdPerMillion: { input: '2.50', cachedInput: '0.25', cacheWrite: '0', output: '15.00' } },
  },
  // ---- Current chat models (added with the four-modality catalog) ----
  {
    id: 'openai/gpt-6.1-sol', name: 'GPT-6.1 Sol', provider: 'OpenAI',
    description: 'OpenAI GPT-6.1 Sol: frontier reasoning model with vision and tools; prompts above 272K tokens are billed at 2x input and 1.5x output.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'openai', upstreamVendor: 'openai', upstreamModel: 'gpt-6.1-sol',
    capabilities: gpt6, usdPerMillion: { input: '2.00', cachedInput: '0.10', cacheWrite: '2.50', output: '10.00' }, isPopular: true,
    longContext: { aboveTokens: 272_000, usdPerMillion: { input: '4.00', cachedInput: '0.20', cacheWrite: '5.00', output: '15.00' } },
    confidence: 'B', source: 'PromptFuel v1.0.22; LiteLLM blog',
  },
  {
    id: 'openai/gpt-6.1-terra', name: 'GPT-6.1 Terra', provider: 'OpenAI',
    description: 'OpenAI GPT-6.1 Terra: balanced reasoning model with vision and tools (30-minute cache writes).',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'openai', upstreamVendor: 'openai', upstreamModel: 'gpt-6.1-terra',
    capabilities: gpt6, usdPerMillion: { input: '1.00', cachedInput: '0.05', cacheWrite: '1.25', output: '5.00' }, isPopular: false,
    longContext: { aboveTokens: 272_000, usdPerMillion: { input: '2.00', cachedInput: '0.10', cacheWrite: '2.50', output: '7.50' } },
    source: 'docs.litellm.ai/blog/gpt-6-1-terra; PromptFuel v1.0.24',
  },
  {
    id: 'openai/gpt-6-luna', name: 'GPT-6 Luna', provider: 'OpenAI',
    description: 'OpenAI GPT-6 Luna: the smallest, cheapest GPT-6 reasoning model; replacement of GPT-4o mini and GPT-4.1.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context', 'cheap'], family: 'openai', upstreamVendor: 'openai', upstreamModel: 'gpt-6-luna',
    capabilities: gpt6, usdPerMillion: { input: '0.10', cachedInput: '0.01', cacheWrite: '0.125', output: '0.50' }, isPopular: true,
    longContext: { aboveTokens: 272_000, usdPerMillion: { input: '0.20', cachedInput: '0.02', cacheWrite: '0.25', output: '0.75' } },
    source: 'codexometer v0.18.4; PromptFuel v1.0.21; LiteLLM discussion #42523',
  },
  {
    id: 'openai/gpt-6-astra', name: 'GPT-6 Astra', provider: 'OpenAI',
    description: 'OpenAI GPT-6 Astra: the largest GPT-6 reasoning model (context window unverified).',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'openai', upstreamVendor: 'openai', upstreamModel: 'gpt-6-astra',
    capabilities: gpt6, usdPerMillion: { input: '10.00', cachedInput: '1.00', cacheWrite: '12.50', output: '50.00' }, isPopular: false,
    longContext: { aboveTokens: 272_000, usdPerMillion: { input: '20.00', cachedInput: '2.00', cacheWrite: '25.00', output: '75.00' } },
    confidence: 'B', source: 'PromptFuel v1.0.19',
  },
  {
    id: 'openai/gpt-5.6-sol', name: 'GPT-5.6 Sol', provider: 'OpenAI',
    description: 'OpenAI GPT-5.6 Sol reasoning model at its list price (a promotion upstream may charge less).',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'openai', upstreamVendor: 'openai', upstreamModel: 'gpt-5.6-sol',
    capabilities: gpt6, usdPerMillion: { input: '5.00', cachedInput: '0.50', cacheWrite: '6.25', output: '30.00' }, isPopular: false,
    longContext: { aboveTokens: 272_000, usdPerMillion: { input: '10.00', cachedInput: '1.00', cacheWrite: '12.50', output: '45.00' } },
    source: 'LiteLLM + Portkey agree',
  },
  {
    id: 'anthropic/claude-fable-5-1', name: 'Claude Fable 5.1', provider: 'Anthropic',
    description: 'Anthropic Claude Fable 5.1: top-tier model with adaptive thinking always on, vision and tools, 1M context.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'anthropic', upstreamVendor: 'anthropic', upstreamModel: 'claude-fable-5-1',
    capabilities: claude5, usdPerMillion: { input: '10.00', cachedInput: '0.25', cacheWrite: '12.50', output: '50.00' }, isPopular: false,
    source: 'Anthropic pricing page; PromptFuel v1.0.22',
  },
  {
    id: 'anthropic/claude-opus-5-5', name: 'Claude Opus 5.5', provider: 'Anthropic',
    description: 'Anthropic Claude Opus 5.5: the recommended default Claude with adaptive thinking, vision and tools, 1M context.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'anthropic', upstreamVendor: 'anthropic', upstreamModel: 'claude-opus-5-5',
    capabilities: claude5, usdPerMillion: { input: '4.00', cachedInput: '0.20', cacheWrite: '5.00', output: '20.00' }, isPopular: true,
    source: 'Anthropic model overview; claudit v1.8.2; PromptFuel v1.0.21',
  },
  {
    id: 'anthropic/claude-sonnet-5-5', name: 'Claude Sonnet 5.5', provider: 'Anthropic',
    description: 'Anthropic Claude Sonnet 5.5 with adaptive thinking, vision and tools, 1M context.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'anthropic', upstreamVendor: 'anthropic', upstreamModel: 'claude-sonnet-5-5',
    capabilities: claude5, usdPerMillion: { input: '2.00', cachedInput: '0.10', cacheWrite: '2.50', output: '10.00' }, isPopular: true,
    source: 'Anthropic model page; claudit v1.9.2; PromptFuel v1.0.23',
  },
  {
    id: 'anthropic/claude-haiku-5-5', name: 'Claude Haiku 5.5', provider: 'Anthropic',
    description: 'Anthropic Claude Haiku 5.5: fast small Claude with adaptive thinking; prompts above 100K tokens are billed at the higher tier.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context', 'cheap'], family: 'anthropic', upstreamVendor: 'anthropic', upstreamModel: 'claude-haiku-5-5',
    capabilities: claude5, usdPerMillion: { input: '0.10', cachedInput: '0.01', cacheWrite: '0.125', output: '0.50' }, isPopular: false,
    longContext: { aboveTokens: 100_000, usdPerMillion: { input: '0.50', cachedInput: '0.05', cacheWrite: '0.625', output: '2.50' } },
    source: 'claudit v1.9.2; PromptFuel v1.0.23',
  },
  {
    id: 'google/gemini-3.8-flash', name: 'Gemini 3.8 Flash', provider: 'Google',
    description: 'Google Gemini 3.8 Flash with thinking levels, vision and tools. Upstream doubles its price on 2027-01-01 (1.50 in / 7.50 out).',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'gemini', upstreamVendor: 'gemini', upstreamModel: 'gemini-3.8-flash',
    capabilities: gemini3, usdPerMillion: { input: '0.75', cachedInput: '0.075', cacheWrite: '0', output: '3.75' }, isPopular: true,
    source: 'Gemini API pricing page (verbatim transcription)',
  },
  {
    id: 'google/gemini-3.1-pro-preview', name: 'Gemini 3.1 Pro (preview)', provider: 'Google',
    description: 'Google Gemini 3.1 Pro preview with thinking; prompts above 200K tokens are billed at the long-context prices.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context', 'preview'], family: 'gemini', upstreamVendor: 'gemini', upstreamModel: 'gemini-3.1-pro-preview',
    capabilities: gemini3, usdPerMillion: { input: '2.00', cachedInput: '0.20', cacheWrite: '0', output: '12.00' }, isPopular: false, status: 'preview',
    longContext: { aboveTokens: 200_000, usdPerMillion: { input: '4.00', cachedInput: '0.40', cacheWrite: '0', output: '18.00' } },
    source: 'Gemini API pricing page; LiteLLM',
  },
  {
    id: 'google/gemini-3.5-flash', name: 'Gemini 3.5 Flash', provider: 'Google',
    description: 'Google Gemini 3.5 Flash with thinking, vision and tools.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'gemini', upstreamVendor: 'gemini', upstreamModel: 'gemini-3.5-flash',
    capabilities: gemini3, usdPerMillion: { input: '1.50', cachedInput: '0.15', cacheWrite: '0', output: '9.00' }, isPopular: false,
    source: 'Gemini API pricing page; LiteLLM; Portkey',
  },
  {
    id: 'google/gemini-3.5-flash-lite', name: 'Gemini 3.5 Flash-Lite', provider: 'Google',
    description: 'Google Gemini 3.5 Flash-Lite: the cheapest current Gemini, with thinking, vision and tools.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context', 'cheap'], family: 'gemini', upstreamVendor: 'gemini', upstreamModel: 'gemini-3.5-flash-lite',
    capabilities: gemini3, usdPerMillion: { input: '0.30', cachedInput: '0.03', cacheWrite: '0', output: '2.50' }, isPopular: false,
    source: 'Gemini API pricing page; LiteLLM; Portkey',
  },
  {
    id: 'xai/grok-4.6', name: 'Grok 4.6', provider: 'xAI',
    description: 'xAI Grok 4.6 reasoning model with vision and tools; prompts above 200K tokens are billed at the higher tier.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'openai', upstreamVendor: 'xai', upstreamModel: 'grok-4.6',
    capabilities: compatible({ reasoning: true, sampling: false, contextTokens: 500_000, maxOutputTokens: 128_000 }),
    usdPerMillion: { input: '2.00', cachedInput: '0.50', cacheWrite: '0', output: '6.00' }, isPopular: true,
    longContext: { aboveTokens: 200_000, usdPerMillion: { input: '4.00', cachedInput: '0.50', cacheWrite: '0', output: '12.00' } },
    source: 'docs.x.ai grok-4-6; Portkey x-ai.json',
  },
  {
    id: 'xai/grok-4.3', name: 'Grok 4.3', provider: 'xAI',
    description: 'xAI Grok 4.3 reasoning model with vision, tools and a 1M context window.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'openai', upstreamVendor: 'xai', upstreamModel: 'grok-4.3',
    capabilities: compatible({ reasoning: true, sampling: false, contextTokens: 1_000_000, maxOutputTokens: 128_000 }),
    usdPerMillion: { input: '1.25', cachedInput: '0.20', cacheWrite: '0', output: '2.50' }, isPopular: false,
    longContext: { aboveTokens: 200_000, usdPerMillion: { input: '2.50', cachedInput: '0.20', cacheWrite: '0', output: '5.00' } },
    source: 'LiteLLM + Portkey agree',
  },
  {
    id: 'deepseek/deepseek-v4-pro', name: 'DeepSeek V4 Pro', provider: 'DeepSeek',
    description: 'DeepSeek V4 Pro with a thinking toggle and tools (text only), 1M context.',
    tags: ['chat', 'reasoning', 'tools', 'long-context'], family: 'openai', upstreamVendor: 'deepseek', upstreamModel: 'deepseek-v4-pro',
    capabilities: compatible({ reasoning: true, vision: false, contextTokens: 1_000_000, maxOutputTokens: 384_000 }),
    usdPerMillion: { input: '0.435', cachedInput: '0.003625', cacheWrite: '0', output: '0.87' }, isPopular: true,
    source: 'Portkey deepseek.json; LiteLLM; devtk.ai; tokenmix',
  },
  {
    id: 'deepseek/deepseek-v4-flash', name: 'DeepSeek V4 Flash', provider: 'DeepSeek',
    description: 'DeepSeek V4 Flash with a thinking toggle and tools (text only), 1M context; successor of deepseek-chat and deepseek-reasoner.',
    tags: ['chat', 'reasoning', 'tools', 'long-context', 'cheap'], family: 'openai', upstreamVendor: 'deepseek', upstreamModel: 'deepseek-v4-flash',
    capabilities: compatible({ reasoning: true, vision: false, contextTokens: 1_000_000, maxOutputTokens: 384_000 }),
    usdPerMillion: { input: '0.14', cachedInput: '0.0028', cacheWrite: '0', output: '0.28' }, isPopular: false,
    source: 'Portkey; LiteLLM; devtk; tokenmix',
  },
  {
    id: 'alibaba/qwen3.5-plus', name: 'Qwen3.5-Plus', provider: 'Alibaba',
    description: 'Alibaba Qwen3.5-Plus hybrid-thinking model with vision and tools; prompts above 256K tokens are billed at the higher tier.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'openai', upstreamVendor: 'alibaba', upstreamModel: 'qwen3.5-plus',
    capabilities: compatible({ reasoning: true, contextTokens: 991_808, maxOutputTokens: 65_536 }),
    usdPerMillion: { input: '0.40', cachedInput: '0.40', cacheWrite: '0', output: '2.40' }, isPopular: false,
    longContext: { aboveTokens: 256_000, usdPerMillion: { input: '0.50', cachedInput: '0.50', cacheWrite: '0', output: '3.00' } },
    source: 'LiteLLM tiered_pricing; Portkey dashscope.json (cache-hit rate not captured: billed as input)',
  },
  {
    id: 'alibaba/qwen3.5-flash', name: 'Qwen3.5-Flash', provider: 'Alibaba',
    description: 'Alibaba Qwen3.5-Flash, fast and cheap, with thinking and tools. Limited to 128K-token prompts (the only priced tier).',
    tags: ['chat', 'reasoning', 'tools', 'cheap'], family: 'openai', upstreamVendor: 'alibaba', upstreamModel: 'qwen3.5-flash',
    capabilities: compatible({ reasoning: true, vision: false, contextTokens: 128_000, maxOutputTokens: 32_768 }),
    usdPerMillion: { input: '0.10', cachedInput: '0.10', cacheWrite: '0', output: '0.40' }, isPopular: false,
    confidence: 'B', source: 'Portkey; api-evangelist qwen plans note',
  },
  {
    id: 'alibaba/qwen3.7-max', name: 'Qwen3.7-Max', provider: 'Alibaba',
    description: 'Alibaba Qwen3.7-Max flagship with thinking and tools. Not served: only reseller prices are known (1.07 to 2.70 in, 5.14 to 8.05 out).',
    tags: ['chat', 'reasoning', 'tools', 'long-context', 'price-unverified'], family: 'openai', upstreamVendor: 'alibaba', upstreamModel: 'qwen3.7-max',
    capabilities: compatible({ reasoning: true, vision: false, contextTokens: 1_000_000, maxOutputTokens: 64_000 }),
    usdPerMillion: { input: '1.714', cachedInput: '1.714', cacheWrite: '0', output: '5.142' }, isPopular: false, isActive: false,
    confidence: 'unverified', source: 'apiyi (reseller, 2026-07-31); Venice; teamorouter',
  },
  {
    id: 'moonshot/kimi-k3', name: 'Kimi K3', provider: 'Moonshot AI',
    description: 'Moonshot AI Kimi K3 flagship with reasoning effort, image and video input, and tools.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'openai', upstreamVendor: 'moonshot', upstreamModel: 'kimi-k3',
    capabilities: compatible({ reasoning: true, contextTokens: 1_048_576, maxOutputTokens: 131_072 }),
    usdPerMillion: { input: '3.00', cachedInput: '0.30', cacheWrite: '0', output: '15.00' }, isPopular: true,
    source: 'Portkey moonshot.json; apiyi; teamorouter',
  },
  {
    id: 'moonshot/kimi-k2.6', name: 'Kimi K2.6', provider: 'Moonshot AI',
    description: 'Moonshot AI Kimi K2.6 with reasoning, vision and tools.',
    tags: ['chat', 'reasoning', 'vision', 'tools'], family: 'openai', upstreamVendor: 'moonshot', upstreamModel: 'kimi-k2.6',
    capabilities: compatible({ reasoning: true, contextTokens: 262_144, maxOutputTokens: 32_768 }),
    usdPerMillion: { input: '0.95', cachedInput: '0.16', cacheWrite: '0', output: '4.00' }, isPopular: false,
    source: 'LiteLLM + Portkey agree',
  },
  {
    id: 'zhipu/glm-5.2', name: 'GLM-5.2', provider: 'Zhipu AI',
    description: 'Zhipu AI (Z.ai) GLM-5.2 reasoning model with tools (text only).',
    tags: ['chat', 'reasoning', 'tools'], family: 'openai', upstreamVendor: 'zhipu', upstreamModel: 'glm-5.2',
    capabilities: compatible({ reasoning: true, vision: false, contextTokens: 200_000, maxOutputTokens: 128_000 }),
    usdPerMillion: { input: '1.40', cachedInput: '0.26', cacheWrite: '0', output: '4.40' }, isPopular: false,
    source: 'Portkey z-ai.json; Venice',
  },
  {
    id: 'zhipu/glm-5.1', name: 'GLM-5.1', provider: 'Zhipu AI',
    description: 'Zhipu AI (Z.ai) GLM-5.1 reasoning model with tools (text only).',
    tags: ['chat', 'reasoning', 'tools'], family: 'openai', upstreamVendor: 'zhipu', upstreamModel: 'glm-5.1',
    capabilities: compatible({ reasoning: true, vision: false, contextTokens: 200_000, maxOutputTokens: 128_000 }),
    usdPerMillion: { input: '1.40', cachedInput: '0.26', cacheWrite: '0', output: '4.40' }, isPopular: false,
    source: 'LiteLLM + Portkey agree (docs.z.ai pricing)',
  },
  {
    id: 'minimax/minimax-m3', name: 'MiniMax-M3', provider: 'MiniMax',
    description: 'MiniMax-M3 reasoning model with vision and tools, 1M context; prompts above 512K tokens are billed at the higher tier.',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'long-context'], family: 'openai', upstreamVendor: 'minimax', upstreamModel: 'MiniMax-M3',
    capabilities: compatible({ reasoning: true, contextTokens: 1_000_000, maxOutputTokens: 128_000 }),
    usdPerMillion: { input: '0.30', cachedInput: '0.06', cacheWrite: '0', output: '1.20' }, isPopular: false,
    longContext: { aboveTokens: 512_000, usdPerMillion: { input: '0.60', cachedInput: '0.12', cacheWrite: '0', output: '2.40' } },
    confidence: 'B', source: 'LiteLLM minimax/MiniMax-M3',
  },
  {
    id: 'mistral/mistral-medium-3.5', name: 'Mistral Medium 3.5', provider: 'Mistral',
    description: 'Mistral Medium 3.5 reasoning model with vision and tools.',
    tags: ['chat', 'reasoning', 'vision', 'tools'], family: 'openai', upstreamVendor: 'mistral', upstreamModel: 'mistral-medium-3.5',
    capabilities: compatible({ reasoning: true, contextTokens: 262_144, maxOutputTokens: 32_768 }),
    usdPerMillion: { input: '1.50', cachedInput: '1.50', cacheWrite: '0', output: '7.50' }, isPopular: false,
    confidence: 'B', source: 'LiteLLM (docs.mistral.ai model card)',
  },
  {
    id: 'mistral/mistral-large-3', name: 'Mistral Large 3', provider: 'Mistral',
    description: 'Mistral Large 3 (2512) with vision and tools.',
    tags: ['chat', 'vision', 'tools'], family: 'openai', upstreamVendor: 'mistral', upstreamModel: 'mistral-large-2512',
    capabilities: compatible({ contextTokens: 262_144, maxOutputTokens: 32_768 }),
    usdPerMillion: { input: '0.50', cachedInput: '0.50', cacheWrite: '0', output: '1.50' }, isPopular: false,
    source: 'LiteLLM + Portkey agree',
  },
  {
    id: 'bytedance/seed-2.0-pro', name: 'Seed 2.0 Pro', provider: 'ByteDance',
    description: 'ByteDance Seed 2.0 Pro on BytePlus ModelArk with reasoning, vision and tools; prompts above 128K tokens are billed at the higher tier.',
    tags: ['chat', 'reasoning', 'vision', 'tools'], family: 'openai', upstreamVendor: 'bytedance', upstreamModel: 'seed-2-0-pro-260328',
    capabilities: compatible({ reasoning: true, contextTokens: 256_000, maxOutputTokens: 32_768 }),
    usdPerMillion: { input: '0.50', cachedInput: '0.10', cacheWrite: '0', output: '3.00' }, isPopular: false,
    longContext: { aboveTokens: 128_000, usdPerMillion: { input: '1.00', cachedInput: '0.20', cacheWrite: '0', output: '6.00' } },
    confidence: 'B', source: 'Portkey byteplus.json',
  },
]);
