import type { EmbeddingCapabilities } from '../model.js';
import type { Confidence, Lifecycle } from './types.js';

/**
 * Embedding models (POST /v1/embeddings), priced per input token (`input_token`, USD per 1M tokens;
 * embeddings generate no output tokens). Where each fact comes from is in `source`, with the date it
 * was read; `confidence` as the other seeds use it (A official page, B one table, C resellers).
 */
export interface EmbeddingSeed {
  readonly id: string;
  readonly name: string;
  readonly provider: string;
  readonly description: string;
  readonly tags: readonly string[];
  /** The upstream embeddings API family (src/providers/embeddings/index.ts). */
  readonly family: string;
  readonly upstreamVendor: string;
  readonly upstreamModel: string;
  readonly capabilities: EmbeddingCapabilities;
  readonly usdPerMillionInput: string;
  readonly confidence: Confidence;
  readonly isPopular: boolean;
  readonly isActive?: boolean;
  readonly status?: Lifecycle;
  readonly source: string;
}

/**
 * OpenAI's third-generation models: any `dimensions` from 1 to the native length, 8192 tokens per
 * input, token arrays of cl100k_base ids (0..100257: the OpenAPI description, as async-openai's
 * EmbeddingInput quotes it).
 */
const openai = (dimensions: number): EmbeddingCapabilities => ({
  dimensions, dimensionsRange: [1, dimensions], maxInputs: 2048, maxInputTokens: 8192, tokenInput: true, maxTokenId: 100_257,
});

export const EMBEDDING_MODELS: readonly EmbeddingSeed[] = Object.freeze(([
  {
    id: 'openai/text-embedding-3-small', name: 'text-embedding-3-small', provider: 'OpenAI',
    description: 'OpenAI text-embedding-3-small: 1536-dimension text embeddings, shortened on request with `dimensions`.',
    tags: ['embedding', 'cheap'], family: 'openai-embeddings', upstreamVendor: 'openai', upstreamModel: 'text-embedding-3-small',
    capabilities: openai(1536), usdPerMillionInput: '0.02', confidence: 'B', isPopular: true,
    source: 'OpenAI model page via aicost.tools and embeddingcost.com/openai (read 2026-11-27: 0.02 per 1M); dimensions and limits: OpenAI API reference (CreateEmbeddingRequest)',
  },
  {
    id: 'openai/text-embedding-3-large', name: 'text-embedding-3-large', provider: 'OpenAI',
    description: 'OpenAI text-embedding-3-large: 3072-dimension text embeddings, shortened on request with `dimensions`.',
    tags: ['embedding'], family: 'openai-embeddings', upstreamVendor: 'openai', upstreamModel: 'text-embedding-3-large',
    capabilities: openai(3072), usdPerMillionInput: '0.13', confidence: 'B', isPopular: false,
    source: 'OpenAI model page via burncloud.com and embeddingcost.com/openai (read 2026-11-27: 0.13 per 1M)',
  },
  {
    id: 'google/gemini-embedding-001', name: 'Gemini Embedding 001', provider: 'Google',
    description: 'Google gemini-embedding-001 through the Gemini API: 3072-dimension multilingual embeddings, 128 to 3072 on request.',
    tags: ['embedding', 'multilingual'], family: 'gemini-embeddings', upstreamVendor: 'gemini', upstreamModel: 'gemini-embedding-001',
    // 100 requests per batchEmbedContents call: the API's 400 "at most 100 requests can be in one batch"
    // (langchain-ai/langchainjs#4491, weaviate/weaviate#11277, vercel/ai#16575).
    capabilities: { dimensions: 3072, dimensionsRange: [128, 3072], maxInputs: 100, maxInputTokens: 2048, tokenInput: false },
    usdPerMillionInput: '0.15', confidence: 'C', isPopular: true,
    source: 'tokenmix.ai and embeddingcost.com/google (read 2026-11-27: 0.15 per 1M, 3072 default, 2048 input tokens); rig-core gemini embedding docs (batchEmbedContents); the 128 lower bound of outputDimensionality unverified (Google recommends 768, 1536, 3072)',
  },
  {
    id: 'mistral/mistral-embed', name: 'Mistral Embed', provider: 'Mistral',
    description: 'Mistral mistral-embed: 1024-dimension text embeddings for retrieval.',
    tags: ['embedding'], family: 'openai-compatible-embeddings', upstreamVendor: 'mistral', upstreamModel: 'mistral-embed',
    capabilities: { dimensions: 1024, maxInputs: 2048, maxInputTokens: 8192, tokenInput: false },
    usdPerMillionInput: '0.10', confidence: 'C', isPopular: false,
    source: 'opencode.ai/data/mistral/mistral-embed (read 2026-11-27: 0.10 per 1M, 8K context); docs.mistral.ai text embeddings (1024 dimensions)',
  },
  {
    id: 'alibaba/text-embedding-v4', name: 'Qwen Text Embedding v4', provider: 'Alibaba',
    description: 'Alibaba text-embedding-v4 (Qwen3-Embedding) through DashScope\'s OpenAI-compatible mode: 1024 dimensions by default, 64 to 2048 on request.',
    tags: ['embedding', 'multilingual', 'cheap'], family: 'openai-compatible-embeddings', upstreamVendor: 'alibaba', upstreamModel: 'text-embedding-v4',
    capabilities: { dimensions: 1024, dimensionsChoices: [64, 128, 256, 512, 768, 1024, 1536, 2048], maxInputs: 10, maxInputTokens: 8192, tokenInput: false },
    usdPerMillionInput: '0.07', confidence: 'A', isPopular: false,
    source: 'alibabacloud.com/help/en/model-studio/text-embedding-synchronous-api (Singapore, updated 2026-03-24: 0.07 per 1M, 10 rows, 8192 tokens per row, dimensions)',
  },
] satisfies EmbeddingSeed[]).map((seed) => Object.freeze(seed)));
