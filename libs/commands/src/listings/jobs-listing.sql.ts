import type { Queryable } from '@chronicle/platform';
import type { DefinedJob } from '@chronicle/domain';
import { sqlValues } from './sql-values';

export interface JobsFilter {
  /** The team already allowed; undefined: every team's (the admin). */
  readonly team?: string | undefined;
  readonly queue?: string | undefined;
}

/**
 * A page of jobs by name, from the `jobs` read model: after `after` (exclusive), `limit` rows. One range
 * scan of jobs_team_idx (team, name), jobs_queue_idx (queue, name) or, for the admin's every job, the
 * primary key; the SQL holds only the filters given, so each statement is planned for its index.
 */
export async function listJobs(
  db: Queryable,
  filter: JobsFilter,
  after: string | undefined,
  limit: number,
): Promise<DefinedJob[]> {
  const { values, param } = sqlValues();
  const conditions: string[] = [];
  if (filter.team !== undefined) conditions.push(`j.team = ${param(filter.team)}`);
  if (filter.queue !== undefined) conditions.push(`(j.definition->>'queue') = ${param(filter.queue)}`);
  if (after !== undefined) conditions.push(`j.name > ${param(after)}`);
  const { rows } = await db.query<JobRow>({
    text: `SELECT j.definition, j.version, j.paused, j.revision FROM jobs j
            ${conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`}
            ORDER BY j.name
            LIMIT ${param(limit)}`,
    values,
  });
  return rows.map((row) => ({
    status: 'defined',
    revision: Number(row.revision),
    definition: row.definition,
    version: row.version,
    paused: row.paused,
  }));
}

interface JobRow {
  readonly definition: DefinedJob['definition'];
  readonly version: number;
  readonly paused: boolean;
  readonly revision: string;
}
