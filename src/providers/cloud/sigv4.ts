import { createHash, createHmac } from 'node:crypto';

/**
 * AWS Signature Version 4 for a request with a body (the header form, as AWS's "Create a signed AWS
 * API request" describes it): canonical request, string to sign, signing key, signature. Pure; the
 * clock comes in as `now`.
 */
export interface SigV4Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
}

export interface SigV4Request {
  readonly method: string;
  /** The URL as sent: path segments already percent-encoded once (e.g. `%3A` for `:`). */
  readonly url: string;
  /** Headers to sign besides `host` and `x-amz-date` (which are added); names in any case. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Buffer;
  readonly region: string;
  readonly service: string;
  /** S3 encodes the path once in the canonical request; every other service twice. */
  readonly singleEncodePath?: boolean;
  /** Also send (and sign) `x-amz-content-sha256` (S3 requires it; other services accept it). */
  readonly contentSha256Header?: boolean;
}

export const SIGV4_ALGORITHM = 'AWS4-HMAC-SHA256';

const sha256Hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/** `20150830T123600Z` */
export const amzDate = (now: Date) => now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');

/** RFC 3986 encoding as AWS wants it: everything but unreserved characters, upper-case hex. */
export function awsUriEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The canonical URI: each segment of the path as sent encoded once more (twice in all), or as sent for S3. */
export function canonicalUri(path: string, singleEncode: boolean): string {
  if (path === '') return '/';
  return singleEncode ? path : path.split('/').map((segment) => awsUriEncode(segment)).join('/');
}

/** Query parameters sorted by encoded name then value, each encoded. */
export function canonicalQuery(search: string): string {
  const params = new URLSearchParams(search);
  const pairs: [string, string][] = [];
  for (const [name, value] of params) pairs.push([awsUriEncode(name), awsUriEncode(value)]);
  pairs.sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  return pairs.map(([name, value]) => `${name}=${value}`).join('&');
}

/** Lower-case names, trimmed values with inner runs of spaces collapsed, sorted by name. */
export function canonicalHeaders(headers: Readonly<Record<string, string>>): { canonical: string; signed: string } {
  const entries = Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value.trim().replace(/\s+/g, ' ')] as const);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { canonical: entries.map(([name, value]) => `${name}:${value}\n`).join(''), signed: entries.map(([name]) => name).join(';') };
}

export function canonicalRequest(method: string, uri: string, query: string, headers: Readonly<Record<string, string>>, payloadHash: string): { text: string; signedHeaders: string } {
  const { canonical, signed } = canonicalHeaders(headers);
  return { text: `${method}\n${uri}\n${query}\n${canonical}\n${signed}\n${payloadHash}`, signedHeaders: signed };
}

export function stringToSign(date: string, scope: string, canonical: string): string {
  return `${SIGV4_ALGORITHM}\n${date}\n${scope}\n${sha256Hex(canonical)}`;
}

export function signingKey(secretAccessKey: string, day: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, day), region), service), 'aws4_request');
}

/**
 * The headers that sign `request`: `x-amz-date`, `authorization` (and `x-amz-security-token` for
 * temporary credentials, `x-amz-content-sha256` when asked). `host` is signed but not returned: the
 * HTTP client sends it from the URL.
 */
export function signSigV4(request: SigV4Request, credentials: SigV4Credentials, now: Date): Record<string, string> {
  const url = new URL(request.url);
  const date = amzDate(now);
  const day = date.slice(0, 8);
  const payloadHash = sha256Hex(request.body);
  const added: Record<string, string> = { 'x-amz-date': date };
  if (request.contentSha256Header) added['x-amz-content-sha256'] = payloadHash;
  if (credentials.sessionToken) added['x-amz-security-token'] = credentials.sessionToken;
  const toSign: Record<string, string> = { host: url.host };
  for (const [name, value] of Object.entries(request.headers)) toSign[name.toLowerCase()] = value;
  Object.assign(toSign, added);
  const { text, signedHeaders } = canonicalRequest(
    request.method, canonicalUri(url.pathname, request.singleEncodePath === true), canonicalQuery(url.search), toSign, payloadHash,
  );
  const scope = `${day}/${request.region}/${request.service}/aws4_request`;
  const signature = createHmac('sha256', signingKey(credentials.secretAccessKey, day, request.region, request.service))
    .update(stringToSign(date, scope, text)).digest('hex');
  return { ...added, authorization: `${SIGV4_ALGORITHM} Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}` };
}
