import type { ServiceAccount } from '../providers/cloud/forms.js';
import type { UpstreamCloud } from '../providers/family.js';

/**
 * One platform upstream a catalog model may be served by: a vendor's credential at a base URL,
 * optionally a cloud form, optionally the upstream's own model id. Plain data (it travels to the
 * HTTP threads inside the config); `name` is what logs and metrics show, never the credential.
 */
export interface RouteTarget {
  /** Unique in the routing file: the label of its metrics, logs and breaker. */
  readonly name: string;
  /** The vendor whose defaults (base URL, key) it starts from, as `<VENDOR>_API_KEY` names it. */
  readonly vendor: string;
  readonly baseUrl: string;
  /** The key; for a Vertex AI target, its service account's current access token (each HTTP thread keeps it: access-tokens.ts). */
  readonly apiKey: string;
  readonly cloud?: UpstreamCloud;
  /** A Vertex AI target's service account, whose access tokens are its key. */
  readonly serviceAccount?: ServiceAccount;
  /**
   * An address the operator did not write (a Vertex AI target's endpoint derived from its region):
   * vetted and pinned on every connection, as a BYOK row's (UpstreamTarget.guarded).
   */
  readonly guarded?: boolean;
  /** The upstream's model id when it differs from the catalog's (`upstream_model` of the model). */
  readonly model?: string;
  /** Higher is tried first (as a BYOK row's priority). */
  readonly priority: number;
  /** Share of the calls among targets of the same priority. */
  readonly weight: number;
  /** An attempt with no response head within this is abandoned (a retryable failure); unset: the upstream timeouts only. */
  readonly headTimeoutMs?: number;
  /** Its breaker's slot in the process's shared breaker memory. */
  readonly slot: number;
}

/** A name of the operator's that stands for an ordered list of catalog models (tried in order, as a request's `models`). */
export interface VirtualModel {
  readonly models: readonly string[];
  readonly description?: string;
}

/** The routing file as the gateway uses it: targets by vendor (key pools) and by catalog model id, and virtual models by name. */
export interface RoutingTable {
  readonly vendors: Readonly<Record<string, readonly RouteTarget[]>>;
  readonly models: Readonly<Record<string, readonly RouteTarget[]>>;
  readonly virtualModels: Readonly<Record<string, VirtualModel>>;
  /** Breaker slots in use (every target of the file has one). */
  readonly slots: number;
}

/** Targets of one route at most (a call's tried targets are a bit set). */
export const MAX_TARGETS_PER_ROUTE = 32;

/** Targets by priority, highest first; the order of the file within a priority (stable sort). */
export function byPriority(targets: readonly RouteTarget[]): readonly RouteTarget[] {
  return Object.freeze([...targets].sort((a, b) => b.priority - a.priority));
}
