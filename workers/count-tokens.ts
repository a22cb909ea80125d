/**
 * piscina task: token counts of texts with the o200k_base tokenizer. Runs off the HTTP threads
 * because counting a long aborted stream takes milliseconds that would stall other requests.
 */
import { countTokens } from 'gpt-tokenizer';

export interface CountTokensInput {
  readonly texts: readonly string[];
}

// A special token's text in a prompt ("<|endoftext|>") is plain text to the vendor: counted as such, not refused.
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

export default function countTokensTask({ texts }: CountTokensInput): number[] {
  return texts.map((text) => (text ? countTokens(text, PLAIN_TEXT) : 0));
}
