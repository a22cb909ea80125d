// API keys: create with every field of the spec (the secret shown once), list masked and newest first,
// edit any field, disable and enable, revoke after a confirmation. The list's `full_key` is never shown.
import { useEffect, useRef, useState } from 'preact/hooks';
import { segment, useApi, useKeys, type ApiKey, type CreatedKey } from '../api.js';
import { ConfirmDialog, CopyButton, ErrorAlert, FormEnd, Loading, PageTitle, RowActions, SelectField, useAction } from '../components.js';
import { count, dateTime, fromLocalInput, toLocalInput, usd } from '../format.js';

type KeyFields = {
  name: string;
  rate_limit_rpm: string;
  rate_limit_tph: string;
  rate_limit_tpd: string;
  ip_whitelist: string;
  credit_limit: string;
  credit_reset_interval: ApiKey['credit_reset_interval'];
  expires_at: string;
  is_provisioning: boolean;
};

const EMPTY: KeyFields = {
  name: '',
  rate_limit_rpm: '',
  rate_limit_tph: '',
  rate_limit_tpd: '',
  ip_whitelist: '',
  credit_limit: '',
  credit_reset_interval: 'none',
  expires_at: '',
  is_provisioning: false,
};

const RESET_INTERVALS = [
  { value: 'none', label: 'Never' },
  { value: 'daily', label: 'Daily' },
  { value: 'weekly', label: 'Weekly' },
  { value: 'monthly', label: 'Monthly' },
];

const text = (value: number | null) => (value === null ? '' : String(value));

function fieldsOf(key: ApiKey): KeyFields {
  return {
    name: key.name,
    rate_limit_rpm: text(key.rate_limit_rpm),
    rate_limit_tph: text(key.rate_limit_tph),
    rate_limit_tpd: text(key.rate_limit_tpd),
    ip_whitelist: key.ip_whitelist.join('\n'),
    credit_limit: text(key.credit_limit),
    credit_reset_interval: key.credit_reset_interval,
    expires_at: toLocalInput(key.expires_at),
    is_provisioning: key.is_provisioning,
  };
}

/** A number input's value as the API takes it: empty is null; anything else goes as typed, for the API to judge. */
const numberOf = (value: string): number | null => (value.trim() === '' ? null : Number(value));

/** The body fields of a form, as the API names them (without is_provisioning, fixed at creation). */
function bodyOf(fields: KeyFields): Record<string, unknown> {
  return {
    name: fields.name.trim(),
    rate_limit_rpm: numberOf(fields.rate_limit_rpm),
    rate_limit_tph: numberOf(fields.rate_limit_tph),
    rate_limit_tpd: numberOf(fields.rate_limit_tpd),
    ip_whitelist: fields.ip_whitelist.split(/[\s,]+/).filter(Boolean),
    credit_limit: numberOf(fields.credit_limit),
    credit_reset_interval: fields.credit_reset_interval,
    expires_at: fromLocalInput(fields.expires_at),
  };
}

/** Create: the fields given (an unset limit is simply not sent). */
function createBody(fields: KeyFields): Record<string, unknown> {
  const body = Object.fromEntries(Object.entries(bodyOf(fields)).filter(([, value]) => value !== null));
  if (fields.is_provisioning) body.is_provisioning = true;
  return body;
}

/** Update: only what changed, so an untouched credit limit does not start a new spend period. */
function updateBody(before: KeyFields, after: KeyFields): Record<string, unknown> {
  const old = bodyOf(before);
  return Object.fromEntries(Object.entries(bodyOf(after)).filter(([name, value]) => JSON.stringify(value) !== JSON.stringify(old[name])));
}

type KeyFormProps = { idPrefix: string; initial: KeyFields; editing: boolean; submitLabel: string; onSubmit: (fields: KeyFields) => Promise<void>; onCancel?: () => void };

