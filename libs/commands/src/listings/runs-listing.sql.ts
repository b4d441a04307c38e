import { sqlList, type Queryable } from '@chronicle/platform';
import { RunState, type PresentRun } from '@chronicle/domain';
import { RUN_COLUMNS, runColumnsWith, runFromRow, type RunRow } from '@chronicle/projections';
import { sqlValues } from './sql-values';

/** What runs a listing keeps: each field given narrows it. `team` is the team already allowed. */
export interface RunsFilter {
  readonly team?: string | undefined;
  readonly job?: string | undefined;
  readonly queue?: string | undefined;
  readonly state?: RunState | undefined;
  /** Due at or after. */
  readonly dueAfter?: Date | undefined;
  /** Due strictly before. */
  readonly dueBefore?: Date | undefined;
}

/** A run's place in the listings' order (newest due first): its due time, then its id. */
export interface RunKey {
  readonly dueAt: Date;
  readonly runId: string;
}

export interface ListedRun {
  readonly run: PresentRun;
  readonly key: RunKey;
}

export interface RunsPageQuery {
  readonly filter: RunsFilter;
  /** Exclusive: the key of the last run of the previous page. */
  readonly after: RunKey | undefined;
  readonly limit: number;
  /** `ready` is derived from time: the clock the views show states with. */
  readonly now: Date;
  /**
   * The admin's listing of every team: the teams' ids (the control database's; the runs may be on a
   * server of their own). Unset: the `teams` of the database asked.
   */
  readonly teams?: readonly string[];
}

type ListedRow = RunRow & { readonly list_due_at: Date; readonly list_run_id: string };

/*
 * A page is one range scan of an index in the listings' order, stopped by LIMIT: nothing is sorted but
 * what one page needs. Two shapes, chosen by the state asked for:
 *
 * - Any state, or succeeded (most runs): an index of `run_listing` (migrations/0013), the most
 *   selective filter given, the job's, the queue's or the team's; each run joined from `runs` by
 *   primary key for its state and the rest of its row.
 *     Limit -> Nested Loop -> Index Only Scan using run_listing_team_idx on run_listing l
 *                                 Index Cond: ((team = $1) AND (ROW(due_at, run_id) < ROW($2, $3)))
 *                          -> Index Scan using runs_pkey on runs r   Index Cond: (run_id = l.run_id)
 * - The dead and cancelled: `runs` alone, by runs_ended_team_idx or runs_ended_job_idx in their
 *   order.
 * - The waiting and leased (the work not done, a bounded few): `ready_runs` or `run_leases`, sorted,
 *   each run of the page then read by its key.
 *
 * The admin's listing of every team merges a page of each team's (teams are few) and sorts only those.
 * The SQL text holds only the filters given, so that each statement is planned for the index it can
 * use (no `$1 IS NULL OR ...`); values are always parameters. Plans on 200,000 runs:
 * listings.sql.int-spec.ts.
 */

/** One page of runs, newest due first. */
export async function listRuns(db: Queryable, query: RunsPageQuery): Promise<ListedRun[]> {
  const { rows } = await db.query<ListedRow>(runsPageSql(query));
  return rows.map(listed);
}

/** The SQL of listRuns, for EXPLAIN in its test. */
export function runsPageSql(query: RunsPageQuery): { text: string; values: unknown[] } {
  const { values, param } = sqlValues();
  const { filter } = query;
  const from = sourceOf(filter.state);
  const everyTeam = filter.team === undefined && filter.job === undefined && filter.queue === undefined;
  const conditions = [
    ...(everyTeam ? [`${from.keys}.team = t.id`] : []),
    ...filterConditions(filter, query, from, param),
  ];
  const limit = param(query.limit);
  const page = pageSql(from, conditions, limit);
  if (!everyTeam) return { text: page, values };
  const teams = query.teams === undefined ? 'teams t' : `unnest(${param(query.teams)}::text[]) AS t(id)`;
  return {
    text: `SELECT p.* FROM ${teams} CROSS JOIN LATERAL (${page}) p
            ORDER BY p.list_due_at DESC, p.list_run_id DESC
            LIMIT ${limit}`,
    values,
  };
}

/**
 * A page of the runs of each of these jobs (GraphQL's Job.runs for a page of jobs): one statement, one
 * range scan per job (run_listing_job_idx, or `runs`' own for a state).
 */
export async function listRunsOfJobs(
  db: Queryable,
  jobs: readonly string[],
  query: RunsPageQuery,
): Promise<Map<string, ListedRun[]>> {
  const byJob = new Map<string, ListedRun[]>(jobs.map((job) => [job, []]));
  if (jobs.length === 0) return byJob;
  const { values, param } = sqlValues([[...byJob.keys()]]);
  const from = sourceOf(query.filter.state);
  const conditions = [
    `${from.keys}.job = j.name`,
    ...filterConditions({ ...query.filter, job: undefined }, query, from, param),
  ];
  const { rows } = await db.query<ListedRow & { list_job: string }>({
    text: `SELECT j.name AS list_job, p.* FROM unnest($1::text[]) AS j(name)
             CROSS JOIN LATERAL (${pageSql(from, conditions, param(query.limit))}) p`,
    values,
  });
  for (const row of rows) byJob.get(row.list_job)?.push(listed(row));
  return byJob;
}

