import { anthropicErrorType } from './messages/errors.js';

/** An error the API answers with: a status, a machine code and a message, rendered by `errorBody`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const TYPE_BY_STATUS: Readonly<Record<number, string>> = Object.freeze({
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  409: 'conflict_error',
  413: 'invalid_request_error',
  415: 'invalid_request_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
});

export function errorType(status: number): string {
  return TYPE_BY_STATUS[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/**
 * One envelope for every error: the spec's integer `code` and string `msg`, plus the OpenAI-style
 * `error` object that the OpenAI SDKs read.
 */
export function errorBody(error: ApiError): string {
  return JSON.stringify({
    code: error.status,
    msg: error.message,
    error: { message: error.message, type: errorType(error.status), code: error.code, param: error.param },
  });
}

/**
 * The envelope of the routes of Anthropic's API (`/v1/messages`): Anthropic's own, which its SDKs
 * read into their typed errors, with the spec's integer `code` and string `msg` beside it (every
 * answer of the gateway carries them, the 401 of the inference headers among them) and the
 * gateway's machine code as `error.code`.
 */
export function anthropicErrorBody(error: ApiError): string {
  return JSON.stringify({
    type: 'error',
    error: { type: anthropicErrorType(error.status), message: error.message, code: error.code, param: error.param },
    code: error.status,
    msg: error.message,
  });
}

export const badRequest = (message: string, param: string | null = null, code = 'invalid_request') => new ApiError(400, code, message, param);
export const unauthorized = (message = 'Access is not permitted: a valid API key is required in the Authorization header (Bearer).') =>
  new ApiError(401, 'invalid_api_key', message);
export const notFound = (message: string) => new ApiError(404, 'not_found', message);

/** An inference call naming a model the catalog does not serve. */
export const modelNotFound = (id: string) => new ApiError(404, 'model_not_found', `The model '${id}' does not exist or is not available.`, 'model');

/**
 * Inference endpoints take JSON bodies only. The spec counts `Content-Type: application/json` among
 * the headers an inference call must carry, and answers missing or wrong ones with 401 (integer `code`
 * 401, `msg` saying access is not permitted), so a wrong type is a 401 here, not a 415.
 */
export function requireJson(contentType: string): void {
  if (contentType.split(';', 1)[0]!.trim().toLowerCase() !== 'application/json') {
    throw new ApiError(401, 'invalid_content_type', `Access is not permitted: inference calls must send Content-Type: application/json${contentType ? ` (not ${contentType.slice(0, 100)})` : ''}.`);
  }
}
export const internalError = () => new ApiError(500, 'internal_error', 'The gateway failed to handle this request.');
export const redisUnavailable = () => new ApiError(503, 'redis_unavailable', 'The gateway cannot reach Redis right now; retry shortly.', null, { 'retry-after': '1' });
