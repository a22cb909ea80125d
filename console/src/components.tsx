// Pieces every page uses: loading an API answer, showing the API's error, confirming, copying, titles.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

/** What to tell the person: the API's own message for an API failure (an ApiFailure), else the error's. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The API's own message, where the failed action is, read out by screen readers as it appears. */
export function ErrorAlert({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  return (
    <p class="alert" role="alert">
      {messageOf(error)}
    </p>
  );
}

export type Loaded<T> = { data: T | null; error: unknown; loading: boolean; reload: () => void };

/** Loads once and again whenever a key changes; `reload` loads again with the same keys. */
export function useLoad<T>(load: () => Promise<T>, keys: readonly unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | null; error: unknown; loading: boolean }>({ data: null, error: null, loading: true });
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => current && setState({ data, error: null, loading: false }),
      (error: unknown) => current && setState((previous) => ({ data: previous.data, error, loading: false })),
    );
    return () => {
      current = false;
    };
  }, [...keys, generation]);
  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  return { ...state, reload };
}

/** Runs an action, keeping its error to show beside the control that started it. */
export function useAction(): { busy: boolean; error: unknown; run: (action: () => Promise<void>) => Promise<boolean> } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = useCallback(async (action: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
      return true;
    } catch (failure) {
      setError(failure);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run };
}

/** The page's one <h1>, also the window's title. */
export function PageTitle({ children }: { children: string }) {
  useEffect(() => {
    document.title = `${children} · Gateway console`;
  }, [children]);
  return <h1>{children}</h1>;
}

export function Loading({ loading }: { loading: boolean }) {
  return loading ? (
    <p class="muted" role="status">
      Loading…
    </p>
  ) : null;
}

type ConfirmProps = {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
};

/** A modal <dialog>: focus moves into it, Escape cancels, and nothing happens until its button is pressed. */
export function ConfirmDialog({ open, title, children, confirmLabel, danger = false, onConfirm, onCancel }: ConfirmProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) element.showModal();
    if (!open && element.open) element.close();
  }, [open]);
  return (
    <dialog ref={dialog} class="dialog" aria-labelledby="dialog-title" onCancel={(event) => (event.preventDefault(), onCancel())}>
      <h2 id="dialog-title">{title}</h2>
      <div class="dialog-body">{children}</div>
      <div class="actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" class={danger ? 'danger' : 'primary'} onClick={onConfirm}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/** Copies a text; where the clipboard is refused, selects the text so the person can copy it. */
export function CopyButton({ text, targetId, label = 'Copy' }: { text: string; targetId: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(true);
      setTimeout(() => setCopied(false), 2000);
    } catch {
      const target = document.getElementById(targetId);
      if (target) window.getSelection()?.selectAllChildren(target);
    }
  };
  return (
    <button type="button" onClick={copy}>
      {copied ? 'Copied' : label}
    </button>
  );
}

/** Previous/next for lists paged by number. */
export function PageButtons({ page, totalPages, onPage }: { page: number; totalPages: number; onPage: (page: number) => void }) {
  if (totalPages <= 1) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous page
      </button>
      <span>
        Page {page} of {totalPages}
      </span>
      <button type="button" disabled={page >= totalPages} onClick={() => onPage(page + 1)}>
        Next page
      </button>
    </nav>
  );
}

export type Option = { value: string; label: string };

/** A labelled <select>. */
export function SelectField({ id, label, value, options, onChange }: { id: string; label: string; value: string; options: readonly Option[]; onChange: (value: string) => void }) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(event) => onChange(event.currentTarget.value)}>
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
    </div>
  );
}

/**
 * Pages of a list the API walks by cursor: the cursors of the pages before this one are kept, so
 * "Newer" goes back and "Older" follows the answer's `next_cursor`.
 */
export function useCursorPages() {
  const [cursors, setCursors] = useState<string[]>([]);
  return {
    cursor: cursors[cursors.length - 1],
    first: () => setCursors([]),
    pager: (page: { has_more: boolean; next_cursor: string | null } | null) => (
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={cursors.length === 0} onClick={() => setCursors((previous) => previous.slice(0, -1))}>
          Newer
        </button>
        <button type="button" disabled={!page?.has_more || !page.next_cursor} onClick={() => page?.next_cursor && setCursors((previous) => [...previous, page.next_cursor!])}>
          Older
        </button>
      </nav>
    ),
  };
}

type RowActionsProps = { name: string; disabled: boolean; busy: boolean; onEdit: () => void; onToggle: () => void; removeLabel: string; onRemove: () => void; children?: ComponentChildren };

/** The actions of a row that can be edited, disabled or enabled, and removed (after a confirmation the page shows). */
export function RowActions({ name, disabled, busy, onEdit, onToggle, removeLabel, onRemove, children }: RowActionsProps) {
  const toggle = disabled ? 'Enable' : 'Disable';
  return (
    <td class="row-actions">
      {children}
      <button type="button" onClick={onEdit} aria-label={`Edit ${name}`}>
        Edit
      </button>
      <button type="button" onClick={onToggle} disabled={busy} aria-label={`${toggle} ${name}`}>
        {toggle}
      </button>
      <button type="button" class="danger" onClick={onRemove} aria-label={`${removeLabel} ${name}`}>
        {removeLabel}
      </button>
    </td>
  );
}

/** Figures side by side: a balance, a period's totals. */
export function Stats({ items }: { items: readonly { label: string; value: string; testId?: string }[] }) {
  return (
    <dl class="stats">
      {items.map((item) => (
        <div key={item.label}>
          <dt>{item.label}</dt>
          <dd data-testid={item.testId}>{item.value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** The end of a form: the API's error for it, its submit button and, when editing, Cancel. */
export function FormEnd({ error, busy, submitLabel, onCancel }: { error: unknown; busy: boolean; submitLabel: string; onCancel?: (() => void) | undefined }) {
  return (
    <>
      <ErrorAlert error={error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {submitLabel}
        </button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </>
  );
}
