import {
  decideJob,
  evolveJob,
  JOB_EVENT_SCHEMA_VERSION,
  NO_JOB,
  type JobDefinition,
  type JobSnapshot,
  jobStreamId,
} from '@chronicle/domain';
import type { UnitOfWork } from '@chronicle/event-store';
import { upsertJobs } from '@chronicle/projections';
import { recordedMetadata } from '../unit-of-work/event-metadata';

/**
 * Define many new jobs in one unit of work: the decider's JobDefined for each,
 * one multi-stream append expecting no stream, the rows written through.
 * For imports of whole fleets (and the schedule benchmark); a job that
 * already exists fails the batch with WrongExpectedRevisionError.
 */
export async function defineNewJobs(
  uow: UnitOfWork,
  definitions: readonly JobDefinition[],
  actor: string,
): Promise<void> {
  const decided = definitions.map((definition) => {
    const events = decideJob({ type: 'DefineJob', definition }, NO_JOB);
    return {
      definition,
      events,
      after: events.reduce<JobSnapshot>(evolveJob, NO_JOB) as Extract<JobSnapshot, { status: 'defined' }>,
    };
  });
  const metadata = { actor, schemaVersion: JOB_EVENT_SCHEMA_VERSION };
  await uow.append(
    decided.map(({ definition, events }) => ({
      streamId: jobStreamId(definition.name),
      expected: 'no_stream' as const,
      events: events.map((e) => ({ type: e.type, data: e.data, metadata: recordedMetadata(metadata) })),
    })),
  );
  await upsertJobs(
    uow.tx,
    decided.map((d) => d.after),
  );
}
