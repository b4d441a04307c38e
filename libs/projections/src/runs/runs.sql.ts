import type { ReadModelWrite } from '@chronicle/event-store';
import { copyRows, sqlList, type CopyConnection, type Queryable } from '@chronicle/platform';
import {
  debounceKeyKept,
  keptByState,
  upcastData,
  UNSUCCESSFUL_RUN_STATES,
  WAITING_RUN_STATES,
  type PresentRun,
} from '@chronicle/domain';

/**
 * The waiting states as the SQL literal list `ready_runs` holds the runs of (followRows): a query that selects
 * waiting runs by state uses this, never its own list.
 */
export const WAITING_SQL = sqlList(WAITING_RUN_STATES);

/** The columns a transition writes, of `r` (a run's `runs` row, or lock_and_read_runs' row). */
const STATE_COLUMNS =
  'r.state, r.revision, r.attempt, r.attempt_limit, r.available_at, r.fencing_token, r.worker_id, r.leased_at, r.lease_expires_at, r.last_error, r.death, r.discarded, r.finished_at';

/**
 * The columns a run's state is read from, then runFromRow: those of `r`, with the run's definition from
 * `definition`, an expression of a query that has the run's `run_listing` row at hand (migrations/0028: the
 * definition is written there once).
 */
export function runColumnsWith(definition: string): string {
  return `${STATE_COLUMNS}, ${definition} AS definition`;
}

/**
 * runColumnsWith for a query of `runs r` alone: the definition from the run's `run_listing` row, in the
 * same partition, by a subquery (one probe of that row's key per run read).
 */
export const RUN_COLUMNS = runColumnsWith(
  '(SELECT l.definition FROM run_listing l WHERE l.run_id = r.run_id AND l.kept_on = r.kept_on)',
);

/** runColumnsWith for `lock_and_read_runs(...) r`, which reads the definition itself. */
export const LOCKED_RUN_COLUMNS = runColumnsWith('r.definition');

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
export async function updateRuns(
  db: Queryable,
  states: readonly PresentRun[],
  redefined: ReadonlySet<string> = NONE,
): Promise<void> {
  if (states.length > 0) await db.query(runsUpdate(states, redefined));
}

/** No run redefined: a transition's rows leave their `run_listing` rows as they were written. */
const NONE: ReadonlySet<string> = new Set();

/**
 * updateRuns' statement, for a unit of work to send with its append (UnitOfWork.append's writeThrough).
 * A row is updated where it is (migrations/0025): a run that finishes stays in its day's partition.
 */
export function runsUpdate(states: readonly PresentRun[], redefined: ReadonlySet<string> = NONE): ReadModelWrite {
  const { days, name, rows } = byDueDays(states, 'runs_update');
  return {
    name,
    text: fixedText(
      name,
      () => `WITH x AS MATERIALIZED (
     SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(${STATE_FIELDS})
     ), changed AS (
     UPDATE runs AS r SET ${SET_STATE('x')}, updated_at = now()
       FROM x WHERE ${rows} AND r.revision < x.revision
     RETURNING ${READY_COLUMNS}, r.state
     )${RELISTED(days.length > 0, 'changed')}${FOLLOW_ROWS}`,
    ),
    values: [JSON.stringify(states.map((s) => stateFields(s, redefined))), ...days],
  };
}

/**
 * A CTE (with its leading comma) that writes the definition of each run of `x` sent with `redefined` (a
 * RunDebounced replaced its payload) to its `run_listing` row, where `written` (a CTE of run ids) updated
 * its `runs` row: the revision guard of that row guards the listing's too. Every other run sends none, and
 * its listing row, written once with the run, is not touched: the ids as an array (an InitPlan, empty but
 * for a debounce) keep the update a probe of the listing's key, as ROWS_OF_X does for `runs`.
 */
function RELISTED(byDay: boolean, written: string): string {
  const days = byDay ? `l.kept_on IN ($2::date, $3::date, $4::date, 'infinity'::date) AND ` : '';
  return `, relisted AS (
     UPDATE run_listing AS l SET definition = x.redefined
       FROM x WHERE x.redefined IS NOT NULL AND x.run_id IN (SELECT w.run_id FROM ${written} w)
        AND ${days}l.run_id = ANY (ARRAY(SELECT x.run_id FROM x WHERE x.redefined IS NOT NULL)) AND l.run_id = x.run_id
     )`;
}

