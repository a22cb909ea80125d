import { usdToNano, type CatalogModality, type Modality } from '../model.js';
import { CATALOG_MODALITIES, CATALOG_VENDORS } from '../vendors.js';
import { COMPONENT_UNITS, checkTier } from '../price-record.js';
import { VENDORS } from '../../config.js';
import { CHAT_MODELS, type ChatSeed } from './chat.js';
import { IMAGE_MODELS } from './image.js';
import { VIDEO_MODELS } from './video.js';
import { AUDIO_MODELS } from './audio.js';
import { EMBEDDING_MODELS, type EmbeddingSeed } from './embedding.js';
import { ALIASES } from './aliases.js';
import type { AliasSeed, Confidence, Lifecycle, MediaSeed } from './types.js';

/** A `models` row as the sync writes it. */
export interface ModelSeedRow {
  id: string; name: string; provider: string; modality: CatalogModality; description: string; tags: string[];
  family: string; upstream_vendor: string; upstream_model: string; capabilities: Record<string, unknown>;
  alias_of: string | null; is_popular: boolean; is_active: boolean; status: Lifecycle; retired_at: string | null; source: string;
}

/** A `model_prices` row; amounts as decimal strings of nano-USD per one million units. */
export interface PriceSeedRow {
  model_id: string; component: string; tier: string; nano_usd_per_million: string; list_nano_usd_per_million: string | null; confidence: Confidence;
}

export interface CatalogRows {
  readonly models: readonly ModelSeedRow[];
  readonly prices: readonly PriceSeedRow[];
}

/** The chat families this gateway speaks (src/providers/<family>/). */
const SERVED_CHAT_FAMILIES: readonly string[] = ['openai', 'anthropic', 'gemini'];

/**
 * The media families this gateway speaks: the image families (src/providers/image-families.ts), the
 * video task adapters (src/providers/video/index.ts) and the audio adapters (src/providers/audio/index.ts);
 * test/callable-models.test.ts keeps these lists equal to the adapters.
 */
export const SERVED_MEDIA_FAMILIES: Readonly<Record<Exclude<Modality, 'chat'>, readonly string[]>> = Object.freeze({
  image: ['openai-images', 'bfl', 'gemini-images', 'dashscope', 'runway', 'luma'],
  video: ['dashscope', 'vidu', 'modelark', 'gemini-video', 'minimax-video', 'kling', 'runway', 'luma'],
  audio: ['openai-audio', 'elevenlabs', 'minimax', 'gemini-audio', 'stability'],
});

/** The embeddings API families this gateway speaks (src/providers/embeddings/index.ts; test/embeddings.test.ts keeps them equal). */
export const SERVED_EMBEDDING_FAMILIES: readonly string[] = ['openai-embeddings', 'openai-compatible-embeddings', 'gemini-embeddings'];

/** Tag of a model listed inactive because no adapter here speaks its vendor's API yet (a retired model is not tagged: it is gone). */
export const NOT_SERVED_TAG = 'not-served-yet';
/** Tag of a model listed inactive because this gateway has no key, base URL or mock for its vendor (config.ts `served`). */
export const VENDOR_NOT_CONFIGURED_TAG = 'vendor-not-configured';

/**
 * Whether the gateway can call `seed`: its family is spoken here, through a configured vendor, and a
 * video model follows one of the spec's profiles (its request schema). An active model is a callable
 * model: one that is not is listed inactive, tagged NOT_SERVED_TAG, until an adapter serves it.
 */
function servable(seed: MediaSeed): boolean {
  if (!SERVED_MEDIA_FAMILIES[seed.modality].includes(seed.family)) return false;
  if (!(VENDORS as readonly string[]).includes(seed.upstreamVendor)) return false;
  return seed.modality !== 'video' || typeof seed.capabilities.profile === 'string';
}
const CHAT_COMPONENTS = [['input_token', 'input'], ['cached_input_token', 'cachedInput'], ['cache_write_token', 'cacheWrite'], ['output_token', 'output']] as const;
const ALIAS_ID = /^(chat|image|video|audio)_generate\.[a-z0-9_]+$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

