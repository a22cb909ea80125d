import type { EmbeddingFamily } from './family.js';
import { geminiEmbeddings } from './gemini.js';
import { compatibleEmbeddings, openAiEmbeddings } from './openai.js';

/** Every embeddings API family the gateway speaks, by the catalog's `family` (SERVED_EMBEDDING_FAMILIES lists the same). */
export const EMBEDDING_FAMILIES: Readonly<Record<string, EmbeddingFamily>> = Object.freeze({
  'openai-embeddings': openAiEmbeddings,
  'openai-compatible-embeddings': compatibleEmbeddings,
  'gemini-embeddings': geminiEmbeddings,
});
