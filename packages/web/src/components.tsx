import type { ReactNode } from 'react';
import { statusClass } from './format';
import type { Action } from './use-action';

export function Status({ status, label }: { status: string; label?: string | null }) {
  return (
    <span className={statusClass(status)} data-status={status}>
      {label ?? status}
    </span>
  );
}

/** A table that scrolls sideways on a narrow screen instead of squeezing its columns. */
export function Table({ head, children, empty }: { head: string[]; children: ReactNode[]; empty: string }) {
  if (children.length === 0) return <p className="muted">{empty}</p>;
  return (
    <div className="table-scroll">
      <table>
        <thead>
          <tr>
            {head.map((title) => (
              <th key={title}>{title}</th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

export function LoadState({ error, loading }: { error: string | null; loading: boolean }) {
  if (error) return <p className="error">{error}</p>;
  if (loading) return <p className="muted">Loading…</p>;
  return null;
}

/**
 * A table row's button (Delete, Remove, Activate): asks `confirmation` first when given, runs
 * `work` through the section's `action` (one call at a time, its refusal shown by the section),
 * then `onDone`.
 */
export function RowAction({
  action,
  label,
  confirmation,
  work,
  onDone,
}: {
  action: Action;
  label: string;
  confirmation?: string;
  work(): Promise<unknown>;
  onDone(): void;
}) {
  const click = async () => {
    if (confirmation && !confirm(confirmation)) return;
    if (await action.run(label, work)) onDone();
  };
  return (
    <button type="button" className="link" disabled={action.busy !== null} onClick={() => void click()}>
      {label}
    </button>
  );
}