/** Where a page is read from: `keys` is the alias whose team, job, queue, due_at and run_id order it. */
interface Source {
  readonly from: string;
  readonly keys: 'l' | 'r' | 'q';
  /** What a row of the page is read as (runColumnsWith). */
  readonly columns: string;
}

/**
 * A listing row is in the partition of its run (migrations/0018): each row of the page finds its run in
 * that one partition. Laterally, with OFFSET 0 so that the planner keeps it a lookup per row: it costs a
 * join to `runs` as one into every partition (pruning happens as the join runs) and would rather hash all.
 */
const BY_LISTING: Source = {
  from: `run_listing l CROSS JOIN LATERAL (
           SELECT * FROM runs r WHERE r.run_id = l.run_id AND r.kept_on = l.kept_on OFFSET 0) r`,
  keys: 'l',
  // The run's definition is in the listing row the page is read from.
  columns: runColumnsWith('l.definition'),
};
const BY_STATE: Source = { from: 'runs r', keys: 'r', columns: RUN_COLUMNS };

/**
 * The work not done, a bounded few, from the table that holds it (`ready_runs`, `run_leases`: migrations
 * 0026, 0029), sorted; each run of the page is read from its due day's partition (or the kept runs').
 */
function byWorkTable(table: 'ready_runs' | 'run_leases'): Source {
  return {
    from: `${table} q CROSS JOIN LATERAL (
             SELECT * FROM runs r WHERE r.run_id = q.run_id
                AND r.kept_on IN ((q.due_at AT TIME ZONE 'UTC')::date, 'infinity'::date) OFFSET 0) r`,
    keys: 'q',
    columns: RUN_COLUMNS,
  };
}
const BY_WAITING = byWorkTable('ready_runs');
const BY_LEASED = byWorkTable('run_leases');

function sourceOf(state: RunState | undefined): Source {
  switch (state) {
    case undefined:
    case RunState.succeeded:
      return BY_LISTING;
    case RunState.ready:
    case RunState.scheduled:
    case RunState.retryWait:
      return BY_WAITING;
    case RunState.leased:
      return BY_LEASED;
    default:
      return BY_STATE;
  }
}

function pageSql(source: Source, conditions: readonly string[], limit: string): string {
  const k = source.keys;
  return `SELECT ${source.columns}, ${k}.due_at AS list_due_at, ${k}.run_id AS list_run_id
            FROM ${source.from}
           WHERE ${conditions.join(' AND ')}
           ORDER BY ${k}.due_at DESC, ${k}.run_id DESC
           LIMIT ${limit}`;
}

function filterConditions(
  filter: RunsFilter,
  query: RunsPageQuery,
  source: Source,
  param: (value: unknown) => string,
): string[] {
  const k = source.keys;
  const conditions: string[] = [];
  if (filter.job !== undefined) conditions.push(`${k}.job = ${param(filter.job)}`);
  if (filter.queue !== undefined) conditions.push(`${k}.queue = ${param(filter.queue)}`);
  if (filter.team !== undefined) conditions.push(`${k}.team = ${param(filter.team)}`);
  if (filter.dueAfter !== undefined) conditions.push(`${k}.due_at >= ${param(filter.dueAfter)}`);
  if (filter.dueBefore !== undefined) conditions.push(`${k}.due_at < ${param(filter.dueBefore)}`);
  if (query.after !== undefined)
    conditions.push(
      `(${k}.due_at, ${k}.run_id) < (${param(query.after.dueAt)}::timestamptz, ${param(query.after.runId)}::text)`,
    );
  if (filter.state !== undefined) conditions.push(stateCondition(filter.state, () => param(query.now)));
  return conditions;
}

/**
 * The runs a user sees in a state: `ready` is a waiting run whose time has come (visibleState). Waiting
 * runs are read from `ready_runs` (q), which has their state; the dead and cancelled by runs.ended, which
 * the indexes of ended runs are partial on.
 */
function stateCondition(state: RunState, now: () => string): string {
  switch (state) {
    case 'ready':
      return `q.available_at <= ${now()}::timestamptz`;
    case 'scheduled':
    case 'retry_wait':
      return `q.state = ${sqlList([state])} AND q.available_at > ${now()}::timestamptz`;
    case 'leased':
    case 'succeeded':
      return `r.state = ${sqlList([state])}`;
    case 'dead':
    case 'cancelled':
      return `r.ended = ${sqlList([state])}`;
    default: {
      const unknown: never = state;
      throw new Error(`unknown run state ${String(unknown)}`);
    }
  }
}

function listed(row: ListedRow): ListedRun {
  return { run: runFromRow(row), key: { dueAt: row.list_due_at, runId: row.list_run_id } };
}
