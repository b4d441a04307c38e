import type { Queryable } from '@chronicle/platform';
import type { ShardScope } from '../shards/shard-ownership';

export interface OverlapTarget {
  readonly run_id: string;
  /** skip: a due fire that must not start; supersede: a leased run a newer fire replaces. */
  readonly action: 'skip' | 'supersede';
  readonly policy: 'skip' | 'buffer_one' | 'cancel_other';
  /** The run that decided it: the one still running (skip), or the newer fire (supersede). */
  readonly other: string;
}

/**
 * What the overlap policies decide now, with each run stream's lock taken
 * (try-lock, as the reaper does). Only jobs with a leased run can overlap:
 * the pass starts from them (leased_runs_by_job, migrations/0029: the rows
 * of `run_leases`), so its cost follows the runs in flight, not the number
 * of schedules. Their due fires are read from `ready_runs`, each with its
 * listing row in its due day's partition (or the kept runs'). For each such job with `skip`, `buffer_one` or
 * `cancel_other`, its due fires (schedule and catch-up runs, scheduled and
 * ready):
 *  - skip: every one is skipped;
 *  - buffer_one: all but the oldest are skipped (the oldest waits its turn);
 *  - cancel_other: all but the newest are skipped, and the newest
 *    supersedes the leased runs.
 * buffer_all needs nothing here: the claim leases one run of the job at a
 * time (jobs.run_limit), and the fires wait their turn. `reserved`: runs
 * whose rows lag what this process appended (RunReservations) are no
 * targets; they still count for the others' decisions. Only the jobs of the
 * scope's shards.
 */
export async function lockOverlapTargets(
  db: Queryable,
  limit: number,
  reserved: readonly string[],
  scope: ShardScope,
): Promise<OverlapTarget[]> {
  const { rows } = await db.query<OverlapTarget>({
    name: 'overlap_lock_targets',
    text: `WITH running AS MATERIALIZED (
             SELECT j.name AS job, job_overlap_policy(j.definition) AS policy,
                    (SELECT array_agg(l.run_id ORDER BY l.run_id) FROM run_leases l WHERE l.job = j.name) AS leased
               FROM leased_runs_by_job() x
               JOIN jobs j ON j.name = x.job
              WHERE jsonb_typeof(j.definition->'schedule') = 'object' AND chronicle_shard(x.job, $3) = ANY($4::int[])
                AND job_overlap_policy(j.definition) IN ('skip', 'buffer_one', 'cancel_other')
           ), waiting AS (
             SELECT r.run_id, w.policy, w.leased,
                    row_number() OVER (PARTITION BY w.job ORDER BY r.available_at, r.run_id) AS oldest_first,
                    row_number() OVER (PARTITION BY w.job ORDER BY r.available_at DESC, r.run_id DESC) AS newest_first
               FROM running w
               JOIN ready_runs r ON r.job = w.job AND r.state = 'scheduled' AND r.available_at <= now()
               JOIN run_listing d ON d.run_id = r.run_id AND d.kept_on IN ((r.due_at AT TIME ZONE 'UTC')::date, 'infinity')
              WHERE d.definition->>'source' IN ('schedule', 'catch_up')
           ), targets AS MATERIALIZED (
             SELECT w.run_id, 'skip' AS action, w.policy, w.leased[1] AS other FROM waiting w
              WHERE (w.policy = 'skip' OR (w.policy = 'buffer_one' AND w.oldest_first > 1) OR (w.policy = 'cancel_other' AND w.newest_first > 1))
                AND w.run_id <> ALL($2::text[])
             UNION ALL
             SELECT l.run_id, 'supersede', w.policy, w.run_id FROM waiting w CROSS JOIN unnest(w.leased) AS l(run_id)
              WHERE w.policy = 'cancel_other' AND w.newest_first = 1 AND l.run_id <> ALL($2::text[])
             LIMIT $1
           )
           SELECT t.run_id, t.action, t.policy, t.other FROM targets t
            WHERE pg_try_advisory_xact_lock(run_lock_key(t.run_id))`,
    values: [limit, reserved, scope.shardCount, scope.leases.map((l) => l.shard)],
  });
  return rows;
}
