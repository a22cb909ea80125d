// Deterministic token generation. Every word below, with its leading space, is exactly one
// token in gpt-tokenizer's default (o200k_base) encoding, and o200k splits text before each
// " word", so N words concatenated are exactly N tokens. test/mock-vendor.test.ts verifies both.

export const CONTENT_WORDS: readonly string[] = [
  ' alpha', ' beta', ' gamma', ' delta', ' epsilon', ' eta', ' theta', ' lambda',
  ' mu', ' nu', ' xi', ' pi', ' rho', ' sigma', ' tau', ' phi',
  ' chi', ' psi', ' omega', ' red', ' blue', ' green', ' river', ' forest',
];

export const REASONING_WORDS: readonly string[] = [
  ' think', ' consider', ' reason', ' note', ' check', ' maybe', ' perhaps', ' first',
  ' then', ' next', ' so', ' because', ' therefore', ' hence', ' wait', ' hmm',
];

/** The arguments every mocked tool call carries, and its split into one fragment per token. */
export const TOOL_ARGUMENTS = '{"city":"Paris"}';
// encode('{"city":"Paris"}') in o200k_base decodes token by token to these pieces.
export const TOOL_ARGUMENT_FRAGMENTS: readonly string[] = ['{"', 'city', '":"', 'Paris', '"}'];

/** Word i of a list, cycling. */
export function wordAt(words: readonly string[], i: number): string {
  return words[i % words.length] as string;
}

/** Returns f(n) = the first n words of the list joined: a text of exactly n tokens. Cached per n, since bench traffic repeats n. */
function joinedWords(words: readonly string[]): (n: number) => string {
  const cache = new Map<number, string>();
  return (n) => {
    let text = cache.get(n);
    if (text === undefined) {
      text = '';
      for (let i = 0; i < n; i++) text += wordAt(words, i);
      if (cache.size >= 1024) cache.clear();
      cache.set(n, text);
    }
    return text;
  };
}

export const contentText = joinedWords(CONTENT_WORDS);
export const reasoningText = joinedWords(REASONING_WORDS);
