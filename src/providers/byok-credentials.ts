import { withinTimeout, type Sql } from '../store/db.js';
import { ApiError } from '../http/errors.js';
import type { SealedBox } from '../auth/sealed-box.js';
import { listByok, recordByokFailure, recordByokSuccess, type ByokProvider, type ByokRow } from '../store/byok.js';
import type { UpstreamTarget } from './family.js';
import { readCloudForm, type CloudForm, type ServiceAccount } from './cloud/forms.js';
import { chosenAddresses, firstAddressProblem } from './byok-addresses.js';
import type { ServiceAccountTokens } from './cloud/google-token.js';
import { log } from '../log.js';

/** The BYOK provider whose credentials serve a vendor's models (the spec's three providers). */
const PROVIDER_OF_VENDOR: Readonly<Record<string, ByokProvider>> = Object.freeze({ openai: 'openai', anthropic: 'anthropic', gemini: 'google' });

export const byokProviderOf = (vendor: string): ByokProvider | undefined => PROVIDER_OF_VENDOR[vendor];

export interface ByokCandidate {
  readonly id: string;
  readonly label: string;
  readonly target: UpstreamTarget;
  /**
   * Set when the row cannot make a call (its Vertex token could not be obtained, its config_json is
   * unreadable): the attempt fails with this message, recorded in last_error, and the next one is tried.
   */
  readonly problem?: string;
}

/** A candidate as cached: a Vertex row gets its (separately cached) access token at each call. */
interface Prepared {
  readonly candidate: ByokCandidate;
  readonly account?: ServiceAccount;
  /** The one API key whose calls the row serves (a row a regular key made); null: every key. */
  readonly keyId: string | null;
}

/** A row's entry before the key it serves is attached. */
type RowEntry = Omit<Prepared, 'keyId'>;

interface PreparedChoice {
  readonly entries: readonly Prepared[];
  /** The choice itself when no entry needs a token. */
  readonly ready: ByokChoice | undefined;
  readonly alwaysUse: boolean;
  /**
   * Set when some row (disabled ones included) serves one key only: the choice is then narrowed to
   * the calling key per call. Lists the keys (null: every key) of the rows that forbid the fallback.
   */
  readonly scoped?: { readonly alwaysUseBy: readonly (string | null)[] };
}


/** A user's credentials for one provider at call time, in the order the spec tries them. */
export interface ByokChoice {
  readonly candidates: readonly ByokCandidate[];
  /** Some row of the provider (disabled ones included) forbids falling back to the platform credential. */
  readonly alwaysUse: boolean;
}


export const NO_BYOK: ByokChoice = Object.freeze({ candidates: Object.freeze([]), alwaysUse: false });
const NO_PREPARED: PreparedChoice = Object.freeze({ entries: Object.freeze([]), ready: NO_BYOK, alwaysUse: false });

const CACHE_MS = 30_000;
const MAX_CACHED = 10_000;

export interface ByokCredentialsOptions {
  /** How long a user's rows are served from the thread's cache (a change drops them at once). */
  readonly cacheMs?: number;
  /** FETCH_ALLOW_LOOPBACK: a row may name loopback addresses (tests, the offline demo). */
  readonly allowLoopback?: boolean;
  /** BYOK_MAX_ATTEMPTS_PER_CALL: the first rows in selection order that one call tries. */
  readonly maxAttempts?: number;
}

/**
 * BYOK credentials as the call path sees them: per (user, provider), the enabled rows with their
 * keys decrypted, cached in the thread and dropped at once by a `byok:<user>` pub/sub message (a
 * deleted row is skipped by the next call). Users without any row cost one cached lookup.
 */
export class ByokCredentials {
  /** `ready`: the choice once read, when it needs no token (most users: no row at all), served without a promise. */
  private readonly cache = new Map<string, { until: number; choice: Promise<PreparedChoice>; ready?: ByokChoice }>();

  constructor(
    private readonly sql: Sql,
    private readonly box: SealedBox,
    /** The platform's vendors: a row without its own `base_url` uses its vendor's base URL. */
    private readonly platform: Readonly<Record<string, UpstreamTarget | undefined>>,
    /** Access tokens of service accounts (Vertex AI rows), cached per account until they expire. */
    private readonly tokens: ServiceAccountTokens,
    options: ByokCredentialsOptions = {},
  ) {
    this.cacheMs = options.cacheMs ?? CACHE_MS;
    this.allowLoopback = options.allowLoopback ?? false;
    this.maxAttempts = options.maxAttempts ?? Number.POSITIVE_INFINITY;
  }

