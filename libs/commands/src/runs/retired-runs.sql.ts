import type { Queryable } from '@chronicle/platform';

/** Whether a run of this id was dropped by retention (within RETIRED_DAYS): GET /v1/runs/{id}'s 410. The hash is the
 * one the scheduler's retention pass keeps (apps/scheduler/src/retention: hashtextextended of the id, seed 0). */
export async function isRetiredRun(db: Queryable, runId: string): Promise<boolean> {
  const { rows } = await db.query<{ retired: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM (
         SELECT DISTINCT ON (retired_on) hashes FROM retired_runs
          WHERE first_hash <= hashtextextended($1, 0)
          ORDER BY retired_on, first_hash DESC
       ) c WHERE hashtextextended($1, 0) = ANY(c.hashes)
     ) AS retired`,
    [runId],
  );
  return rows[0]?.retired === true;
}
