/**
 * Small HTTP tools for edge-case tests: raw node:http requests (fresh connection each, chunked
 * uploads), the error-envelope check, Prometheus text parsing, SSE parsing, JWT forging, and calls run
 * a few at a time.
 */
import http from 'node:http';
import { createHmac } from 'node:crypto';
import type { Test } from 'tap';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

export interface RawRequestOptions {
  method?: string;
  headers?: Record<string, string>;
  /** Sent in one piece with a Content-Length (unless `chunks` is given). */
  body?: string | Buffer;
  /** Sent piece by piece with Transfer-Encoding: chunked (no Content-Length). */
  chunks?: (string | Buffer)[];
  timeoutMs?: number;
}

/** One request on a fresh TCP connection (no keep-alive agent), so many calls spread over threads. */
export function rawRequest(url: string, options: RawRequestOptions = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { connection: 'close', ...options.headers };
    if (options.body !== undefined && options.chunks === undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    const req = http.request(url, { method: options.method ?? 'GET', headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let body: unknown = text;
        try { body = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
      });
      res.on('error', reject);
    });
    req.setTimeout(options.timeoutMs ?? 15_000, () => req.destroy(new Error(`request to ${url} timed out`)));
    // A server may answer (413) before it read everything we send; a reset after that is not a failure.
    let answered = false;
    req.on('response', () => { answered = true; });
    req.on('error', (error) => { if (!answered) reject(error); });
    if (options.chunks !== undefined) {
      const chunks = options.chunks;
      let i = 0;
      const next = (): void => {
        if (answered || req.destroyed) return;
        if (i >= chunks.length) { req.end(); return; }
        req.write(chunks[i++]!, () => setTimeout(next, 5));
      };
      next();
    } else {
      req.end(options.body);
    }
  });
}

/** Asserts the gateway's one error envelope: `{code, msg, error: {message, type, code, param}}`. */
export function assertEnvelope(t: Test, response: { status: number; body: any }, status: number, code?: string, label = ''): void {
  const prefix = label ? `${label}: ` : '';
  t.equal(response.status, status, `${prefix}HTTP status ${status}`);
  const body = response.body;
  t.type(body, 'object', `${prefix}JSON body`);
  if (!body || typeof body !== 'object') return;
  t.equal(body.code, status, `${prefix}integer code equals the status`);
  t.ok(Number.isInteger(body.code), `${prefix}code is an integer`);
  t.type(body.msg, 'string', `${prefix}msg is a string`);
  t.ok(body.msg.length > 0, `${prefix}msg is not empty`);
  t.type(body.error, 'object', `${prefix}error object`);
  if (!body.error || typeof body.error !== 'object') return;
  t.type(body.error.message, 'string', `${prefix}error.message`);
  t.type(body.error.type, 'string', `${prefix}error.type`);
  t.type(body.error.code, 'string', `${prefix}error.code is a machine code`);
  t.ok('param' in body.error, `${prefix}error.param present`);
  if (code !== undefined) t.equal(body.error.code, code, `${prefix}error.code ${code}`);
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses Prometheus text exposition into samples (HELP/TYPE lines are skipped). */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    if (match[3]) {
      for (const pair of match[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    }
    samples.push({ name: match[1]!, labels, value: Number(match[4]) });
  }
  return samples;
}

/** Sum of the samples of `name` whose labels include `where`. */
export function sumSamples(samples: Sample[], name: string, where: Record<string, string> = {}): number {
  let total = 0;
  for (const sample of samples) {
    if (sample.name !== name) continue;
    if (Object.entries(where).every(([k, v]) => sample.labels[k] === v)) total += sample.value;
  }
  return total;
}

/** The JSON payloads of `data:` lines of an SSE body (`[DONE]` kept as the string). */
export function sseEvents(text: string): unknown[] {
  const events: unknown[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    for (const line of block.split(/\r?\n/)) {
      if (!line.startsWith('data:')) continue;
      const data = line.slice(5).trim();
      events.push(data === '[DONE]' ? data : JSON.parse(data));
    }
  }
  return events;
}

/** An HS256 JWT signed with any secret (to forge tokens the gateway must refuse). */
export function forgeJwt(secret: string, claims: Record<string, unknown>): string {
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const signature = createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url');
  return `${header}.${payload}.${signature}`;
}

/** Decodes a JWT's payload without verifying it. */
export function jwtPayload(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns true or the deadline passes; returns the last result. */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 5000, everyMs = 25): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > until) return false;
    await sleep(everyMs);
  }
}

/** A JWT secret for test gateways (pass `env: { JWT_SECRET: TEST_JWT_SECRET }`), so tests can mint tokens without a CLI process. */
export const TEST_JWT_SECRET = 'test-jwt-secret-for-http-tools-0123456789';

/** A dashboard JWT for `sub`, signed with TEST_JWT_SECRET (what `gateway token` prints). */
export function mintToken(sub: string, ttlSeconds = 3600): string {
  const now = Math.floor(Date.now() / 1000);
  return forgeJwt(TEST_JWT_SECRET, { sub, iat: now, exp: now + ttlSeconds });
}

/** Like `gateway.user()`, but the JWT is minted locally: one CLI process (the top-up) instead of two. */
export async function fastUser(gateway: { topup(user: string, usd: string): Promise<void>; createKey(token: string): Promise<string> }, name: string, usd: string): Promise<{ token: string; key: string }> {
  const token = mintToken(name);
  if (usd !== '0') await gateway.topup(name, usd);
  return { token, key: await gateway.createKey(token) };
}

/** The id of the caller's newest API key (GET /api/v1/api-keys lists newest first). */
export async function newestKeyId(gatewayUrl: string, token: string): Promise<string> {
  const response = await rawRequest(`${gatewayUrl}/api/v1/api-keys`, { headers: { authorization: `Bearer ${token}` } });
  const [record] = response.body as { id: string }[];
  if (!record) throw new Error(`no API key listed: ${response.status}`);
  return record.id;
}

/** PUT /api/v1/api-keys/{id} that must succeed; returns the masked record. */
export async function updateKey(gatewayUrl: string, token: string, id: string, changes: Record<string, unknown>): Promise<any> {
  const response = await rawRequest(`${gatewayUrl}/api/v1/api-keys/${id}`, {
    method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(changes),
  });
  if (response.status !== 200) throw new Error(`PUT api-key ${JSON.stringify(changes)}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

/** Runs `count` calls of `call`, `concurrency` at a time; their results in order. */
export async function many<T>(count: number, concurrency: number, call: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const i = next++;
      results[i] = await call(i);
    }
  }));
  return results;
}
