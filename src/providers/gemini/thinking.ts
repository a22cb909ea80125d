import type { CatalogModel } from '../../catalog/model.js';
import type { ChatRequest } from '../../http/schemas/chat.js';

/** The thinking budgets a Gemini model accepts (Gemini API "thinking" docs: 2.5 Flash 0..24576, 2.5 Pro 128..32768, no off switch). */
interface BudgetRange {
  readonly min: number;
  readonly max: number;
}

const RANGES: readonly (readonly [prefix: string, range: BudgetRange])[] = Object.freeze([
  ['gemini-2.5-pro', Object.freeze({ min: 128, max: 32_768 })],
  ['gemini-2.5-flash-lite', Object.freeze({ min: 0, max: 24_576 })],
  ['gemini-2.5-flash', Object.freeze({ min: 0, max: 24_576 })],
]);
const DEFAULT_RANGE: BudgetRange = Object.freeze({ min: 0, max: 24_576 });

/** Upstream's own dynamic thinking stops at about this many tokens; used when no effort is asked for. */
export const DEFAULT_THINKING_BUDGET = 8_192;

const EFFORT_BUDGET = Object.freeze({ low: 1_024, medium: 8_192 });

function rangeOf(upstreamModel: string): BudgetRange {
  for (const [prefix, range] of RANGES) if (upstreamModel.startsWith(prefix)) return range;
  return DEFAULT_RANGE;
}

/**
 * The explicit thinking budget for a call whose output cap (thoughts and answer together: on 2.5
 * models `maxOutputTokens` bounds both) is `cap`. `reasoning_effort` minimal is the model's least
 * (off on Flash), low 1024, medium 8192, high the model's most; none asked 8192. The budget never
 * takes more than half the cap, so thinking cannot starve the answer.
 */
export function thinkingBudget(request: ChatRequest, model: CatalogModel, cap: number): number {
  const range = rangeOf(model.upstreamModel);
  const effort = request.reasoning_effort;
  const wanted = effort === 'minimal' ? range.min : effort === 'high' ? range.max : effort ? EFFORT_BUDGET[effort] : DEFAULT_THINKING_BUDGET;
  return Math.max(range.min, Math.min(wanted, range.max, Math.floor(cap / 2)));
}
