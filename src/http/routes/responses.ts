import type { ChatOutput } from './chat-completions.js';
import type { Services } from '../../services.js';
import type { ChatRequest } from '../schemas/chat.js';
import { ApiError } from '../errors.js';
import { RESPONSES_FIELD_NAMES, itemReferencesOf, refuseStatefulFields, toChatRequest, withReferencedItems } from '../responses/to-chat.js';
import { completionResponse, responseMeta } from '../responses/response-object.js';
import { nanoToUsd } from '../../billing/pricing.js';
import { ResponsesEventRelay } from '../responses/event-stream.js';
import { ISSUED_ITEM_ID, ITEM_TTL_SECONDS, ItemStore, MAX_ITEM_REFERENCES } from '../responses/item-store.js';

/** One item store per thread's services. */
const stores = new WeakMap<Services, ItemStore>();
function itemStore(services: Services): ItemStore {
  let store = stores.get(services);
  if (!store) {
    store = new ItemStore(services.redis, services.keys);
    stores.set(services, store);
  }
  return store;
}

/** What a parsed request says beyond its chat form: whether to keep its output items, and the bytes its references added. */
interface Parsed {
  readonly store: boolean;
  readonly referencedBytes: number;
}
const parsedRequests = new WeakMap<ChatRequest, Parsed>();
const DEFAULTS: Parsed = Object.freeze({ store: true, referencedBytes: 0 });
const parsedOf = (request: ChatRequest): Parsed => parsedRequests.get(request) ?? DEFAULTS;

/**
 * Validates and translates a body, first replacing each `item_reference` in `input` by the item it
 * names: one of the caller's own output items, kept by `ItemStore` (an id of another shape is
 * not looked up; one not held is a 400 naming `input[i].id`).
 */
function parse(body: Record<string, unknown>, userId: string, services: Services): ChatRequest | Promise<ChatRequest> {
  refuseStatefulFields(body);
  const references = itemReferencesOf(body, MAX_ITEM_REFERENCES);
  const store = body.store !== false;
  if (references.length === 0) {
    const request = toChatRequest(body);
    if (!store) parsedRequests.set(request, { store, referencedBytes: 0 });
    return request;
  }
  const issued = references.filter((reference) => ISSUED_ITEM_ID.test(reference.id));
  const reading = issued.length > 0 ? itemStore(services).fetch(userId, issued.map((reference) => reference.id)) : Promise.resolve([]);
  return reading.then((found) => {
    const byId = new Map<string, string | null>(issued.map((reference, i) => [reference.id, found[i] ?? null]));
    const items = references.map((reference) => byId.get(reference.id) ?? null);
    const referencedBytes = items.reduce((sum, json) => sum + (json ? Buffer.byteLength(json) : 0), 0);
    const limit = services.config.maxBodyBytes;
    if (referencedBytes > limit) {
      throw new ApiError(413, 'payload_too_large', `The items referred to in 'input' add up to ${referencedBytes} bytes, more than the limit of ${limit} bytes.`, 'input');
    }
    const request = toChatRequest(withReferencedItems(body, references, items, ITEM_TTL_SECONDS));
    parsedRequests.set(request, { store, referencedBytes });
    return request;
  });
}

/**
 * POST /v1/responses: the Responses-style endpoint, served by the chat pipeline (the same
 * admission, BYOK, families, settlement and logging) with its request translated to a chat request
 * and the finished completion or the chunk stream rendered as a Response object or `response.*` events.
 * Stateless in the spec's sense (no stored responses, no `previous_response_id`); the output items
 * are kept for a while (unless `store: false`) so the next request may name them by `item_reference`.
 */
export const RESPONSES_OUTPUT: ChatOutput = Object.freeze<ChatOutput>({
  endpoint: 'responses',
  parse,
  addedPromptBytes: (request) => parsedOf(request).referencedBytes,
  fieldNames: RESPONSES_FIELD_NAMES,
  render: (completionJson, usage, call, request, services) => {
    const { store } = parsedOf(request);
    const { json, output } = completionResponse(completionJson, usage, responseMeta(call.identity.callId, call.startedAtMs, call.identity.model.id, request, store, (counted) => nanoToUsd(call.chargeFor(counted))));
    if (!store || output.length === 0) return json;
    return itemStore(services).keep(call.identity.userId, output).then(() => json);
  },
  stream: (relay, call, request, services, options) => {
    const { store } = parsedOf(request);
    const keep = store ? (items: Parameters<ItemStore['keep']>[1]) => itemStore(services).keep(call.identity.userId, items) : undefined;
    return new ResponsesEventRelay(relay, responseMeta(call.identity.callId, call.startedAtMs, call.identity.model.id, request, store, options.costOf), keep, options.maxGeneratedChars);
  },
});
