import { type BulkAction, type BulkFilter, DomainError } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';
import { sqlValues } from '../listings/sql-values';

/** What a bulk operation selects on one server: its team (null: every team), its filter, its instant. */
export interface BulkSelection {
  readonly action: BulkAction;
  readonly team: string | null;
  readonly filter: BulkFilter;
  /** The snapshot's instant: `ready` is judged by it, and a dead run must have died before it. */
  readonly at: Date;
}

/** One of the first matches, as a dry run shows it: a run (id `run_…`) or a job (id its name). */
export interface BulkSampleItem {
  readonly id: string;
  readonly job: string;
  readonly team: string;
  readonly queue: string;
  /** A run's state (as the listings show it), or a job's: `active` or `paused`. */
  readonly state: string;
  readonly dueAt: Date | null;
  readonly deadAt: Date | null;
  readonly lastError: string | null;
}

/*
 * The selection of each action, from the table that holds what it may act on:
 *
 * - cancel-runs: `ready_runs` (migrations/0026), which holds exactly the waiting runs, the ones a cancel
 *   applies to (a bounded few: the work not done), the last error read from the run's row only when the
 *   filter asks for it;
 * - replay-dead, discard-dead: `runs`' dead, kept runs, by runs_dlq_idx (team, dead_at, run_id), as the
 *   dead-letter listing reads them;
 * - pause-jobs, resume-jobs: `jobs` of the control database, those not paused (pause) or paused (resume).
 *
 * The SQL holds only the filters given; values are parameters. A team's selection leads with its team, so
 * each reads its team's part of the index.
 */
interface SelectionSql {
  /** The FROM clause, with `t` the alias whose row is a target. */
  readonly from: string;
  readonly where: string;
  /** The target's key: a run id or a job name. */
  readonly target: string;
  /** The sample's columns (BulkSampleItem's, snake_case): made when asked, its values added then. */
  readonly sample: () => string;
  readonly values: unknown[];
  readonly param: (value: unknown) => string;
}

function selectionSql({ action, team, filter, at }: BulkSelection): SelectionSql {
  const { values, param } = sqlValues();
  const conditions: string[] = [];
  const runConditions = (alias: string): void => {
    if (team !== null) conditions.push(`${alias}.team = ${param(team)}`);
    if (filter.job !== undefined) conditions.push(`${alias}.job = ${param(filter.job)}`);
    if (filter.queue !== undefined) conditions.push(`${alias}.queue = ${param(filter.queue)}`);
  };
  const errorCondition = (column: string): string =>
    `strpos(lower(coalesce(${column}, '')), lower(${param(filter.error)})) > 0`;
  switch (action) {
    case 'cancel-runs': {
      runConditions('t');
      // The run's own row, for its last error: in its due day's partition or the kept runs'.
      const row = `SELECT r.last_error FROM runs r WHERE r.run_id = t.run_id
                      AND r.kept_on IN ((t.due_at AT TIME ZONE 'UTC')::date, 'infinity'::date)`;
      if (filter.state === 'ready') conditions.push(`t.available_at <= ${param(at)}`);
      if (filter.state === 'scheduled' || filter.state === 'retry_wait')
        conditions.push(`t.state = ${param(filter.state)} AND t.available_at > ${param(at)}`);
      if (filter.dueAfter !== undefined) conditions.push(`t.due_at >= ${param(new Date(filter.dueAfter))}`);
      if (filter.dueBefore !== undefined) conditions.push(`t.due_at < ${param(new Date(filter.dueBefore))}`);
      if (filter.error !== undefined) conditions.push(`EXISTS (${row} AND ${errorCondition('r.last_error')})`);
      return {
        from: 'ready_runs t',
        where: conditions.join(' AND ') || 'true',
        target: 't.run_id',
        sample: () => `t.run_id AS id, t.job, t.team, t.queue,
                 CASE WHEN t.available_at <= ${param(at)} THEN 'ready' ELSE t.state END AS state,
                 t.due_at, NULL::timestamptz AS dead_at, (${row} LIMIT 1) AS last_error`,
        values,
        param,
      };
    }
    case 'replay-dead':
    case 'discard-dead': {
      runConditions('t');
      conditions.push(`t.ended = 'dead'`, 'NOT t.discarded', `t.dead_at < ${param(at)}`);
      if (filter.error !== undefined) conditions.push(errorCondition('t.last_error'));
      if (filter.deadAfter !== undefined) conditions.push(`t.dead_at >= ${param(new Date(filter.deadAfter))}`);
      if (filter.deadBefore !== undefined) conditions.push(`t.dead_at < ${param(new Date(filter.deadBefore))}`);
      return {
        from: 'runs t',
        where: conditions.join(' AND '),
        target: 't.run_id',
        sample: () => `t.run_id AS id, t.job, t.team, t.queue, 'dead' AS state, t.due_at, t.dead_at, t.last_error`,
        values,
        param,
      };
    }
    case 'pause-jobs':
    case 'resume-jobs': {
      if (team !== null) conditions.push(`t.team = ${param(team)}`);
      if (filter.job !== undefined) conditions.push(`t.name = ${param(filter.job)}`);
      if (filter.queue !== undefined) conditions.push(`t.definition->>'queue' = ${param(filter.queue)}`);
      conditions.push(action === 'pause-jobs' ? 'NOT t.paused' : 't.paused');
      return {
        from: 'jobs t',
        where: conditions.join(' AND '),
        target: 't.name',
        sample: () => `t.name AS id, t.name AS job, t.team, t.definition->>'queue' AS queue,
                 CASE WHEN t.paused THEN 'paused' ELSE 'active' END AS state,
                 NULL::timestamptz AS due_at, NULL::timestamptz AS dead_at, NULL::text AS last_error`,
        values,
        param,
      };
    }
    default: {
      const unknown: never = action;
      throw new DomainError('validation-error', `unknown action ${String(unknown)}`);
    }
  }
}

