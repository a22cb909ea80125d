import * as v from 'valibot';
import { badRequest } from '../errors.js';
import { textPassesThrough } from './text.js';

/** Inputs one call may carry at most (OpenAI's limit: "any array must be 2048 dimensions or less"). */
export const MAX_EMBEDDING_INPUTS = 2048;

/**
 * `POST /v1/embeddings` in OpenAI's wire format. `input`'s four shapes are checked by `embeddingInputsOf`
 * (a valibot union would name none of its items); what the model takes (`dimensions`, token input,
 * how many inputs) is checked against its capabilities. Unknown fields are refused, as OpenAI does.
 * The input goes to the vendor and is never stored (`textPassesThrough`).
 */
export const EmbeddingRequestSchema = textPassesThrough(v.strictObject({
  model: v.pipe(v.string('is required and must be a string'), v.minLength(1, 'must not be empty')),
  input: v.unknown(),
  encoding_format: v.optional(v.nullable(v.picklist(['float', 'base64'], "must be 'float' or 'base64'"))),
  dimensions: v.optional(v.nullable(v.pipe(v.number('must be an integer'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1')))),
  user: v.optional(v.nullable(v.pipe(v.string('must be a string'), v.maxLength(256, 'must be at most 256 characters')))),
}));

export type EmbeddingRequest = v.InferOutput<typeof EmbeddingRequestSchema>;

/** What is embedded: texts, or (models that take them) arrays of token ids; one vector per entry, in order. */
export type EmbeddingInputs =
  | { readonly kind: 'text'; readonly texts: readonly string[] }
  | { readonly kind: 'tokens'; readonly tokens: readonly (readonly number[])[] };

const isTokenId = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 0;

/** Checks one token array (`param` names it in the 400s). */
function tokenArray(items: readonly unknown[], param: string): number[] {
  if (items.length === 0) throw badRequest(`Invalid value for '${param}': a token array must not be empty.`, param);
  for (let i = 0; i < items.length; i++) {
    if (!isTokenId(items[i])) throw badRequest(`Invalid value for '${param}[${i}]': a token id must be a non-negative integer.`, `${param}[${i}]`);
  }
  return items as number[];
}

/**
 * `input` as one of OpenAI's four shapes: a string, an array of strings, an array of token ids, or an
 * array of token arrays. Empty input, an empty string, more than MAX_EMBEDDING_INPUTS entries or
 * anything else is a 400 naming the field (`input`, `input[3]`, `input[1][7]`).
 */
export function embeddingInputsOf(input: unknown): EmbeddingInputs {
  if (input === undefined || input === null) throw badRequest(`Missing required parameter 'input'.`, 'input');
  if (typeof input === 'string') {
    if (input === '') throw badRequest(`Invalid value for 'input': must not be an empty string.`, 'input');
    return { kind: 'text', texts: [input] };
  }
  if (!Array.isArray(input)) throw badRequest(`Invalid value for 'input': must be a string, an array of strings, an array of token ids or an array of token arrays.`, 'input');
  if (input.length === 0) throw badRequest(`Invalid value for 'input': must not be empty.`, 'input');
  if (input.length > MAX_EMBEDDING_INPUTS) throw badRequest(`Invalid value for 'input': at most ${MAX_EMBEDDING_INPUTS} inputs per request, got ${input.length}.`, 'input');
  const first: unknown = input[0];
  if (typeof first === 'string') {
    for (let i = 0; i < input.length; i++) {
      const item: unknown = input[i];
      if (typeof item !== 'string') throw badRequest(`Invalid value for 'input[${i}]': every entry must be a string, as the first one is.`, `input[${i}]`);
      if (item === '') throw badRequest(`Invalid value for 'input[${i}]': must not be an empty string.`, `input[${i}]`);
    }
    return { kind: 'text', texts: input as string[] };
  }
  if (typeof first === 'number') return { kind: 'tokens', tokens: [tokenArray(input, 'input')] };
  if (Array.isArray(first)) {
    const tokens: number[][] = [];
    for (let i = 0; i < input.length; i++) {
      const item: unknown = input[i];
      if (!Array.isArray(item)) throw badRequest(`Invalid value for 'input[${i}]': every entry must be a token array, as the first one is.`, `input[${i}]`);
      tokens.push(tokenArray(item, `input[${i}]`));
    }
    return { kind: 'tokens', tokens };
  }
  throw badRequest(`Invalid value for 'input[0]': must be a string, a token id or a token array.`, 'input[0]');
}

/** How many vectors `inputs` asks for. */
export const inputCount = (inputs: EmbeddingInputs): number => (inputs.kind === 'text' ? inputs.texts.length : inputs.tokens.length);
