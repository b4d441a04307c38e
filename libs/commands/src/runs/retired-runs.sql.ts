import type { Queryable } from '@chronicle/platform';

/** Whether a run of this id was dropped by retention (within RETIRED_DAYS): GET /v1/runs/{id}'s 410. */
export async function isRetiredRun(db: Queryable, runId: string): Promise<boolean> {
  return (await retiredRunIds(db, [runId])).has(runId);
}

/**
 * Those of these run ids that retention dropped (within RETIRED_DAYS). The hash is the one the
 * scheduler's retention pass keeps (apps/scheduler/src/retention: hashtextextended of the id, seed
 * 0): per day retired, the one row of sorted hashes whose range may hold it. The days are found by a
 * skip scan of the key, not a read of every row.
 */
export async function retiredRunIds(db: Queryable, runIds: readonly string[]): Promise<Set<string>> {
  if (runIds.length === 0) return new Set();
  const { rows } = await db.query<{ run_id: string }>(
    `WITH RECURSIVE days AS (
       SELECT min(retired_on) AS day FROM retired_runs
       UNION ALL
       SELECT (SELECT min(retired_on) FROM retired_runs WHERE retired_on > days.day) FROM days WHERE days.day IS NOT NULL
     ), ids AS (
       SELECT u.id, hashtextextended(u.id, 0) AS h FROM unnest($1::text[]) AS u(id)
     )
     SELECT ids.id AS run_id FROM ids
      WHERE EXISTS (
        SELECT 1 FROM days CROSS JOIN LATERAL (
          SELECT hashes FROM retired_runs c
           WHERE c.retired_on = days.day AND c.first_hash <= ids.h ORDER BY c.first_hash DESC LIMIT 1
        ) c WHERE days.day IS NOT NULL AND ids.h = ANY(c.hashes))`,
    [runIds],
  );
  return new Set(rows.map((r) => r.run_id));
}
