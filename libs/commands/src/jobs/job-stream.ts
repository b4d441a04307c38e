import type { Pool } from 'pg';
import {
  actorOf,
  decideJob,
  DomainError,
  foldJob,
  JOB_EVENT_SCHEMA_VERSION,
  jobStreamId,
  type DefinedJob,
  type JobCommand,
  type JobEvent,
  type JobSnapshot,
  type ReaderCaller,
  type TeamCaller,
} from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { upsertJob } from '@chronicle/projections';
import { executeStreamCommand, toDomainEvent, type StreamCommandResult } from '../unit-of-work/stream-command';

/**
 * The job as its stream says (as of an instant: its events recorded by then), if it is the caller's
 * team's (the admin reads every job): another team's job reads as absent, so existence does not leak.
 */
export async function loadOwnJob(
  eventStore: EventStore,
  caller: ReaderCaller,
  name: string,
  asOf?: Date,
): Promise<DefinedJob> {
  const recorded = await eventStore.readStream(jobStreamId(name), asOf === undefined ? {} : { until: asOf });
  return ownJob(caller, foldJob(recorded.map(toDomainEvent) as JobEvent[]), name);
}

export function ownJob(caller: ReaderCaller, state: JobSnapshot, name: string): DefinedJob {
  if (state.status === 'absent' || (caller.kind === 'team' && state.definition.team !== caller.team))
    throw new DomainError('not-found', `job ${name} not found`);
  return state;
}

/** Load, decide, append and write the `jobs` row through, for a command on one job. */
export function decideOnJob(
  eventStore: EventStore,
  pool: Pool,
  caller: TeamCaller,
  name: string,
  command: JobCommand,
): Promise<StreamCommandResult<JobSnapshot, JobEvent>> {
  return executeStreamCommand<JobSnapshot, JobEvent>(eventStore, pool, {
    streamId: jobStreamId(name),
    fold: foldJob,
    revisionOf: (state) => state.revision,
    decide: (state) => decideJob(command, state),
    project: upsertJob,
    metadata: { actor: actorOf(caller), schemaVersion: JOB_EVENT_SCHEMA_VERSION },
  });
}