/** Each statement's text by its name, made at its first use and the same ever after (hot SQL is fixed text). */
const texts = new Map<string, string>();

function fixedText(name: string, make: () => string): string {
  let text = texts.get(name);
  if (text === undefined) texts.set(name, (text = make()));
  return text;
}

/**
 * Which variant of statement `base` a batch takes: by its due days (ROWS_OF_X_BY_DAY, the days as $2 to $4),
 * or, due on more days than that, probing every partition (ROWS_OF_X, `<base>_any_day`, no day parameters).
 */
function byDueDays(states: readonly PresentRun[], base: string): { days: string[]; name: string; rows: string } {
  const days = dueDaysOf(states);
  return days === undefined
    ? { days: [], name: `${base}_any_day`, rows: ROWS_OF_X }
    : { days, name: base, rows: ROWS_OF_X_BY_DAY };
}

/**
 * How many due days a statement names as parameters ($2 to $4, ROWS_OF_X_BY_DAY): a batch's runs are nearly
 * always due on one day, or two around midnight.
 */
const DAY_SLOTS = 3;

/**
 * The due days of these runs, DAY_SLOTS of them (the first repeated to fill the slots), or undefined when
 * they are due on more days than that.
 */
function dueDaysOf(states: readonly PresentRun[]): string[] | undefined {
  const days = [...new Set(states.map(keptOn))];
  if (days.length > DAY_SLOTS) return undefined;
  return Array.from({ length: DAY_SLOTS }, (_, i) => days[i] ?? days[0]!);
}

/**
 * The rows `r` of `runs` of the runs in CTE `x`, each found by its key. The ids as an array (an InitPlan)
 * make the probe an index condition: as a join of `x` with a partition, the planner could read the
 * partition whole and hash it for every batch. This one probes every partition's key for each id: for a
 * batch due on more days than DAY_SLOTS.
 */
const ROWS_OF_X = `r.run_id = ANY (ARRAY(SELECT x.run_id FROM x)) AND r.run_id = x.run_id`;

/**
 * ROWS_OF_X in the partitions the rows can be in: their due days' ($2 to $4), and `runs_kept` once
 * retention kept them past their day (migrations/0025). The days as scalar parameters let PostgreSQL prune
 * the other partitions as the statement starts, on the generic plan the units of work run on (an array
 * parameter does not: every partition's key was probed for each id).
 */
const ROWS_OF_X_BY_DAY = `r.kept_on IN ($2::date, $3::date, $4::date, 'infinity'::date) AND ${ROWS_OF_X}`;

/** The state columns of a run's row, set from `from`'s. */
const SET_STATE = (from: string): string =>
  `state = ${from}.state, available_at = ${from}.available_at, attempt = ${from}.attempt, unique_key = ${from}.unique_key,
   attempt_limit = ${from}.attempt_limit, lease_expires_at = ${from}.lease_expires_at,
   fencing_token = ${from}.fencing_token, worker_id = ${from}.worker_id, leased_at = ${from}.leased_at,
   last_error = ${from}.last_error, dead_at = ${from}.dead_at, death = ${from}.death,
   discarded = ${from}.discarded, revision = ${from}.revision, finished_at = ${from}.finished_at,
   ended = ${ENDED(from)}, debounce_key = ${from}.debounce_key`;

/**
 * A row's `ended` (migrations/0029): its state when the run is dead or cancelled, NULL otherwise. The partial
 * indexes of ended runs are by it, not by `state`, so that a transition between the other states changes no
 * indexed column and updates the row in place.
 */
const ENDED = (from: string): string =>
  `CASE WHEN ${from}.state IN (${sqlList(UNSUCCESSFUL_RUN_STATES)}) THEN ${from}.state END`;

/** A new row's partition key (migrations/0025): the UTC day the run is due. */
function KEPT_ON(from: string): string {
  return UTC_DAY(`${from}.due_at`);
}

/** The UTC day of a timestamptz, as the partitions of `runs` are keyed. */
function UTC_DAY(at: string): string {
  return `(${at} AT TIME ZONE 'UTC')::date`;
}

/** Many runs in one statement (batch enqueue, the materialiser, the projector). */
export async function upsertRuns(
  db: Queryable,
  states: readonly PresentRun[],
  redefined: ReadonlySet<string> = NONE,
): Promise<void> {
  if (states.length > 0) await db.query(runsUpsert(states, redefined));
}

