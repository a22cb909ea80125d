import type { CatalogModel, ChatCapabilities, TokenPrices } from '../model.js';

/**
 * Chat models, list prices in USD per 1M tokens (source: shared/reference/model-catalog-facts.md,
 * confidence A for every price here). `cacheWrite` "0" where the vendor has no separate write price.
 */
export interface ChatSeed extends Omit<CatalogModel, 'modality' | 'prices' | 'isActive'> {
  /** Decimal strings, so the conversion to nano-USD is exact. */
  readonly usdPerMillion: Readonly<Record<keyof TokenPrices, string>>;
}

const standard = (overrides: Partial<ChatCapabilities>): ChatCapabilities => Object.freeze({
  reasoning: false, vision: true, tools: true, jsonMode: true, sampling: true,
  contextTokens: 128_000, maxOutputTokens: 16_384, maxTokensField: 'max_tokens', maxImageTokens: 1_500,
  ...overrides,
});

export const CHAT_MODELS: readonly ChatSeed[] = Object.freeze([
  {
    id: 'openai/gpt-4o-mini', name: 'GPT-4o mini', provider: 'OpenAI',
    description: 'Small, fast and cheap multimodal GPT-4o model. Deprecated upstream: shutdown 2027-01-14.',
    tags: ['chat', 'vision', 'tools', 'deprecated-upstream'], family: 'openai', upstreamVendor: 'openai', upstreamModel: 'gpt-4o-mini',
    // gpt-4o-mini bills an image at about 33x the gpt-4o token count (up to ~48k tokens).
    capabilities: standard({ contextTokens: 128_000, maxOutputTokens: 16_384, maxImageTokens: 48_200 }),
    usdPerMillion: { input: '0.15', cachedInput: '0.075', cacheWrite: '0', output: '0.60' }, isPopular: true,
  },
  {
    id: 'openai/gpt-4.1', name: 'GPT-4.1', provider: 'OpenAI',
    description: 'GPT-4.1 with a one-million-token context window. Deprecated upstream: shutdown 2027-01-14.',
    tags: ['chat', 'vision', 'tools', 'long-context', 'deprecated-upstream'], family: 'openai', upstreamVendor: 'openai', upstreamModel: 'gpt-4.1',
    capabilities: standard({ contextTokens: 1_047_576, maxOutputTokens: 32_768 }),
    usdPerMillion: { input: '2.00', cachedInput: '0.50', cacheWrite: '0', output: '8.00' }, isPopular: true,
  },
  {
    id: 'openai/o4-mini', name: 'o4-mini', provider: 'OpenAI',
    description: 'Small reasoning model. Retired upstream on 2026-10-23 (replacement gpt-5.6-terra).',
    tags: ['chat', 'reasoning', 'vision', 'tools', 'retired-upstream'], family: 'openai', upstreamVendor: 'openai', upstreamModel: 'o4-mini',
    capabilities: standard({ reasoning: true, sampling: false, contextTokens: 200_000, maxOutputTokens: 100_000, maxTokensField: 'max_completion_tokens' }),
    usdPerMillion: { input: '1.10', cachedInput: '0.275', cacheWrite: '0', output: '4.40' }, isPopular: false,
  },
  {
    id: 'deepseek/deepseek-chat', name: 'DeepSeek Chat', provider: 'DeepSeek',
    description: 'DeepSeek V4 Flash without thinking (compatibility alias; retired upstream after 2026-07-24).',
    tags: ['chat', 'tools', 'retired-upstream'], family: 'openai', upstreamVendor: 'deepseek', upstreamModel: 'deepseek-chat',
    capabilities: standard({ vision: false, contextTokens: 1_000_000, maxOutputTokens: 384_000 }),
    usdPerMillion: { input: '0.14', cachedInput: '0.0028', cacheWrite: '0', output: '0.28' }, isPopular: true,
  },
  {
    id: 'deepseek/deepseek-reasoner', name: 'DeepSeek Reasoner', provider: 'DeepSeek',
    description: 'DeepSeek V4 Flash with thinking; returns its reasoning trace (compatibility alias; retired upstream after 2026-07-24).',
    tags: ['chat', 'reasoning', 'tools', 'retired-upstream'], family: 'openai', upstreamVendor: 'deepseek', upstreamModel: 'deepseek-reasoner',
    capabilities: standard({ reasoning: true, vision: false, sampling: false, contextTokens: 1_000_000, maxOutputTokens: 384_000 }),
    usdPerMillion: { input: '0.14', cachedInput: '0.0028', cacheWrite: '0', output: '0.28' }, isPopular: false,
  },
  {
    id: 'anthropic/claude-sonnet-4-5', name: 'Claude Sonnet 4.5', provider: 'Anthropic',
    description: 'Claude Sonnet 4.5 with extended thinking (legacy: superseded by Sonnet 5.5).',
    tags: ['chat', 'reasoning', 'vision', 'tools'], family: 'anthropic', upstreamVendor: 'anthropic', upstreamModel: 'claude-sonnet-4-5',
    capabilities: standard({ reasoning: true, contextTokens: 200_000, maxOutputTokens: 64_000, maxImageTokens: 1_600 }),
    usdPerMillion: { input: '3.00', cachedInput: '0.30', cacheWrite: '3.75', output: '15.00' }, isPopular: true,
  },
  {
    id: 'anthropic/claude-haiku-4-5', name: 'Claude Haiku 4.5', provider: 'Anthropic',
    description: 'Claude Haiku 4.5, fast and small, with extended thinking (legacy: superseded by Haiku 5.5).',
    tags: ['chat', 'reasoning', 'vision', 'tools'], family: 'anthropic', upstreamVendor: 'anthropic', upstreamModel: 'claude-haiku-4-5',
    capabilities: standard({ reasoning: true, contextTokens: 200_000, maxOutputTokens: 64_000, maxImageTokens: 1_600 }),
    usdPerMillion: { input: '1.00', cachedInput: '0.10', cacheWrite: '1.25', output: '5.00' }, isPopular: false,
  },
  {
    id: 'google/gemini-2.5-flash', name: 'Gemini 2.5 Flash', provider: 'Google',
    description: 'Gemini 2.5 Flash with thinking (text, image and video input price; retired upstream on 2026-12-01).',
    tags: ['chat', 'reasoning', 'vision', 'tools'], family: 'gemini', upstreamVendor: 'gemini', upstreamModel: 'gemini-2.5-flash',
    capabilities: standard({ reasoning: true, contextTokens: 1_048_576, maxOutputTokens: 65_535, maxImageTokens: 1_300 }),
    usdPerMillion: { input: '0.30', cachedInput: '0.03', cacheWrite: '0', output: '2.50' }, isPopular: true,
  },
  {
    id: 'google/gemini-2.5-pro', name: 'Gemini 2.5 Pro', provider: 'Google',
    description: 'Gemini 2.5 Pro with thinking, prompts up to 200K tokens priced here (retired upstream on 2026-12-01).',
    tags: ['chat', 'reasoning', 'vision', 'tools'], family: 'gemini', upstreamVendor: 'gemini', upstreamModel: 'gemini-2.5-pro',
    // Upstream bills prompts above 200K tokens at 2.50/15.00; that tier must be modelled before this family is served.
    capabilities: standard({ reasoning: true, contextTokens: 1_048_576, maxOutputTokens: 65_535, maxImageTokens: 1_300 }),
    usdPerMillion: { input: '1.25', cachedInput: '0.125', cacheWrite: '0', output: '10.00' }, isPopular: false,
  },
]);
