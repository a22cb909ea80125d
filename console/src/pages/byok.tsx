// BYOK: the account's own upstream credentials. Add, edit, reorder by priority, disable, delete; the
// last use and last error are shown, the secrets never (the API returns only a masked prefix).
import { useState } from 'preact/hooks';
import { segment, useApi } from '../api.js';
import { ConfirmDialog, ErrorAlert, FormEnd, Loading, PageTitle, RowActions, SelectField, useAction, useLoad } from '../components.js';
import { dateTime } from '../format.js';

type Credential = {
  id: string;
  provider: 'openai' | 'anthropic' | 'google';
  label: string;
  api_key_prefix: string | null;
  base_url: string | null;
  config_json: Record<string, unknown> | null;
  always_use: boolean;
  disabled: boolean;
  priority: number;
  api_key_id: string | null;
  last_used_at: string | null;
  last_error: string | null;
  created_at: string;
};

type CredentialFields = { provider: Credential['provider']; label: string; api_key: string; base_url: string; config_json: string; priority: string; always_use: boolean; disabled: boolean };

const PROVIDERS = [
  { value: 'openai', label: 'OpenAI' },
  { value: 'anthropic', label: 'Anthropic' },
  { value: 'google', label: 'Google' },
] as const;
/** Priorities given when reordering: steps of 10 from the top, within the API's [-1000, 1000]. */
const PRIORITY_STEP = 10;
const PRIORITY_MAX = 1000;

function fieldsOf(row: Credential | null): CredentialFields {
  return {
    provider: row?.provider ?? 'openai',
    label: row?.label ?? '',
    api_key: '',
    base_url: row?.base_url ?? '',
    config_json: row?.config_json ? JSON.stringify(row.config_json, null, 2) : '',
    priority: String(row?.priority ?? 0),
    always_use: row?.always_use ?? false,
    disabled: row?.disabled ?? false,
  };
}

/**
 * The request body. Creating sends every field given; editing sends only what changed, so the
 * masked "***" secrets of an untouched config_json are never written back. An empty secret is left
 * out (on edit: kept), and JSON that does not parse is refused here with its reason.
 */
function bodyOf(fields: CredentialFields, row: Credential | null): Record<string, unknown> {
  const before = row ? fieldsOf(row) : null;
  const changed = (name: keyof CredentialFields) => !before || before[name] !== fields[name];
  const body: Record<string, unknown> = {};
  if (!row) body.provider = fields.provider;
  if (changed('label')) body.label = fields.label.trim();
  // On create an empty base URL is simply not sent; on edit, emptying it clears it (null).
  if (changed('base_url') && (fields.base_url.trim() || row)) body.base_url = fields.base_url.trim() || null;
  if (changed('priority')) body.priority = Number(fields.priority);
  if (changed('always_use')) body.always_use = fields.always_use;
  if (changed('disabled')) body.disabled = fields.disabled;
  if (fields.api_key) body.api_key = fields.api_key;
  const config = fields.config_json.trim();
  if (changed('config_json') && config) {
    try {
      body.config_json = JSON.parse(config);
    } catch (error) {
      throw new Error(`Cloud settings (JSON) is not valid JSON: ${(error as Error).message}`);
    }
  } else if (changed('config_json') && row) body.config_json = null;
  return body;
}

