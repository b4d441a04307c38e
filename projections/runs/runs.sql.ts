import { sqlList, type Queryable } from '@chronicle/platform';
import { WAITING_RUN_STATES, type PresentRun } from '@chronicle/domain';

/**
 * The waiting states as the SQL literal list the partial indexes on `runs` are written with
 * (runs_claim_idx, runs_ready_job_idx): a query that selects ready runs uses this, never its own list.
 */
export const WAITING_SQL = sqlList(WAITING_RUN_STATES);

/**
 * Rows of runs that exist, in one UPDATE (claims, completions, the
 * scheduler's passes): cheaper than an upsert, which tries the insert
 * first. An older revision never overwrites a newer row.
 */
export async function updateRuns(db: Queryable, states: readonly PresentRun[]): Promise<void> {
  if (states.length === 0) return;
  await db.query({
    name: 'runs_update',
    text: `UPDATE runs AS r
              SET state = x.state, available_at = x.available_at, attempt = x.attempt, lease_expires_at = x.lease_expires_at,
                  dead_at = x.dead_at, discarded = x.discarded, snapshot = x.snapshot, revision = x.revision, updated_at = now()
             FROM jsonb_to_recordset($1::jsonb) AS x(run_id text, state text, available_at timestamptz, attempt int, lease_expires_at timestamptz,
                  dead_at timestamptz, discarded boolean, snapshot jsonb, revision bigint)
            WHERE r.run_id = x.run_id AND r.revision < x.revision`,
    values: [rowsJson(states)],
  });
}

/** Many runs in one statement (batch enqueue, the materialiser, the projector). */
export async function upsertRuns(db: Queryable, states: readonly PresentRun[]): Promise<void> {
  if (states.length === 0) return;
  await db.query(
    `INSERT INTO runs AS r (run_id, team, job, queue, priority, state, available_at, due_at, attempt, lease_expires_at, dead_at, discarded, snapshot, revision, updated_at)
     SELECT x.run_id, x.team, x.job, x.queue, x.priority, x.state, x.available_at, x.due_at, x.attempt, x.lease_expires_at, x.dead_at, x.discarded, x.snapshot, x.revision, now()
       FROM jsonb_to_recordset($1::jsonb) AS x(run_id text, team text, job text, queue text, priority text, state text, available_at timestamptz,
            due_at timestamptz, attempt int, lease_expires_at timestamptz, dead_at timestamptz, discarded boolean, snapshot jsonb, revision bigint)
     ON CONFLICT (run_id) DO UPDATE
        SET state = EXCLUDED.state, available_at = EXCLUDED.available_at, attempt = EXCLUDED.attempt,
            lease_expires_at = EXCLUDED.lease_expires_at, dead_at = EXCLUDED.dead_at, discarded = EXCLUDED.discarded,
            snapshot = EXCLUDED.snapshot, revision = EXCLUDED.revision, updated_at = now()
      WHERE r.revision < EXCLUDED.revision`,
    [rowsJson(states)],
  );
}

function rowsJson(states: readonly PresentRun[]): string {
  return JSON.stringify(
    states.map((s) => ({
      run_id: s.definition.runId,
      team: s.definition.team,
      job: s.definition.job,
      queue: s.definition.queue,
      priority: s.definition.priority,
      state: s.status,
      available_at: s.availableAt,
      due_at: s.definition.dueAt,
      attempt: s.attempt,
      lease_expires_at: s.lease?.expiresAt ?? null,
      dead_at: s.death?.deadAt ?? null,
      discarded: s.discarded,
      snapshot: s,
      revision: s.revision,
    })),
  );
}

export async function findRunSnapshot(db: Queryable, runId: string): Promise<PresentRun | undefined> {
  const { rows } = await db.query<{ snapshot: PresentRun }>('SELECT snapshot FROM runs WHERE run_id = $1', [runId]);
  return rows[0]?.snapshot;
}

export async function findRunSnapshots(db: Queryable, runIds: readonly string[]): Promise<PresentRun[]> {
  if (runIds.length === 0) return [];
  const { rows } = await db.query<{ snapshot: PresentRun }>(
    'SELECT snapshot FROM runs WHERE run_id = ANY($1::text[])',
    [runIds],
  );
  return rows.map((r) => r.snapshot);
}

export interface JobRunLimit {
  readonly job: string;
  readonly run_limit: number;
  readonly leased: number;
  /** Waiting runs already due: they take the next free slots. */
  readonly ready: number;
}

/**
 * Of these jobs, those with a run limit (jobs.run_limit: concurrency, or 1 for a non-overlapping
 * schedule), with their leased and ready runs now (runs_leased_job_idx, runs_ready_job_idx).
 */
export async function findJobRunLimits(db: Queryable, jobs: readonly string[]): Promise<JobRunLimit[]> {
  if (jobs.length === 0) return [];
  const { rows } = await db.query<JobRunLimit>({
    name: 'jobs_run_limits',
    text: `SELECT j.name AS job, j.run_limit, (SELECT count(*)::int FROM runs r WHERE r.job = j.name AND r.state = 'leased') AS leased,
                    (SELECT count(*)::int FROM runs r WHERE r.job = j.name AND r.state IN (${WAITING_SQL}) AND r.available_at <= now()) AS ready
             FROM jobs j WHERE j.name = ANY($1::text[]) AND j.run_limit IS NOT NULL`,
    values: [jobs],
  });
  return rows;
}

/**
 * Rows of these runs as they are now, with the database's clock: what a command decides from after
 * taking the runs' locks.
 */
export async function findRunSnapshotsAt(
  db: Queryable,
  runIds: readonly string[],
): Promise<{ runs: PresentRun[]; now: Date }> {
  const { rows } = await db.query<{ snapshot: PresentRun; db_now: Date }>({
    name: 'runs_snapshots_now',
    text: 'SELECT r.snapshot, now() AS db_now FROM runs r WHERE r.run_id = ANY($1::text[])',
    values: [runIds],
  });
  return { runs: rows.map((r) => r.snapshot), now: rows[0]?.db_now ?? new Date() };
}
