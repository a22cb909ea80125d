// OpenAI-style error responses: `{"error":{"message","type","param","code"}}`.

export interface MockError {
  status: number;
  message: string;
  type: string;
  code: string | null;
  param?: string | null;
}

export function errorJson(err: MockError): string {
  return JSON.stringify({ error: { message: err.message, type: err.type, param: err.param ?? null, code: err.code } });
}

export const notFound = (method: string, path: string): MockError => ({
  status: 404,
  message: `Invalid URL (${method} ${path})`,
  type: 'invalid_request_error',
  code: 'not_found',
});

export const missingApiKey: MockError = {
  status: 401,
  message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
  type: 'invalid_request_error',
  code: 'invalid_api_key',
};

export const hasBearerToken = (authorization: string | undefined): boolean => authorization !== undefined && /^Bearer\s+\S/i.test(authorization);

/** A credential the mock refuses as a real vendor refuses a revoked key (tests of credential fallback). */
export const isRevokedCredential = (credential: string | undefined): boolean => credential !== undefined && credential.includes('revoked');

export const badJson = (detail: string): MockError => ({
  status: 400,
  message: `We could not parse the JSON body of your request. (${detail})`,
  type: 'invalid_request_error',
  code: null,
});

export const invalidParam = (param: string, message: string): MockError => ({
  status: 400,
  message,
  type: 'invalid_request_error',
  code: 'invalid_value',
  param,
});

/** The error a real vendor sends for this status, used by the `fail=STATUS` directive and status faults (a 429 names its retry delay). */
export function simulatedFailure(status: number, retryAfterSeconds = 1): MockError {
  switch (status) {
    case 401: return { ...missingApiKey, message: 'Incorrect API key provided.' };
    case 403: return { status, message: 'You are not allowed to sample from this model.', type: 'invalid_request_error', code: 'permission_denied' };
    case 404: return { status, message: 'The model does not exist or you do not have access to it.', type: 'invalid_request_error', code: 'model_not_found' };
    case 429: return { status, message: `Rate limit reached for requests (mock). Please try again in ${retryAfterSeconds}s.`, type: 'requests', code: 'rate_limit_exceeded' };
    case 500: return { status, message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', code: null };
    case 503: return { status, message: 'The engine is currently overloaded, please try again later.', type: 'server_error', code: null };
    default:
      return status >= 500
        ? { status, message: `Mock upstream failure (${status}).`, type: 'server_error', code: null }
        : { status, message: `Mock request failure (${status}).`, type: 'invalid_request_error', code: null };
  }
}
