import type { ReadModelWrite } from '@chronicle/event-store';
import { copyRows, sqlList, type CopyConnection, type Queryable } from '@chronicle/platform';
import { upcastData, WAITING_RUN_STATES, type PresentRun } from '@chronicle/domain';

/**
 * The waiting states as the SQL literal list the partial indexes on `runs` are written with
 * (runs_claim_idx, runs_ready_job_idx): a query that selects ready runs uses this, never its own list.
 */
export const WAITING_SQL = sqlList(WAITING_RUN_STATES);

/** The columns a run's state is read from, of `runs r`: select these, then runFromRow. */
export const RUN_COLUMNS =
  'r.state, r.revision, r.definition, r.attempt, r.attempt_limit, r.available_at, r.fencing_token, r.worker_id, r.leased_at, r.lease_expires_at, r.last_error, r.death, r.discarded, r.finished_at';

/** A row of RUN_COLUMNS as node-postgres gives it. */
export interface RunRow {
  readonly state: PresentRun['status'];
  readonly revision: string;
  readonly definition: PresentRun['definition'];
  readonly attempt: number;
  readonly attempt_limit: number;
  readonly available_at: Date;
  readonly fencing_token: string | null;
  readonly worker_id: string | null;
  readonly leased_at: Date | null;
  readonly lease_expires_at: Date | null;
  readonly last_error: string | null;
  readonly death: PresentRun['death'];
  readonly discarded: boolean;
  readonly finished_at: Date | null;
}

