import type { ReactNode } from 'react';

/**
 * A row's Delete button that asks before deleting: once clicked, "Really delete?" (and `note`)
 * with Delete and Cancel in its place. `children` are the row's other actions, shown beside the
 * first Delete. The owner keeps which row is asking, so at most one asks at a time.
 */
export function ConfirmDelete(props: {
  asking: boolean;
  onAsk: () => void;
  onCancel: () => void;
  onConfirm: () => void;
  /** Said after "Really delete?", e.g. what else the delete affects. */
  note?: string | undefined;
  /** Tooltips of the first Delete and of the confirming one. */
  askTitle?: string | undefined;
  confirmTitle?: string | undefined;
  children?: ReactNode;
}) {
  const { asking, onAsk, onCancel, onConfirm, note, askTitle, confirmTitle, children } = props;
  if (asking) {
    return (
      <span className="row">
        <span>Really delete?{note && ` ${note}`}</span>
        <button className="danger" onClick={onConfirm} title={confirmTitle}>
          Delete
        </button>
        <button onClick={onCancel}>Cancel</button>
      </span>
    );
  }
  return (
    <span className="row">
      {children}
      <button className="danger" onClick={onAsk} title={askTitle}>
        Delete
      </button>
    </span>
  );
}
