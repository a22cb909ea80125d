import type { EmbeddingModel } from '../../catalog/model.js';
import type { EmbeddingInputs } from '../../http/schemas/embeddings.js';
import type { UpstreamRequest, UpstreamTarget } from '../family.js';

/** One embeddings call as a family translates it. */
export interface EmbeddingJob {
  /** The model as its target serves it (its `upstreamModel` may be the target's own id). */
  readonly model: EmbeddingModel;
  readonly inputs: EmbeddingInputs;
  /** The vector length asked for; undefined: the model's own. */
  readonly dimensions: number | undefined;
  readonly user: string | undefined;
}

/** The vendor's answer: one vector per input, in input order, and the input tokens when it reports them. */
export interface EmbeddingAnswer {
  readonly vectors: readonly (readonly number[])[];
  readonly promptTokens: number | undefined;
}

/**
 * An upstream embeddings API: how a job becomes its request, and how its answer becomes vectors.
 * Pure translators; the route sends, retries, bills and renders.
 */
export interface EmbeddingFamily {
  request(job: EmbeddingJob, target: UpstreamTarget): UpstreamRequest;
  /** The vectors of a 200 answer's body; throws an Error when the body is not an answer to `job`. */
  read(body: string, job: EmbeddingJob): EmbeddingAnswer;
}

/** The vector length a job's answer must have. */
export const expectedDimensions = (job: EmbeddingJob): number => job.dimensions ?? job.model.capabilities.dimensions;

/** Checks that `vectors` answer `job`: one per input, each of the expected length, numbers only. */
export function checkedVectors(vectors: readonly (readonly number[])[], job: EmbeddingJob): readonly (readonly number[])[] {
  const count = job.inputs.kind === 'text' ? job.inputs.texts.length : job.inputs.tokens.length;
  if (vectors.length !== count) throw new Error(`${vectors.length} vectors for ${count} inputs`);
  const length = expectedDimensions(job);
  for (const vector of vectors) {
    if (vector.length !== length) throw new Error(`a vector of ${vector.length} dimensions, not ${length}`);
    for (const value of vector) if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error('a vector value that is not a finite number');
  }
  return vectors;
}