function chatRows(seed: ChatSeed): { model: ModelSeedRow; prices: PriceSeedRow[] } {
  const isActive = seed.isActive ?? true;
  if (isActive && (!SERVED_CHAT_FAMILIES.includes(seed.family) || !(VENDORS as readonly string[]).includes(seed.upstreamVendor))) {
    throw new Error(`chat model ${seed.id}: family ${seed.family} through vendor ${seed.upstreamVendor} cannot be served; mark it inactive`);
  }
  const confidence = seed.confidence ?? 'A';
  const tiers: [string, ChatSeed['usdPerMillion']][] = [['', seed.usdPerMillion]];
  if (seed.longContext) tiers.push([`prompt>${seed.longContext.aboveTokens}`, seed.longContext.usdPerMillion]);
  return {
    model: {
      id: seed.id, name: seed.name, provider: seed.provider, modality: 'chat', description: seed.description, tags: [...seed.tags],
      family: seed.family, upstream_vendor: seed.upstreamVendor, upstream_model: seed.upstreamModel, capabilities: { ...seed.capabilities },
      alias_of: null, is_popular: seed.isPopular, is_active: isActive, status: seed.status ?? 'active', retired_at: seed.retiredAt ?? null, source: seed.source ?? '',
    },
    prices: tiers.flatMap(([tier, prices]) => CHAT_COMPONENTS.map(([component, field]) => ({
      model_id: seed.id, component, tier, nano_usd_per_million: usdToNano(prices[field]).toString(), list_nano_usd_per_million: null, confidence,
    }))),
  };
}

/** An embedding model: one `input_token` price line; listed inactive (tagged) when no translator here speaks its family. */
function embeddingRows(seed: EmbeddingSeed): { model: ModelSeedRow; prices: PriceSeedRow[] } {
  const served = SERVED_EMBEDDING_FAMILIES.includes(seed.family) && (VENDORS as readonly string[]).includes(seed.upstreamVendor);
  return {
    model: {
      id: seed.id, name: seed.name, provider: seed.provider, modality: 'embedding', description: seed.description,
      tags: served ? [...seed.tags] : [...seed.tags, NOT_SERVED_TAG],
      family: seed.family, upstream_vendor: seed.upstreamVendor, upstream_model: seed.upstreamModel, capabilities: { ...seed.capabilities },
      alias_of: null, is_popular: seed.isPopular, is_active: (seed.isActive ?? true) && served, status: seed.status ?? 'active', retired_at: null, source: seed.source,
    },
    prices: [{
      model_id: seed.id, component: 'input_token', tier: '', nano_usd_per_million: usdToNano(seed.usdPerMillionInput).toString(),
      list_nano_usd_per_million: null, confidence: seed.confidence,
    }],
  };
}

const PER_MILLION = { 1: 1_000_000n, 1000: 1_000n, 1000000: 1n } as const;

function mediaRows(seed: MediaSeed): { model: ModelSeedRow; prices: PriceSeedRow[] } {
  const served = servable(seed);
  // A model its vendor retired is listed for the record, inactive for that reason, not for want of an adapter.
  const waiting = !served && seed.status !== 'retired';
  return {
    model: {
      id: seed.id, name: seed.name, provider: seed.provider, modality: seed.modality, description: seed.description,
      tags: waiting ? [...seed.tags, NOT_SERVED_TAG] : [...seed.tags],
      family: seed.family, upstream_vendor: seed.upstreamVendor, upstream_model: seed.upstreamModel, capabilities: { ...seed.capabilities },
      alias_of: null, is_popular: seed.isPopular, is_active: (seed.isActive ?? true) && served, status: seed.status ?? 'active', retired_at: seed.retiredAt ?? null, source: seed.source,
    },
    prices: seed.prices.map((price) => {
      const scale = PER_MILLION[price.per ?? 1];
      return {
        model_id: seed.id, component: price.component, tier: price.tier ?? '',
        nano_usd_per_million: (usdToNano(price.usd) * scale).toString(),
        list_nano_usd_per_million: price.listUsd === undefined ? null : (usdToNano(price.listUsd) * scale).toString(),
        confidence: price.confidence,
      };
    }),
  };
}

