import type { PresentRun } from '@chronicle/domain';
import { type Queryable, ShardMovingError } from '@chronicle/platform';
import { LOCKED_RUN_COLUMNS, runFromRow, type RunRow } from '@chronicle/projections';

/**
 * Decisions on runs the caller names (completions, heartbeats, a team's
 * cancel, replay or discard) take the runs' stream locks first (blocking,
 * in stream id order, as es_append takes them: two batches cannot
 * deadlock), then read the rows as they are under the locks, with the
 * database's clock. One round trip for the whole batch (lock_and_read_runs,
 * migrations/0011). Refused (ShardMovingError) for a run of a shard moving away from this server.
 */
export async function lockAndLoadRuns(
  db: Queryable,
  runIds: readonly string[],
): Promise<{ runs: PresentRun[]; now: Date }> {
  const { rows } = await db.query<RunRow & { db_now: Date; moving_out: number | null }>({
    name: 'lock_and_read_runs',
    text: `SELECT ${LOCKED_RUN_COLUMNS}, now() AS db_now,
                  CASE WHEN m.shards IS NOT NULL AND chronicle_shard(r.job, m.shards) = ANY(m.out)
                       THEN chronicle_shard(r.job, m.shards) END AS moving_out
             FROM lock_and_read_runs($1::text[]) r
            CROSS JOIN (SELECT array_agg(shard) AS out, max(shards) AS shards FROM moving_shards
                         WHERE direction = 'out') m`,
    values: [runIds],
  });
  // A run of a shard moving away from this server (migrations/0034): its rows here may be behind the
  // target's, and a decision on them (a completion found stale) would be wrong; the caller tries again
  // once the map names the target.
  const moving = rows.find((r) => r.moving_out !== null);
  if (moving !== undefined) throw new ShardMovingError(moving.moving_out!);
  return { runs: rows.map(runFromRow), now: rows[0]?.db_now ?? new Date() };
}
