import type { JobDefinition } from '../../../libs/domain/src/job/job-decider';
import type { Queryable } from '../../../libs/platform/src/database/pg-pool';

export interface ScheduledJobRow {
  readonly definition: JobDefinition;
  readonly materialised_through: Date | null;
}

/** Jobs with a schedule that are not paused, with their cursor (null: never materialised). */
export async function findScheduledJobs(db: Queryable): Promise<ScheduledJobRow[]> {
  const { rows } = await db.query<ScheduledJobRow>({
    name: 'materialise_scheduled_jobs',
    text: `SELECT j.definition, c.materialised_through
             FROM jobs j LEFT JOIN schedule_cursors c ON c.job = j.name
            WHERE jsonb_typeof(j.definition->'schedule') = 'object' AND NOT j.paused`,
  });
  return rows;
}

/**
 * Move a job's cursor, in the transaction that appended its runs. The
 * compare-and-set keeps two schedulers from both advancing it: the loser
 * rolls back (its runs would have been the same ones, by id).
 */
export async function advanceCursor(db: Queryable, job: string, from: Date | null, to: Date): Promise<boolean> {
  const { rowCount } =
    from === null
      ? await db.query('INSERT INTO schedule_cursors (job, materialised_through) VALUES ($1, $2) ON CONFLICT (job) DO NOTHING', [job, to])
      : await db.query('UPDATE schedule_cursors SET materialised_through = $3, updated_at = now() WHERE job = $1 AND materialised_through = $2', [job, from, to]);
  return rowCount === 1;
}
