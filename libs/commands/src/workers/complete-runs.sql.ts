import type { PresentRun } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { LOCKED_RUN_COLUMNS, runFromRow, type RunRow } from '@chronicle/projections';

/**
 * Decisions on runs the caller names (completions, heartbeats, a team's
 * cancel, replay or discard) take the runs' stream locks first (blocking,
 * in stream id order, as es_append takes them: two batches cannot
 * deadlock), then read the rows as they are under the locks, with the
 * database's clock. One round trip for the whole batch (lock_and_read_runs,
 * migrations/0011).
 */
export async function lockAndLoadRuns(
  db: Queryable,
  runIds: readonly string[],
): Promise<{ runs: PresentRun[]; now: Date }> {
  const { rows } = await db.query<RunRow & { db_now: Date }>({
    name: 'lock_and_read_runs',
    text: `SELECT ${LOCKED_RUN_COLUMNS}, now() AS db_now FROM lock_and_read_runs($1::text[]) r`,
    values: [runIds],
  });
  return { runs: rows.map(runFromRow), now: rows[0]?.db_now ?? new Date() };
}
