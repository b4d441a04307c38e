import type { Queryable } from '@chronicle/platform';

/**
 * Serialises, per job, the decisions that count its runs against its limit:
 * claims of a limited job's runs and enqueues with ifRunning: reject. Taken
 * in job order (two batches cannot deadlock) and advisory: it writes
 * nothing, so es_append may still come after it. Counts read after it see
 * every such decision committed before it was granted.
 */
export async function lockJobLimits(db: Queryable, jobs: readonly string[]): Promise<void> {
  if (jobs.length === 0) return;
  await db.query({
    name: 'lock_job_limits',
    text: `SELECT pg_advisory_xact_lock(hashtextextended('job-concurrency-' || job, 0)) FROM unnest($1::text[]) AS job ORDER BY job COLLATE "C"`,
    values: [[...jobs].sort()],
  });
}
