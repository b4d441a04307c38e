import { Inject, Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { DomainError } from '../../../../libs/domain/src/domain-error';
import { decideJob, evolveJob, NO_JOB, type JobCommand, type JobDefinition, type JobEvent, type JobSnapshot } from '../../../../libs/domain/src/job/job-decider';
import { jobStreamId } from '../../../../libs/domain/src/streams';
import type { EventStore } from '../../../../libs/event-store/src/event-store.port';
import type { Clock } from '../../../../libs/platform/src/clock/clock';
import { CLOCK, EVENT_STORE, PG_POOL } from '../../../../libs/platform/src/runtime/tokens';
import { type TeamCaller } from '../auth/caller';
import { executeStreamCommand, toDomainEvent } from '../../../../libs/application/src/stream-command';
import { upsertJob } from '../../../../projections/jobs.sql';

export type DefinedJob = Extract<JobSnapshot, { status: 'defined' }>;

const foldJob = (events: readonly JobEvent[]): JobSnapshot => events.reduce(evolveJob, NO_JOB);

/** Job definitions: every change an event on `job-<name>`, with the actor. */
@Injectable()
export class JobsService {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async define(caller: TeamCaller, definition: JobDefinition): Promise<{ job: DefinedJob; created: boolean }> {
    const { state, events } = await this.execute(caller, definition.name, { type: 'DefineJob', definition });
    return { job: defined(state, definition.name), created: events.some((e) => e.type === 'JobDefined' && e.data.version === 1) };
  }

  async setPaused(caller: TeamCaller, name: string, paused: boolean): Promise<DefinedJob> {
    await this.get(caller, name);
    const { state } = await this.execute(caller, name, paused ? { type: 'PauseJob', now: this.clock.now() } : { type: 'ResumeJob', now: this.clock.now() });
    return defined(state, name);
  }

  /** Another team's job reads as absent: existence does not leak. */
  async get(caller: TeamCaller, name: string): Promise<DefinedJob> {
    const state = foldJob((await this.eventStore.readStream(jobStreamId(name))).map(toDomainEvent) as JobEvent[]);
    if (state.status === 'absent' || state.definition.team !== caller.team) throw new DomainError('not-found', `job ${name} not found`);
    return state;
  }

  private execute(caller: TeamCaller, name: string, command: JobCommand): ReturnType<typeof executeStreamCommand<JobSnapshot, JobEvent>> {
    return executeStreamCommand<JobSnapshot, JobEvent>(this.eventStore, this.pool, {
      streamId: jobStreamId(name),
      fold: foldJob,
      revisionOf: (state) => state.revision,
      decide: (state) => decideJob(command, state),
      project: upsertJob,
      metadata: { actor: `team:${caller.team}`, schemaVersion: 1 },
    });
  }
}

function defined(state: JobSnapshot, name: string): DefinedJob {
  if (state.status === 'absent') throw new DomainError('not-found', `job ${name} not found`);
  return state;
}