/** The decider's state of a run, from its row. */
export function runFromRow(row: RunRow): PresentRun {
  return {
    status: row.state,
    revision: Number(row.revision),
    // A row written before runs recorded their job's version holds the RunScheduled of then.
    definition: upcastData(
      'RunScheduled',
      row.definition,
      'jobVersion' in row.definition ? 2 : 1,
      2,
    ) as PresentRun['definition'],
    attempt: row.attempt,
    attemptLimit: row.attempt_limit,
    availableAt: row.available_at.toISOString(),
    lease:
      row.fencing_token === null
        ? null
        : {
            fencingToken: Number(row.fencing_token),
            workerId: row.worker_id!,
            leasedAt: row.leased_at!.toISOString(),
            expiresAt: row.lease_expires_at!.toISOString(),
          },
    lastError: row.last_error,
    death: row.death,
    discarded: row.discarded,
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}

/**
 * Rows of runs that exist, in one UPDATE (claims, completions, the
 * scheduler's passes): the state columns only, the definition stays as it
 * was written. Cheaper than an upsert, which tries the insert first. An
 * older revision never overwrites a newer row.
 */
export async function updateRuns(db: Queryable, states: readonly PresentRun[]): Promise<void> {
  if (states.length > 0) await db.query(runsUpdate(states));
}

/**
 * updateRuns' statement, for a unit of work to send with its append (UnitOfWork.append's writeThrough).
 * Only live rows change (no transition leaves a finished state), so the UPDATE reads `runs_live` alone;
 * a run that finishes moves to its day's partition (migrations/0018), its `run_listing` row with it.
 */
export function runsUpdate(states: readonly PresentRun[]): ReadModelWrite {
  return {
    name: 'runs_update',
    text: `WITH x AS MATERIALIZED (
     SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(${STATE_FIELDS})
     ), updated AS (
     UPDATE runs AS r
        SET ${SET_STATE('x')}, finished_on = ${FINISHED_ON('x')}, updated_at = now()
       FROM x WHERE ${LIVE_ROWS_OF_X} AND r.revision < x.revision
     RETURNING r.run_id, r.finished_on
     )
     ${MOVE_LISTINGS}`,
    values: [JSON.stringify(states.map(stateFields))],
  };
}

/**
 * The live rows `r` of `runs` of the runs in CTE `x`, each found by its key. The ids as an array (an
 * InitPlan) make the probe an index condition: as a join of `x` with the live partition, the planner
 * could read the partition whole and hash it for every batch (it did, with the partition never
 * analyzed: every waiting run's row, per batch of 100).
 */
const LIVE_ROWS_OF_X = `r.finished_on = 'infinity' AND r.run_id = ANY (ARRAY(SELECT x.run_id FROM x)) AND r.run_id = x.run_id`;

/** The state columns of a run's row, set from `from`'s. */
const SET_STATE = (from: string): string =>
  `state = ${from}.state, available_at = ${from}.available_at, attempt = ${from}.attempt,
   attempt_limit = ${from}.attempt_limit, lease_expires_at = ${from}.lease_expires_at,
   fencing_token = ${from}.fencing_token, worker_id = ${from}.worker_id, leased_at = ${from}.leased_at,
   last_error = ${from}.last_error, dead_at = ${from}.dead_at, death = ${from}.death,
   discarded = ${from}.discarded, revision = ${from}.revision, finished_at = ${from}.finished_at`;

/** A row's partition key (migrations/0018): the UTC day it finished, 'infinity' while it is live. */
const FINISHED_ON = (from: string): string => `coalesce(${UTC_DAY(`${from}.finished_at`)}, 'infinity'::date)`;

/** The UTC day of a timestamptz, as the partitions of `runs` are keyed. */
const UTC_DAY = (at: string): string => `(${at} AT TIME ZONE 'UTC')::date`;

/**
 * The `run_listing` rows of the runs of CTE `updated` that have just finished, moved with them, each
 * found by its key as LIVE_ROWS_OF_X finds runs' (the drain's completions read the live listing whole
 * with a Seq Scan, dead rows and all, per batch of 100, when its statistics were taken while it held
 * more dead rows than live ones).
 */
const MOVE_LISTINGS = `UPDATE run_listing AS l SET finished_on = u.finished_on FROM updated u
      WHERE l.finished_on = 'infinity' AND l.run_id = ANY (ARRAY(SELECT run_id FROM updated WHERE finished_on <> 'infinity'))
        AND l.run_id = u.run_id`;

/** Many runs in one statement (batch enqueue, the materialiser, the projector). */
export async function upsertRuns(db: Queryable, states: readonly PresentRun[]): Promise<void> {
  if (states.length > 0) await db.query(runsUpsert(states));
}

/**
 * upsertRuns' statement, for a unit of work to send with its append (UnitOfWork.append's writeThrough).
 * A run's live row is updated as runsUpdate does; a run that has no row is inserted, with its
 * `run_listing` row (migrations/0013), in the partition of its state. "No row" is asked of the live
 * partition, the default one and the days from yesterday on: a run finished before then was applied
 * then (the projector reads which runs it has by revision first), and a command creating a run finds
 * none older. A run finished before the first day retention keeps is not written again.
 */
export function runsUpsert(states: readonly PresentRun[]): ReadModelWrite {
  return {
    name: 'runs_upsert',
    text: `WITH x AS MATERIALIZED (
     SELECT x.*, ${FINISHED_ON('x')} AS finished_on
       FROM jsonb_to_recordset($1::jsonb) AS x(${ROW_FIELDS})
      WHERE x.finished_at IS NULL OR ${UTC_DAY('x.finished_at')} >= (SELECT kept_since FROM run_retention)
     ), updated AS (
     UPDATE runs AS r SET ${SET_STATE('x')}, finished_on = x.finished_on, updated_at = now()
       FROM x WHERE ${LIVE_ROWS_OF_X} AND r.revision < x.revision
     RETURNING r.run_id, r.finished_on
     ), moved AS (
     ${MOVE_LISTINGS}
     ), ${INSERT_NEW(`ON CONFLICT (run_id, finished_on) DO UPDATE SET ${SET_STATE('EXCLUDED')}, updated_at = now()
      WHERE r.revision < EXCLUDED.revision`)}`,
    values: [JSON.stringify(states.map(rowFields))],
  };
}

/**
 * The rows of runs just created (scheduleNewRuns: each append expected no stream, so no transition of
 * theirs can be in a row yet): runsUpsert without its update of live rows and its retention filter, which
 * new runs never need. A row the projector wrote first (a log of its own) is left as it is.
 */
export function runsInsert(states: readonly PresentRun[]): ReadModelWrite {
  return {
    name: 'runs_insert',
    text: `WITH x AS MATERIALIZED (
     SELECT x.*, ${FINISHED_ON('x')} AS finished_on FROM jsonb_to_recordset($1::jsonb) AS x(${ROW_FIELDS})
     ), ${INSERT_NEW('ON CONFLICT (run_id, finished_on) DO NOTHING')}`,
    values: [JSON.stringify(states.map(rowFields))],
  };
}

/**
 * The rows of CTE `x` whose run has none (run_id is unique across partitions because writers check:
 * "none" is asked of the live partition and of the days from yesterday to tomorrow, a transaction
 * begun before midnight seeing a run another finished after it; a run finished before then was applied
 * then, and a command creating a run finds none older), then their `run_listing` rows: the end of a
 * statement whose WITH list defines `x`, `onConflict` for a live row written meanwhile.
 * OFFSET 0 keeps the check a probe of each partition's key per run: as an anti join, the planner read
 * every row of those partitions into a hash for each batch (all the waiting runs, 150 ms at 40,000).
 * The days are listed, not a range, so that PostgreSQL prunes the partitions at run time: those four
 * (and the default one if a day has no partition of its own), not the week of days ahead that the
 * scheduler creates beforehand, 23 index pages per run instead of 7.
 */
const INSERT_NEW = (onConflict: string): string => `inserted AS (
     INSERT INTO runs AS r (run_id, team, job, queue, priority, due_at, definition, state, available_at, attempt, attempt_limit,
                            lease_expires_at, fencing_token, worker_id, leased_at, last_error, dead_at, death, discarded, revision,
                            finished_at, finished_on, updated_at)
     SELECT x.run_id, x.team, x.job, x.queue, x.priority, x.due_at, x.definition, x.state, x.available_at, x.attempt, x.attempt_limit,
            x.lease_expires_at, x.fencing_token, x.worker_id, x.leased_at, x.last_error, x.dead_at, x.death, x.discarded, x.revision,
            x.finished_at, x.finished_on, now()
       FROM x
      WHERE NOT EXISTS (SELECT 1 FROM runs e WHERE e.run_id = x.run_id AND e.finished_on = ANY (ARRAY['infinity'::date,
                          ${UTC_DAY('now()')} - 1, ${UTC_DAY('now()')}, ${UTC_DAY('now()')} + 1])
                        OFFSET 0)
     ${onConflict}
     RETURNING r.run_id, r.team, r.job, r.queue, r.due_at, r.finished_on
     )
     INSERT INTO run_listing (run_id, team, job, queue, due_at, finished_on)
     SELECT run_id, team, job, queue, due_at, finished_on FROM inserted
     ON CONFLICT (run_id, finished_on) DO NOTHING`;

/**
 * Runs that have no row yet, into tables that have none of them (a rebuild's shadows, filled from
 * empty): the rows upsertRuns would have written, and their `run_listing` rows, by COPY (no
 * conflict checks, no JSON for the server to take apart). `updated_at` takes its default, now().
 */
export async function copyNewRuns(db: CopyConnection, all: readonly PresentRun[]): Promise<void> {
  if (all.length === 0) return;
  const states = await keptRuns(db, all);
  if (states.length === 0) return;
  await copyRows(
    db,
    'runs',
    [
      'run_id',
      'team',
      'job',
      'queue',
      'priority',
      'due_at',
      'definition',
      'state',
      'available_at',
      'attempt',
      'attempt_limit',
      'lease_expires_at',
      'fencing_token',
      'worker_id',
      'leased_at',
      'last_error',
      'dead_at',
      'death',
      'discarded',
      'revision',
      'finished_at',
      'finished_on',
    ],
    states.map((s) => {
      const d = s.definition;
      return [
        d.runId,
        d.team,
        d.job,
        d.queue,
        d.priority,
        d.dueAt,
        d,
        s.status,
        s.availableAt,
        s.attempt,
        s.attemptLimit,
        s.lease?.expiresAt ?? null,
        s.lease?.fencingToken ?? null,
        s.lease?.workerId ?? null,
        s.lease?.leasedAt ?? null,
        s.lastError,
        s.death?.deadAt ?? null,
        s.death,
        s.discarded,
        s.revision,
        s.finishedAt,
        finishedOn(s),
      ];
    }),
  );
  await copyRows(
    db,
    'run_listing',
    ['run_id', 'team', 'job', 'queue', 'due_at', 'finished_on'],
    states.map((s) => [
      s.definition.runId,
      s.definition.team,
      s.definition.job,
      s.definition.queue,
      s.definition.dueAt,
      finishedOn(s),
    ]),
  );
}

/** The runs retention has not passed: every one but those finished before its first kept day (run_retention). */
async function keptRuns(db: Queryable, runs: readonly PresentRun[]): Promise<readonly PresentRun[]> {
  const { rows } = await db.query<{ kept_since: string }>('SELECT kept_since::text FROM run_retention');
  const keptSince = rows[0]?.kept_since ?? '-infinity';
  if (keptSince === '-infinity') return runs;
  return runs.filter((run) => run.finishedAt === null || finishedOn(run) >= keptSince);
}

/** FINISHED_ON in TypeScript: the UTC day a run finished, or 'infinity'. */
function finishedOn(run: PresentRun): string {
  return run.finishedAt === null ? 'infinity' : new Date(run.finishedAt).toISOString().slice(0, 10);
}

/** A run's whole row, as jsonb_to_recordset reads it in runsUpsert and runsInsert (ROW_FIELDS). */
function rowFields(s: PresentRun): Record<string, unknown> {
  return {
    ...stateFields(s),
    team: s.definition.team,
    job: s.definition.job,
    queue: s.definition.queue,
    priority: s.definition.priority,
    due_at: s.definition.dueAt,
    definition: s.definition,
  };
}

/** The columns a transition changes, as jsonb_to_recordset reads them (stateFields writes them). */
const STATE_FIELDS = `run_id text, state text, available_at timestamptz, attempt int, attempt_limit int, lease_expires_at timestamptz,
  fencing_token bigint, worker_id text, leased_at timestamptz, last_error text, dead_at timestamptz, death jsonb,
  discarded boolean, revision bigint, finished_at timestamptz`;

/** A run's whole row, as jsonb_to_recordset reads it (rowFields writes it). */
const ROW_FIELDS = `${STATE_FIELDS}, team text, job text, queue text, priority text, due_at timestamptz, definition jsonb`;

function stateFields(s: PresentRun): Record<string, unknown> {
  return {
    run_id: s.definition.runId,
    state: s.status,
    available_at: s.availableAt,
    attempt: s.attempt,
    attempt_limit: s.attemptLimit,
    lease_expires_at: s.lease?.expiresAt ?? null,
    fencing_token: s.lease?.fencingToken ?? null,
    worker_id: s.lease?.workerId ?? null,
    leased_at: s.lease?.leasedAt ?? null,
    last_error: s.lastError,
    dead_at: s.death?.deadAt ?? null,
    death: s.death,
    discarded: s.discarded,
    revision: s.revision,
    finished_at: s.finishedAt,
  };
}

export async function findRunSnapshot(db: Queryable, runId: string): Promise<PresentRun | undefined> {
  const { rows } = await db.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs r WHERE r.run_id = $1`, [runId]);
  return rows[0] === undefined ? undefined : runFromRow(rows[0]);
}

/**
 * Rows of these runs after taking their stream locks (lock_and_read_runs, as commands decide): a writer
 * that holds them is done, and none starts until this transaction ends. A run's last transition moves
 * its row to another partition, and PostgreSQL refuses (40001) an update of a row that a concurrent
 * transaction moved: the projector, writing rows the commands did not (a log in another database), takes
 * the same locks first.
 */
export async function lockRunSnapshots(db: Queryable, runIds: readonly string[]): Promise<PresentRun[]> {
  if (runIds.length === 0) return [];
  const { rows } = await db.query<RunRow>({
    name: 'runs_lock_snapshots',
    text: `SELECT ${RUN_COLUMNS} FROM lock_and_read_runs($1::text[]) r`,
    values: [runIds],
  });
  return rows.map(runFromRow);
}

/**
 * `columns` of `runs r` for these runs (each id once), each found by its primary
 * key: the live partition first (the runs being worked on are there), the finished days only for an id not
 * found there, stopping at its row. A lookup by run id alone has no partition to prune to: an `= ANY` over
 * the whole table was planned at every call (2-3 ms on 11 partitions) and read small partitions without
 * statistics whole. A named statement: one plan per connection, an index probe or two per id.
 */
function runsByIdQuery(
  name: string,
  columns: string,
  runIds: readonly string[],
): { name: string; text: string; values: unknown[] } {
  return {
    name,
    text: `SELECT ${columns} FROM unnest($1::text[]) AS u(id),
      LATERAL (SELECT * FROM runs WHERE finished_on = 'infinity' AND run_id = u.id
               UNION ALL
               SELECT * FROM runs WHERE finished_on <> 'infinity' AND run_id = u.id
               LIMIT 1) r`,
    values: [[...new Set(runIds)]],
  };
}

/** The revision each of these runs' rows reflects now (runs not found are left out). */
export async function findRunRevisions(db: Queryable, runIds: readonly string[]): Promise<Map<string, number>> {
  if (runIds.length === 0) return new Map();
  const { rows } = await db.query<{ run_id: string; revision: string }>(runRevisionsQuery(runIds));
  return new Map(rows.map((r) => [r.run_id, Number(r.revision)]));
}

/** findRunRevisions' statement. */
export function runRevisionsQuery(runIds: readonly string[]): { name: string; text: string; values: unknown[] } {
  return runsByIdQuery('runs_revisions', 'r.run_id, r.revision', runIds);
}

export async function findRunSnapshots(db: Queryable, runIds: readonly string[]): Promise<PresentRun[]> {
  if (runIds.length === 0) return [];
  const { rows } = await db.query<RunRow>(runsByIdQuery('runs_snapshots', RUN_COLUMNS, runIds));
  return rows.map(runFromRow);
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
    text: `SELECT j.name AS job, j.run_limit, (SELECT count(*)::int FROM runs r WHERE r.finished_on = 'infinity' AND r.job = j.name AND r.state = 'leased') AS leased,
                    (SELECT count(*)::int FROM runs r WHERE r.finished_on = 'infinity' AND r.job = j.name AND r.state IN (${WAITING_SQL}) AND r.available_at <= now()) AS ready
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
  const { rows } = await db.query<RunRow & { db_now: Date }>(
    runsByIdQuery('runs_snapshots_now', `${RUN_COLUMNS}, now() AS db_now`, runIds),
  );
  return { runs: rows.map(runFromRow), now: rows[0]?.db_now ?? new Date() };
}
