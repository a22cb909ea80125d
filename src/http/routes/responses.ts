import type { ChatOutput } from './chat-completions.js';
import { RESPONSES_FIELD_NAMES, toChatRequest } from '../responses/to-chat.js';
import { responseFromCompletion, responseMeta } from '../responses/response-object.js';
import { ResponsesEventRelay } from '../responses/event-stream.js';

/**
 * POST /v1/responses: the stateless Responses-style endpoint, served by the chat pipeline (the same
 * admission, BYOK, families, settlement and logging) with its request translated to a chat request
 * and the finished completion or the chunk stream rendered as a Response object or `response.*` events.
 */
export const RESPONSES_OUTPUT: ChatOutput = Object.freeze<ChatOutput>({
  endpoint: 'responses',
  parse: toChatRequest,
  fieldNames: RESPONSES_FIELD_NAMES,
  render: (completionJson, usage, call, request) =>
    responseFromCompletion(completionJson, usage, responseMeta(call.identity.callId, call.startedAtMs, call.identity.model.id, request)),
  stream: (relay, call, request) => new ResponsesEventRelay(relay, responseMeta(call.identity.callId, call.startedAtMs, call.identity.model.id, request)),
});
