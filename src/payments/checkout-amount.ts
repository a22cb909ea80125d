/**
 * The amount of a card top-up: a JSON number of USD within the operator's bounds (TOPUP_MIN_USD,
 * TOPUP_MAX_USD) and in whole cents, since a card is charged in cents (a float's noise, as in
 * 10.000000000000002, is taken as the cents it prints as; a third decimal is refused, never rounded).
 */
import { ApiError } from '../http/errors.js';
import { usdToNanoFloor } from '../billing/usd.js';

export const NANO_PER_CENT = 10_000_000n;

export function topUpCents(amount: unknown, bounds: { minUsd: number; maxUsd: number }): number {
  const invalid = (problem: string) => new ApiError(400, 'invalid_request', `Invalid value for 'amount_usd': ${problem}.`, 'amount_usd');
  if (typeof amount !== 'number') throw invalid('is required and must be a number (USD)');
  const parsed = usdToNanoFloor(amount, { least: 'positive' });
  if (!parsed.ok) throw invalid(parsed.problem);
  if (amount < bounds.minUsd || amount > bounds.maxUsd) throw invalid(`must be from ${bounds.minUsd} to ${bounds.maxUsd} USD`);
  // Within a millionth of a cent of a whole cent: binary noise of a decimal the client wrote with two places.
  const cents = Math.round(amount * 100);
  if (Math.abs(amount * 100 - cents) > 1e-6) throw invalid('must be whole cents (at most two decimals)');
  return cents;
}
