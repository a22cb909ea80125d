/**
 * Secrets production refuses: every value published in this repository (the development fallbacks,
 * examples in docs, deploy files and tests) and values anyone could guess. test/production-config.test.ts
 * scans the repository for secret-looking values and checks each is refused here, so a new published
 * example that these rules miss fails CI instead of going stale in a list.
 */

/** The development fallbacks of src/config.ts: `npm start` works with them, production never does. */
export const DEV_JWT_SECRET = 'dev-only-jwt-secret-change-me-0123456789';
export const DEV_KEY_SECRET = 'dev-only-key-secret-change-me-0123456789';

/** Published values the rules below would not catch by themselves (random-looking examples in docs/ and test/). */
const PUBLISHED: ReadonlySet<string> = new Set([
  DEV_JWT_SECRET,
  DEV_KEY_SECRET,
  'sk-gw-30dPi7Yx9WgW-lZHTBAspJ9KnJcmYmsy8PQ5xJtf6Y2qEEKXrVsGIGobSMeKU', // docs/api.md
  'whsec_hMGDxAXzxObiXyt3owy531fcIa/gFUYiAIJwHCINvy4=', // docs/api.md
  'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', // test/webhook-signature.test.ts
  'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', // AWS's documented example secret key, test/byok-cloud.test.ts
]);

/**
 * Words of placeholders and examples, in any case, as words of their own: between the separators people
 * type (`-`, `_`, `.`, space) or the ends. Not between digits or `+`/`/`: a generated base64 secret
 * holds `9Dev+` about once in 15,000.
 */
const PLACEHOLDER_WORDS = /(?:^|[-_. ])(dev|development|test|testing|demo|example|sample|change|changeme|replace|placeholder|secret|password|passwd|default|insecure|dummy|fake|mock|todo|your|local|localhost)(?:[-_. ]|$)/i;
/** Fewer distinct characters than this is a typed, not a generated, value (hex of 32+ characters has ~14). */
export const MIN_DISTINCT_CHARACTERS = 8;
/** A longer run of one character or of consecutive ones (`111111`, `012345`, `fedcba`) is typed, not generated. */
export const MAX_SEQUENTIAL_RUN = 5;

/** Why production refuses `value` as a secret, or undefined when it does not. */
export function weakSecretReason(value: string): string | undefined {
  if (PUBLISHED.has(value)) return 'it is published in the gateway\'s repository';
  const word = PLACEHOLDER_WORDS.exec(value)?.[1];
  if (word) return `it contains the placeholder word "${word}"`;
  if (new Set(value).size < MIN_DISTINCT_CHARACTERS) return `it has fewer than ${MIN_DISTINCT_CHARACTERS} distinct characters`;
  if (longestSequentialRun(value) > MAX_SEQUENTIAL_RUN) return `it has a run of more than ${MAX_SEQUENTIAL_RUN} repeated or consecutive characters`;
  const period = shortestPeriod(value);
  if (period * 4 <= value.length) return `it repeats a ${period}-character pattern`;
  return undefined;
}

/** Longest stretch of characters whose codes stay the same, or go up or down by one, at each step. */
function longestSequentialRun(value: string): number {
  let longest = value.length > 0 ? 1 : 0;
  let run = 1;
  let step = 0;
  for (let i = 1; i < value.length; i++) {
    const delta = value.charCodeAt(i) - value.charCodeAt(i - 1);
    const small = delta >= -1 && delta <= 1;
    if (small && (run === 1 || delta === step)) run++;
    else run = small ? 2 : 1;
    step = delta;
    longest = Math.max(longest, run);
  }
  return longest;
}

/** The shortest p such that value[i] === value[i - p] for every i (value.length when there is none). */
function shortestPeriod(value: string): number {
  for (let p = 1; p < value.length; p++) {
    let periodic = true;
    for (let i = p; i < value.length && periodic; i++) periodic = value[i] === value[i - p];
    if (periodic) return p;
  }
  return value.length;
}
