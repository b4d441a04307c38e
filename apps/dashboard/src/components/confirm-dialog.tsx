import { useEffect, useRef } from 'preact/hooks';

/**
 * A modal question before a decision that cannot be taken back: the browser's <dialog> keeps focus
 * inside, Escape cancels, and the safe answer has the focus first.
 */
export function ConfirmDialog(props: {
  title: string;
  message: string;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (element !== null && !element.open) element.showModal();
  }, []);
  return (
    <dialog ref={dialog} aria-labelledby="confirm-title" aria-describedby="confirm-message" onCancel={props.onCancel}>
      <h2 id="confirm-title">{props.title}</h2>
      <p id="confirm-message">{props.message}</p>
      <div class="actions">
        <button type="button" autoFocus onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class="primary" onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
