import type { RoutingConfig } from '../config.js';
import type { RateLimitHeaders } from '../admission/admission.js';
import { ApiError } from '../http/errors.js';
import { log } from '../log.js';
import { callableTargets } from './access-tokens.js';
import { Breakers, type BreakerState } from './breakers.js';
import { dueSoonest, nextTarget } from './choice.js';
import { retryAfterMs } from './retryable.js';
import type { RouteTarget, VirtualModel } from './targets.js';
import type { UpstreamCloud } from '../providers/family.js';

/** What the routing layer reports, by target name (never a credential). */
export interface RoutingEvents {
  /** One attempt ended: `served` (the target answered, whatever it said) or `failed` (a retryable failure). */
  attempt(target: string, outcome: 'served' | 'failed'): void;
  /** An attempt after a call's first. */
  retry(model: string): void;
  /** A call went on from one model to the next of its chain (`models`, a virtual model). */
  fallback(from: string, to: string): void;
  breaker(target: string, to: BreakerState): void;
}

/** A model as routing reads it. */
interface RoutedModel {
  readonly id: string;
  readonly upstreamVendor: string;
}

/**
 * The platform targets of each catalog model (the routing file's, else the vendor's one
 * `<VENDOR>_API_KEY` target) and the choice among them: by priority, then by weight, skipping the
 * targets whose breaker is open. One per HTTP thread; the breakers' memory is the process's.
 */
export class Routing {
  readonly breakers: Breakers | undefined;
  private readonly defaults = new Map<string, readonly RouteTarget[]>();
  /** Each route's targets for media calls, by the cloud forms the call's API speaks, made once per route. */
  private readonly plain = new WeakMap<readonly RouteTarget[], Map<string, readonly RouteTarget[]>>();
  /** Every target of the file by breaker slot (for the breaker gauge and events). */
  readonly targets: readonly RouteTarget[];

  constructor(readonly config: RoutingConfig, vendors: Readonly<Record<string, { readonly baseUrl: string; readonly apiKey: string } | undefined>>,
    memory: SharedArrayBuffer | undefined, private readonly events: RoutingEvents, now: () => number = Date.now, private readonly random: () => number = Math.random) {
    for (const [name, vendor] of Object.entries(vendors)) {
      if (vendor) this.defaults.set(name, Object.freeze([Object.freeze({ name, vendor: name, baseUrl: vendor.baseUrl, apiKey: vendor.apiKey, priority: 0, weight: 1, slot: -1 })]));
    }
    const table = config.table;
    const all: RouteTarget[] = [];
    if (table) for (const route of [...Object.values(table.vendors), ...Object.values(table.models)]) for (const target of route) all[target.slot] = target;
    this.targets = all;
    this.breakers = table && memory ? new Breakers(memory, table.slots, { failures: config.breakerFailures, cooldownMs: config.breakerCooldownMs, probeMs: config.deadlineMs }, now,
      (slot, to) => {
        const name = all[slot]?.name ?? String(slot);
        events.breaker(name, to);
        log.info('routing target breaker', { target: name, state: to });
      }) : undefined;
  }

  /**
   * The model's targets that speak its vendor's own API, or one of `cloudForms` (the cloud forms its
   * media API also speaks: Veo's tasks on Vertex AI): what image, video and audio calls may use,
   * highest priority first. Other cloud forms serve chat only. Undefined when none is left.
   */
  mediaTargetsOf(model: RoutedModel, cloudForms: readonly CloudKind[] = NO_CLOUD_FORMS): readonly RouteTarget[] | undefined {
    const targets = this.targetsOf(model);
    const speaks = (target: RouteTarget) => target.cloud === undefined ? target.serviceAccount === undefined : cloudForms.includes(target.cloud.kind);
    if (!targets || targets.every(speaks)) return targets;
    let byForms = this.plain.get(targets);
    if (byForms === undefined) this.plain.set(targets, byForms = new Map());
    const formsKey = cloudForms.join(',');
    let plain = byForms.get(formsKey);
    if (plain === undefined) byForms.set(formsKey, plain = Object.freeze(targets.filter(speaks)));
    return plain.length > 0 ? plain : undefined;
  }

