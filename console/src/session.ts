// The signed-in session: a short-lived dashboard JWT kept in memory only (never in Web Storage),
// minted from the HttpOnly session cookie by POST /auth/session and minted again shortly before it expires.

export type SessionUser = { id: string; email: string | null };

export type SessionState =
  | { kind: 'loading' }
  | { kind: 'signed-in'; user: SessionUser }
  | { kind: 'signed-out'; ended: boolean }
  | { kind: 'unavailable' }
  | { kind: 'failed'; message: string };

/** An answer of the API that was not a success, carrying the API's own message. */
export class ApiFailure extends Error {
  constructor(readonly status: number, readonly code: string | null, message: string) {
    super(message);
    this.name = 'ApiFailure';
  }
}

type SessionAnswer = { token: string; expires_in: number; expires_at?: string; user?: SessionUser };

/** Mint again this long before the token expires (or at 80% of its life, whichever is earlier). */
const REFRESH_MARGIN_MS = 60_000;

/** Reads the error envelope (docs/errors.md) of a failed answer; an answer that is not one gets a plain message. */
export async function failureOf(response: Response): Promise<ApiFailure> {
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: the status speaks for itself
  }
  const envelope = (body ?? {}) as { msg?: unknown; message?: unknown; error?: { message?: unknown; code?: unknown } };
  const message = [envelope.msg, envelope.error?.message, envelope.message].find((text) => typeof text === 'string' && text !== '');
  const code = typeof envelope.error?.code === 'string' ? envelope.error.code : null;
  return new ApiFailure(response.status, code, (message as string | undefined) ?? `The gateway answered ${response.status} ${response.statusText}.`.replace(' .', '.'));
}

export class Session {
  private token: string | null = null;
  private refreshTimer: ReturnType<typeof setTimeout> | undefined;
  private minting: Promise<boolean> | null = null;

  constructor(private readonly onChange: (state: SessionState) => void) {}

  async start(): Promise<void> {
    this.onChange({ kind: 'loading' });
    await this.mint();
  }

  /** One POST /auth/session at a time; true when a token is held afterwards. */
  private mint(): Promise<boolean> {
    this.minting ??= this.mintOnce().finally(() => {
      this.minting = null;
    });
    return this.minting;
  }

  private async mintOnce(): Promise<boolean> {
    let response: Response;
    let answer: SessionAnswer | null = null;
    try {
      response = await fetch('/auth/session', { method: 'POST', credentials: 'same-origin', headers: { accept: 'application/json' } });
      if (response.ok) answer = (await response.json()) as SessionAnswer;
    } catch {
      this.forget();
      this.onChange({ kind: 'failed', message: 'The gateway cannot be reached, or answered something that is not a session. Check your connection and try again.' });
      return false;
    }
    if (answer) {
      this.token = answer.token;
      this.schedule(answer);
      this.onChange({ kind: 'signed-in', user: answer.user ?? { id: '', email: null } });
      return true;
    }
    const failure = await failureOf(response);
    this.forget();
    if (failure.status === 401) this.onChange({ kind: 'signed-out', ended: failure.code === 'session_ended' });
    else if (failure.status === 404) this.onChange({ kind: 'unavailable' });
    else this.onChange({ kind: 'failed', message: failure.message });
    return false;
  }

  private schedule(answer: SessionAnswer): void {
    clearTimeout(this.refreshTimer);
    const lifeMs = answer.expires_at ? Date.parse(answer.expires_at) - Date.now() : answer.expires_in * 1000;
    const delay = Math.max(5_000, Math.min(lifeMs - REFRESH_MARGIN_MS, lifeMs * 0.8));
    this.refreshTimer = setTimeout(() => void this.mint(), delay);
  }

  private forget(): void {
    this.token = null;
    clearTimeout(this.refreshTimer);
  }

  /**
   * A call of the management API with the session's token. A 401 mints a new token and retries once;
   * a session that ended (signed out elsewhere) shows the signed-out page.
   */
  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let response = await this.send(method, path, body);
    if (response.status === 401) {
      const failure = await failureOf(response);
      if (failure.code === 'session_ended') {
        this.forget();
        this.onChange({ kind: 'signed-out', ended: true });
        throw failure;
      }
      if (!(await this.mint())) throw failure;
      response = await this.send(method, path, body);
    }
    if (!response.ok) throw await failureOf(response);
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  private send(method: string, path: string, body: unknown): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    return fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  }

  async signOut(): Promise<void> {
    try {
      await fetch('/auth/logout', { method: 'POST', credentials: 'same-origin' });
    } finally {
      this.forget();
      this.onChange({ kind: 'signed-out', ended: false });
    }
  }
}
