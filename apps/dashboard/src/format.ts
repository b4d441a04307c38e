/** Times as UTC to the second, the way the API and the logs write them: one zone for everyone on call. */
export function formatTime(iso: string | null | undefined): string {
  if (iso == null) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, 'Z');
}

/** 0.42 s, 12 s, 3 min 20 s, 2 h 5 min. */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds == null) return '—';
  const s = Math.abs(seconds);
  if (s < 10) return `${s.toFixed(s < 1 ? 2 : 1)} s`;
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

/** "in 4 min" / "12 s ago", from now. */
export function formatRelative(iso: string, now: number = Date.now()): string {
  const seconds = (new Date(iso).getTime() - now) / 1000;
  const text = formatDuration(Math.abs(seconds) < 1 ? 0 : Math.round(Math.abs(seconds)));
  return seconds >= 0 ? `in ${text}` : `${text} ago`;
}

/** A JSON value for reading, and its size in UTF-8 bytes. */
export function prettyJson(value: unknown): { readonly text: string; readonly bytes: number } {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  return { text, bytes: new TextEncoder().encode(JSON.stringify(value) ?? 'null').length };
}
