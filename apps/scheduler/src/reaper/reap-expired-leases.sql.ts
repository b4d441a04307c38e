import type { Queryable } from '@chronicle/platform';
import type { PresentRun } from '@chronicle/domain';
import type { ShardScope } from '../shards/shard-ownership';
import { RUN_COLUMNS, runFromRow, type RunRow } from '@chronicle/projections';

/**
 * Leased runs whose lease has expired, oldest expiry first, each with its
 * run stream's lock taken (try-lock: a worker completing the run right now
 * holds it, and the reaper simply comes back). Plan: a scan of `run_leases`,
 * which holds the runs in flight alone (a claim inserts a run's row, its end
 * deletes it), so its size follows the workers' concurrency, not the backlog
 * or the history; no index by expiry is kept for it, since one would cost
 * every claim an index entry and every heartbeat its HOT update. `reserved`:
 * runs whose rows lag what this process appended (RunReservations), left out.
 * Only the runs of the scope's shards.
 */
export async function lockExpiredLeases(
  db: Queryable,
  limit: number,
  reserved: readonly string[],
  scope: ShardScope,
): Promise<string[]> {
  const { rows } = await db.query<{ run_id: string }>({
    name: 'reap_lock_expired',
    text: `WITH expired AS MATERIALIZED (
             SELECT l.run_id FROM run_leases l
              WHERE l.lease_expires_at <= now() AND l.run_id <> ALL($2::text[])
                AND chronicle_shard(l.job, $3) = ANY($4::int[])
              ORDER BY l.lease_expires_at
              LIMIT $1
           )
           SELECT e.run_id FROM expired e WHERE pg_try_advisory_xact_lock(run_lock_key(e.run_id))`,
    values: [limit, reserved, scope.shardCount, scope.leases.map((l) => l.shard)],
  });
  return rows.map((r) => r.run_id);
}

/** The locked runs as they are now, with the database's clock. */
export async function loadExpiredLeases(
  db: Queryable,
  runIds: readonly string[],
): Promise<{ runs: PresentRun[]; now: Date }> {
  const { rows } = await db.query<RunRow & { db_now: Date }>({
    name: 'reap_load_expired',
    text: `SELECT ${RUN_COLUMNS}, now() AS db_now FROM runs r
            WHERE r.run_id = ANY($1::text[]) AND r.state = 'leased' AND r.lease_expires_at <= now()`,
    values: [runIds],
  });
  return { runs: rows.map(runFromRow), now: rows[0]?.db_now ?? new Date() };
}