  /**
   * The media target named `name` among the model's (the one that accepted a task, which polls and
   * cancels it); undefined when the routing file no longer has it.
   */
  mediaTargetNamed(model: RoutedModel, name: string, cloudForms?: readonly CloudKind[]): RouteTarget | undefined {
    return this.mediaTargetsOf(model, cloudForms)?.find((target) => target.name === name);
  }

  /** The model's targets that can be called now (callableTargets), highest priority first; undefined when its vendor is not configured. */
  targetsOf(model: RoutedModel): readonly RouteTarget[] | undefined {
    const table = this.config.table;
    if (table) {
      const route = table.models[model.id] ?? table.vendors[model.upstreamVendor];
      if (route) return callableTargets(route);
    }
    return this.defaults.get(model.upstreamVendor);
  }

  /**
   * The first target of a call, decided synchronously (no allocation for a one-target route). Not
   * taken yet: the call takes it with `take` when it sends, after admission (a call refused there
   * must not hold a half-open target's probe).
   */
  first(targets: readonly RouteTarget[]): number {
    if (targets.length === 1) return 0;
    const breakers = this.breakers;
    if (!breakers) return nextTarget(targets, 0, () => true, this.random);
    const index = nextTarget(targets, 0, (target) => target.slot < 0 || breakers.available(target.slot), this.random);
    // Never refused only because every breaker is open: the target due soonest gets the call.
    return index >= 0 ? index : dueSoonest(targets, 0, (target) => target.slot < 0 ? 0 : breakers.dueAt(target.slot));
  }

  /**
   * Takes the call's first target as it is sent: the index of the target the call goes to, `index`
   * itself when it may take the call (closed, or its probe won) or when no other may take it.
   */
  take(targets: readonly RouteTarget[], index: number): number {
    const slot = targets[index]!.slot;
    const breakers = this.breakers;
    if (slot < 0 || !breakers || breakers.claim(slot)) return index;
    const other = this.pick(targets, 1 << index);
    if (other >= 0) return other;
    breakers.claim(slot, true);
    return index;
  }

  /**
   * The next target (its index) for a call that has tried the targets in `tried`: the one of the
   * highest priority, drawn by weight, that may take a call (a half-open one only when this call
   * wins its probe). -1: none left.
   */
  pick(targets: readonly RouteTarget[], tried: number): number {
    const breakers = this.breakers;
    if (!breakers) return nextTarget(targets, tried, () => true, this.random);
    const available = (target: RouteTarget) => target.slot < 0 || breakers.available(target.slot);
    for (;;) {
      const index = nextTarget(targets, tried, available, this.random);
      if (index < 0) return -1;
      const slot = targets[index]!.slot;
      if (slot < 0 || breakers.claim(slot)) return index;
      tried |= 1 << index; // another call took its probe meanwhile
    }
  }

  /** An attempt on `target` got an answer (success, or an error another target would repeat). */
  answered(target: RouteTarget): void {
    this.events.attempt(target.name, 'served');
    if (target.slot >= 0) this.breakers?.succeeded(target.slot);
  }

  /** A retryable failure of an attempt on `target`: counted, logged, its breaker told. */
  failed(target: RouteTarget, model: string, attempt: number, error: ApiError): void {
    this.events.attempt(target.name, 'failed');
    log.warn('upstream attempt failed', { target: target.name, model, attempt, status: error.status, code: error.code, error: error.message });
    if (target.slot >= 0) this.breakers?.failed(target.slot, error.status === 429 ? retryAfterMs(error, Date.now()) : undefined);
  }

  /** A call goes on to its next attempt. */
  retried(model: string): void {
    this.events.retry(model);
  }