function aliasRow(alias: AliasSeed, target: ModelSeedRow): ModelSeedRow {
  const task = ALIAS_ID.exec(alias.id)?.[1];
  if (!task) throw new Error(`alias ${alias.id}: must look like <task>_generate.<name>`);
  if (task !== target.modality) throw new Error(`alias ${alias.id}: task ${task} but ${target.id} is ${target.modality}`);
  if (target.alias_of !== null) throw new Error(`alias ${alias.id}: points at another alias`);
  return {
    ...target,
    id: alias.id,
    name: `${target.name} (deprecated id)`,
    description: `Deprecated identifier of ${target.id} (${target.name}), priced as it. ${target.description}`,
    tags: [...new Set(['deprecated', ...target.tags])],
    alias_of: target.id,
    is_popular: false,
    source: alias.note,
  };
}

/** An active model of a vendor this gateway cannot reach is listed, inactive, with the reason as a tag. */
function unconfigured(model: ModelSeedRow): ModelSeedRow {
  return { ...model, is_active: false, tags: [...model.tags, VENDOR_NOT_CONFIGURED_TAG] };
}

/**
 * Every row of the catalog seed, checked: vendors, ids, servability of chat models, price components and
 * tiers, aliases. Models of `unconfiguredVendors` (upstream vendor names) are listed inactive.
 */
export function catalogRows(unconfiguredVendors: ReadonlySet<string> = new Set()): CatalogRows {
  const built = [...CHAT_MODELS.map(chatRows), ...[...IMAGE_MODELS, ...VIDEO_MODELS, ...AUDIO_MODELS].map(mediaRows), ...EMBEDDING_MODELS.map(embeddingRows)]
    .map(({ model, prices }) => ({ model: model.is_active && unconfiguredVendors.has(model.upstream_vendor) ? unconfigured(model) : model, prices }));
  const models = new Map<string, ModelSeedRow>();
  for (const { model } of built) {
    const vendor = CATALOG_VENDORS.find((v) => v.name === model.provider);
    if (!vendor) throw new Error(`model ${model.id}: unknown provider ${model.provider}`);
    if (!model.id.startsWith(`${vendor.slug}/`)) throw new Error(`model ${model.id}: id must start with ${vendor.slug}/`);
    if (!(CATALOG_MODALITIES as readonly string[]).includes(model.modality)) throw new Error(`model ${model.id}: bad modality`);
    if (model.retired_at !== null && !DATE.test(model.retired_at)) throw new Error(`model ${model.id}: bad retiredAt`);
    if (models.has(model.id)) throw new Error(`model ${model.id}: listed twice`);
    models.set(model.id, model);
  }
  const prices = built.flatMap((entry) => entry.prices);
  const seen = new Set<string>();
  for (const price of prices) {
    if (!(price.component in COMPONENT_UNITS)) throw new Error(`model ${price.model_id}: unknown price component ${price.component}`);
    checkTier(price.tier);
    const key = `${price.model_id} ${price.component} ${price.tier}`;
    if (seen.has(key)) throw new Error(`price ${key}: listed twice`);
    seen.add(key);
  }
  for (const model of models.values()) {
    if (model.is_active && model.modality === 'chat' && !prices.some((p) => p.model_id === model.id)) throw new Error(`chat model ${model.id}: active without prices`);
  }
  const aliases = ALIASES.map((alias) => {
    const target = models.get(alias.aliasOf);
    if (!target) throw new Error(`alias ${alias.id}: unknown target ${alias.aliasOf}`);
    if (models.has(alias.id)) throw new Error(`alias ${alias.id}: listed twice`);
    return aliasRow(alias, target);
  });
  return { models: [...models.values(), ...aliases], prices };
}
