import { runStreamId, type PresentRun } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { findRunSnapshotsAt } from '@chronicle/projections';

/**
 * Decisions on runs the caller names (completions, heartbeats, a team's
 * cancel, replay or discard) take the runs' stream locks first (blocking,
 * in stream id order, as es_append takes them: two batches cannot
 * deadlock), then read the rows as they are under the locks, with the
 * database's clock. Two round trips for the whole batch.
 */
export async function lockAndLoadRuns(
  db: Queryable,
  runIds: readonly string[],
): Promise<{ runs: PresentRun[]; now: Date }> {
  await db.query({
    name: 'complete_lock_runs',
    text: 'SELECT pg_advisory_xact_lock(stream_lock_key(s)) FROM unnest($1::text[]) AS s ORDER BY s',
    values: [runIds.map(runStreamId)],
  });
  return findRunSnapshotsAt(db, runIds);
}