/**
 * upsertRuns' statement, for a unit of work to send with its append (UnitOfWork.append's writeThrough).
 * A run's row is updated as runsUpdate does; a run that has no row is inserted, with its `run_listing`
 * row (migrations/0013), in its due day's partition. A run finished before the first day retention keeps
 * is not written again.
 */
export function runsUpsert(states: readonly PresentRun[], redefined: ReadonlySet<string> = NONE): ReadModelWrite {
  const { days, name, rows } = byDueDays(states, 'runs_upsert');
  return {
    name,
    text: fixedText(
      name,
      () => `WITH x AS MATERIALIZED (
     SELECT x.*, ${KEPT_ON('x')} AS kept_on
       FROM jsonb_to_recordset($1::jsonb) AS x(${ROW_FIELDS})
      WHERE x.finished_at IS NULL OR ${UTC_DAY('x.finished_at')} >= (SELECT kept_since FROM run_retention)
     ), updated AS (
     UPDATE runs AS r SET ${SET_STATE('x')}, updated_at = now()
       FROM x WHERE ${rows} AND r.revision < x.revision
     RETURNING ${READY_COLUMNS}, r.state
     ), ${INSERT_NEW(`ON CONFLICT (run_id, kept_on) DO UPDATE SET ${SET_STATE('EXCLUDED')}, updated_at = now()
      WHERE r.revision < EXCLUDED.revision`)}, changed AS (
     SELECT * FROM updated UNION ALL SELECT ${READY_COLUMNS.replaceAll('r.', '')}, state FROM inserted
     )${RELISTED(days.length > 0, 'updated')}${FOLLOW_ROWS}`,
    ),
    values: [JSON.stringify(states.map((s) => rowFields(s, redefined))), ...days],
  };
}

/**
 * The rows of runs just created (scheduleNewRuns: each append expected no stream, so no transition of
 * theirs can be in a row yet): runsUpsert without its update and its retention filter, which new runs
 * never need. A row the projector wrote first (a log of its own) is left as it is. `alone`: the append
 * shares this statement's transaction (UnitOfWork.atomic), so no other writer can have written these
 * runs' rows, and the rows are plain inserts: an upsert's speculative insertion writes each row's WAL
 * twice (its HEAP_CONFIRM), for a conflict that cannot come.
 */
export function runsInsert(states: readonly PresentRun[], { alone = false }: { alone?: boolean } = {}): ReadModelWrite {
  const name = alone ? 'runs_insert_alone' : 'runs_insert';
  const onConflict = (clause: string): string => (alone ? '' : clause);
  return {
    name,
    text: fixedText(
      name,
      () => `WITH x AS MATERIALIZED (
     SELECT x.*, ${KEPT_ON('x')} AS kept_on FROM jsonb_to_recordset($1::jsonb) AS x(${ROW_FIELDS})
     ), ${INSERT_NEW(onConflict('ON CONFLICT (run_id, kept_on) DO NOTHING'), onConflict(LISTED_ONCE))}, changed AS (
     SELECT ${READY_COLUMNS.replaceAll('r.', '')}, state FROM inserted
     )
     ${followRows(true, onConflict)}`,
    ),
    values: [JSON.stringify(states.map((s) => rowFields(s, NONE)))],
  };
}

/**
 * The rows of CTE `x` whose run has none (CTE `inserted`), and their `run_listing` rows: CTEs of a
 * statement whose WITH list defines `x` (with `kept_on`), `onConflict` for a row written meanwhile and
 * `listingOnConflict` for its listing row. run_id is unique
 * across partitions because writers check: a run's row can only be in its due day's partition or in
 * `runs_kept`, so "none" is asked of those two, a probe of each one's key (PostgreSQL prunes the others
 * for each run as it runs the subquery; OFFSET 0 keeps it a probe per run: as an anti join, the planner
 * read every row of the partitions into a hash for each batch).
 */
/** A listing row written meanwhile (by the projector, with a log of its own) is left as it is. */
const LISTED_ONCE = 'ON CONFLICT (run_id, kept_on) DO NOTHING';

