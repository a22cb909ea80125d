import type { RouteTarget } from './targets.js';

/**
 * The next target of a call, pure: among the targets not tried yet (`tried`, a bit per index) that
 * may take a call, those of the highest priority, one of them drawn by weight (`random` in [0, 1)).
 * `targets` are sorted by priority, highest first. -1 when none is left that may take a call.
 */
export function nextTarget(targets: readonly RouteTarget[], tried: number, available: (target: RouteTarget) => boolean, random: () => number): number {
  let priority = 0;
  let total = 0;
  let first = -1;
  for (let i = 0; i < targets.length; i++) {
    const target = targets[i]!;
    if (first >= 0 && target.priority !== priority) break;
    if ((tried & (1 << i)) !== 0 || !available(target)) continue;
    if (first < 0) {
      first = i;
      priority = target.priority;
    }
    total += target.weight;
  }
  if (first < 0) return -1;
  let draw = random() * total;
  for (let i = first; i < targets.length && targets[i]!.priority === priority; i++) {
    if ((tried & (1 << i)) !== 0 || !available(targets[i]!)) continue;
    draw -= targets[i]!.weight;
    if (draw < 0) return i;
  }
  return first; // rounding left a sliver: the first of the priority
}

/** The untried target due soonest (its cooldown ends first): where a call goes when every one is cooled down. */
export function dueSoonest(targets: readonly RouteTarget[], tried: number, dueAt: (target: RouteTarget) => number): number {
  let best = -1;
  let bestDue = Infinity;
  for (let i = 0; i < targets.length; i++) {
    if ((tried & (1 << i)) !== 0) continue;
    const due = dueAt(targets[i]!);
    if (due < bestDue) {
      best = i;
      bestDue = due;
    }
  }
  return best;
}
