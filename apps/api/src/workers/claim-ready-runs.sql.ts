import type { PriorityWeights } from '../../../../libs/platform/src/config/config';
import type { Queryable } from '../../../../libs/platform/src/database/pg-pool';
import type { PresentRun } from '../runs/runs.service';

/** Whose runs a claim may take: a team's worker token its team's; a platform worker token (team null) every team granted the queues. */
export interface ClaimScope {
  readonly team: string | null;
  readonly queues: readonly string[];
}

const PRIORITIES = ['critical', 'default', 'bulk'] as const;

/** The claim statement ($1 queues, $2 team or null, $3 limit, $4 priorities, $5 their weights), as lockReadyRuns runs it. */
export const CLAIM_SQL = `WITH served AS (
    SELECT q.queue, coalesce($2, g.team) AS team, coalesce(g.weight, 1) AS weight
      FROM unnest($1::text[]) AS q(queue)
      LEFT JOIN queue_grants g ON g.queue = q.queue AND ($2::text IS NULL OR g.team = $2)
     WHERE $2::text IS NOT NULL OR g.team IS NOT NULL
  ), limited AS MATERIALIZED (
    SELECT j.name AS job, j.paused, j.run_limit - (SELECT count(*) FROM runs l WHERE l.job = j.name AND l.state = 'leased') AS headroom
      FROM jobs j
     WHERE j.definition->>'queue' = ANY($1::text[]) AND j.run_limit IS NOT NULL
  ), candidates AS MATERIALIZED (
    SELECT c.*, row_number() OVER (PARTITION BY c.priority, c.team ORDER BY c.available_at) AS team_rank
      FROM (
        SELECT r.run_id, r.team, r.priority, r.available_at, s.weight
          FROM served s
         CROSS JOIN unnest($4::text[]) AS p(priority)
         CROSS JOIN LATERAL (
           SELECT r.run_id, r.team, r.priority, r.available_at FROM runs r
            WHERE r.queue = s.queue AND r.team = s.team AND r.priority = p.priority
              AND r.state IN ('scheduled', 'retry_wait') AND r.available_at <= now()
              AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.name = r.job AND j.paused)
              AND NOT EXISTS (SELECT 1 FROM limited l WHERE l.job = r.job)
            ORDER BY r.available_at
            LIMIT $3
         ) r
        UNION ALL
        SELECT r.run_id, r.team, r.priority, r.available_at, s.weight
          FROM limited l
         CROSS JOIN LATERAL (
           SELECT r.run_id, r.team, r.queue, r.priority, r.available_at FROM runs r
            WHERE r.job = l.job AND r.state IN ('scheduled', 'retry_wait') AND r.available_at <= now()
            ORDER BY r.available_at
            LIMIT least(l.headroom, $3)
         ) r
         JOIN served s ON s.queue = r.queue AND s.team = r.team
         WHERE l.headroom > 0 AND NOT l.paused
      ) c
  ), team_phases AS MATERIALIZED (
    SELECT t.priority, t.team, random() AS u FROM (SELECT DISTINCT priority, team FROM candidates) t
  ), priority_phases AS MATERIALIZED (
    SELECT w.priority, w.weight, random() AS u FROM unnest($4::text[], $5::float8[]) AS w(priority, weight)
  ), within_priority AS (
    SELECT c.run_id, c.priority,
           row_number() OVER (PARTITION BY c.priority ORDER BY (c.team_rank - t.u) / c.weight, c.available_at) AS priority_rank
      FROM candidates c JOIN team_phases t USING (priority, team)
  ), chosen AS MATERIALIZED (
    SELECT w.run_id FROM within_priority w JOIN priority_phases p USING (priority)
     ORDER BY (w.priority_rank - p.u) / p.weight
     LIMIT $3 * 2
  )
  SELECT c.run_id FROM chosen c
   WHERE pg_try_advisory_xact_lock(hashtextextended('run-' || c.run_id, 0))
   LIMIT $3`;

/**
 * Step 1 of the claim (DESIGN.md, claim protocol), in one statement: pick
 * up to `limit` ready runs by the dispatch policy and take each run stream's
 * advisory lock, the very lock es_append takes. A try-lock instead of FOR
 * UPDATE: concurrent dispatchers skip each other's candidates, and no row
 * lock gives the transaction an id before its append (the event store's
 * ordering rule).
 *
 * The policy is stride scheduling at two levels, each with a random phase
 * per claim so that small batches keep the shares on average:
 *  - teams within a priority: the k-th oldest ready run of a team has the
 *    key (k - u_team) / weight_team. Round-robin across the teams with ready
 *    work (weighted by their grants), oldest first within a team: a team's
 *    1,000,000 runs do not delay another team's 10.
 *  - priorities: the k-th run of a priority in that order has the key
 *    (k - u_priority) / weight_priority, so claims split 70/25/5 while all
 *    three have ready runs, and a priority with none gives its share away.
 * Runs of paused jobs are not candidates. A job with a limit (jobs.run_limit:
 * its concurrency, or 1 for a schedule whose overlap policy keeps fires
 * apart) gives at most its headroom (limit - leased runs), from its own index
 * range, so its waiting runs never hide other jobs' runs behind them; the
 * headroom is checked again under the job's lock (withinConcurrencyLimits).
 *
 * Plan (1,000,000 ready runs, 50 teams): per (queue, team, priority), an
 * Index Scan using runs_claim_idx (queue, team, priority, available_at
 * <= now()) under a Limit of `limit` rows, so the statement reads at most
 * queues x teams x 3 x limit index entries whatever the backlog; the
 * concurrency-limited jobs come from jobs_limited_idx, their leased runs
 * from runs_leased_job_idx and their ready runs from runs_ready_job_idx. Window functions and the sort run over
 * those few candidates only. Known cost: the per-team scan steps over the
 * ready runs of concurrency-limited jobs at its head one by one.
 */
