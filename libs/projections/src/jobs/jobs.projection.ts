import type { RecordedEvent } from '@chronicle/event-store';
import type { Queryable } from '@chronicle/platform';
import {
  JobEventType,
  evolveJob,
  NO_JOB,
  type JobDefinition,
  type JobEvent,
  type JobSnapshot,
} from '@chronicle/domain';
import type { Projection } from '../projection';
import { upsertJob } from './jobs.sql';
import { foldFrom, groupByStream } from '../runs/runs.projection';

/** The `jobs` table from the log: current definition, version and pause flag of every job. */
export const jobsProjection: Projection = {
  name: 'jobs',
  version: 1,
  eventTypes: new Set(Object.values(JobEventType)),
  tables: ['jobs'],
  sideTables: ['schedule_cursors'],
  writtenThrough: true,

  async apply(db: Queryable, events: readonly RecordedEvent[]): Promise<void> {
    const byJob = groupByStream(events, 'job-');
    const { rows } = await db.query<{
      name: string;
      definition: JobDefinition;
      version: number;
      paused: boolean;
      revision: string;
    }>('SELECT name, definition, version, paused, revision FROM jobs WHERE name = ANY($1::text[])', [
      [...byJob.keys()],
    ]);
    const current = new Map<string, JobSnapshot>(
      rows.map((r) => [
        r.name,
        {
          status: 'defined',
          definition: r.definition,
          version: r.version,
          paused: r.paused,
          revision: Number(r.revision),
        },
      ]),
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
