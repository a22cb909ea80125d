// Tasks: video, speech and music tasks with their status, a player for finished media, and Cancel for
// pending ones. The list refreshes itself while a task is pending.
import { useEffect, useState } from 'preact/hooks';
import { segment, useApi, type CursorPage } from '../api.js';
import { ErrorAlert, Loading, PageTitle, useAction, useLoad } from '../components.js';
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
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const tasks = useLoad(() => api.get<TaskPage>('/api/v1/tasks', { kind, status, limit: PAGE_SIZE, cursor }), [kind, status, cursor]);
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
  const filter = (set: (value: string) => void) => (event: Event) => {
    setCursors([]);
    set((event.currentTarget as HTMLSelectElement).value);
  };
  const nextCursor = tasks.data?.next_cursor;

  return (
    <>
      <PageTitle>Tasks</PageTitle>
      <p class="muted">Video, speech and music tasks your keys started. Finished media stays on the media host until it expires.</p>
      <form class="filters" onSubmit={(event) => event.preventDefault()} aria-label="Filters">
        <div class="field">
          <label for="tasks-kind">Kind</label>
          <select id="tasks-kind" value={kind} onChange={filter(setKind)}>
            <option value="">All kinds</option>
            <option value="video">Video</option>
            <option value="speech">Speech</option>
            <option value="music">Music</option>
          </select>
        </div>
        <div class="field">
          <label for="tasks-status">Status</label>
          <select id="tasks-status" value={status} onChange={filter(setStatus)}>
            <option value="">Any status</option>
            <option value="pending">Pending</option>
            <option value="success">Succeeded</option>
            <option value="failed">Failed</option>
          </select>
        </div>
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
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={cursors.length === 0} onClick={() => setCursors((previous) => previous.slice(0, -1))}>
          Newer
        </button>
        <button type="button" disabled={!tasks.data?.has_more || !nextCursor} onClick={() => nextCursor && setCursors((previous) => [...previous, nextCursor])}>
          Older
        </button>
      </nav>
    </>
  );
}