function CredentialForm({ row, onSaved, onCancel }: { row: Credential | null; onSaved: () => void; onCancel?: () => void }) {
  const api = useApi();
  const [fields, setFields] = useState(() => fieldsOf(row));
  const action = useAction();
  const set = <K extends keyof CredentialFields>(name: K, value: CredentialFields[K]) => setFields((previous) => ({ ...previous, [name]: value }));
  const prefix = row ? 'edit-byok' : 'new-byok';
  const id = (name: string) => `${prefix}-${name}`;
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      if (row) await api.put(`/api/v1/byok/${segment(row.id)}`, bodyOf(fields, row));
      else await api.post('/api/v1/byok', bodyOf(fields, null));
      if (!row) setFields(fieldsOf(null));
      onSaved();
    });
  };
  return (
    <form class="form" onSubmit={submit}>
      <div class="grid">
        {row ? (
          <p class="field">
            <span>Provider</span> <strong>{PROVIDERS.find((provider) => provider.value === row.provider)?.label ?? row.provider}</strong>
          </p>
        ) : (
          <SelectField id={id('provider')} label="Provider" value={fields.provider} options={PROVIDERS} onChange={(value) => set('provider', value as Credential['provider'])} />
        )}
        <div class="field">
          <label for={id('label')}>Label</label>
          <input id={id('label')} required value={fields.label} onInput={(event) => set('label', event.currentTarget.value)} />
        </div>
        <div class="field">
          <label for={id('api_key')}>Upstream API key</label>
          <input
            id={id('api_key')}
            type="password"
            autoComplete="off"
            value={fields.api_key}
            onInput={(event) => set('api_key', event.currentTarget.value)}
            aria-describedby={id('api_key-hint')}
          />
          <small id={id('api_key-hint')}>{row ? `Stored: ${row.api_key_prefix ?? 'none'}. Leave empty to keep it.` : 'Never shown again after saving.'}</small>
        </div>
        <div class="field">
          <label for={id('base_url')}>Base URL (optional)</label>
          <input id={id('base_url')} type="url" value={fields.base_url} onInput={(event) => set('base_url', event.currentTarget.value)} />
        </div>
        <div class="field">
          <label for={id('priority')}>Priority</label>
          <input id={id('priority')} type="number" step="1" value={fields.priority} onInput={(event) => set('priority', event.currentTarget.value)} aria-describedby={id('priority-hint')} />
          <small id={id('priority-hint')}>Higher is tried first.</small>
        </div>
      </div>
      <div class="field">
        <label for={id('config_json')}>Cloud settings (JSON, optional)</label>
        <textarea id={id('config_json')} rows={3} value={fields.config_json} onInput={(event) => set('config_json', event.currentTarget.value)} aria-describedby={id('config-hint')} />
        <small id={id('config-hint')}>For Azure OpenAI, Claude on Bedrock or Gemini on Vertex AI; see the BYOK guide.</small>
      </div>
      <div class="field checkbox">
        <input id={id('always_use')} type="checkbox" checked={fields.always_use} onChange={(event) => set('always_use', event.currentTarget.checked)} />
        <label for={id('always_use')}>Always use (no fallback to the platform’s credential)</label>
      </div>
      <div class="field checkbox">
        <input id={id('disabled')} type="checkbox" checked={fields.disabled} onChange={(event) => set('disabled', event.currentTarget.checked)} />
        <label for={id('disabled')}>Disabled</label>
      </div>
      <FormEnd error={action.error} busy={action.busy} submitLabel={row ? 'Save changes' : 'Add credential'} onCancel={onCancel} />
    </form>
  );
}

