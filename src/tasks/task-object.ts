import type { TaskRow } from '../store/tasks.js';
import { nanoToUsd } from '../billing/pricing.js';

/**
 * A task as the API shows it (GET, lists, callbacks): the spec's fields, `data` once it succeeded,
 * `error` once it failed. Vendor addresses never appear: `data[].url` is on the media host, where it
 * lives `retentionMs` from the task's end: each entry says until when (`expires_at`) and, once that
 * has passed, `expired: true` (the record stays; the file is gone). Once ended, `usage.cost` is the USD
 * the task was charged (its usage transaction; 0 when it failed and its hold was released), in the
 * place a chat answer carries its cost.
 */
export function taskObject(row: TaskRow, retentionMs: number): Record<string, unknown> {
  const task: Record<string, unknown> = {
    id: row.id,
    object: row.kind,
    status: row.status,
    model: row.model,
    created: Math.floor(row.created_at.getTime() / 1000),
  };
  if (row.ended_at) task.completed_at = Math.floor(row.ended_at.getTime() / 1000);
  if (row.status === 'success') {
    const expiresMs = (row.ended_at ?? row.created_at).getTime() + retentionMs;
    const expired = expiresMs <= Date.now();
    task.data = (row.result ?? []).map((entry) => ({ ...entry, expires_at: Math.floor(expiresMs / 1000), expired }));
  }
  if (row.status === 'failed') task.error = { code: row.error_code ?? 'failed', message: row.error_message ?? 'The task failed.' };
  if (row.status !== 'pending') task.usage = { cost: nanoToUsd(row.charged_nano ?? 0n) };
  return task;
}
