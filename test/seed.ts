import type { Pool } from 'pg';
import { defineNewJobs, newRunScheduled } from '@chronicle/commands';
import { RUN_EVENT_SCHEMA_VERSION, type JobDefinition, type RunSource } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { runDecisions } from './run-decisions';

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
 * through, the jobs' in one unit of work, then the runs' in another.
 */
export async function seedRuns(
  pool: Pool,
  store: EventStore,
  jobs: readonly JobDefinition[],
  runs: ReadonlyArray<{ job: JobDefinition; runId: string; dueAt: Date; source?: RunSource; concurrencyKey?: string }>,
): Promise<void> {
  if (jobs.length > 0) await store.unitOfWork(pool, (uow) => defineNewJobs(uow, jobs, 'test'));
  const scheduled = runs.map((r) =>
    newRunScheduled(r.job, 1, {
      runId: r.runId,
      dueAt: r.dueAt,
      idempotencyKey: r.runId,
      source: r.source ?? 'api',
      ...(r.concurrencyKey === undefined ? {} : { concurrencyKey: r.concurrencyKey }),
    }),
  );
  // The metadata's schema version, as every command records it: the log reads back as what was written through.
  await runDecisions(store, pool).unitOfWork((work) =>
    work.schedule({ runs: scheduled, metadata: { schemaVersion: RUN_EVENT_SCHEMA_VERSION } }),
  );
}