function KeyForm({ idPrefix, initial, editing, submitLabel, onSubmit, onCancel }: KeyFormProps) {
  const [fields, setFields] = useState(initial);
  const action = useAction();
  const set = <K extends keyof KeyFields>(name: K, value: KeyFields[K]) => setFields((previous) => ({ ...previous, [name]: value }));
  const id = (name: string) => `${idPrefix}-${name}`;
  const input = (name: 'rate_limit_rpm' | 'rate_limit_tph' | 'rate_limit_tpd' | 'credit_limit', label: string, hint: string, step = '1') => (
    <div class="field">
      <label for={id(name)}>{label}</label>
      <input id={id(name)} type="number" step={step} inputMode="decimal" value={fields[name]} onInput={(event) => set(name, event.currentTarget.value)} aria-describedby={id(`${name}-hint`)} />
      <small id={id(`${name}-hint`)}>{hint}</small>
    </div>
  );
  const submit = async (event: Event) => {
    event.preventDefault();
    const done = await action.run(() => onSubmit(fields));
    if (done && !editing) setFields(initial);
  };
  return (
    <form class="form" onSubmit={submit}>
      <div class="field">
        <label for={id('name')}>Name</label>
        <input id={id('name')} required maxLength={200} value={fields.name} onInput={(event) => set('name', event.currentTarget.value)} />
      </div>
      <div class="grid">
        {input('rate_limit_rpm', 'Rate limit (requests per minute)', 'Empty: no limit beyond the default window.')}
        {input('rate_limit_tph', 'Token limit per hour', 'Empty: no limit.')}
        {input('rate_limit_tpd', 'Token limit per day', 'Empty: no limit.')}
        {input('credit_limit', 'Credit limit (USD)', 'Spend cap per period. Empty: unlimited.', 'any')}
        <SelectField
          id={id('credit_reset_interval')}
          label="Credit limit resets"
          value={fields.credit_reset_interval}
          options={RESET_INTERVALS}
          onChange={(value) => set('credit_reset_interval', value as KeyFields['credit_reset_interval'])}
        />
        <div class="field">
          <label for={id('expires_at')}>Expires at</label>
          <input id={id('expires_at')} type="datetime-local" value={fields.expires_at} onInput={(event) => set('expires_at', event.currentTarget.value)} aria-describedby={id('expires-hint')} />
          <small id={id('expires-hint')}>Your local time. Empty: never.</small>
        </div>
      </div>
      <div class="field">
        <label for={id('ip_whitelist')}>Allowed IP addresses</label>
        <textarea id={id('ip_whitelist')} rows={2} value={fields.ip_whitelist} onInput={(event) => set('ip_whitelist', event.currentTarget.value)} aria-describedby={id('ip-hint')} />
        <small id={id('ip-hint')}>Up to 10 IPv4 addresses or CIDR ranges, one per line. Empty: any address.</small>
      </div>
      {!editing && (
        <div class="field checkbox">
          <input id={id('is_provisioning')} type="checkbox" checked={fields.is_provisioning} onChange={(event) => set('is_provisioning', event.currentTarget.checked)} aria-describedby={id('prov-hint')} />
          <label for={id('is_provisioning')}>Management key</label>
          <small id={id('prov-hint')}>Manages this account through the API (keys, billing, BYOK); cannot call models.</small>
        </div>
      )}
      <FormEnd error={action.error} busy={action.busy} submitLabel={submitLabel} onCancel={onCancel} />
    </form>
  );
}

function NewKeySecret({ created, onDone }: { created: CreatedKey; onDone: () => void }) {
  const panel = useRef<HTMLElement>(null);
  // The form that made the key is further down: bring the secret into view and focus.
  useEffect(() => panel.current?.focus(), [created.id]);
  return (
    <section class="panel notice" aria-labelledby="new-key-title" tabIndex={-1} ref={panel}>
      <h2 id="new-key-title">Your new key “{created.name}”</h2>
      <p class="warning">
        <strong>Copy this key now.</strong> It is shown only this once: the console cannot show it again. Store it somewhere safe, and revoke the key if it leaks.
      </p>
      <div class="secret">
        <code id="new-key-secret" data-testid="new-key-secret">
          {created.key}
        </code>
        <CopyButton text={created.key} targetId="new-key-secret" />
      </div>
      <button type="button" onClick={onDone}>
        I have stored it
      </button>
    </section>
  );
}

function limitsOf(key: ApiKey): string {
  const parts = [
    key.rate_limit_rpm !== null && `${count(key.rate_limit_rpm)} req/min`,
    key.rate_limit_tph !== null && `${count(key.rate_limit_tph)} tokens/h`,
    key.rate_limit_tpd !== null && `${count(key.rate_limit_tpd)} tokens/day`,
    key.ip_whitelist.length > 0 && `IPs: ${key.ip_whitelist.join(', ')}`,
  ].filter(Boolean);
  return parts.length ? parts.join(' · ') : 'Default';
}

