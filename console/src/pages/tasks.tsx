// Tasks: video, speech and music tasks with their status, a player for finished media, and Cancel for
// pending ones. The list refreshes itself while a task is pending.
import { useEffect, useState } from 'preact/hooks';
import { segment, useApi, type CursorPage } from '../api.js';
import { ErrorAlert, Loading, PageTitle, SelectField, useAction, useCursorPages, useLoad } from '../components.js';
import { dateTime } from '../format.js';

type TaskKind = 'video' | 'speech' | 'music';
type Media = { url: string; expires_at: number; expired: boolean; format?: string; duration_seconds?: number };
type Task = {
  id: string;
  kind: TaskKind;
  status: 'pending' | 'success' | 'failed';
  model: string;
  created: number;
  completed_at?: number;
  data?: Media[];
  error?: { code: string; message: string };
};
type TaskPage = CursorPage<Task>;

const KIND_NAMES: Record<TaskKind, string> = { video: 'Video', speech: 'Speech', music: 'Music' };
const KIND_OPTIONS = [{ value: '', label: 'All kinds' }, ...Object.entries(KIND_NAMES).map(([value, label]) => ({ value, label }))];
const STATUS_OPTIONS = [
  { value: '', label: 'Any status' },
  { value: 'pending', label: 'Pending' },
  { value: 'success', label: 'Succeeded' },
  { value: 'failed', label: 'Failed' },
];
const PAGE_SIZE = 20;
const POLL_MS = 3000;

function MediaPlayer({ task, media, index }: { task: Task; media: Media; index: number }) {
  if (media.expired) return <p class="muted">The file expired on {dateTime(media.expires_at)}.</p>;
  const label = `${KIND_NAMES[task.kind]} result ${index + 1} of ${task.model}`;
  return (
    <div class="media">
      {task.kind === 'video' ? <video controls preload="metadata" src={media.url} aria-label={label} /> : <audio controls preload="metadata" src={media.url} aria-label={label} />}
      <a href={media.url} target="_blank" rel="noopener noreferrer">
        Download
      </a>
    </div>
  );
}

function TaskCard({ task, onCancel, busy }: { task: Task; onCancel: (task: Task) => void; busy: boolean }) {
  return (
    <li class="task" data-testid="task" data-task-id={task.id}>
      <div class="task-head">
        <strong>{KIND_NAMES[task.kind] ?? task.kind}</strong> <span>{task.model}</span>
        <span class={`status ${task.status === 'failed' ? 'bad' : task.status === 'success' ? 'good' : 'pending'}`}>{task.status}</span>
      </div>
      <p class="muted small">
        Started {dateTime(task.created)}
        {task.completed_at ? `, ended ${dateTime(task.completed_at)}` : ''} · <code>{task.id}</code>
      </p>
      {task.error && (
        <p class="task-error">
          {task.error.message} <span class="muted">({task.error.code})</span>
        </p>
      )}
      {task.status === 'success' && task.data?.map((media, index) => <MediaPlayer key={media.url} task={task} media={media} index={index} />)}
      {task.status === 'pending' && (
        <button type="button" class="danger" onClick={() => onCancel(task)} disabled={busy} aria-label={`Cancel ${KIND_NAMES[task.kind] ?? task.kind} task ${task.model}`}>
          Cancel
        </button>
      )}
    </li>
  );
}

export function TasksPage() {
  const api = useApi();
  const [kind, setKind] = useState('');
  const [status, setStatus] = useState('');
  const pages = useCursorPages();
  const tasks = useLoad(() => api.get<TaskPage>('/api/v1/tasks', { kind, status, limit: PAGE_SIZE, cursor: pages.cursor }), [kind, status, pages.cursor]);
  const cancel = useAction();
  const pending = tasks.data?.data.some((task) => task.status === 'pending') ?? false;

  useEffect(() => {
    if (!pending) return;
    const timer = setTimeout(tasks.reload, POLL_MS);
    return () => clearTimeout(timer);
  }, [pending, tasks.data, tasks.reload]);

  const onCancel = (task: Task) =>
    void cancel.run(async () => {
      await api.del(`/api/v1/tasks/${segment(task.id)}`);
      tasks.reload();
    });
  const filter = (set: (value: string) => void) => (value: string) => {
    pages.first();
    set(value);
  };

  return (
    <>
      <PageTitle>Tasks</PageTitle>
      <p class="muted">Video, speech and music tasks your keys started. Finished media stays on the media host until it expires.</p>
      <form class="filters" onSubmit={(event) => event.preventDefault()} aria-label="Filters">
        <SelectField id="tasks-kind" label="Kind" value={kind} options={KIND_OPTIONS} onChange={filter(setKind)} />
        <SelectField id="tasks-status" label="Status" value={status} options={STATUS_OPTIONS} onChange={filter(setStatus)} />
        <div class="actions">
          <button type="button" onClick={tasks.reload}>
            Refresh
          </button>
        </div>
      </form>
      <ErrorAlert error={tasks.error ?? cancel.error} />
      <Loading loading={tasks.loading && !tasks.data} />
      {tasks.data && tasks.data.data.length === 0 && <p class="muted">No tasks.</p>}
      {tasks.data && tasks.data.data.length > 0 && (
        <ul class="tasks">
          {tasks.data.data.map((task) => (
            <TaskCard key={task.id} task={task} onCancel={onCancel} busy={cancel.busy} />
          ))}
        </ul>
      )}
      {pages.pager(tasks.data)}
    </>
  );
}
