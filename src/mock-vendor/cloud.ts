// The cloud providers' forms of the vendors' APIs, as far as the gateway's BYOK cloud forms use them:
// Azure OpenAI deployments (handled in server.ts with the OpenAI route), Claude on Amazon Bedrock
// (InvokeModel and InvokeModelWithResponseStream, AWS SigV4 verified with the secret the test gave,
// the stream as AWS event-stream frames), and Google's OAuth token endpoint for service accounts
// (the JWT bearer grant, RS256 verified with the account's public key) whose tokens the Vertex AI
// routes (Gemini's in gemini.ts, Claude's in anthropic.ts) accept.
import { createHash, createHmac, randomBytes, verify } from 'node:crypto';
import type http from 'node:http';
import type { MockBehaviour } from './completion.js';
import { directivesFromMessages } from './directives.js';
import type { MockError } from './errors.js';
import { cutsBefore } from './stream.js';
import { cutPoint, playFault, type FaultBook } from './faults.js';
import { randomId } from './ids.js';
import { cacheOf, messageFrames, messageJson, planMessage, validate, type AnthropicRequest, type MockExchange } from './anthropic.js';
import {
  SIGV4_ALGORITHM, canonicalQuery, canonicalRequest, canonicalUri, signingKey, stringToSign,
} from '../providers/cloud/sigv4.js';
import { encodeEventStreamMessage } from '../providers/cloud/eventstream.js';

export interface MockCloudOptions {
  /** AWS access key id -> secret access key the Bedrock route accepts. */
  readonly awsSecrets?: Readonly<Record<string, string>>;
  /** Service account email -> its public key (PEM), for the token endpoint. */
  readonly serviceAccounts?: Readonly<Record<string, string>>;
  /** Lifetime of issued access tokens (default 3599 s, as Google). */
  readonly tokenLifetimeS?: number;
}

export const BEDROCK_PATH = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream)$/;
export const TOKEN_PATH = '/token';
const BEDROCK_VERSION = 'bedrock-2023-05-31';
const MAX_SKEW_MS = 5 * 60_000;

type ReadBody = (req: http.IncomingMessage, done: (err: MockError | undefined, text: string) => void) => void;

/** Raw body bytes (SigV4 hashes bytes, not text). */
function readRaw(req: http.IncomingMessage, done: (body: Buffer) => void): void {
  const parts: Buffer[] = [];
  req.on('data', (part: Buffer) => parts.push(part));
  req.on('end', () => done(Buffer.concat(parts)));
  req.on('error', () => {});
}

/** Bedrock's exception for an HTTP status, as its `x-amzn-errortype` names it. */
function bedrockErrorType(status: number): string {
  if (status === 429) return 'ThrottlingException';
  if (status === 503) return 'ServiceUnavailableException';
  return 'InternalServerException';
}

export class MockCloud {
  /** Set by the server once it listens: token_uri of the accounts must be `${url}/token`. */
  url = '';
  /** Token requests answered with a token. */
  tokensIssued = 0;
  private readonly tokens = new Map<string, number>();

  constructor(private readonly options: MockCloudOptions = {}) {}

  /** True for a Bearer token this mock issued and that has not expired. */
  tokenValid(authorization: string | undefined): boolean {
    const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
    const expiry = token === undefined ? undefined : this.tokens.get(token);
    return expiry !== undefined && expiry > Date.now();
  }

