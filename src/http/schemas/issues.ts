import * as v from 'valibot';
import { ApiError } from '../errors.js';
import { findUnstorableText, passesTextThrough } from './text.js';

/** Turns the first valibot issue into a 400 that names the field, e.g. `messages[0].content`. */
export function validationError(issues: readonly v.BaseIssue<unknown>[], status = 400): ApiError {
  const issue = issues[0]!;
  let param = '';
  for (const item of issue.path ?? []) {
    const key = item.key as string | number;
    param += typeof key === 'number' ? `[${key}]` : param ? `.${key}` : String(key);
  }
  const objectIssue = issue.type === 'strict_object' || issue.type === 'object';
  const unknownField = objectIssue && issue.expected === 'never';
  const missingField = objectIssue && issue.received === 'undefined' && issue.expected?.startsWith('"') === true;
  const message = unknownField
    ? `Unknown parameter '${param}'.`
    : missingField ? `Missing required parameter '${param}'.`
      : param ? `Invalid value for '${param}': ${issue.message}` : `Invalid request body: ${issue.message}`;
  return new ApiError(status, status === 422 ? 'validation_error' : 'invalid_request', message, param || null);
}

/**
 * Objects and arrays nested deeper than this are refused: no request needs so many levels (a tool's
 * JSON Schema uses a few dozen at most), and values far deeper overflow the stack when a family
 * serialises the request again (JSON.parse itself takes them).
 */
export const MAX_JSON_DEPTH = 128;

/** Whether `value` holds objects or arrays more than `levels` deep (recursion bounded by `levels`). */
function nestsDeeperThan(value: unknown, levels: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (levels === 0) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (nestsDeeperThan(value[i], levels - 1)) return true;
    return false;
  }
  for (const key in value) if (nestsDeeperThan((value as Record<string, unknown>)[key], levels - 1)) return true;
  return false;
}

/** Parses a JSON body; malformed JSON, a non-object, or nesting beyond MAX_JSON_DEPTH is a 400. */
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
  if (nestsDeeperThan(value, MAX_JSON_DEPTH)) {
    throw new ApiError(400, 'invalid_json', `Request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep.`);
  }
  return value as Record<string, unknown>;
}

/**
 * Validates a request body (or a part of one) with `schema`; the first issue is the error, `status`
 * 400 (`invalid_request`) or 422 (`validation_error`), naming the field. Before the schema, the
 * stored-text rule (src/http/schemas/text.ts): no string or key anywhere in `value` may hold U+0000
 * or an unpaired surrogate, unless the schema is marked `textPassesThrough`. Every JSON body the
 * gateway takes comes through here, so a new schema is covered without doing anything.
 */
export function parseWith<TSchema extends v.GenericSchema>(schema: TSchema, value: unknown, status = 400): v.InferOutput<TSchema> {
  return parseChecked(schema, value, status, !passesTextThrough(schema));
}

function parseChecked<TSchema extends v.GenericSchema>(schema: TSchema, value: unknown, status: number, storedText: boolean): v.InferOutput<TSchema> {
  if (storedText) {
    const issue = findUnstorableText(value);
    if (issue) {
      const message = issue.path ? `Invalid value for '${issue.path}': ${issue.message}.` : `Invalid request body: ${issue.message}.`;
      throw new ApiError(status, status === 422 ? 'validation_error' : 'invalid_request', message, issue.path || null);
    }
  }
  const result = v.safeParse(schema, value, { abortEarly: true });
  if (!result.success) throw validationError(result.issues, status);
  return result.output;
}

type StrictSchema = v.StrictObjectSchema<v.ObjectEntries, v.ErrorMessage<v.StrictObjectIssue> | undefined>;
const OPTIONAL_TYPES = new Set(['optional', 'nullish', 'exact_optional', 'undefinedable']);

/**
 * `parseWith` for a strict object schema, running only the entries a value has (and the required
 * ones): the same checks in the same order, so the same output and the same first issue, without
 * the calls for each optional field a request leaves out (most of a chat request's schema). The
 * narrowed schemas are cached by key list; a value with a key the schema does not know is left to
 * the whole schema, which names it.
 */
export function presentFieldsParser<TSchema extends StrictSchema>(schema: TSchema, status = 400): (value: Record<string, unknown>) => v.InferOutput<TSchema> {
  const entries = schema.entries;
  const storedText = !passesTextThrough(schema);
  const names = Object.keys(entries);
  const required = names.filter((name) => !OPTIONAL_TYPES.has(entries[name]!.type));
  const narrowed = new Map<string, StrictSchema>();
  return (value) => {
    let keyList = '';
    for (const key in value) {
      if (!Object.hasOwn(entries, key)) return parseChecked(schema, value, status, storedText);
      keyList += `${key}\n`;
    }
    let subset = narrowed.get(keyList);
    if (!subset) {
      const present = new Set([...Object.keys(value), ...required]);
      // Declaration order, as the whole schema checks them.
      subset = v.strictObject(Object.fromEntries(names.filter((name) => present.has(name)).map((name) => [name, entries[name]!])), schema.message);
      if (narrowed.size >= 256) narrowed.clear();
      narrowed.set(keyList, subset);
    }
    return parseChecked(subset, value, status, storedText) as v.InferOutput<TSchema>;
  };
}