  /** A call goes on from model `from`, whose targets all failed retryably, to `to`. */
  fellBack(from: string, to: string): void {
    this.events.fallback(from, to);
    log.info('routing fell back to the next model', { from, to });
  }

  /** The routing file's virtual models by name (none without a file). */
  get virtualModels(): Readonly<Record<string, VirtualModel>> | undefined {
    return this.config.table?.virtualModels;
  }
}

type CloudKind = UpstreamCloud['kind'];
const NO_CLOUD_FORMS: readonly CloudKind[] = Object.freeze([]);

/** The response header that says how many upstream attempts a call took, the caller's own credentials' first (1 when the first served). */
export const ATTEMPTS_HEADER = 'x-gateway-attempts';

/** The response header of a whole (non-streamed) answer that says what the call is charged, in USD (its `usage.cost`). */
export const COST_HEADER = 'x-gateway-cost';

/** The headers of a paid call's answer: its key's rate window, its request id and its upstream attempts. */
export type CallHeaders = RateLimitHeaders & {
  readonly 'x-request-id': string;
  readonly [ATTEMPTS_HEADER]: string;
};

/**
 * A call's answer headers, written out field by field: V8 copies a header record by spread (`{ ...rate,
 * 'x-request-id': id }`) in about a microsecond, and this is on every call's path.
 */
export function callHeaders(rate: RateLimitHeaders, requestId: string, attempts: number): CallHeaders {
  return {
    'x-ratelimit-limit-requests': rate['x-ratelimit-limit-requests'],
    'x-ratelimit-remaining-requests': rate['x-ratelimit-remaining-requests'],
    'x-ratelimit-reset-requests': rate['x-ratelimit-reset-requests'],
    'x-request-id': requestId,
    [ATTEMPTS_HEADER]: String(attempts),
  };
}

/** A whole answer's headers: its call headers and its charge in USD, field by field (a spread costs about a microsecond). */
export function answerHeaders(call: CallHeaders, costUsd: number): Readonly<Record<string, string>> {
  return {
    'x-ratelimit-limit-requests': call['x-ratelimit-limit-requests'],
    'x-ratelimit-remaining-requests': call['x-ratelimit-remaining-requests'],
    'x-ratelimit-reset-requests': call['x-ratelimit-reset-requests'],
    'x-request-id': call['x-request-id'],
    [ATTEMPTS_HEADER]: call[ATTEMPTS_HEADER],
    [COST_HEADER]: String(costUsd),
  };
}

/** An error answer of a routed call, with the attempts it took. */
export function withAttempts(error: ApiError, attempts: number): ApiError {
  return new ApiError(error.status, error.code, error.message, error.param, { ...error.headers, [ATTEMPTS_HEADER]: String(attempts) });
}

/**
 * What the client gets when every attempt failed retryably: the last 429 as it is (with its
 * Retry-After); else 503 naming the last upstream error. A one-target route keeps its error as it is.
 */
export function exhausted(last: ApiError, attempts: number, routed: boolean): ApiError {
  if (!routed || last.status === 429) return last;
  return new ApiError(503, 'upstream_unavailable', `No upstream could serve the call after ${attempts} attempt${attempts === 1 ? '' : 's'}; the last: ${last.message}`);
}

/** A model as a target serves it: the catalog's, or a copy with the target's own upstream model id (made once per pair). */
export class UpstreamModels {
  private readonly copies = new WeakMap<object, Map<string, unknown>>();

  of<M extends { readonly upstreamModel: string }>(model: M, target: RouteTarget): M {
    const id = target.model;
    if (id === undefined || id === model.upstreamModel) return model;
    let byId = this.copies.get(model);
    if (!byId) this.copies.set(model, byId = new Map());
    let copy = byId.get(id) as M | undefined;
    if (!copy) byId.set(id, copy = Object.freeze({ ...model, upstreamModel: id }));
    return copy;
  }
}
