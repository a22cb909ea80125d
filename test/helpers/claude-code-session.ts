/**
 * Replays the recorded Claude Code request sequence (test/fixtures/claude-code/session.json) with
 * the official Anthropic SDK, the way Claude Code itself calls it: `client.beta.messages` (hence
 * the `?beta=true` paths), each step's own headers, streamed steps through the SDK's stream
 * accumulator. A later step's `"$previous.content"` and `"$previous.tool_use_id"` are filled from
 * the previous step's answer, as Claude Code sends the assistant turn back.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import type {
  BetaMessage, BetaMessageTokensCount, BetaRawMessageStreamEvent,
  MessageCountTokensParams, MessageCreateParamsNonStreaming, MessageCreateParamsStreaming,
} from '@anthropic-ai/sdk/resources/beta/messages';

export interface SessionStep {
  readonly name: string;
  readonly purpose: string;
  readonly method: 'POST';
  /** As Claude Code sends it, relative to ANTHROPIC_BASE_URL. */
  readonly path: string;
  /** Every header but the credential, which the replay adds. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Readonly<Record<string, unknown>>;
}

export interface ClaudeCodeSession {
  readonly about: string;
  readonly claude_code_version: string;
  readonly steps: readonly SessionStep[];
}

export type StepKind = 'message' | 'stream' | 'count';

export interface StepResult {
  readonly step: SessionStep;
  readonly kind: StepKind;
  /** The body sent, placeholders filled. */
  readonly sent: Record<string, unknown>;
  /** A message step's answer, as the SDK parsed (or, streamed, accumulated) it. */
  readonly message?: BetaMessage;
  /** A streamed step's events, in order. */
  readonly events?: BetaRawMessageStreamEvent[];
  readonly count?: BetaMessageTokensCount;
}

const FIXTURE = fileURLToPath(new URL('../../../test/fixtures/claude-code/session.json', import.meta.url)); // dist/test/helpers/ -> the repository
const MESSAGES_PATH = '/v1/messages?beta=true';
const COUNT_PATH = '/v1/messages/count_tokens?beta=true';
const PREVIOUS_CONTENT = '$previous.content';
const PREVIOUS_TOOL_USE_ID = '$previous.tool_use_id';

export function loadSession(): ClaudeCodeSession {
  return JSON.parse(readFileSync(FIXTURE, 'utf8')) as ClaudeCodeSession;
}

export function kindOf(step: SessionStep): StepKind {
  if (step.path === COUNT_PATH) return 'count';
  if (step.path !== MESSAGES_PATH) throw new Error(`step ${step.name}: the SDK's beta client calls ${MESSAGES_PATH} or ${COUNT_PATH}, not ${step.path}`);
  return step.body.stream === true ? 'stream' : 'message';
}

/** How Claude Code authenticates: ANTHROPIC_AUTH_TOKEN (Authorization: Bearer) or ANTHROPIC_API_KEY (x-api-key). */
export type Credential = { readonly authToken: string } | { readonly apiKey: string };

/** The SDK as Claude Code configures it: ANTHROPIC_BASE_URL without `/v1`, one credential, no retries here. */
export function claudeCodeClient(baseURL: string, credential: Credential): Anthropic {
  return new Anthropic({
    baseURL,
    apiKey: 'apiKey' in credential ? credential.apiKey : null,
    authToken: 'authToken' in credential ? credential.authToken : null,
    maxRetries: 0,
    timeout: 30_000,
  });
}

/** The step's body with the previous answer's content and tool_use id put in the placeholders' places. */
export function fillPlaceholders(body: Readonly<Record<string, unknown>>, previous: BetaMessage | undefined): Record<string, unknown> {
  const fill = (value: unknown): unknown => {
    if (value === PREVIOUS_CONTENT || value === PREVIOUS_TOOL_USE_ID) {
      if (!previous) throw new Error(`${value} with no previous answer`);
      if (value === PREVIOUS_CONTENT) return JSON.parse(JSON.stringify(previous.content)) as unknown;
      const toolUse = previous.content.find((block) => block.type === 'tool_use');
      if (!toolUse) throw new Error(`${value}: the previous answer called no tool`);
      return toolUse.id;
    }
    if (Array.isArray(value)) return value.map(fill);
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)]));
    return value;
  };
  return fill(body) as Record<string, unknown>;
}

/** Runs `steps` in order; the first failure (an SDK APIError, say) ends the replay by throwing. */
export async function replaySession(client: Anthropic, steps: readonly SessionStep[]): Promise<StepResult[]> {
  const results: StepResult[] = [];
  let previous: BetaMessage | undefined;
  for (const step of steps) {
    const kind = kindOf(step);
    const sent = fillPlaceholders(step.body, previous);
    const options = { headers: { ...step.headers } };
    if (kind === 'count') {
      const count = await client.beta.messages.countTokens(sent as unknown as MessageCountTokensParams, options);
      results.push({ step, kind, sent, count });
      continue;
    }
    if (kind === 'message') {
      previous = await client.beta.messages.create(sent as unknown as MessageCreateParamsNonStreaming, options);
      results.push({ step, kind, sent, message: previous });
      continue;
    }
    const events: BetaRawMessageStreamEvent[] = [];
    const stream = client.beta.messages.stream(sent as unknown as MessageCreateParamsStreaming, options);
    stream.on('streamEvent', (event) => { events.push(event); });
    previous = await stream.finalMessage();
    results.push({ step, kind, sent, message: previous, events });
  }
  return results;
}
