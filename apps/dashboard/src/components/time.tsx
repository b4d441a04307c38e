import { formatTime } from '../format';

export function Time({ iso }: { iso: string | null | undefined }) {
  if (iso == null) return <span>—</span>;
  return <time dateTime={iso}>{formatTime(iso)}</time>;
}
