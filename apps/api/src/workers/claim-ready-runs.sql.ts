import type { Queryable } from '../../../../libs/platform/src/database/pg-pool';
import type { PresentRun } from '../runs/runs.service';

/**
 * Step 1 of the claim (DESIGN.md, claim protocol): pick up to `limit` ready
 * runs of the caller's team on its queues, oldest due first, skipping paused
 * jobs, and take each run stream's advisory lock, the very lock es_append
 * takes. A try-lock instead of FOR UPDATE: concurrent dispatchers skip each
 * other's candidates, and no row lock gives the transaction an id before its
 * append (the event store's ordering rule).
 *
 * Plan: Limit -> Index Scan using runs_claim_idx (queue = ANY, available_at
 * <= now()), the partial index holding only scheduled/retry_wait rows, so
 * finished runs cost nothing; the candidates are materialised (4x the limit)
 * so that only rows actually returned are try-locked, in due order.
 */
export async function lockReadyRuns(db: Queryable, team: string, queues: readonly string[], limit: number): Promise<string[]> {
  const { rows } = await db.query<{ run_id: string }>({
    name: 'claim_lock_ready_runs',
    text: `WITH candidates AS MATERIALIZED (
             SELECT r.run_id FROM runs r
              WHERE r.queue = ANY($1::text[]) AND r.team = $2
                AND r.state IN ('scheduled', 'retry_wait') AND r.available_at <= now()
                AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.name = r.job AND j.paused)
              ORDER BY r.available_at
              LIMIT $3 * 4
           )
           SELECT c.run_id FROM candidates c
            WHERE pg_try_advisory_xact_lock(hashtextextended('run-' || c.run_id, 0))
            LIMIT $3`,
    values: [queues, team, limit],
  });
  return rows.map((r) => r.run_id);
}

/** Step 2: the locked runs' current state, read after the locks, with the database's clock. */
export async function loadLockedRuns(db: Queryable, runIds: readonly string[]): Promise<{ runs: PresentRun[]; now: Date }> {
  const { rows } = await db.query<{ snapshot: PresentRun; db_now: Date }>({
    name: 'claim_load_locked_runs',
    text: `SELECT r.snapshot, now() AS db_now FROM runs r
            WHERE r.run_id = ANY($1::text[]) AND r.state IN ('scheduled', 'retry_wait') AND r.available_at <= now()`,
    values: [runIds],
  });
  return { runs: rows.map((r) => r.snapshot), now: rows[0]?.db_now ?? new Date() };
}

/** When the next run of these queues becomes ready: the long-poll's timer. */
export async function nextAvailableAt(db: Queryable, team: string, queues: readonly string[]): Promise<Date | null> {
  const { rows } = await db.query<{ next: Date | null }>({
    name: 'claim_next_available_at',
    text: `SELECT min(r.available_at) AS next FROM runs r
            WHERE r.queue = ANY($1::text[]) AND r.team = $2 AND r.state IN ('scheduled', 'retry_wait')`,
    values: [queues, team],
  });
  return rows[0]?.next ?? null;
}