export function ByokPage() {
  const api = useApi();
  const rows = useLoad(() => api.get<Credential[]>('/api/v1/byok'), []);
  const [editing, setEditing] = useState<Credential | null>(null);
  const [deleting, setDeleting] = useState<Credential | null>(null);
  const rowAction = useAction();

  /** Moves a row one place and gives the list descending priorities, changing only the rows whose priority moves. */
  const move = (index: number, by: -1 | 1) =>
    void rowAction.run(async () => {
      const order = [...(rows.data ?? [])];
      const [row] = order.splice(index, 1);
      order.splice(index + by, 0, row!);
      const top = Math.min(PRIORITY_MAX, (order.length - 1) * PRIORITY_STEP);
      for (const [position, each] of order.entries()) {
        const priority = top - position * PRIORITY_STEP;
        if (each.priority !== priority) await api.put(`/api/v1/byok/${segment(each.id)}`, { priority });
      }
      rows.reload();
    });
  const setDisabled = (row: Credential) =>
    void rowAction.run(async () => {
      await api.put(`/api/v1/byok/${segment(row.id)}`, { disabled: !row.disabled });
      rows.reload();
    });
  const remove = (row: Credential) => {
    setDeleting(null);
    void rowAction.run(async () => {
      await api.del(`/api/v1/byok/${segment(row.id)}`);
      if (editing?.id === row.id) setEditing(null);
      rows.reload();
    });
  };
  const list = rows.data ?? [];

  return (
    <>
      <PageTitle>BYOK</PageTitle>
      <p class="muted">Your own upstream credentials, tried before the platform’s for that provider’s models, highest priority first. Calls they serve are counted but not charged.</p>
      <section class="panel" aria-labelledby="byok-list-title">
        <h2 id="byok-list-title">Your credentials</h2>
        <ErrorAlert error={rows.error ?? rowAction.error} />
        <Loading loading={rows.loading && !rows.data} />
        {rows.data && list.length === 0 && <p class="muted">No credentials yet.</p>}
        {list.length > 0 && (
          <div class="table-scroll">
            <table class="cards">
              <thead>
                <tr>
                  <th scope="col">Label</th>
                  <th scope="col">Provider</th>
                  <th scope="col">Key</th>
                  <th scope="col" class="number">
                    Priority
                  </th>
                  <th scope="col">Last used</th>
                  <th scope="col">Last error</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {list.map((row, index) => (
                  <tr key={row.id} class={row.disabled ? 'dimmed' : undefined}>
                    <th scope="row">
                      {row.label}
                      {row.disabled && <span class="badge muted-badge">Disabled</span>}
                      {row.always_use && <span class="badge">Always used</span>}
                      {row.api_key_id && <span class="badge">One key only</span>}
                    </th>
                    <td data-label="Provider">{row.provider}</td>
                    <td data-label="Key">
                      <code>{row.api_key_prefix ?? '—'}</code>
                    </td>
                    <td data-label="Priority" class="number">{row.priority}</td>
                    <td data-label="Last used">{dateTime(row.last_used_at)}</td>
                    <td data-label="Last error" class="wrap">{row.last_error ?? 'None'}</td>
                    <RowActions
                      name={row.label}
                      disabled={row.disabled}
                      busy={rowAction.busy}
                      onEdit={() => setEditing(row)}
                      onToggle={() => setDisabled(row)}
                      removeLabel="Delete"
                      onRemove={() => setDeleting(row)}
                    >
                      <button type="button" disabled={index === 0 || rowAction.busy} onClick={() => move(index, -1)} aria-label={`Move ${row.label} up`}>
                        Up
                      </button>
                      <button type="button" disabled={index === list.length - 1 || rowAction.busy} onClick={() => move(index, 1)} aria-label={`Move ${row.label} down`}>
                        Down
                      </button>
                    </RowActions>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {editing && (
        <section class="panel" aria-labelledby="byok-edit-title">
          <h2 id="byok-edit-title">Edit “{editing.label}”</h2>
          <CredentialForm
            key={editing.id}
            row={editing}
            onSaved={() => {
              setEditing(null);
              rows.reload();
            }}
            onCancel={() => setEditing(null)}
          />
        </section>
      )}
      {/* One form at a time, so each label names one field on the page. */}
      {!editing && (
        <section class="panel" aria-labelledby="byok-new-title">
          <h2 id="byok-new-title">Add a credential</h2>
          <CredentialForm row={null} onSaved={rows.reload} />
        </section>
      )}
      <ConfirmDialog open={deleting !== null} title={`Delete “${deleting?.label ?? ''}”?`} confirmLabel="Delete credential" danger onConfirm={() => deleting && remove(deleting)} onCancel={() => setDeleting(null)}>
        <p>Calls stop using this credential at once. This cannot be undone.</p>
      </ConfirmDialog>
    </>
  );
}