  private readonly cacheMs: number;
  private readonly allowLoopback: boolean;
  private readonly maxAttempts: number;

  private platformBaseUrl(provider: ByokProvider): string | undefined {
    const vendor = Object.keys(PROVIDER_OF_VENDOR).find((name) => PROVIDER_OF_VENDOR[name] === provider);
    return vendor === undefined ? undefined : this.platform[vendor]?.baseUrl;
  }

  forgetAll(): void {
    this.cache.clear();
  }

  /** The user's rows changed (pub/sub). */
  invalidate(userId: string): void {
    for (const key of this.cache.keys()) if (key.startsWith(`${userId}\n`)) this.cache.delete(key);
  }

  forCall(userId: string, keyId: string, provider: ByokProvider): ByokChoice | Promise<ByokChoice> {
    const key = `${userId}\n${provider}`;
    const now = Date.now();
    const cached = this.cache.get(key);
    if (cached && cached.until > now) return cached.ready ?? cached.choice.then((prepared) => this.choiceFor(prepared, keyId));
    const choice = withinTimeout(listByok(this.sql, userId, provider)).then((rows) => this.choiceOf(provider, rows), (error: Error) => {
      // Postgres unreachable: the rows read last stay in force (a change made since still drops them
      // over pub/sub), so calls go on through an outage; a user with none read here gets a retryable 503.
      if (cached) return cached.choice;
      throw new ApiError(503, 'byok_lookup_unavailable', `Your upstream credentials cannot be read right now (${error.message}); retry shortly.`, null, { 'retry-after': '1' });
    });
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    const entry: { until: number; choice: Promise<PreparedChoice>; ready?: ByokChoice } = { until: now + this.cacheMs, choice };
    this.cache.set(key, entry);
    choice.then((prepared) => { if (prepared.ready && !prepared.scoped) entry.ready = prepared.ready; }, () => {});
    // A failed read is not remembered: the next call asks Postgres again.
    choice.catch(() => this.cache.delete(key));
    return choice.then((prepared) => this.choiceFor(prepared, keyId));
  }

  /** The choice of the calling key: the account's rows and the rows made by that key, with any Vertex tokens. */
  private choiceFor(prepared: PreparedChoice, keyId: string): ByokChoice | Promise<ByokChoice> {
    const narrowed = prepared.scoped ? narrowToKey(prepared, prepared.scoped.alwaysUseBy, keyId, this.maxAttempts) : prepared;
    return narrowed.ready ?? this.withTokens(narrowed);
  }

  /** The candidates with each Vertex row's current access token (or the reason it has none). */
  private async withTokens(prepared: PreparedChoice): Promise<ByokChoice> {
    const candidates = await Promise.all(prepared.entries.map(async ({ candidate, account }): Promise<ByokCandidate> => {
      if (!account) return candidate;
      try {
        const token = await this.tokens.token(account);
        return Object.freeze({ ...candidate, target: Object.freeze({ ...candidate.target, apiKey: token }) });
      } catch (error) {
        return Object.freeze({ ...candidate, problem: (error as Error).message });
      }
    }));
    return Object.freeze({ candidates: Object.freeze(candidates), alwaysUse: prepared.alwaysUse });
  }

  /** last_used_at advances and last_error clears (not awaited: the answer does not wait for it). */
  succeeded(candidate: ByokCandidate): void {
    recordByokSuccess(this.sql, candidate.id).catch((error) => log.warn('recording a BYOK success failed', { byok: candidate.id, error }));
  }

  failed(candidate: ByokCandidate, message: string): void {
    recordByokFailure(this.sql, candidate.id, message).catch((error) => log.warn('recording a BYOK failure failed', { byok: candidate.id, error }));
  }

  /**
   * The first `maxAttempts` rows that can be tried, in order: each try is admitted without credit,
   * so the bound is what keeps one call from fanning out to every row of an account.
   */
  private async choiceOf(provider: ByokProvider, rows: readonly ByokRow[]): Promise<PreparedChoice> {
    if (rows.length === 0) return NO_PREPARED;
    // Rows come ordered by priority, then newest.
    const prepared = await Promise.all(rows.filter((row) => !row.disabled).map(async (row) => {
      const entry = await this.prepare(provider, row);
      return entry && Object.freeze({ ...entry, keyId: row.api_key_id });
    }));
    const entries = prepared.filter((entry): entry is Prepared => entry !== undefined);
    if (rows.some((row) => row.api_key_id !== null)) {
      const alwaysUseBy = rows.filter((row) => row.always_use).map((row) => row.api_key_id);
      return Object.freeze({ entries: Object.freeze(entries), ready: undefined, alwaysUse: false, scoped: Object.freeze({ alwaysUseBy }) });
    }
    return preparedChoice(entries, rows.some((row) => row.always_use), this.maxAttempts);
  }

