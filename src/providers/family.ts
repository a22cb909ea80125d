import type { CatalogModel } from '../catalog/model.js';
import type { ChatRequest } from '../http/schemas/chat.js';
import type { NormalizedUsage } from './usage.js';

/**
 * An upstream wire family (OpenAI chat completions, Anthropic Messages, Gemini generateContent):
 * how a chat-completions request becomes the family's request, and how its answer, whole or
 * streamed, becomes a chat completion. The core never branches on a family's name; it calls these.
 */
export interface ChatFamily {
  /** The upstream request for `request`, sent to `target`. */
  request(request: ChatRequest, model: CatalogModel, stream: boolean, target: UpstreamTarget, cache: CacheScope): UpstreamRequest;
  /** A non-streaming upstream answer (its body text) as a chat.completion body. Throws on a body that is not an answer. */
  finish(upstreamText: string, model: CatalogModel, options: AnswerOptions): FinishedCompletion;
  /**
   * A relay turning the upstream's event stream into chat.completion.chunk SSE events ending with
   * `data: [DONE]`; `target` is where the stream comes from (a cloud form may stream another framing).
   */
  relay(model: CatalogModel, options: AnswerOptions, target?: UpstreamTarget): ChatStreamRelay;
}

/** Where and as whom an upstream call goes: a platform credential or a user's (BYOK). */
export interface UpstreamTarget {
  /** The vendor's API base, no trailing slash (e.g. `https://api.anthropic.com/v1`). */
  readonly baseUrl: string;
  /** The key (or, for Vertex AI, the OAuth access token); empty for Bedrock, which signs instead. */
  readonly apiKey: string;
  /** A cloud provider's form of the vendor's API (a BYOK row's config_json; README "Cloud credential forms"). */
  readonly cloud?: UpstreamCloud;
  /**
   * An address a user chose (a BYOK row's `base_url`, a cloud form's endpoint): every connection to it
   * goes through the URL guard (resolved, refused unless public, pinned to the vetted address), and
   * what it answers reaches the caller only as a short, sanitised message.
   */
  readonly guarded?: boolean;
}

/** How a cloud provider serves a family: `baseUrl` is then the cloud endpoint's origin (no path). */
export type UpstreamCloud =
  /** Azure OpenAI: `{baseUrl}/openai/deployments/{deployment}/chat/completions?api-version=`, header `api-key`. */
  | { readonly kind: 'azure'; readonly deployment: string; readonly apiVersion: string }
  /** Claude on Amazon Bedrock: `{baseUrl}/model/{modelId}/invoke[-with-response-stream]`, AWS SigV4 (service `bedrock`). */
  | {
    readonly kind: 'bedrock'; readonly region: string; readonly accessKeyId: string; readonly secretAccessKey: string;
    readonly sessionToken?: string; readonly modelMap: Readonly<Record<string, string>>;
  }
  /** Gemini on Vertex AI: `{baseUrl}/v1/projects/{project}/locations/{region}/publishers/google/models/{model}:...`, Bearer token. */
  | { readonly kind: 'vertex'; readonly projectId: string; readonly region: string };

/** Who the prompt cache belongs to (see README "Prompt caching"). */
export interface CacheScope {
  /** Opaque, stable per end user (derived with a server secret), combined with any caller-chosen partition. */
  readonly partition: string;
}

/** The text put ahead of a prompt whose upstream caches prefixes without a key, so users never share a prefix. */
export const cacheSalt = (partition: string) => `cache-scope:${partition}`;

export interface UpstreamRequest {
  /** The full URL (base, path and query). */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /**
   * Bytes of prompt text the family added to the caller's (a cache salt, an instruction), which the
   * upstream bills as prompt tokens: the worst-case reservation counts them on top of the caller's body.
   */
  readonly addedPromptBytes?: number;
  /** The target's `guarded`: the request goes to an address a user chose. */
  readonly guarded?: boolean;
}

export interface AnswerOptions {
  /** False when the caller sent `include_reasoning: false`: reasoning is left out. */
  readonly includeReasoning: boolean;
  /** The completion's id (`chatcmpl-...`) and creation time, for families whose answers carry none. */
  readonly id: string;
  readonly created: number;
  /** A stream's longest event still incomplete (UPSTREAM_MAX_EVENT_BYTES): past it, the stream breaks. */
  readonly maxEventBytes?: number;
  /**
   * The generated text a stream keeps for counting when the vendor reports no usage: the call's output
   * allowance at MAX_CHARS_PER_TOKEN (src/providers/pending-event.ts). Text past it cannot raise the charge.
   */
  readonly maxGeneratedChars?: number;
  /** The call's charge for `usage` in USD (`usage.cost`), from MeteredCall.chargeFor; absent: no `cost` rendered. */
  readonly costOf?: (usage: NormalizedUsage) => number;
}

export interface FinishedCompletion {
  /** The chat.completion JSON, `model` the gateway's id, usage as the spec words it. */
  readonly body: string;
  readonly usage: NormalizedUsage | undefined;
  /** The text generated (content, reasoning, tool-call arguments), to count when there is no usage. */
  readonly generated: string;
}

export interface ChatStreamRelay {
  /** Set once the upstream reported usage. */
  readonly usage: NormalizedUsage | undefined;
  /**
   * Set by the push that found the usage, when it can tell: where, in the bytes that push returned,
   * the event carrying the usage starts. What comes before it is sent before the call settles, so a
   * stream's first bytes never wait for the settlement; without it, the whole push waits.
   */
  readonly usageEventAt?: number | undefined;
  /**
   * Set once the upstream reported in its stream that the call failed (an error event, an end before
   * its final message): the code the call is logged with, as a 502. The stream goes on to its end,
   * with the error event the client needs; the call is charged nothing.
   */
  readonly failure?: string | undefined;
  /** Takes an upstream chunk; returns the bytes to send to the client now (complete SSE events only). */
  push(chunk: Buffer): Buffer | undefined;
  /** The upstream ended: whatever is left to send (for translated families the usage chunk and `data: [DONE]`). */
  flush(): Buffer | undefined;
  /** The text generated so far (content, reasoning, tool-call names and arguments), to count after an abort. */
  generatedText(): string;
}
