import type { Modality } from '../model.js';

/** Confidence of a price (shared/reference/model-catalog-facts.md): A official, B one table, C resellers or derived, unverified. */
export type Confidence = 'A' | 'B' | 'C' | 'unverified';

/** The upstream's lifecycle of a model, independent of whether the gateway lists it (`isActive`). */
export type Lifecycle = 'active' | 'preview' | 'legacy' | 'deprecated' | 'retired';

/**
 * One price line of a media model. `usd` is a decimal string (at most 9 decimals) per `per` units
 * (default 1), converted exactly to nano-USD per million units. `tier` is `''` (applies always) or
 * conditions `key=value` joined by `,` in key order, e.g. `quality=high,size=1024x1024`.
 */
export interface PriceSeed {
  readonly component: string;
  readonly tier?: string;
  readonly usd: string;
  readonly per?: 1 | 1_000 | 1_000_000;
  /** The vendor's list price when the gateway charges `usd` instead (a flat-price profile). */
  readonly listUsd?: string;
  readonly confidence: Confidence;
}

export interface MediaSeed {
  readonly id: string;
  readonly name: string;
  readonly provider: string;
  readonly modality: Exclude<Modality, 'chat'>;
  readonly description: string;
  readonly tags: readonly string[];
  /** The upstream API family (the media adapter that will speak it). */
  readonly family: string;
  /** The vendor slug whose credentials serve it. */
  readonly upstreamVendor: string;
  readonly upstreamModel: string;
  readonly capabilities: Readonly<Record<string, unknown>>;
  readonly prices: readonly PriceSeed[];
  readonly isPopular: boolean;
  /** Default true; false for retired models and for models without a usable price. */
  readonly isActive?: boolean;
  readonly status?: Lifecycle;
  /** Retirement (or announced shutdown) date, YYYY-MM-DD. */
  readonly retiredAt?: string;
  readonly source: string;
}

/** A deprecated `<task>_generate.<name>` identifier that resolves to a current model. */
export interface AliasSeed {
  readonly id: string;
  readonly aliasOf: string;
  readonly note: string;
}
