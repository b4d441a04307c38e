import { rateLimit, type RateLimit, type RatePeriod } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';

export interface TeamQuotasRow {
  enqueue_rate_per_second: number | null;
  enqueue_burst: number | null;
  max_pending_runs: number | null;
  tokens: number | null;
  refilled_at: Date | null;
}

/** The quota state an enqueue decides from: read under the team's quota lock. */
export interface QuotaStateRow extends TeamQuotasRow {
  /** Runs of the team not in a final state, counted up to max_pending_runs (0 without that limit). */
  pending_runs: number;
  /** Database time, read after the lock was granted: the bucket's clock, shared by every API process. */
  now: Date;
}

export async function findTeamQuotas(db: Queryable, team: string): Promise<TeamQuotasRow | undefined> {
  const { rows } = await db.query<TeamQuotasRow>(
    'SELECT enqueue_rate_per_second, enqueue_burst, max_pending_runs, tokens, refilled_at FROM team_quotas WHERE team = $1',
    [team],
  );
  return rows[0];
}

/**
 * Serialises a team's enqueues and quota changes, for the transaction.
 * An advisory lock, not a row lock: it writes nothing, so the transaction has
 * no id yet when es_append runs (which must come before its first write), and
 * the waiters hold back no reader of the global log.
 */
export async function lockTeamQuotas(db: Queryable, team: string): Promise<void> {
  await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`team-quotas:${team}`]);
}

/**
 * Under the lock, so the count includes every enqueue that committed before
 * this one, and none can commit in between. The pending runs are the team's
 * rows in `ready_runs` (waiting) and `run_leases` (leased), found by the
 * team's jobs (ready_runs_job_idx, run_leases_pkey: a probe per job of the
 * team), and the count stops at the limit: the decision needs whether pending
 * + new exceeds it, not the size of the backlog, so at most max_pending_runs
 * rows are read.
 */
export async function readQuotaState(db: Queryable, team: string): Promise<QuotaStateRow | undefined> {
  const { rows } = await db.query<QuotaStateRow>(
    `SELECT q.enqueue_rate_per_second, q.enqueue_burst, q.max_pending_runs, q.tokens, q.refilled_at, clock_timestamp() AS now,
            (SELECT count(*) FROM (SELECT 1 FROM ready_runs r WHERE r.job = ANY (t.jobs) AND r.team = q.team
                                   UNION ALL
                                   SELECT 1 FROM run_leases l WHERE l.job = ANY (t.jobs) AND l.team = q.team
                                   LIMIT coalesce(q.max_pending_runs, 0)) p)::int AS pending_runs
       FROM team_quotas q
      CROSS JOIN LATERAL (SELECT ARRAY(SELECT j.name FROM jobs j WHERE j.team = q.team) AS jobs) t
      WHERE q.team = $1`,
    [team],
  );
  return rows[0];
}

/**
 * A team's pending runs on a server that keeps runs apart from the control database (docs/sharding.md),
 * counted as readQuotaState counts them there, up to `limit`, by the team's jobs as the control database
 * has them (a server's copy of `jobs` may lag a job just defined).
 */
export async function countPendingRuns(
  db: Queryable,
  team: string,
  jobs: readonly string[],
  limit: number,
): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n
       FROM (SELECT 1 FROM ready_runs r WHERE r.job = ANY ($2::text[]) AND r.team = $1
             UNION ALL
             SELECT 1 FROM run_leases l WHERE l.job = ANY ($2::text[]) AND l.team = $1
             LIMIT $3) p`,
    [team, jobs, limit],
  );
  return rows[0]!.n;
}

/** The names of a team's jobs (the control database's). */
export async function teamJobNames(db: Queryable, team: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>('SELECT name FROM jobs WHERE team = $1', [team]);
  return rows.map((r) => r.name);
}

export async function saveTokenBucket(db: Queryable, team: string, tokens: number, refilledAt: Date): Promise<void> {
  await db.query('UPDATE team_quotas SET tokens = $2, refilled_at = $3 WHERE team = $1', [team, tokens, refilledAt]);
}

/**
 * The admin's PUT. A new rate starts with a full bucket; a changed one keeps
 * the tokens left, at most the new burst.
 */
export async function upsertTeamQuotas(
  db: Queryable,
  team: string,
  quotas: { rate: number | null; burst: number | null; effectiveBurst: number | null; maxPendingRuns: number | null },
): Promise<void> {
  await db.query(
    `INSERT INTO team_quotas AS q (team, enqueue_rate_per_second, enqueue_burst, max_pending_runs, tokens, refilled_at)
     VALUES ($1, $2, $3, $4, $5, CASE WHEN $5::double precision IS NULL THEN NULL ELSE now() END)
     ON CONFLICT (team) DO UPDATE
        SET enqueue_rate_per_second = EXCLUDED.enqueue_rate_per_second, enqueue_burst = EXCLUDED.enqueue_burst,
            max_pending_runs = EXCLUDED.max_pending_runs,
            tokens = CASE WHEN EXCLUDED.tokens IS NULL THEN NULL WHEN q.tokens IS NULL THEN EXCLUDED.tokens ELSE least(q.tokens, EXCLUDED.tokens) END,
            refilled_at = CASE WHEN EXCLUDED.tokens IS NULL THEN NULL WHEN q.tokens IS NULL THEN EXCLUDED.refilled_at ELSE q.refilled_at END,
            updated_at = now()`,
    [team, quotas.rate, quotas.burst, quotas.maxPendingRuns, quotas.effectiveBurst],
  );
}

/** All limits null: unlimited, which is no row. */
export async function deleteTeamQuotas(db: Queryable, team: string): Promise<void> {
  await db.query('DELETE FROM team_quotas WHERE team = $1', [team]);
}

/** A team's rate of leased runs (team_rates, migrations/0045); null: none. */
export async function findTeamRate(db: Queryable, team: string): Promise<RateLimit | null> {
  const { rows } = await db.query<{ limit: number; per: RatePeriod; burst: number }>(
    'SELECT "limit", per, burst FROM team_rates WHERE team = $1',
    [team],
  );
  const row = rows[0];
  return row === undefined ? null : rateLimit(row);
}