const INSERT_NEW = (onConflict: string, listingOnConflict = LISTED_ONCE): string => `inserted AS (
     INSERT INTO runs AS r (run_id, team, job, queue, priority, due_at, state, available_at, attempt, attempt_limit,
                            lease_expires_at, fencing_token, worker_id, leased_at, last_error, dead_at, death, discarded, revision,
                            finished_at, kept_on, updated_at, ended, unique_key, unique_until, concurrency_key,
                            ordering_key, ordering_seq, debounce_key)
     SELECT x.run_id, x.team, x.job, x.queue, x.priority, x.due_at, x.state, x.available_at, x.attempt, x.attempt_limit,
            x.lease_expires_at, x.fencing_token, x.worker_id, x.leased_at, x.last_error, x.dead_at, x.death, x.discarded, x.revision,
            x.finished_at, x.kept_on, now(), ${ENDED('x')}, x.unique_key, (x.definition->'unique'->>'until')::timestamptz,
            x.definition->>'concurrencyKey', x.definition->'ordering'->>'key', (x.definition->'ordering'->>'seq')::bigint,
            x.debounce_key
       FROM x
      WHERE NOT EXISTS (SELECT 1 FROM runs e WHERE e.run_id = x.run_id AND e.kept_on IN (x.kept_on, 'infinity') OFFSET 0)
     ${onConflict}
     RETURNING r.run_id, r.team, r.job, r.queue, r.priority, r.due_at, r.kept_on, r.state, r.available_at, r.lease_expires_at,
               r.concurrency_key, r.ordering_key, r.ordering_seq
     ), listed AS (
     INSERT INTO run_listing (run_id, team, job, queue, due_at, kept_on, definition)
     SELECT i.run_id, i.team, i.job, i.queue, i.due_at, i.kept_on, x.definition FROM inserted i JOIN x ON x.run_id = i.run_id
     ${listingOnConflict}
     )`;

/** The columns of CTE `changed` that its runs' `ready_runs` and `run_leases` rows are written from, of `runs r`. */
const READY_COLUMNS =
  'r.run_id, r.queue, r.team, r.priority, r.job, r.due_at, r.available_at, r.lease_expires_at, r.concurrency_key, r.ordering_key, r.ordering_seq';

/**
 * What follows CTE `changed` (READY_COLUMNS and state) in a statement that writes `runs` rows: more CTEs
 * (with their leading comma) and the statement's last part. `ready_runs` (migrations/0026, 0029) after the rows of `changed`: a run that
 * waits (scheduled, retry_wait) has its row there, with its state and time; the others have none. And
 * `run_leases`: a leased run has its row there, with its lease's expiry (updated for a heartbeat, inserted
 * otherwise: a plain insert, which an upsert's speculative insertion would log twice). The end of the statement that
 * writes their `runs` rows, so the claim's queue, the leases and the runs never disagree. `created`: the
 * runs were just created, and only the waiting ones' rows are written (a new run is in neither table);
 * `onConflict` gives the clause for a row written meanwhile (runsInsert's `alone`: none).
 */
function followRows(created: boolean, onConflict: (clause: string) => string = (clause) => clause): string {
  const waiting = `INSERT INTO ready_runs AS q (run_id, queue, team, priority, job, available_at, state, due_at, concurrency_key,
                                 ordering_key, ordering_seq)
     SELECT c.run_id, c.queue, c.team, c.priority, c.job, c.available_at, c.state, c.due_at, c.concurrency_key,
            c.ordering_key, c.ordering_seq FROM changed c
      WHERE c.state IN (${WAITING_SQL})
     ${onConflict('ON CONFLICT (run_id) DO UPDATE SET available_at = EXCLUDED.available_at, state = EXCLUDED.state')}`;
  if (created) return waiting;
  return `, unready AS (
     DELETE FROM ready_runs q
      WHERE q.run_id = ANY (ARRAY(SELECT c.run_id FROM changed c WHERE c.state NOT IN (${WAITING_SQL})))
     ), unleased AS (
     DELETE FROM run_leases l USING changed c
      WHERE c.state <> 'leased' AND l.job = c.job AND l.run_id = c.run_id
     ), relet AS (
     UPDATE run_leases l SET lease_expires_at = c.lease_expires_at FROM changed c
      WHERE c.state = 'leased' AND l.job = c.job AND l.run_id = c.run_id
     RETURNING l.run_id
     ), leased AS (
     INSERT INTO run_leases (run_id, job, team, queue, priority, due_at, lease_expires_at, concurrency_key, ordering_key)
     SELECT c.run_id, c.job, c.team, c.queue, c.priority, c.due_at, c.lease_expires_at, c.concurrency_key, c.ordering_key
       FROM changed c
      WHERE c.state = 'leased' AND c.run_id NOT IN (SELECT run_id FROM relet)
     )
     ${waiting}`;
}

