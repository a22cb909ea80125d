/**
 * The text rules every request input shares (README "Input rules"), in one place:
 *
 * - **Stored text**: no string of a JSON body (value or key, at any depth) may hold U+0000 or an
 *   unpaired UTF-16 surrogate, unless its schema is marked `textPassesThrough` (its text only goes
 *   upstream and is never stored: chat, Responses, images). Postgres `text` and `jsonb` refuse
 *   U+0000, `jsonb` refuses an unpaired surrogate escape, and a `text` column would silently keep
 *   U+FFFD instead of it. `parseWith` applies it to every body it validates, before the schema.
 * - **Names, labels and codes** (`singleLine`): no control character at all (Unicode category Cc:
 *   U+0000–U+001F, U+007F–U+009F), so no line break or tab either.
 * - **Paths and query strings** (`wellFormedPath`, `decodeQueryComponent`, used by the router):
 *   percent-encoding must decode to UTF-8, and the result may hold no control character.
 */
import * as v from 'valibot';

/** Any of the characters `textProblem` looks at; the common case (none) costs one scan. */
const SUSPECT = /[\u0000\ud800-\udfff]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** Unicode category Cc: C0 controls, DEL and C1 controls. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Why `text` cannot be stored (U+0000, an unpaired surrogate), or undefined when it can. */
export function textProblem(text: string): string | undefined {
  if (!SUSPECT.test(text)) return undefined;
  if (text.includes('\u0000')) return 'must not contain the character U+0000 (NUL)';
  if (LONE_SURROGATE.test(text)) return 'must not contain an unpaired UTF-16 surrogate (\\ud800-\\udfff without its pair is not a character)';
  return undefined;
}

/** Whether `text` holds a control character (category Cc). */
export const hasControlCharacter = (text: string): boolean => CONTROL.test(text);

export interface TextIssue {
  /** The field, as `validationError` names fields: `config_json.region`, `input[0].content`. */
  readonly path: string;
  readonly message: string;
}

const child = (path: string, key: string | number) =>
  typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key;

/**
 * The first string, key or value, anywhere in `value` that cannot be stored. Recursion is bounded
 * by the body's nesting, which `parseJsonObject` limits to MAX_JSON_DEPTH.
 */
export function findUnstorableText(value: unknown, path = ''): TextIssue | undefined {
  if (typeof value === 'string') {
    const problem = textProblem(value);
    return problem === undefined ? undefined : { path, message: problem };
  }
  if (typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const issue = findUnstorableText(value[i], child(path, i));
      if (issue) return issue;
    }
    return undefined;
  }
  for (const key in value) {
    const at = child(path, key);
    const keyProblem = textProblem(key);
    if (keyProblem !== undefined) return { path: at, message: `the field name ${keyProblem}` };
    const issue = findUnstorableText((value as Record<string, unknown>)[key], at);
    if (issue) return issue;
  }
  return undefined;
}

const PASSTHROUGH = new WeakSet<object>();

/**
 * Marks a request schema whose strings only travel to the vendor and are never stored (a chat
 * message may hold any character JSON can carry): `parseWith` then skips the stored-text rule.
 */
export function textPassesThrough<T extends object>(schema: T): T {
  PASSTHROUGH.add(schema);
  return schema;
}

export const passesTextThrough = (schema: object): boolean => PASSTHROUGH.has(schema);

/** A name, label or code: one line of text without control characters (the stored-text rule applies too). */
export const singleLine = (message = 'must not contain control characters (line breaks, tabs, U+0000-U+001F, U+007F-U+009F)') =>
  v.check((text: string) => !CONTROL.test(text), message);

// ---- timestamps ----

const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:(Z)| ?([+-])(\d{2})(?::?(\d{2}))?)$/i;
export const MIN_TIMESTAMP_YEAR = 1970;
export const MAX_TIMESTAMP_YEAR = 9999;

/**
 * An ISO 8601 timestamp with a time zone (`2030-01-31T12:00:00Z`, `…+01:00`, `… +0100`, `…+01`)
 * naming a real moment: a calendar date (no February 30), hours below 24, a zone offset within
 * ±23:59, a year from 1970 to 9999. Undefined for anything else (`Date.parse` would shift
 * 2030-02-30 to March, and fail on `+01`).
 */
export function parseIsoTimestamp(text: string): Date | undefined {
  const match = ISO_TIMESTAMP.exec(text);
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s, fraction, zulu, sign, oh, om] = match;
  const year = Number(y), month = Number(mo), day = Number(d), hour = Number(h), minute = Number(mi), second = Number(s);
  if (year < MIN_TIMESTAMP_YEAR || year > MAX_TIMESTAMP_YEAR || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  if (day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return undefined;
  let offsetMinutes = 0;
  if (!zulu) {
    const offsetHours = Number(oh), offsetMins = Number(om ?? '0');
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (sign === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const millis = fraction ? Math.floor(Number(`0${fraction}`) * 1000) : 0;
  const time = Date.UTC(year, month - 1, day, hour, minute, second, millis) - offsetMinutes * 60_000;
  return new Date(time);
}

/** An ISO 8601 timestamp string as `parseIsoTimestamp` takes it (the output stays the string). */
export const isoTimestamp = (message = `must be an ISO 8601 timestamp with a time zone (e.g. 2030-01-31T12:00:00Z), a real date from ${MIN_TIMESTAMP_YEAR} to ${MAX_TIMESTAMP_YEAR}`) =>
  v.pipe(v.string(message), v.check((text) => parseIsoTimestamp(text) !== undefined, message));

// ---- paths and query strings ----

/**
 * Whether a request path percent-decodes to UTF-8 without control characters. A path that does not
 * can name no resource (ids, media names and model ids never hold them): the router answers 404
 * before any handler looks it up (Postgres would refuse a U+0000 in a lookup).
 */
export function wellFormedPath(path: string): boolean {
  if (!path.includes('%')) return !CONTROL.test(path);
  try {
    return !CONTROL.test(decodeURIComponent(path));
  } catch {
    return false;
  }
}

const STRAY_PERCENT = /%(?![0-9a-fA-F]{2})/g;

/**
 * A query name or value decoded as `application/x-www-form-urlencoded` is (`+` is a space, a `%`
 * not followed by two hex digits stays as it is), except that bytes which are not UTF-8 make it
 * undefined instead of U+FFFD.
 */
export function decodeQueryComponent(raw: string): string | undefined {
  const text = raw.includes('+') ? raw.replaceAll('+', ' ') : raw;
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text.replace(STRAY_PERCENT, '%25'));
  } catch {
    return undefined;
  }
}
