// The webhook secret that signs task callbacks: shown only on request, rotated after a confirmation.
import { useState } from 'preact/hooks';
import { useApi } from '../api.js';
import { ConfirmDialog, CopyButton, ErrorAlert, PageTitle, useAction } from '../components.js';
import { dateTime } from '../format.js';

type WebhookSecret = { secret: string; created_at: string; rotated_at: string | null; previous_valid_until?: string | null };

export function WebhookPage() {
  const api = useApi();
  const [secret, setSecret] = useState<WebhookSecret | null>(null);
  const [confirming, setConfirming] = useState(false);
  const action = useAction();
  const reveal = () => void action.run(async () => setSecret(await api.get<WebhookSecret>('/api/v1/webhook-secret')));
  const rotate = () => {
    setConfirming(false);
    void action.run(async () => setSecret(await api.post<WebhookSecret>('/api/v1/webhook-secret/rotate')));
  };
  return (
    <>
      <PageTitle>Webhook</PageTitle>
      <p>
        Task callbacks (the <code>callback_url</code> of a video, speech or music task) are signed with this secret (Standard Webhooks), so your server can check they come from the
        gateway.
      </p>
      <section class="panel" aria-labelledby="webhook-secret-title">
        <h2 id="webhook-secret-title">Signing secret</h2>
        {secret ? (
          <>
            <div class="secret">
              <code id="webhook-secret" data-testid="webhook-secret">
                {secret.secret}
              </code>
              <CopyButton text={secret.secret} targetId="webhook-secret" />
            </div>
            <p class="muted small">
              Created {dateTime(secret.created_at)}
              {secret.rotated_at ? `, rotated ${dateTime(secret.rotated_at)}` : ''}.
            </p>
            {secret.previous_valid_until && <p role="status">The previous secret keeps signing beside this one until {dateTime(secret.previous_valid_until)}.</p>}
            <button type="button" onClick={() => setSecret(null)}>
              Hide
            </button>
          </>
        ) : (
          <button type="button" class="primary" onClick={reveal} disabled={action.busy}>
            Reveal secret
          </button>
        )}
        <button type="button" class="danger" onClick={() => setConfirming(true)} disabled={action.busy}>
          Rotate secret
        </button>
        <ErrorAlert error={action.error} />
      </section>
      <ConfirmDialog open={confirming} title="Rotate the webhook secret?" confirmLabel="Rotate" danger onConfirm={rotate} onCancel={() => setConfirming(false)}>
        <p>A new secret signs callbacks from now on. The old one keeps signing beside it for 24 hours, so update your server within that time.</p>
      </ConfirmDialog>
    </>
  );
}