const FOLLOW_ROWS = followRows(false);

/**
 * Runs that have no row yet, into tables that have none of them (a rebuild's shadows, filled from
 * empty): the rows upsertRuns would have written, and their `ready_runs`, `run_leases` and `run_listing` rows, by COPY (no
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
      'kept_on',
      'ended',
      'unique_key',
      'unique_until',
      'concurrency_key',
      'ordering_key',
      'ordering_seq',
      'debounce_key',
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
        keptOn(s),
        (UNSUCCESSFUL_RUN_STATES as readonly string[]).includes(s.status) ? s.status : null,
        uniqueKeyKept(s),
        d.unique?.until ?? null,
        d.concurrencyKey ?? null,
        d.ordering?.key ?? null,
        d.ordering?.seq ?? null,
        debounceKeyKept(s),
      ];
    }),
  );
  await copyRows(
    db,
    'ready_runs',
    [
      'run_id',
      'queue',
      'team',
      'priority',
      'job',
      'available_at',
      'state',
      'due_at',
      'concurrency_key',
      'ordering_key',
      'ordering_seq',
    ],
    states
      .filter((s) => (WAITING_RUN_STATES as readonly string[]).includes(s.status))
      .map((s) => [
        s.definition.runId,
        s.definition.queue,
        s.definition.team,
        s.definition.priority,
        s.definition.job,
        s.availableAt,
        s.status,
        s.definition.dueAt,
        s.definition.concurrencyKey ?? null,
        s.definition.ordering?.key ?? null,
        s.definition.ordering?.seq ?? null,
      ]),
  );
  await copyRows(
    db,
    'run_leases',
    ['run_id', 'job', 'team', 'queue', 'priority', 'due_at', 'lease_expires_at', 'concurrency_key', 'ordering_key'],
    states
      .filter((s) => s.status === 'leased')
      .map((s) => [
        s.definition.runId,
        s.definition.job,
        s.definition.team,
        s.definition.queue,
        s.definition.priority,
        s.definition.dueAt,
        s.lease!.expiresAt,
        s.definition.concurrencyKey ?? null,
        s.definition.ordering?.key ?? null,
      ]),
  );
  await copyRows(
    db,
    'run_listing',
    ['run_id', 'team', 'job', 'queue', 'due_at', 'kept_on', 'definition'],
    states.map((s) => [
      s.definition.runId,
      s.definition.team,
      s.definition.job,
      s.definition.queue,
      s.definition.dueAt,
      keptOn(s),
      s.definition,
    ]),
  );
}

/** The runs retention has not passed: every one but those finished before its first kept day (run_retention). */
async function keptRuns(db: Queryable, runs: readonly PresentRun[]): Promise<readonly PresentRun[]> {
  const { rows } = await db.query<{ kept_since: string }>('SELECT kept_since::text FROM run_retention');
  const keptSince = rows[0]?.kept_since ?? '-infinity';
  if (keptSince === '-infinity') return runs;
  return runs.filter((run) => run.finishedAt === null || utcDay(run.finishedAt) >= keptSince);
}

/** KEPT_ON in TypeScript: the UTC day the run is due, the partition a new row goes to. */
function keptOn(run: PresentRun): string {
  return utcDay(run.definition.dueAt);
}

function utcDay(at: string): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** A run's whole row, as jsonb_to_recordset reads it in runsUpsert and runsInsert (ROW_FIELDS). */
function rowFields(s: PresentRun, redefined: ReadonlySet<string>): Record<string, unknown> {
  return {
    ...stateFields(s, redefined),
    team: s.definition.team,
    job: s.definition.job,
    queue: s.definition.queue,
    priority: s.definition.priority,
    definition: s.definition,
  };
}

/** The columns a transition changes, as jsonb_to_recordset reads them (stateFields writes them). */
const STATE_FIELDS = `run_id text, due_at timestamptz, state text, available_at timestamptz, attempt int, attempt_limit int, lease_expires_at timestamptz,
  fencing_token bigint, worker_id text, leased_at timestamptz, last_error text, dead_at timestamptz, death jsonb,
  discarded boolean, revision bigint, finished_at timestamptz, unique_key text, debounce_key text, redefined jsonb`;

/** A run's whole row, as jsonb_to_recordset reads it (rowFields writes it). */
const ROW_FIELDS = `${STATE_FIELDS}, team text, job text, queue text, priority text, definition jsonb`;