/** How many runs or jobs the selection holds on this server. */
export async function countSelected(db: Queryable, selection: BulkSelection): Promise<number> {
  const { from, where, values } = selectionSql(selection);
  const { rows } = await db.query<{ count: string }>({ text: `SELECT count(*) FROM ${from} WHERE ${where}`, values });
  return Number(rows[0]?.count ?? 0);
}

/** The first `limit` of the selection on this server, in the order an operation takes them (by id). */
export async function sampleSelected(
  db: Queryable,
  selection: BulkSelection,
  limit: number,
): Promise<BulkSampleItem[]> {
  const { from, where, target, sample, values, param } = selectionSql(selection);
  const { rows } = await db.query<{
    id: string;
    job: string;
    team: string;
    queue: string;
    state: string;
    due_at: Date | null;
    dead_at: Date | null;
    last_error: string | null;
  }>({
    text: `SELECT ${sample()} FROM ${from} WHERE ${where} ORDER BY ${target} LIMIT ${param(limit)}`,
    values,
  });
  return rows.map((r) => ({
    id: r.id,
    job: r.job,
    team: r.team,
    queue: r.queue,
    state: r.state,
    dueAt: r.due_at,
    deadAt: r.dead_at,
    lastError: r.last_error,
  }));
}

/**
 * The snapshot: every run id or job name the selection holds now, kept as the operation's targets on
 * this server, in one statement. Answers how many.
 */
export async function snapshotSelected(db: Queryable, operationId: string, selection: BulkSelection): Promise<number> {
  const { from, where, target, values, param } = selectionSql(selection);
  const result = await db.query({
    text: `INSERT INTO bulk_operation_targets (operation_id, target)
           SELECT ${param(operationId)}, ${target} FROM ${from} WHERE ${where}`,
    values,
  });
  return result.rowCount ?? 0;
}

/**
 * The operation's next targets on this server after its cursor (null: from the first), in order: a range
 * of the primary key (operation_id, target); '' sorts before every target.
 */
export async function nextTargets(
  db: Queryable,
  operationId: string,
  after: string | null,
  limit: number,
): Promise<string[]> {
  const { rows } = await db.query<{ target: string }>({
    name: 'bulk_next_targets',
    text: `SELECT target FROM bulk_operation_targets
            WHERE operation_id = $1 AND target > $2
            ORDER BY target LIMIT $3`,
    values: [operationId, after ?? '', limit],
  });
  return rows.map((r) => r.target);
}

/** A done operation's targets on this server: nothing will read them again. */
export async function dropTargets(db: Queryable, operationId: string): Promise<void> {
  await db.query({ text: 'DELETE FROM bulk_operation_targets WHERE operation_id = $1', values: [operationId] });
}
