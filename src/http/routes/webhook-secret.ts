import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import type { SealedBox } from '../../auth/sealed-box.js';
import { PREVIOUS_SECRET_MS, rotateWebhookSecret, webhookSecretsOf, type WebhookSecrets } from '../../store/webhook-secrets.js';

const record = (secrets: WebhookSecrets) => ({
  secret: secrets.current,
  created_at: secrets.createdAt.toISOString(),
  rotated_at: secrets.rotatedAt?.toISOString() ?? null,
});

/**
 * `GET /api/v1/webhook-secret` (made on first read) and `POST /api/v1/webhook-secret/rotate`: the
 * secret that signs the user's task callbacks. JWT or API key, as the BYOK endpoints.
 */
export function webhookSecretRoutes(services: Services, box: SealedBox) {
  const { auth, config, sql } = services;

  const get = async (ctx: RequestContext): Promise<void> => {
    const userId = await auth.jwtOrApiKey(ctx, config.jwtSecret);
    ctx.reply.json(200, record(await webhookSecretsOf(sql, box, userId)));
  };

  const rotate = async (ctx: RequestContext): Promise<void> => {
    const userId = await auth.jwtOrApiKey(ctx, config.jwtSecret);
    const secrets = await rotateWebhookSecret(sql, box, userId);
    ctx.reply.json(200, { ...record(secrets), previous_valid_until: new Date(secrets.rotatedAt!.getTime() + PREVIOUS_SECRET_MS).toISOString() });
  };

  return { get, rotate };
}
