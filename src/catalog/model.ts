/** Upstream wire families; adapters live in src/providers/<family>/. */
export type Family = 'openai' | 'anthropic' | 'gemini';
export type Modality = 'chat' | 'image' | 'video' | 'audio';
/** The spec's four modalities plus `embedding`, this gateway's extension (POST /v1/embeddings). */
export type CatalogModality = Modality | 'embedding';

export interface ChatCapabilities {
  readonly reasoning: boolean;
  readonly vision: boolean;
  readonly tools: boolean;
  readonly jsonMode: boolean;
  /** Sampling knobs (temperature, top_p, penalties) the upstream accepts; reasoning models often refuse them. */
  readonly sampling: boolean;
  readonly contextTokens: number;
  readonly maxOutputTokens: number;
  /** The upstream's name for the output cap. */
  readonly maxTokensField: 'max_tokens' | 'max_completion_tokens';
  /** Upper bound of the prompt tokens one image part can cost (for the worst-case reservation). */
  readonly maxImageTokens: number;
  /**
   * How the upstream's prompt cache is kept per end user: `key` a `prompt_cache_key` field, `breakpoint`
   * the family's own cache-control marks (Anthropic), `prefix` a per-user salt ahead of the cached
   * prefix (automatic prefix caches with no key), `none` no prompt cache.
   */
  readonly promptCache: 'key' | 'breakpoint' | 'prefix' | 'none';
}

/** One price line: `nanoPerMillion` nano-USD per one million units of `component` under `tier`. */
export interface SheetLine {
  readonly component: string;
  /** `''`, `prompt>N`, or `key=value` pairs in key order. */
  readonly tier: string;
  /** What the gateway charges. */
  readonly nanoPerMillion: bigint;
  /** The vendor's list price when the gateway charges less (a flat-price profile), else null. */
  readonly listNanoPerMillion: bigint | null;
}

/** A model's price lines, built and read by billing/price-sheet.ts (declared here so catalog and billing do not import each other). */
export interface PriceSheet {
  readonly modelId: string;
  readonly capabilities: Readonly<Record<string, unknown>>;
  readonly lines: readonly SheetLine[];
}

/** Prices in nano-USD per one million units. */
export interface TokenPrices {
  readonly input: bigint;
  readonly cachedInput: bigint;
  readonly cacheWrite: bigint;
  readonly output: bigint;
  /** A dearer tier for every token of a call whose prompt is longer than `aboveTokens` (e.g. Gemini 2.5 Pro above 200K). */
  readonly longContext?: LongContextPrices;
}

export interface LongContextPrices extends Omit<TokenPrices, 'longContext'> {
  readonly aboveTokens: number;
}

export interface CatalogModel {
  readonly id: string;
  readonly name: string;
  readonly provider: string;
  readonly modality: Modality;
  readonly description: string;
  readonly tags: readonly string[];
  readonly family: Family;
  readonly upstreamVendor: string;
  readonly upstreamModel: string;
  readonly capabilities: ChatCapabilities;
  readonly prices: TokenPrices;
  readonly isPopular: boolean;
  readonly isActive: boolean;
}

/**
 * An image, video or audio model as the call path reads it: its wire family, upstream, the
 * capabilities that decide which request fields it takes, and its price sheet.
 */
export interface MediaModel {
  readonly id: string;
  readonly name: string;
  readonly provider: string;
  readonly modality: Exclude<Modality, 'chat'>;
  /** The upstream API family (`openai-images`, `bfl`, …): the adapter that speaks it. */
  readonly family: string;
  readonly upstreamVendor: string;
  readonly upstreamModel: string;
  readonly capabilities: Readonly<Record<string, unknown>>;
  readonly sheet: PriceSheet;
}

/**
 * What an embedding model takes (POST /v1/embeddings): its vector length, the `dimensions` it can be
 * asked for (a range, or the discrete sizes a vendor allows; neither: `dimensions` is refused), the
 * inputs one call may carry, and whether it takes token arrays (token ids of `tokenizer`, below
 * `maxTokenId`, at most `maxInputTokens` per input).
 */
export interface EmbeddingCapabilities {
  readonly dimensions: number;
  readonly dimensionsRange?: readonly [number, number];
  readonly dimensionsChoices?: readonly number[];
  readonly maxInputs: number;
  readonly maxInputTokens: number;
  readonly tokenInput: boolean;
  readonly maxTokenId?: number;
}

/** An embedding model as the call path reads it: priced per input token (its `prices.input`). */
export interface EmbeddingModel {
  readonly id: string;
  readonly name: string;
  readonly provider: string;
  readonly modality: 'embedding';
  /** The upstream embeddings API family (`openai-embeddings`, `gemini-embeddings`): the translator that speaks it. */
  readonly family: string;
  readonly upstreamVendor: string;
  readonly upstreamModel: string;
  readonly capabilities: EmbeddingCapabilities;
  readonly prices: TokenPrices;
}

/** "0.075" USD per 1M -> 75_000_000n nano-USD per 1M, exactly (no float on the way). */
export function usdToNano(usd: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,9}))?$/.exec(usd);
  if (!match) throw new Error(`not a USD amount with at most 9 decimals: ${usd}`);
  return BigInt(match[1]!) * 1_000_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'));
}
