/** What one settled inference call leaves behind, carried on the user's ledger stream (whose key names the user) to Postgres. */
export interface LedgerEvent {
  readonly keyId: string;
  readonly model: string;
  readonly endpoint: string;
  readonly stream: boolean;
  readonly status: number;
  readonly errorCode: string | null;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  readonly reasoningTokens: number;
  readonly reservedNano: string;
  readonly startedAtMs: number;
  readonly durationMs: number;
  readonly ttfbMs: number | null;
  readonly clientAborted: boolean;
  /**
   * Upstream attempts the call made (its caller's own credentials, then the platform targets). Absent
   * from an upload's event and from events of gateways older than the field: written as 1.
   */
  readonly attempts?: number;
  /** Served with the caller's own upstream credential (BYOK); written only when true. */
  readonly ownCredential?: boolean;
  /** The trace the call (or task) belongs to, 32 lowercase hex digits; written only while tracing is on. */
  readonly traceId?: string;
}
