import type { RecordedEvent } from '../libs/event-store/src/event-store.port';
import type { Queryable } from '../libs/platform/src/database/pg-pool';
import { JobEventType } from '../libs/domain/src/streams';
import { evolveJob, NO_JOB, type JobDefinition, type JobEvent, type JobSnapshot } from '../libs/domain/src/job/job-decider';
import type { Projection } from '../apps/projector/src/projection';
import { upsertJob } from './jobs.sql';
import { foldFrom, groupByStream } from './runs.projection';

/** The `jobs` table from the log: current definition, version and pause flag of every job. */
export const jobsProjection: Projection = {
  name: 'jobs',
  version: 1,
  eventTypes: new Set(Object.values(JobEventType)),

  async apply(db: Queryable, events: readonly RecordedEvent[]): Promise<void> {
    const byJob = groupByStream(events, 'job-');
    const { rows } = await db.query<{ name: string; definition: JobDefinition; version: number; paused: boolean; revision: string }>(
      'SELECT name, definition, version, paused, revision FROM jobs WHERE name = ANY($1::text[])',
      [[...byJob.keys()]],
    );
    const current = new Map<string, JobSnapshot>(
      rows.map((r) => [r.name, { status: 'defined', definition: r.definition, version: r.version, paused: r.paused, revision: Number(r.revision) }]),
    );
    for (const [name, jobEvents] of byJob) {
      const before = current.get(name) ?? NO_JOB;
      const after = foldFrom<JobSnapshot, JobEvent>(before, jobEvents, name, evolveJob);
      if (after !== before) await upsertJob(db, after);
    }
  },

  async reset(db: Queryable): Promise<void> {
    await db.query('TRUNCATE jobs');
  },
};
