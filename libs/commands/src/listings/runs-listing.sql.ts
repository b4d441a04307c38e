import { sqlList, type Queryable } from '@chronicle/platform';
import type { PresentRun, RunState } from '@chronicle/domain';
import { RUN_COLUMNS, runFromRow, WAITING_SQL, type RunRow } from '@chronicle/projections';

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
}

type ListedRow = RunRow & { readonly list_due_at: Date; readonly list_run_id: string };

/*
 * A page is one range scan of an index of `run_listing` (migrations/0012) in its own order, joined to
 * `runs` by primary key for the state and the rest of the row: LIMIT stops the scan, nothing is sorted.
 * The index is the most selective filter given: the job's (run_listing_job_idx), the queue's
 * (run_listing_queue_idx) or the team's (run_listing_team_idx); other filters are checked on the way.
 * Plans on 200,000 runs in listings.sql.int-spec.ts:
 *
 *   Limit -> Nested Loop -> Index Scan using run_listing_team_idx on run_listing l
 *                                Index Cond: ((team = $1) AND (ROW(due_at, run_id) < ROW($2, $3)))
 *                        -> Index Scan using runs_pkey on runs r   Index Cond: (run_id = l.run_id)
 *
 * The admin's listing of every team merges the first page of each team (teams are few; a page of each
 * is read from run_listing_team_idx) and sorts only those. The SQL text is built from the filters given,
 * so that each statement is planned for the index it can use (no `$1 IS NULL OR ...`); values are
 * always parameters.
 */

/** One page of runs, newest due first. */
export async function listRuns(db: Queryable, query: RunsPageQuery): Promise<ListedRun[]> {
  const { rows } = await db.query<ListedRow>(runsPageSql(query));
  return rows.map(listed);
}

/** The SQL of listRuns, for EXPLAIN in its test. */
export function runsPageSql(query: RunsPageQuery): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  const { filter } = query;
  const everyTeam = filter.team === undefined && filter.job === undefined && filter.queue === undefined;
  const conditions = [everyTeam ? 'l.team = t.id' : undefined, ...filterConditions(filter, query, param)].filter(
    (c) => c !== undefined,
  );
  const limit = param(query.limit);
  const page = pageSql(conditions, limit);
  if (!everyTeam) return { text: page, values };
  return {
    text: `SELECT p.* FROM teams t CROSS JOIN LATERAL (${page}) p
            ORDER BY p.list_due_at DESC, p.list_run_id DESC
            LIMIT ${limit}`,
    values,
  };
}

/**
 * A page of the runs of each of these jobs (GraphQL's Job.runs for a page of jobs): one statement, one
 * range scan of run_listing_job_idx per job.
 */
export async function listRunsOfJobs(
  db: Queryable,
  jobs: readonly string[],
  query: RunsPageQuery,
): Promise<Map<string, ListedRun[]>> {
  const byJob = new Map<string, ListedRun[]>(jobs.map((job) => [job, []]));
  if (jobs.length === 0) return byJob;
  const values: unknown[] = [[...byJob.keys()]];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  const conditions = ['l.job = j.name', ...filterConditions({ ...query.filter, job: undefined }, query, param)];
  const { rows } = await db.query<ListedRow & { list_job: string }>({
    text: `SELECT j.name AS list_job, p.* FROM unnest($1::text[]) AS j(name)
             CROSS JOIN LATERAL (${pageSql(conditions, param(query.limit))}) p`,
    values,
  });
  for (const row of rows) byJob.get(row.list_job)?.push(listed(row));
  return byJob;
}

function pageSql(conditions: readonly string[], limit: string): string {
  return `SELECT ${RUN_COLUMNS}, l.due_at AS list_due_at, l.run_id AS list_run_id
            FROM run_listing l JOIN runs r ON r.run_id = l.run_id
           WHERE ${conditions.join(' AND ')}
           ORDER BY l.due_at DESC, l.run_id DESC
           LIMIT ${limit}`;
}

function filterConditions(filter: RunsFilter, query: RunsPageQuery, param: (value: unknown) => string): string[] {
  const conditions: string[] = [];
  if (filter.job !== undefined) conditions.push(`l.job = ${param(filter.job)}`);
  if (filter.queue !== undefined) conditions.push(`l.queue = ${param(filter.queue)}`);
  if (filter.team !== undefined) conditions.push(`l.team = ${param(filter.team)}`);
  if (filter.dueAfter !== undefined) conditions.push(`l.due_at >= ${param(filter.dueAfter)}`);
  if (filter.dueBefore !== undefined) conditions.push(`l.due_at < ${param(filter.dueBefore)}`);
  if (query.after !== undefined)
    conditions.push(
      `(l.due_at, l.run_id) < (${param(query.after.dueAt)}::timestamptz, ${param(query.after.runId)}::text)`,
    );
  if (filter.state !== undefined) conditions.push(stateCondition(filter.state, () => param(query.now)));
  return conditions;
}

/** The runs a user sees in a state: `ready` is a waiting run whose time has come (visibleState). */
function stateCondition(state: RunState, now: () => string): string {
  switch (state) {
    case 'ready':
      return `r.state IN (${WAITING_SQL}) AND r.available_at <= ${now()}::timestamptz`;
    case 'scheduled':
    case 'retry_wait':
      return `r.state = ${sqlList([state])} AND r.available_at > ${now()}::timestamptz`;
    case 'leased':
    case 'succeeded':
    case 'dead':
    case 'cancelled':
      return `r.state = ${sqlList([state])}`;
    default: {
      const unknown: never = state;
      throw new Error(`unknown run state ${String(unknown)}`);
    }
  }
}

function listed(row: ListedRow): ListedRun {
  return { run: runFromRow(row), key: { dueAt: row.list_due_at, runId: row.list_run_id } };
}
