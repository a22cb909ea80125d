import { parseQuery } from '../router.js';
import { badRequest } from '../errors.js';
import { parseIsoTimestamp } from '../schemas/text.js';
import { UUID } from '../../store/ids.js';

/**
 * A management GET's query parameters, each read once and checked: anything malformed is a 400
 * naming the parameter (as /api/v1/billing/transactions' `page`). A parameter given twice is refused
 * rather than one of its values silently picked.
 */
export class QueryParams {
  private readonly params: Map<string, string[]>;

  constructor(query: string) {
    this.params = parseQuery(query);
  }

  text(name: string, maxLength = 200): string | undefined {
    const values = this.params.get(name);
    if (values === undefined) return undefined;
    if (values.length > 1) throw badRequest(`Invalid value for '${name}': give it once.`, name);
    const value = values[0]!;
    if (value === '' || value.length > maxLength) throw badRequest(`Invalid value for '${name}': must be 1 to ${maxLength} characters.`, name);
    return value;
  }

  /** A whole number from `min` to `max`. */
  integer(name: string, min: number, max: number): number | undefined {
    const raw = this.text(name, 16);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) throw badRequest(`Invalid value for '${name}': must be a whole number from ${min} to ${max}.`, name);
    return value;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[]): T | undefined {
    const raw = this.text(name, 64);
    if (raw === undefined) return undefined;
    if (!(allowed as readonly string[]).includes(raw)) throw badRequest(`Invalid value for '${name}': must be one of ${allowed.join(', ')}.`, name);
    return raw as T;
  }

  /** An ISO 8601 timestamp with a time zone (`2026-11-01T00:00:00Z`). */
  time(name: string): Date | undefined {
    const raw = this.text(name, 64);
    if (raw === undefined) return undefined;
    const value = parseIsoTimestamp(raw);
    if (value === undefined) throw badRequest(`Invalid value for '${name}': must be an ISO 8601 time with a time zone, such as 2026-11-01T00:00:00Z.`, name);
    return value;
  }

  /** A row id (a UUID), lower-cased. */
  uuid(name: string): string | undefined {
    const raw = this.text(name, 64);
    if (raw === undefined) return undefined;
    if (!UUID.test(raw)) throw badRequest(`Invalid value for '${name}': must be a key id (a UUID).`, name);
    return raw.toLowerCase();
  }
}

/** Refuses `from` at or after `to` (names `to`). */
export function checkRange(from: Date, to: Date): void {
  if (from.getTime() >= to.getTime()) throw badRequest(`Invalid value for 'to': must be after 'from'.`, 'to');
}
