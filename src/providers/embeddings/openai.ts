// OpenAI's embeddings API (`POST {base}/embeddings`) and the OpenAI-compatible ones of other vendors
// (Mistral's `/v1/embeddings`, DashScope's compatible mode `/compatible-mode/v1/embeddings`).
// OpenAI is asked for base64 (little-endian float32: a third of the JSON's size, the same values);
// the compatible vendors for floats, the one format they all document.
import type { UpstreamTarget } from '../family.js';
import { readOpenAiUsage } from '../usage.js';
import { checkedVectors, type EmbeddingAnswer, type EmbeddingFamily, type EmbeddingJob } from './family.js';

interface OpenAiEmbeddingBody {
  data?: { index?: unknown; embedding?: unknown }[];
  usage?: unknown;
}

/** A base64 string of little-endian float32 values as numbers. */
export function floatsOfBase64(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length % 4 !== 0) throw new Error('a base64 embedding whose length is not a whole number of float32 values');
  const values = new Array<number>(bytes.length / 4);
  for (let i = 0; i < values.length; i++) values[i] = bytes.readFloatLE(i * 4);
  return values;
}

function vectorOf(embedding: unknown): number[] {
  if (typeof embedding === 'string') return floatsOfBase64(embedding);
  if (Array.isArray(embedding)) return embedding as number[];
  throw new Error('an embedding that is neither an array nor a base64 string');
}

function readAnswer(body: string, job: EmbeddingJob): EmbeddingAnswer {
  const parsed = JSON.parse(body) as OpenAiEmbeddingBody;
  if (!Array.isArray(parsed?.data)) throw new Error('no data array');
  // Vendors answer in input order with an index each; the index decides.
  const vectors: number[][] = [];
  parsed.data.forEach((item, position) => {
    const index = typeof item?.index === 'number' ? item.index : position;
    if (!Number.isInteger(index) || index < 0 || index >= parsed.data!.length || vectors[index]) throw new Error(`a bad or repeated index ${String(item?.index)}`);
    vectors[index] = vectorOf(item.embedding);
  });
  return { vectors: checkedVectors(vectors, job), promptTokens: readOpenAiUsage(parsed.usage)?.promptTokens };
}

function requestBody(job: EmbeddingJob, encoding: 'base64' | 'float', withUser: boolean): string {
  const input = job.inputs.kind === 'text' ? job.inputs.texts : job.inputs.tokens;
  return JSON.stringify({
    model: job.model.upstreamModel,
    input,
    encoding_format: encoding,
    ...(job.dimensions !== undefined ? { dimensions: job.dimensions } : {}),
    ...(withUser && job.user ? { user: job.user } : {}),
  });
}

const headersOf = (target: UpstreamTarget) => ({ authorization: `Bearer ${target.apiKey}`, 'content-type': 'application/json' });

/** OpenAI itself: base64 on the wire, `user` passed on (OpenAI documents it for abuse monitoring). */
export const openAiEmbeddings: EmbeddingFamily = Object.freeze({
  request: (job: EmbeddingJob, target: UpstreamTarget) => ({
    url: `${target.baseUrl}/embeddings`, headers: headersOf(target), body: requestBody(job, 'base64', true), guarded: target.guarded === true,
  }),
  read: readAnswer,
});

/** Another vendor's OpenAI-compatible endpoint: floats, no `user` (not every vendor takes it). */
export const compatibleEmbeddings: EmbeddingFamily = Object.freeze({
  request: (job: EmbeddingJob, target: UpstreamTarget) => ({
    url: `${target.baseUrl}/embeddings`, headers: headersOf(target), body: requestBody(job, 'float', false), guarded: target.guarded === true,
  }),
  read: readAnswer,
});
