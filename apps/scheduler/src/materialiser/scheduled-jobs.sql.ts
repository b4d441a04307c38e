import type { JobDefinition } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import type { ShardScope } from '../shards/shard-ownership';

export interface DueScheduleRow {
  readonly definition: JobDefinition;
  /** The definition's version: the runs made from it record it. */
  readonly version: number;
  readonly materialised_through: Date | null;
}

/**
 * Up to `limit` jobs of the scope's shards whose next fire time lies within
 * the horizon, earliest first, row-locked for this transaction. SKIP LOCKED: schedulers running
 * side by side take different jobs instead of waiting for each other.
 *
 * Plan: Limit -> LockRows -> Nested Loop (Index Scan using
 * schedule_cursors_due_idx, next_fire_at <= $1; Index Scan using jobs_pkey).
 * A second with nothing due reads no row, whatever the number of schedules.
 */
export async function lockDueSchedules(
  db: Queryable,
  horizon: Date,
  limit: number,
  scope: ShardScope,
): Promise<DueScheduleRow[]> {
  const { rows } = await db.query<DueScheduleRow>({
    name: 'materialise_lock_due_schedules',
    text: `SELECT j.definition, j.version, c.materialised_through
             FROM schedule_cursors c JOIN jobs j ON j.name = c.job
            WHERE c.next_fire_at <= $1 AND NOT j.paused AND chronicle_shard(c.job, $3) = ANY($4::int[])
            ORDER BY c.next_fire_at
            LIMIT $2
              FOR UPDATE OF c SKIP LOCKED`,
    values: [horizon, limit, scope.shardCount, scope.leases.map((l) => l.shard)],
  });
  return rows;
}

export interface CursorMove {
  readonly job: string;
  readonly materialisedThrough: Date;
  readonly nextFireAt: Date | null;
}

/** Move the locked cursors, in the transaction that appended their runs: one statement for the batch. */
export async function advanceCursors(db: Queryable, moves: readonly CursorMove[]): Promise<void> {
  if (moves.length === 0) return;
  await db.query({
    name: 'materialise_advance_cursors',
    text: `UPDATE schedule_cursors c
              SET materialised_through = m.through, next_fire_at = m.next, updated_at = now()
             FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS m(job, through, next)
            WHERE c.job = m.job`,
    values: [moves.map((m) => m.job), moves.map((m) => m.materialisedThrough), moves.map((m) => m.nextFireAt)],
  });
}
