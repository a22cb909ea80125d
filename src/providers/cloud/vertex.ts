import { ApiError } from '../../http/errors.js';
import type { UpstreamTarget } from '../family.js';

type VertexCloud = Extract<NonNullable<UpstreamTarget['cloud']>, { kind: 'vertex' }>;

/**
 * A Vertex AI publisher model's URL: `{baseUrl}/v1/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}:{method}`
 * (Google's own models under `google`, Claude under `anthropic`).
 */
export function vertexModelUrl(baseUrl: string, cloud: VertexCloud, publisher: string, model: string, method: string): string {
  // `@` is a path character: Vertex's Claude ids (`claude-haiku-4-5@20251001`) keep it as Google's own clients send it.
  const modelSegment = encodeURIComponent(model).replaceAll('%40', '@');
  return `${baseUrl}/v1/projects/${encodeURIComponent(cloud.projectId)}/locations/${encodeURIComponent(cloud.region)}/publishers/${publisher}/models/${modelSegment}:${method}`;
}

/**
 * The Authorization header of a Vertex AI call: the target's access token. A target without one (a
 * platform target whose token endpoint has not answered) is not called: a 503 the client may retry,
 * never a call Vertex would refuse with a 401.
 */
export function vertexAuthorization(target: UpstreamTarget): string {
  if (target.apiKey === '') {
    throw new ApiError(503, 'upstream_unavailable', 'The Vertex AI upstream has no access token right now (its service account\'s token endpoint has not answered); retry shortly.', null, { 'retry-after': '5' });
  }
  return `Bearer ${target.apiKey}`;
}
