import type { KeptToken, ServiceAccountTokens } from '../providers/cloud/google-token.js';
import type { RoutingConfig } from '../config.js';
import { log } from '../log.js';
import { withinTime } from '../within-time.js';
import type { RouteTarget, RoutingTable } from './targets.js';

/** How long a thread waits for its routing file's first access tokens before it takes calls or tasks. */
const FIRST_TOKENS_MS = 10_000;

/** Routes holding a Vertex AI target, with the target's kept token: a target without a token is left out of its route's calls. */
const tokenRoutes = new WeakMap<readonly RouteTarget[], ReadonlyMap<RouteTarget, KeptToken>>();

/**
 * The routing table as one HTTP thread serves it: each Vertex AI target's `apiKey` reads its service
 * account's current access token, which the thread keeps fresh in the background (a token lasts an
 * hour; the families read the key synchronously as they build a request, so it must be in hand).
 * `ready` settles once every account's first fetch has, with a token or not.
 */
export function withAccessTokens(table: RoutingTable, tokens: ServiceAccountTokens): { table: RoutingTable; ready: Promise<void> } {
  const waits: Promise<void>[] = [];
  const live = (route: readonly RouteTarget[]): readonly RouteTarget[] => {
    if (!route.some((target) => target.serviceAccount)) return route;
    const kept = new Map<RouteTarget, KeptToken>();
    const targets = Object.freeze(route.map((target) => {
      if (!target.serviceAccount) return target;
      const token = tokens.keep(target.serviceAccount);
      waits.push(token.ready);
      const withToken = Object.freeze(Object.defineProperty({ ...target }, 'apiKey', { get: () => token.current() ?? '', enumerable: true }));
      kept.set(withToken, token);
      return withToken;
    }));
    tokenRoutes.set(targets, kept);
    return targets;
  };
  const each = (routes: Readonly<Record<string, readonly RouteTarget[]>>) => Object.freeze(Object.fromEntries(Object.entries(routes).map(([id, route]) => [id, live(route)])));
  const withTokens = Object.freeze({ ...table, vendors: each(table.vendors), models: each(table.models) });
  return { table: withTokens, ready: Promise.all(waits).then(() => undefined) };
}

/**
 * `routing` with its Vertex AI targets' tokens kept fresh (withAccessTokens), once their first tokens
 * came or FIRST_TOKENS_MS passed (a token endpoint that is down leaves those targets out until it
 * answers). For each thread that calls upstreams: the HTTP threads and the task runtime.
 */
export async function routingWithTokens(routing: RoutingConfig, tokens: ServiceAccountTokens): Promise<RoutingConfig> {
  if (!routing.table) return routing;
  const live = withAccessTokens(routing.table, tokens);
  await withinTime(live.ready, FIRST_TOKENS_MS, () => new Error('timeout')).catch(() => log.warn('the routing file\'s first access tokens did not come in time'));
  return { ...routing, table: live.table };
}

/**
 * The targets of `route` that can be called now: a Vertex AI target whose token could not be had
 * (the token endpoint failing past the token's expiry) is left out, so the call goes to the others
 * as if it were cooled down. When no target has a token, the route as it is: its call fails with
 * the family's answer for a missing token, never a 401 from Vertex.
 */
export function callableTargets(route: readonly RouteTarget[]): readonly RouteTarget[] {
  const kept = tokenRoutes.get(route);
  if (!kept) return route;
  let missing = false;
  for (const token of kept.values()) if (token.current() === undefined) missing = true;
  if (!missing) return route;
  const callable = route.filter((target) => {
    const token = kept.get(target);
    return token === undefined || token.current() !== undefined;
  });
  return callable.length > 0 ? callable : route;
}
