/**
 * USD amounts as people send them, turned into the nano-USD the ledger keeps: a JSON number on the
 * API (`credit_limit`, an alert's `threshold`), a decimal text on the command line (coupon credits,
 * top-up amounts). One rule for all (docs/money.md "Units: nano-USD"): the amount is the number's
 * shortest decimal form (what JavaScript and Python print: 0.1 + 0.2 is 0.30000000000000004), rounded
 * DOWN to a whole nano-USD, so a cap, a threshold or a credit is never more than the number sent.
 */
import * as v from 'valibot';

/** The largest amount taken anywhere (credits and caps stay far inside a bigint of nano-USD). */
export const MAX_USD = 1e9;

export interface UsdRule {
  /** `positive`: must be at least one nano-USD after rounding (a threshold, a credit); `zero`: 0 allowed (a cap). */
  readonly least: 'zero' | 'positive';
}

export type UsdResult = { ok: true; nano: bigint } | { ok: false; problem: string };

const DECIMAL = /^(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** floor(text × 10⁹) of a non-negative decimal text (exponent allowed), exactly, in integers. */
function floorNanoOf(text: string): bigint {
  const [, whole, fraction = '', exponent = '0'] = DECIMAL.exec(text)!;
  const digits = `${whole}${fraction}`;
  const scale = 9 + Number(exponent) - fraction.length;
  if (scale >= 0) return BigInt(digits) * 10n ** BigInt(scale);
  // digits < 10^length: a divisor at least that large leaves 0 (and no huge power is computed)
  return -scale >= digits.length ? 0n : BigInt(digits) / 10n ** BigInt(-scale);
}

/**
 * The nano-USD of a USD amount, rounded down, or the problem with it (a phrase that follows
 * "Invalid value for 'field': "). A number must be finite; a text must be a plain decimal.
 */
export function usdToNanoFloor(usd: number | string, rule: UsdRule): UsdResult {
  let text: string;
  if (typeof usd === 'number') {
    if (!Number.isFinite(usd)) return { ok: false, problem: 'must be a finite number' };
    text = String(usd); // the shortest decimal that reads back as this number: what the client printed
  } else {
    text = usd.trim();
    if (text.startsWith('-') && DECIMAL.test(text.slice(1))) return { ok: false, problem: 'must not be negative' };
    if (!DECIMAL.test(text)) return { ok: false, problem: 'must be a decimal number of USD' };
  }
  const value = Number(text);
  if (value < 0 || text.startsWith('-')) return { ok: false, problem: 'must not be negative' };
  if (!(value <= MAX_USD)) return { ok: false, problem: `must be at most ${MAX_USD}` };
  const nano = floorNanoOf(text);
  if (rule.least === 'positive' && nano < 1n) {
    return { ok: false, problem: value === 0 ? 'must be greater than 0' : 'must be at least 0.000000001 (one nano-USD)' };
  }
  return { ok: true, nano };
}

/** A valibot schema for a USD amount in a JSON body: a number in, nano-USD (bigint) out. */
export function usdAmount(rule: UsdRule, typeMessage = 'must be a number (USD)') {
  return v.pipe(
    v.number(typeMessage),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const result = usdToNanoFloor(dataset.value, rule);
      if (result.ok) return result.nano;
      addIssue({ message: result.problem });
      return NEVER;
    }),
  );
}