  /**
   * One enabled row as a candidate: its key for the vendor's API, or its cloud form; undefined when it
   * has neither. The addresses its user chose are checked again here (a row stored before a rule, or
   * written around the API, never gets a connection), and its target is `guarded`: every connection
   * to it is vetted and pinned by the upstream client.
   */
  private async prepare(provider: ByokProvider, row: ByokRow): Promise<RowEntry | undefined> {
    const base = { id: row.id, label: row.label };
    const unusable = (problem: string): RowEntry => ({ candidate: { ...base, target: { baseUrl: '', apiKey: '' }, problem } });
    const apiKey = row.api_key_enc ? this.box.open(row.api_key_enc) : undefined;
    let config: Record<string, unknown> | null = null;
    try {
      config = row.config_enc ? JSON.parse(this.box.open(row.config_enc)) as Record<string, unknown> : null;
    } catch (error) {
      return unusable(`config_json cannot be read: ${(error as Error).message}`);
    }
    const read = readCloudForm(provider, config, apiKey !== undefined);
    if ('problem' in read) return unusable(`Invalid value for '${read.problem.field}': ${read.problem.message}.`);
    const form = read.form;
    if (!form && apiKey === undefined) return undefined;
    const refused = await firstAddressProblem(chosenAddresses(row.base_url, form), this.allowLoopback);
    if (refused) return unusable(`Invalid value for '${refused.field}': ${refused.message}.`);
    return form ? this.cloudEntry(base, form, apiKey) : this.keyEntry(base, provider, row.base_url, apiKey!);
  }

  /** A key for the vendor's API: at the row's own base_url (guarded), else the platform's vendor URL. */
  private keyEntry(base: { id: string; label: string }, provider: ByokProvider, ownBaseUrl: string | null, apiKey: string): RowEntry | undefined {
    const baseUrl = (ownBaseUrl ?? this.platformBaseUrl(provider) ?? '').replace(/\/+$/, '');
    return baseUrl ? { candidate: { ...base, target: Object.freeze({ baseUrl, apiKey, guarded: ownBaseUrl !== null }) } } : undefined;
  }

  /** A cloud form: its endpoint (and a Vertex row's token URI) chosen by the user, so guarded. */
  private cloudEntry(base: { id: string; label: string }, form: CloudForm, apiKey: string | undefined): RowEntry {
    switch (form.kind) {
      case 'azure':
        return { candidate: { ...base, target: Object.freeze({ baseUrl: form.endpointUrl, apiKey: apiKey!, guarded: true, cloud: Object.freeze({ kind: 'azure', deployment: form.deployment, apiVersion: form.apiVersion }) }) } };
      case 'bedrock':
        return {
          candidate: {
            ...base,
            target: Object.freeze({
              baseUrl: form.endpointUrl, apiKey: '', guarded: true,
              cloud: Object.freeze({
                kind: 'bedrock', region: form.region, accessKeyId: form.accessKeyId, secretAccessKey: form.secretAccessKey,
                ...(form.sessionToken ? { sessionToken: form.sessionToken } : {}), modelMap: Object.freeze({ ...form.modelMap }),
              }),
            }),
          },
        };
      case 'vertex':
        return {
          candidate: { ...base, target: Object.freeze({ baseUrl: form.endpointUrl, apiKey: '', guarded: true, cloud: Object.freeze({ kind: 'vertex', projectId: form.projectId, region: form.region }) }) },
          account: form.account,
        };
    }
  }
}

/** The first `maxAttempts` entries as the choice of a call. */
function preparedChoice(all: readonly Prepared[], alwaysUse: boolean, maxAttempts: number): PreparedChoice {
  const entries = all.slice(0, maxAttempts);
  const ready = entries.some((entry) => entry.account)
    ? undefined
    : Object.freeze({ candidates: Object.freeze(entries.map((entry) => entry.candidate)), alwaysUse });
  return Object.freeze({ entries: Object.freeze(entries), ready, alwaysUse });
}

/** A user's rows as one key sees them: the account's and its own, never another key's. */
function narrowToKey(prepared: PreparedChoice, alwaysUseBy: readonly (string | null)[], keyId: string, maxAttempts: number): PreparedChoice {
  const serves = (owner: string | null) => owner === null || owner === keyId;
  return preparedChoice(prepared.entries.filter((entry) => serves(entry.keyId)), alwaysUseBy.some(serves), maxAttempts);
}
