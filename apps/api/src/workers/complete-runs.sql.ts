import type { PresentRun } from '../../../../libs/application/src/decide-runs';
import type { Queryable } from '../../../../libs/platform/src/database/pg-pool';
import { findRunSnapshotsAt } from '../../../../projections/runs.sql';

/**
 * Completions take the runs' stream locks first (blocking, in stream id
 * order, as es_append takes them: two batches cannot deadlock), then read
 * the rows as they are under the locks, with the database's clock. Two
 * round trips for the whole batch.
 */
export async function lockAndLoadRuns(db: Queryable, runIds: readonly string[]): Promise<{ runs: PresentRun[]; now: Date }> {
  await db.query({
    name: 'complete_lock_runs',
    text: `SELECT pg_advisory_xact_lock(hashtextextended('run-' || id, 0)) FROM unnest($1::text[]) AS id ORDER BY 'run-' || id`,
    values: [runIds],
  });
  return findRunSnapshotsAt(db, runIds);
}
