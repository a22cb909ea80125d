import * as v from 'valibot';
import { ApiError } from '../errors.js';

/** Turns the first valibot issue into a 400 that names the field, e.g. `messages[0].content`. */
export function validationError(issues: readonly v.BaseIssue<unknown>[], status = 400): ApiError {
  const issue = issues[0]!;
  let param = '';
  for (const item of issue.path ?? []) {
    const key = item.key as string | number;
    param += typeof key === 'number' ? `[${key}]` : param ? `.${key}` : String(key);
  }
  const unknownField = issue.type === 'strict_object' && issue.expected === 'never';
  const message = unknownField
    ? `Unknown parameter '${param}'.`
    : param ? `Invalid value for '${param}': ${issue.message}` : `Invalid request body: ${issue.message}`;
  return new ApiError(status, status === 422 ? 'validation_error' : 'invalid_request', message, param || null);
}

/** Parses a JSON body; malformed JSON or a non-object is a 400. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  if (body.length === 0) throw new ApiError(400, 'invalid_json', 'Request body is empty; a JSON object is required.');
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new ApiError(400, 'invalid_json', `Request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ApiError(400, 'invalid_json', 'Request body must be a JSON object.');
  }
  return value as Record<string, unknown>;
}

export function parseWith<TSchema extends v.GenericSchema>(schema: TSchema, value: unknown, status = 400): v.InferOutput<TSchema> {
  const result = v.safeParse(schema, value, { abortEarly: true });
  if (!result.success) throw validationError(result.issues, status);
  return result.output;
}