  /** POST /token: grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<RS256 JWT>. */
  token(req: http.IncomingMessage, exchange: MockExchange, readBody: ReadBody): void {
    const refuse = (status: number, error: string, description: string) => exchange.sendJson(status, JSON.stringify({ error, error_description: description }));
    readBody(req, (err, text) => {
      if (err) return refuse(400, 'invalid_request', err.message);
      const form = new URLSearchParams(text);
      exchange.record.body = { grant_type: form.get('grant_type') };
      if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return refuse(400, 'unsupported_grant_type', 'Invalid grant_type.');
      const parts = (form.get('assertion') ?? '').split('.');
      if (parts.length !== 3) return refuse(400, 'invalid_grant', 'Invalid JWT: not three parts.');
      let header: Record<string, unknown>;
      let claims: Record<string, unknown>;
      try {
        header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8'));
        claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
      } catch {
        return refuse(400, 'invalid_grant', 'Invalid JWT: not JSON.');
      }
      exchange.record.authorization = String(claims.iss);
      if (header.alg !== 'RS256') return refuse(400, 'invalid_grant', 'Invalid JWT: alg must be RS256.');
      const publicKey = this.options.serviceAccounts?.[String(claims.iss)];
      if (!publicKey) return refuse(401, 'invalid_client', 'The OAuth client was not found.');
      if (!verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), publicKey, Buffer.from(parts[2]!, 'base64url'))) {
        return refuse(400, 'invalid_grant', 'Invalid JWT Signature.');
      }
      const now = Date.now() / 1000;
      if (claims.aud !== `${this.url}${TOKEN_PATH}`) return refuse(400, 'invalid_grant', 'Invalid JWT: aud is not this token endpoint.');
      if (typeof claims.exp !== 'number' || typeof claims.iat !== 'number' || claims.exp < now || claims.iat > now + 60 || claims.exp - claims.iat > 3600) {
        return refuse(400, 'invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.');
      }
      if (!String(claims.scope ?? '').split(' ').includes('https://www.googleapis.com/auth/cloud-platform')) return refuse(400, 'invalid_scope', 'Invalid OAuth scope.');
      const lifetime = this.options.tokenLifetimeS ?? 3599;
      const token = `ya29.mock-${randomBytes(18).toString('base64url')}`;
      this.tokens.set(token, Date.now() + lifetime * 1000);
      this.tokensIssued++;
      exchange.sendJson(200, JSON.stringify({ access_token: token, expires_in: lifetime, token_type: 'Bearer' }));
    });
  }

  /** The SigV4 check Bedrock makes; undefined when the signature holds, else the error to send. */
  private signatureProblem(req: http.IncomingMessage, path: string, query: string, body: Buffer): { status: number; type: string; message: string } | undefined {
    const authorization = req.headers.authorization ?? '';
    const match = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(authorization);
    if (!match) return { status: 403, type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
    const [, accessKeyId, day, region, service, signedHeaders, signature] = match as unknown as string[];
    const secret = this.options.awsSecrets?.[accessKeyId!];
    if (!secret) return { status: 403, type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
    const date = String(req.headers['x-amz-date'] ?? '');
    const at = Date.parse(`${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`);
    if (!Number.isFinite(at) || Math.abs(at - Date.now()) > MAX_SKEW_MS || date.slice(0, 8) !== day) {
      return { status: 403, type: 'InvalidSignatureException', message: 'Signature expired or x-amz-date invalid.' };
    }
    if (service !== 'bedrock') return { status: 403, type: 'InvalidSignatureException', message: `Credential should be scoped to correct service: 'bedrock'.` };
    const names = signedHeaders!.split(';');
    if (!names.includes('host') || !names.includes('x-amz-date')) return { status: 403, type: 'InvalidSignatureException', message: 'host and x-amz-date must be signed.' };
    const headers: Record<string, string> = {};
    for (const name of names) headers[name] = String(req.headers[name] ?? '');
    const payloadHash = createHash('sha256').update(body).digest('hex');
    const { text } = canonicalRequest(req.method ?? 'POST', canonicalUri(path, false), canonicalQuery(query), headers, payloadHash);
    const scope = `${day}/${region}/${service}/aws4_request`;
    const expected = createHmac('sha256', signingKey(secret, day!, region!, service!)).update(stringToSign(date, scope, text)).digest('hex');
    if (expected !== signature) {
      return { status: 403, type: 'InvalidSignatureException', message: `The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. (${SIGV4_ALGORITHM})` };
    }
    return undefined;
  }

  /** POST /model/{modelId}/invoke[-with-response-stream]. */
  bedrock(req: http.IncomingMessage, res: http.ServerResponse, exchange: MockExchange, behaviour: MockBehaviour, faults: FaultBook, path: string, query: string): void {
    const match = BEDROCK_PATH.exec(path)!;
    const modelId = decodeURIComponent(match[1]!);
    const stream = match[2] === 'invoke-with-response-stream';
    const record = exchange.record;
    record.id = randomId('msg_bdrk_', 24);
    record.stream = stream;
    record.authorization = /Credential=([^/]+)\//.exec(req.headers.authorization ?? '')?.[1];
    const fail = (status: number, type: string, message: string, headers?: Record<string, string>) =>
      exchange.sendJson(status, JSON.stringify({ message }), { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, ...headers });
    readRaw(req, (raw) => {
      const problem = this.signatureProblem(req, path, query, raw);
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw.toString('utf8'));
        record.body = body;
      } catch {
        record.body = raw.toString('utf8');
        return problem ? fail(problem.status, problem.type, problem.message) : fail(400, 'ValidationException', 'Malformed input request, please reformat your input and try again.');
      }
      if (problem) return fail(problem.status, problem.type, problem.message);
      if (body.anthropic_version !== BEDROCK_VERSION) return fail(400, 'ValidationException', `Malformed input request: anthropic_version must be ${BEDROCK_VERSION}.`);
      for (const key of ['model', 'stream']) if (key in body) return fail(400, 'ValidationException', `Malformed input request: #: extraneous key [${key}] is not permitted, please reformat your input and try again.`);
      if (!modelId.includes('anthropic.')) return fail(400, 'ValidationException', 'The provided model identifier is invalid.');
      const request = { ...body, model: modelId } as AnthropicRequest;
      const invalid = validate(request);
      if (invalid) return fail(400, 'ValidationException', invalid);
      const directives = directivesFromMessages(request.messages);
      // The credential is the access key id.
      const fault = faults.meet(record.authorization, directives);
      if (fault !== undefined && playFault(fault, stream, exchange, (status, headers) => fail(status, bedrockErrorType(status), `Mock failure (${status}).`, headers))) return;
      if (directives.fail !== undefined) return fail(directives.fail, bedrockErrorType(directives.fail), `Mock failure (${directives.fail}).`);
      // Bedrock's event stream has no error event here: an `error` fault is played as a cut.
      const cutAfter = cutPoint(fault?.kind === 'error' ? { ...fault, kind: 'cut' } : fault, undefined);
      const plan = planMessage(record.id, request, directives, cacheOf(behaviour), Date.now());
      if (!stream) return exchange.sendJson(200, messageJson(plan), { 'x-amzn-requestid': record.id });
      record.status = 200;
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': record.id });
      for (const frame of messageFrames(plan)) {
        // A `cut` fault: the event stream ends, unterminated, once that many content events are out.
        if (cutAfter !== undefined && record.contentChunksWritten >= cutAfter && cutsBefore(frame)) return exchange.cut();
        const json = frame.data.slice(frame.data.indexOf('data: ') + 6).trimEnd();
        const event = JSON.parse(json) as { type: string };
        // Like Bedrock: the last event carries the invocation metrics.
        const data = event.type === 'message_stop'
          ? JSON.stringify({ ...event, 'amazon-bedrock-invocationMetrics': { inputTokenCount: plan.usage.input_tokens, outputTokenCount: plan.usage.output_tokens, invocationLatency: 1, firstByteLatency: 1 } })
          : json;
        const payload = Buffer.from(JSON.stringify({ bytes: Buffer.from(data).toString('base64'), p: 'abcdefghij' }));
        res.write(encodeEventStreamMessage({ ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' }, payload));
        if (frame.kind === 'content') record.contentChunksWritten++;
      }
      res.end();
    });
  }
}
