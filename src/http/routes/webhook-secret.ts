import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import type { SealedBox } from '../../auth/sealed-box.js';
import { previousValidUntil, rotateWebhookSecret, webhookSecretsOf, type WebhookSecrets } from '../../store/webhook-secrets.js';

// The answer carries a live secret: no cache on the way may keep it.
const NO_STORE = { 'cache-control': 'no-store' } as const;

const record = (secrets: WebhookSecrets) => ({
  secret: secrets.current,
  created_at: secrets.createdAt.toISOString(),
  rotated_at: secrets.rotatedAt?.toISOString() ?? null,
});

/**
 * `GET /api/v1/webhook-secret` (made on first read) and `POST /api/v1/webhook-secret/rotate`: the
 * secret that signs the user's task callbacks. A JWT or a management key (ROUTE_CREDENTIALS): a regular
 * key runs in applications and must not be able to forge or redirect the account's callbacks.
 */
export function webhookSecretRoutes(services: Services, box: SealedBox) {
  const { auth, config, sql } = services;
  const caller = (ctx: RequestContext) => auth.jwtOrApiKey(ctx, config.jwtSecret);

  const get = async (ctx: RequestContext): Promise<void> => {
    const userId = await caller(ctx);
    ctx.reply.json(200, record(await webhookSecretsOf(sql, box, userId)), NO_STORE);
  };

  const rotate = async (ctx: RequestContext): Promise<void> => {
    const userId = await caller(ctx);
    const secrets = await rotateWebhookSecret(sql, box, userId);
    // Null when the rotation made the user's first secret: no older one signs beside it.
    ctx.reply.json(200, { ...record(secrets), previous_valid_until: previousValidUntil(secrets)?.toISOString() ?? null }, NO_STORE);
  };

  return { get, rotate };
}
