// The Gemini API's `POST {base}/models/{model}:batchEmbedContents` (key in x-goog-api-key): one
// EmbedContentRequest per input, `outputDimensionality` for `dimensions`; the answer is
// `{embeddings: [{values}]}` in request order, with no token usage (the gateway counts).
import type { UpstreamTarget } from '../family.js';
import { checkedVectors, type EmbeddingAnswer, type EmbeddingFamily, type EmbeddingJob } from './family.js';

function request(job: EmbeddingJob, target: UpstreamTarget) {
  if (job.inputs.kind !== 'text') throw new Error('the Gemini API embeds text only'); // the route refuses token input first
  const model = job.model.upstreamModel;
  const requests = job.inputs.texts.map((text) => ({
    model: `models/${model}`,
    content: { parts: [{ text }] },
    ...(job.dimensions !== undefined ? { outputDimensionality: job.dimensions } : {}),
  }));
  return {
    url: `${target.baseUrl}/models/${encodeURIComponent(model)}:batchEmbedContents`,
    headers: { 'x-goog-api-key': target.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ requests }),
    guarded: target.guarded === true,
  };
}

function read(body: string, job: EmbeddingJob): EmbeddingAnswer {
  const parsed = JSON.parse(body) as { embeddings?: { values?: unknown }[] };
  if (!Array.isArray(parsed?.embeddings)) throw new Error('no embeddings array');
  const vectors = parsed.embeddings.map((embedding) => {
    if (!Array.isArray(embedding?.values)) throw new Error('an embedding without values');
    return embedding.values as number[];
  });
  return { vectors: checkedVectors(vectors, job), promptTokens: undefined };
}

export const geminiEmbeddings: EmbeddingFamily = Object.freeze({ request, read });