export async function lockReadyRuns(db: Queryable, scope: ClaimScope, limit: number, weights: PriorityWeights): Promise<string[]> {
  const { rows } = await db.query<{ run_id: string }>({
    name: 'claim_lock_ready_runs',
    text: CLAIM_SQL,
    values: [scope.queues, scope.team, limit, PRIORITIES, PRIORITIES.map((p) => weights[p])],
  });
  return rows.map((r) => r.run_id);
}

/**
 * Per-job concurrency, exactly: the jobs with a limit among the locked runs
 * are locked (blocking, in name order, so two claims cannot deadlock), and
 * only then is each job's headroom counted, in a new statement that sees
 * every claim committed before the lock was granted. Resolves with the
 * runs to lease: the others are left for a later claim.
 */
export async function withinConcurrencyLimits(db: Queryable, runs: readonly PresentRun[], limitedJobs: ReadonlySet<string>): Promise<PresentRun[]> {
  if (limitedJobs.size === 0) return [...runs];
  const jobs = [...limitedJobs].sort();
  await db.query({
    name: 'claim_lock_job_concurrency',
    text: `SELECT pg_advisory_xact_lock(hashtextextended('job-concurrency-' || job, 0)) FROM unnest($1::text[]) AS job ORDER BY job COLLATE "C"`,
    values: [jobs],
  });
  const { rows: headroom } = await db.query<{ job: string; headroom: number }>({
    name: 'claim_job_headroom',
    text: `SELECT j.name AS job, j.run_limit - (SELECT count(*) FROM runs l WHERE l.job = j.name AND l.state = 'leased')::int AS headroom
             FROM jobs j WHERE j.name = ANY($1::text[])`,
    values: [jobs],
  });
  const left = new Map(headroom.map((h) => [h.job, h.headroom]));
  return runs.filter((run) => {
    const room = left.get(run.definition.job);
    if (room === undefined) return true;
    left.set(run.definition.job, room - 1);
    return room > 0;
  });
}

/**
 * Step 2: the locked runs' current state, read after the locks, with the
 * database's clock, and which of their jobs have a run limit.
 */
export async function loadLockedRuns(db: Queryable, runIds: readonly string[]): Promise<{ runs: PresentRun[]; now: Date; limitedJobs: Set<string> }> {
  const { rows } = await db.query<{ snapshot: PresentRun; db_now: Date; limited: boolean }>({
    name: 'claim_load_locked_runs',
    text: `SELECT r.snapshot, now() AS db_now, EXISTS (SELECT 1 FROM jobs j WHERE j.name = r.job AND j.run_limit IS NOT NULL) AS limited FROM runs r
            WHERE r.run_id = ANY($1::text[]) AND r.state IN ('scheduled', 'retry_wait') AND r.available_at <= now()`,
    values: [runIds],
  });
  const limitedJobs = new Set(rows.filter((r) => r.limited).map((r) => r.snapshot.definition.job));
  return { runs: rows.map((r) => r.snapshot), now: rows[0]?.db_now ?? new Date(), limitedJobs };
}

/** When the next run of these queues becomes ready: the long-poll's timer. */
export async function nextAvailableAt(db: Queryable, scope: ClaimScope): Promise<Date | null> {
  const { rows } = await db.query<{ next: Date | null }>({
    name: 'claim_next_available_at',
    text: `SELECT min(n.available_at) AS next
             FROM unnest($1::text[]) AS q(queue)
             LEFT JOIN queue_grants g ON g.queue = q.queue AND ($2::text IS NULL OR g.team = $2)
            CROSS JOIN unnest($3::text[]) AS p(priority)
            CROSS JOIN LATERAL (
              SELECT r.available_at FROM runs r
               WHERE r.queue = q.queue AND r.team = coalesce($2, g.team) AND r.priority = p.priority AND r.state IN ('scheduled', 'retry_wait')
               ORDER BY r.available_at LIMIT 1
            ) n`,
    values: [scope.queues, scope.team, PRIORITIES],
  });
  return rows[0]?.next ?? null;
}