/**
 * A run's state columns; one that is NULL is left out (jsonb_to_recordset reads a missing key as NULL): a
 * run without a lease, error, death or end sends none of those names, about a third of its row's text.
 * A run in `redefined` sends its definition too, for its `run_listing` row (RELISTED).
 */
function stateFields(s: PresentRun, redefined: ReadonlySet<string>): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    run_id: s.definition.runId,
    due_at: s.definition.dueAt,
    state: s.status,
    available_at: s.availableAt,
    attempt: s.attempt,
    attempt_limit: s.attemptLimit,
    discarded: s.discarded,
    revision: s.revision,
  };
  if (s.lease !== null) {
    fields.lease_expires_at = s.lease.expiresAt;
    fields.fencing_token = s.lease.fencingToken;
    fields.worker_id = s.lease.workerId;
    fields.leased_at = s.lease.leasedAt;
  }
  if (s.lastError !== null) fields.last_error = s.lastError;
  if (s.death !== null) {
    fields.dead_at = s.death.deadAt;
    fields.death = s.death;
  }
  if (s.finishedAt !== null) fields.finished_at = s.finishedAt;
  const key = uniqueKeyKept(s);
  if (key !== null) fields.unique_key = key;
  const debounceKey = debounceKeyKept(s);
  if (debounceKey !== null) fields.debounce_key = debounceKey;
  if (redefined.has(s.definition.runId)) fields.redefined = s.definition;
  return fields;
}

export async function findRunSnapshot(db: Queryable, runId: string): Promise<PresentRun | undefined> {
  const { rows } = await db.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs r WHERE r.run_id = $1`, [runId]);
  return rows[0] === undefined ? undefined : runFromRow(rows[0]);
}

/**
 * Rows of these runs after taking their stream locks (lock_and_read_runs, as commands decide): a writer
 * that holds them is done, and none starts until this transaction ends: the projector, writing rows the
 * commands did not (a log in another database), takes the same locks first, so that two writers of one
 * run's row never race on its revision.
 */
export async function lockRunSnapshots(db: Queryable, runIds: readonly string[]): Promise<PresentRun[]> {
  if (runIds.length === 0) return [];
  const { rows } = await db.query<RunRow>({
    name: 'runs_lock_snapshots',
    text: `SELECT ${LOCKED_RUN_COLUMNS} FROM lock_and_read_runs($1::text[]) r`,
    values: [runIds],
  });
  return rows.map(runFromRow);
}

/** Yesterday to tomorrow, and `runs_kept`: the partitions of the runs being worked on, nearly always. */
const RECENT = `ARRAY[${UTC_DAY('now()')} - 1, ${UTC_DAY('now()')}, ${UTC_DAY('now()')} + 1, 'infinity'::date]`;

/**
 * `columns` of `runs r` for these runs (each id once), each found by its primary
 * key: the recent days and the kept runs first (the runs being worked on are there), the older days only
 * for an id not found there, stopping at its row. A lookup by run id alone has no partition to prune to: an `= ANY` over
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
      LATERAL (SELECT * FROM runs WHERE kept_on = ANY (${RECENT}) AND run_id = u.id
               UNION ALL
               SELECT * FROM runs WHERE kept_on <> ALL (${RECENT}) AND run_id = u.id
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
 * schedule), with their leased and ready runs now (run_leases_pkey, ready_runs_job_idx).
 */
export async function findJobRunLimits(db: Queryable, jobs: readonly string[]): Promise<JobRunLimit[]> {
  if (jobs.length === 0) return [];
  const { rows } = await db.query<JobRunLimit>({
    name: 'jobs_run_limits',
    text: `SELECT j.name AS job, j.run_limit, (SELECT count(*)::int FROM run_leases l WHERE l.job = j.name) AS leased,
                    (SELECT count(*)::int FROM ready_runs r WHERE r.job = j.name AND r.available_at <= now()) AS ready
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

/**
 * The unique key a run's row keeps (runs.unique_key, migrations/0038): the run's key while it may hold it
 * (keptByState), NULL otherwise, so that the index by key holds the runs that may hold theirs and not
 * every run a key ever had. A run without a key keeps NULL, and its transitions leave the column as it was.
 */
function uniqueKeyKept(s: PresentRun): string | null {
  const { unique } = s.definition;
  return unique !== undefined && keptByState(unique, s.status) ? unique.key : null;
}
