// Errors as the Messages API words them: `{"type":"error","error":{"type","message"}}`.

/**
 * Anthropic's error type for an HTTP status (https://docs.claude.com/en/api/errors, and the
 * ErrorObject union of @anthropic-ai/sdk's resources/shared: billing_error, timeout_error).
 */
const TYPE_BY_STATUS: Readonly<Record<number, string>> = Object.freeze({
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  503: 'overloaded_error',
  504: 'timeout_error',
  529: 'overloaded_error',
});

/** Other 4xx are `invalid_request_error` (as the errors page says), other 5xx `api_error`. */
export function anthropicErrorType(status: number): string {
  return TYPE_BY_STATUS[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/** The JSON error body (src/http/errors.ts's anthropicErrorBody adds the gateway's fields for a route's errors). */
export function anthropicErrorJson(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

/** The SSE `error` event, for a stream that fails after its head went out. */
export function anthropicErrorEvent(type: string, message: string): string {
  return `event: error\ndata: ${anthropicErrorJson(type, message)}\n\n`;
}

/**
 * The Anthropic type of a chat error event's `error` (an upstream's own, passed through, or the
 * gateway's sseErrorEvent): by the words its type or code holds, `api_error` otherwise.
 */
export function anthropicTypeOfChatError(error: { type?: unknown; code?: unknown }): string {
  const words = `${typeof error.type === 'string' ? error.type : ''} ${typeof error.code === 'string' ? error.code : ''}`;
  if (/rate_limit/.test(words)) return 'rate_limit_error';
  if (/overloaded|unavailable/.test(words)) return 'overloaded_error';
  if (/timeout/.test(words)) return 'timeout_error';
  if (/invalid_request/.test(words)) return 'invalid_request_error';
  return 'api_error';
}
