import { badRequest } from '../http/errors.js';

/**
 * A tool call's `arguments` string from the caller's history, as the object the translated families
 * send back upstream: empty is `{}`; anything but a JSON object is the caller's error (400 naming `param`, its message naming `what`).
 */
export function toolArgumentsObject(text: string, param: string, what = param): Record<string, unknown> {
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw badRequest(`${what} must be a JSON object.`, param);
  return parsed as Record<string, unknown>;
}
