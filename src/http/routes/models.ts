import type { RequestContext } from '../router.js';
import { parseQuery } from '../router.js';
import type { Services } from '../../services.js';
import { ApiError, badRequest, notFound } from '../errors.js';
import { pageOf } from './billing.js';
import { CATALOG_MODALITIES, PROVIDER_NAMES } from '../../catalog/vendors.js';
import { modelRecord, pricingRecord, type EntryLike } from '../../catalog/records.js';
import type { VirtualModel } from '../../routing/targets.js';
import { activeModels, getModelEntry, listModels, popularModels, pricesOf, type ModelListFilter, type ModelPriceRow } from '../../store/catalog.js';

const MAX_SEARCH_CHARS = 200;
const MAX_SEARCH_WORDS = 16;
const MODELS_PREFIX = '/api/v1/models/';
const V1_MODELS_PREFIX = '/v1/models/';

/**
 * The `search` text as a prefix-matching tsquery (`word:* & word:*`): only letters and digits reach
 * it, so no user text is ever parsed as tsquery syntax. Null when no search; '' when nothing to match.
 */
export function searchQuery(raw: string | undefined): string | null {
  if (raw === undefined || raw.trim() === '') return null;
  if (raw.length > MAX_SEARCH_CHARS) throw badRequest(`Invalid value for 'search': at most ${MAX_SEARCH_CHARS} characters.`, 'search');
  const words = raw.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.slice(0, MAX_SEARCH_WORDS).map((word) => `${word}:*`).join(' & ');
}

/** The filters of `GET /api/v1/models`, validated: an unknown value is a 400 naming it. */
export function listFilter(query: string): ModelListFilter {
  const params = parseQuery(query);
  const tasks = params.get('task') ?? [];
  for (const task of tasks) {
    // `embedding` is this gateway's extension of the spec's four.
    if (!(CATALOG_MODALITIES as readonly string[]).includes(task)) {
      throw badRequest(`Invalid value for 'task': '${task}' is not one of ${CATALOG_MODALITIES.join(', ')}.`, 'task');
    }
  }
  const providers = params.get('provider') ?? [];
  for (const provider of providers) {
    if (!PROVIDER_NAMES.includes(provider)) {
      throw badRequest(`Invalid value for 'provider': '${provider}' is not one of ${PROVIDER_NAMES.join(', ')}.`, 'provider');
    }
  }
  const inactive = params.get('include_inactive')?.[0];
  if (inactive !== undefined && inactive !== 'true' && inactive !== 'false') {
    throw badRequest(`Invalid value for 'include_inactive': must be true or false.`, 'include_inactive');
  }
  return { tasks: [...new Set(tasks)], providers: [...new Set(providers)], tsquery: searchQuery(params.get('search')?.[0]), includeInactive: inactive === 'true' };
}

