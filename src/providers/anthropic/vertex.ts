import type { CatalogModel } from '../../catalog/model.js';
import type { ChatRequest } from '../../http/schemas/chat.js';
import type { CacheScope, UpstreamRequest, UpstreamTarget } from '../family.js';
import { vertexAuthorization, vertexModelUrl } from '../cloud/vertex.js';
import { buildAnthropicBody } from './request.js';

/** The `anthropic_version` Vertex AI takes in the body (it has no header for it). */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

type VertexCloud = Extract<NonNullable<UpstreamTarget['cloud']>, { kind: 'vertex' }>;

/**
 * Claude on Vertex AI: `rawPredict` (whole) or `streamRawPredict` (the Messages API's own SSE) on
 * the `anthropic` publisher's model (Vertex's id, such as `claude-sonnet-4-5@20250929`, from the
 * target's `model`). The Messages body without `model`, with Vertex's `anthropic_version`; the
 * service account's access token as a Bearer token.
 */
export function vertexRequest(request: ChatRequest, model: CatalogModel, stream: boolean, target: UpstreamTarget, cloud: VertexCloud, cache: CacheScope): Omit<UpstreamRequest, 'addedPromptBytes'> {
  const { model: _model, ...rest } = buildAnthropicBody(request, model, stream, cache.partition);
  return {
    url: vertexModelUrl(target.baseUrl, cloud, 'anthropic', model.upstreamModel, stream ? 'streamRawPredict' : 'rawPredict'),
    headers: { authorization: vertexAuthorization(target), 'content-type': 'application/json' },
    body: JSON.stringify({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest }),
    guarded: target.guarded === true,
  };
}
