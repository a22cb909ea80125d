import type { CatalogModel } from '../../catalog/model.js';
import type { ChatRequest } from '../../http/schemas/chat.js';
import type { CacheScope, ChatStreamRelay, UpstreamRequest, UpstreamTarget } from '../family.js';
import { signSigV4 } from '../cloud/sigv4.js';
import { EventStreamDecoder, EventStreamError } from '../cloud/eventstream.js';
import { buildAnthropicBody } from './request.js';

/** The `anthropic_version` Bedrock takes in the body (it has no header for it). */
export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/**
 * Bedrock model ids of the catalog's Claude models (Bedrock's model catalog). A row's
 * `config_json.model_map` wins over this table, e.g. to name a cross-region inference profile
 * (`us.anthropic.claude-sonnet-4-5-20250929-v1:0`), which some accounts and regions require.
 */
export const BEDROCK_MODEL_IDS: Readonly<Record<string, string>> = Object.freeze({
  'claude-sonnet-4-5': 'anthropic.claude-sonnet-4-5-20250929-v1:0',
  'claude-haiku-4-5': 'anthropic.claude-haiku-4-5-20251001-v1:0',
});

type BedrockCloud = Extract<NonNullable<UpstreamTarget['cloud']>, { kind: 'bedrock' }>;

/** The Bedrock model id for `model`: the row's map (by gateway id, then upstream model), the table, else the upstream model as is. */
export function bedrockModelId(model: CatalogModel, modelMap: Readonly<Record<string, string>>): string {
  return modelMap[model.id] ?? modelMap[model.upstreamModel] ?? BEDROCK_MODEL_IDS[model.upstreamModel] ?? model.upstreamModel;
}

/**
 * InvokeModel (`/invoke`) or InvokeModelWithResponseStream (`/invoke-with-response-stream`): the
 * Messages body without `model`, `stream` and `metadata`, with Bedrock's `anthropic_version`, signed
 * with SigV4 for service `bedrock` in the row's region.
 */
export function bedrockRequest(request: ChatRequest, model: CatalogModel, stream: boolean, target: UpstreamTarget, cloud: BedrockCloud, cache: CacheScope, now = new Date()): Omit<UpstreamRequest, 'addedPromptBytes'> {
  const { model: _model, stream: _stream, metadata: _metadata, ...rest } = buildAnthropicBody(request, model, stream, cache.partition);
  const body = JSON.stringify({ anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...rest });
  const url = `${target.baseUrl}/model/${encodeURIComponent(bedrockModelId(model, cloud.modelMap))}/${stream ? 'invoke-with-response-stream' : 'invoke'}`;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: stream ? 'application/vnd.amazon.eventstream' : 'application/json' };
  const signed = signSigV4({ method: 'POST', url, headers, body, region: cloud.region, service: 'bedrock' }, cloud, now);
  return { url, headers: { ...headers, ...signed }, body, guarded: target.guarded === true };
}

/**
 * Bedrock's response stream (AWS event-stream frames whose `chunk` events carry base64 JSON of
 * Anthropic's stream events) fed to a relay of Anthropic's stream (the chat translator, or the
 * pass-through of /v1/messages) as the SSE events Anthropic would have sent. An `exception` message
 * becomes Anthropic's `error` event, so the call fails as it would there.
 */
export class BedrockStreamRelay implements ChatStreamRelay {
  private readonly decoder = new EventStreamDecoder();
  private broken = false;

  constructor(private readonly inner: ChatStreamRelay & { errorEvent?(code: string, message: string): string }) {}

  get usage() {
    return this.inner.usage;
  }

  get usageEventAt() {
    return this.inner.usageEventAt;
  }

  get failure() {
    return this.inner.failure;
  }

  get errorEvent() {
    return this.inner.errorEvent?.bind(this.inner);
  }

  push(chunk: Buffer): Buffer | undefined {
    if (this.broken) return undefined;
    let sse = '';
    try {
      for (const message of this.decoder.push(chunk)) sse += eventOf(message.headers, message.payload);
    } catch (error) {
      if (!(error instanceof EventStreamError)) throw error;
      this.broken = true;
      sse += errorEvent('invalid_event_stream', error.message);
    }
    return sse === '' ? undefined : this.inner.push(Buffer.from(sse));
  }

  flush(): Buffer | undefined {
    return this.inner.flush();
  }

  generatedText(): string {
    return this.inner.generatedText();
  }
}

const errorEvent = (type: string, message: string) => `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type, message } })}\n\n`;

/** One event-stream message as Anthropic SSE text ('' for messages that carry no event). */
function eventOf(headers: Readonly<Record<string, unknown>>, payload: Buffer): string {
  const kind = headers[':message-type'];
  if (kind === 'event') {
    if (headers[':event-type'] !== 'chunk') return '';
    const bytes = (JSON.parse(payload.toString('utf8')) as { bytes?: unknown }).bytes;
    if (typeof bytes !== 'string') return '';
    // JSON has no raw line break outside strings' escapes, but one may sit between tokens: keep one event one line.
    const json = Buffer.from(bytes, 'base64').toString('utf8').replace(/\r?\n/g, ' ');
    // Named as Anthropic names its events (its SDKs read the name); the type is the event object's first key.
    const type = /^\s*\{\s*"type"\s*:\s*"([a-z_]+)"/.exec(json)?.[1];
    return type ? `event: ${type}\ndata: ${json}\n\n` : `data: ${json}\n\n`;
  }
  if (kind === 'exception') {
    let message = payload.toString('utf8');
    try {
      message = String((JSON.parse(message) as { message?: unknown }).message ?? message);
    } catch {
      // the payload as text
    }
    return errorEvent(String(headers[':exception-type'] ?? 'exception'), message);
  }
  if (kind === 'error') return errorEvent(String(headers[':error-code'] ?? 'error'), String(headers[':error-message'] ?? ''));
  return '';
}
