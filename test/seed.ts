import type { Pool } from 'pg';
import { defineNewJobs, newRunScheduled, scheduleNewRuns } from '@chronicle/commands';
import { RUN_EVENT_SCHEMA_VERSION, type JobDefinition, type RunSource } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';

/** A job definition for tests, with overrides. */
export function testJob(overrides: Partial<JobDefinition> & Pick<JobDefinition, 'name'>): JobDefinition {
  return {
    team: 'ops',
    queue: 'ops',
    priority: 'default',
    timeoutSeconds: 60,
    retry: { maxAttempts: 3, baseSeconds: 30, maxSeconds: 1800 },
    concurrency: null,
    payload: {},
    schedule: null,
    ...overrides,
  };
}

/**
 * Jobs and their runs, as the API and the materialiser write them: events appended, rows written
 * through, in one unit of work.
 */
export async function seedRuns(
  pool: Pool,
  store: EventStore,
  jobs: readonly JobDefinition[],
  runs: ReadonlyArray<{ job: JobDefinition; runId: string; dueAt: Date; source?: RunSource }>,
): Promise<void> {
  await store.unitOfWork(pool, async (uow) => {
    if (jobs.length > 0) await defineNewJobs(uow, jobs, 'test');
    const scheduled = runs.map((r) =>
      newRunScheduled(r.job, 1, { runId: r.runId, dueAt: r.dueAt, idempotencyKey: r.runId, source: r.source ?? 'api' }),
    );
    // The metadata's schema version, as every command records it: the log reads back as what was written through.
    await scheduleNewRuns(uow, scheduled, { schemaVersion: RUN_EVENT_SCHEMA_VERSION });
  });
}