function creditOf(key: ApiKey): string {
  if (key.credit_limit === null) return 'Unlimited';
  const period = key.credit_reset_interval === 'none' ? '' : ` (${key.credit_reset_interval})`;
  return `${usd(key.credit_used)} of ${usd(key.credit_limit)}${period}`;
}

export function KeysPage() {
  const api = useApi();
  const keys = useKeys();
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const [editing, setEditing] = useState<ApiKey | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const rowAction = useAction();
  const editSection = useRef<HTMLElement>(null);

  const create = async (fields: KeyFields) => {
    setCreated(await api.post<CreatedKey>('/api/v1/api-keys', createBody(fields)));
    keys.reload();
  };
  const update = async (key: ApiKey, fields: KeyFields) => {
    const body = updateBody(fieldsOf(key), fields);
    if (Object.keys(body).length > 0) await api.put(`/api/v1/api-keys/${segment(key.id)}`, body);
    setEditing(null);
    keys.reload();
  };
  const setDisabled = (key: ApiKey, disabled: boolean) =>
    rowAction.run(async () => {
      await api.put(`/api/v1/api-keys/${segment(key.id)}`, { disabled });
      keys.reload();
    });
  const revoke = (key: ApiKey) => {
    setRevoking(null);
    void rowAction.run(async () => {
      await api.del(`/api/v1/api-keys/${segment(key.id)}`);
      if (editing?.id === key.id) setEditing(null);
      keys.reload();
    });
  };
  const startEdit = (key: ApiKey) => {
    setEditing(key);
    requestAnimationFrame(() => editSection.current?.querySelector('input')?.focus());
  };

  return (
    <>
      <PageTitle>API keys</PageTitle>
      {created && <NewKeySecret created={created} onDone={() => setCreated(null)} />}

      <section class="panel" aria-labelledby="keys-list-title">
        <h2 id="keys-list-title">Your keys</h2>
        <Loading loading={keys.loading && !keys.data} />
        <ErrorAlert error={keys.error ?? rowAction.error} />
        {keys.data && keys.data.length === 0 && <p class="muted">No keys yet: create one below.</p>}
        {keys.data && keys.data.length > 0 && (
          <div class="table-scroll">
            <table class="cards">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Key</th>
                  <th scope="col">Limits</th>
                  <th scope="col">Credit</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Created</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {keys.data.map((key) => (
                  <tr key={key.id} class={key.disabled ? 'dimmed' : undefined}>
                    <th scope="row">
                      {key.name}
                      {key.is_provisioning && <span class="badge">Management key</span>}
                      {key.disabled && <span class="badge muted-badge">Disabled</span>}
                    </th>
                    <td data-label="Key">
                      <code>{key.key_prefix}</code>
                    </td>
                    <td data-label="Limits">{limitsOf(key)}</td>
                    <td data-label="Credit">{creditOf(key)}</td>
                    <td data-label="Expires">{dateTime(key.expires_at)}</td>
                    <td data-label="Created">{dateTime(key.created_at)}</td>
                    <RowActions
                      name={key.name}
                      disabled={key.disabled}
                      busy={rowAction.busy}
                      onEdit={() => startEdit(key)}
                      onToggle={() => void setDisabled(key, !key.disabled)}
                      removeLabel="Revoke"
                      onRemove={() => setRevoking(key)}
                    />
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      {editing && (
        <section class="panel" aria-labelledby="edit-key-title" ref={editSection}>
          <h2 id="edit-key-title">Edit “{editing.name}”</h2>
          <KeyForm key={editing.id} idPrefix="edit-key" initial={fieldsOf(editing)} editing submitLabel="Save changes" onSubmit={(fields) => update(editing, fields)} onCancel={() => setEditing(null)} />
        </section>
      )}

      {/* One form at a time, so each label names one field on the page. */}
      {!editing && (
        <section class="panel" aria-labelledby="create-key-title">
          <h2 id="create-key-title">Create a key</h2>
          <KeyForm idPrefix="new-key" initial={EMPTY} editing={false} submitLabel="Create key" onSubmit={create} />
        </section>
      )}

      <ConfirmDialog
        open={revoking !== null}
        title={`Revoke “${revoking?.name ?? ''}”?`}
        confirmLabel="Revoke key"
        danger
        onConfirm={() => revoking && revoke(revoking)}
        onCancel={() => setRevoking(null)}
      >
        <p>Every call made with this key is refused from now on. This cannot be undone.</p>
      </ConfirmDialog>
    </>
  );
}
