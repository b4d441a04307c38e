import { describeError } from '../api/graphql-client';
import { formatTime } from '../format';
import type { Loaded } from '../use-api';

/** A failed load, said once, in words; the last good data stays below it. */
export function ErrorNote({ error }: { error: unknown }) {
  if (error === undefined) return null;
  return (
    <p class="error" role="alert">
      {describeError(error)}
    </p>
  );
}

/** When the numbers on screen are from. Not a live region: it changes every few seconds. */
export function RefreshNote({ loaded, everyMs }: { loaded: Loaded<unknown>; everyMs: number }) {
  return (
    <p class="refresh-note">
      {loaded.updatedAt === undefined ? 'Loading…' : `Updated ${formatTime(loaded.updatedAt.toISOString())}`}
      {` · every ${everyMs / 1000} s `}
      <button type="button" class="link-button" onClick={loaded.reload}>
        Refresh now
      </button>
    </p>
  );
}