/** The id after a prefix of a catch-all route, percent-decoded (ids contain `/`, which clients may send as `%2F`). */
function idAfter(path: string, prefix: string): string {
  const raw = path.slice(prefix.length);
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

const groupPrices = (rows: readonly ModelPriceRow[]) => {
  const byModel = new Map<string, ModelPriceRow[]>();
  for (const row of rows) {
    const list = byModel.get(row.model_id);
    if (list) list.push(row);
    else byModel.set(row.model_id, [row]);
  }
  return byModel;
};

/** A virtual model of the routing file as a catalog entry: a chat model of provider `gateway`, with the capabilities of its first model. */
function virtualEntry(name: string, virtual: VirtualModel, services: Services, since: Date): EntryLike {
  const catalog = services.catalog();
  const first = virtual.models.map((id) => catalog.get(id)).find((model) => model !== undefined);
  return {
    id: name, name, provider: 'gateway', modality: 'chat',
    description: virtual.description ?? `Tries ${virtual.models.join(', then ')}, in that order.`,
    tags: ['virtual'], capabilities: { ...first?.capabilities }, alias_of: null, is_popular: false, is_active: true,
    status: 'active', retired_at: null, created_at: since, updated_at: since,
  };
}

/** Whether a virtual model is in a listing's filter (it is a chat model of no vendor's; a search matches its name, description and models). */
function virtualMatches(name: string, virtual: VirtualModel, filter: ModelListFilter): boolean {
  if (filter.tasks.length > 0 && !filter.tasks.includes('chat')) return false;
  if (filter.providers.length > 0) return false;
  if (filter.tsquery === null) return true;
  const words = `${name} ${virtual.description ?? ''} ${virtual.models.join(' ')}`.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return filter.tsquery !== '' && filter.tsquery.split(' & ').every((term) => {
    const prefix = term.replace(/:\*$/, '');
    return words.some((word) => word.startsWith(prefix));
  });
}

export function modelRoutes(services: Services) {
  const { auth, config, sql, routing } = services;
  const management = (ctx: RequestContext) => auth.jwtOrApiKey(ctx, config.jwtSecret);
  // Virtual models are the routing file's, read at start: their records date from then.
  const since = new Date();
  const virtualModels = Object.entries(routing.virtualModels ?? {});
  const virtualRecord = (name: string, virtual: VirtualModel) => ({ ...modelRecord(virtualEntry(name, virtual, services, since)), virtual: true, models: virtual.models });
  const virtualOf = (id: string) => routing.virtualModels?.[id];

  const list = async (ctx: RequestContext): Promise<void> => {
    await management(ctx);
    const filter = listFilter(ctx.query);
    const { page, perPage } = pageOf(ctx.query);
    // Virtual models come first, then the catalog's rows; pages run over both.
    const virtual = virtualModels.filter(([name, entry]) => virtualMatches(name, entry, filter));
    const offset = (page - 1) * perPage;
    const shown = virtual.slice(offset, offset + perPage).map(([name, entry]) => virtualRecord(name, entry));
    const { rows, total: catalogTotal } = filter.tsquery === ''
      ? { rows: [], total: 0 }
      : await listModels(sql, filter, Math.max(0, offset - virtual.length), perPage - shown.length);
    const total = catalogTotal + virtual.length;
    ctx.reply.json(200, { data: [...shown, ...rows.map(modelRecord)], page, per_page: perPage, total, total_pages: Math.ceil(total / perPage) });
  };

  const popular = async (ctx: RequestContext): Promise<void> => {
    await management(ctx);
    const rows = await popularModels(sql);
    ctx.reply.json(200, { data: rows.map(modelRecord), total: rows.length });
  };

  const entryOr404 = async (id: string): Promise<EntryLike> => {
    const entry = id ? await getModelEntry(sql, id) : undefined;
    if (!entry) throw notFound(`The model '${id}' does not exist.`);
    return entry;
  };

  /** `/api/v1/models/{model_id}` and `/api/v1/models/{model_id}/pricing` (model ids contain `/`). */
  const one = async (ctx: RequestContext): Promise<void> => {
    await management(ctx);
    const rest = idAfter(ctx.path, MODELS_PREFIX);
    const virtual = virtualOf(rest);
    if (virtual) {
      ctx.reply.json(200, virtualRecord(rest, virtual));
      return;
    }
    if (rest.endsWith('/pricing')) {
      const id = rest.slice(0, -'/pricing'.length);
      if (virtualOf(id)) throw notFound(`The model '${id}' is a virtual model: it is priced as the model that serves each call (see its models).`);
      const entry = await entryOr404(id);
      const prices = await pricesOf(sql, [entry.alias_of ?? entry.id]);
      ctx.reply.json(200, pricingRecord(entry, prices));
      return;
    }
    ctx.reply.json(200, modelRecord(await entryOr404(rest)));
  };

  /** Pricing of every active model (current ids; an alias is priced as its model). */
  const pricing = async (ctx: RequestContext): Promise<void> => {
    await management(ctx);
    const entries = await activeModels(sql);
    const byModel = groupPrices(await pricesOf(sql, entries.map((entry) => entry.id)));
    ctx.reply.json(200, { currency: 'USD', data: entries.map((entry) => pricingRecord(entry, byModel.get(entry.id) ?? [])), total: entries.length });
  };

  const openAiModel = (entry: EntryLike) => ({
    id: entry.id, object: 'model', created: Math.floor(entry.created_at.getTime() / 1000), owned_by: entry.id.split('/')[0]!,
  });

  const openAiVirtual = (name: string, virtual: VirtualModel) => ({
    id: name, object: 'model', created: Math.floor(since.getTime() / 1000), owned_by: 'gateway', virtual: true, models: virtual.models,
  });

  /** OpenAI-compatible `GET /v1/models`: the routing file's virtual models, then active current models of every modality. */
  const v1List = async (ctx: RequestContext): Promise<void> => {
    await auth.apiKey(ctx);
    const virtual = virtualModels.map(([name, entry]) => openAiVirtual(name, entry));
    ctx.reply.json(200, { object: 'list', data: [...virtual, ...(await activeModels(sql)).map(openAiModel)] });
  };

  /** OpenAI-compatible `GET /v1/models/{id}`: an active model (or alias), else 404 in the error envelope. */
  const v1One = async (ctx: RequestContext): Promise<void> => {
    await auth.apiKey(ctx);
    const id = idAfter(ctx.path, V1_MODELS_PREFIX);
    const virtual = virtualOf(id);
    if (virtual) {
      ctx.reply.json(200, openAiVirtual(id, virtual));
      return;
    }
    const entry = id ? await getModelEntry(sql, id) : undefined;
    if (!entry || !entry.is_active) throw new ApiError(404, 'model_not_found', `The model '${id}' does not exist.`, 'model');
    ctx.reply.json(200, openAiModel(entry));
  };

  return { list, popular, one, pricing, v1List, v1One };
}
