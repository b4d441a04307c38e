import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import type { DefinedJob, JobDefinition, TeamCaller } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { EVENT_STORE, PG_POOL } from '@chronicle/platform';
import { ReadySignal } from '../workers/ready-signal';
import { decideOnJob, ownJob } from './job-stream';
import { prepareTarget } from './http-targets';

/** What defining a job answers: the job, whether it is new, and a target's signing secret when just made. */
export interface DefinedJobAnswer {
  readonly job: DefinedJob;
  readonly created: boolean;
  readonly signingSecret?: string;
}

/** PUT /v1/jobs/{name}: a new job (JobDefined version 1), a new version, or, for the same definition, nothing. */
export class DefineJob extends Command<DefinedJobAnswer> {
  constructor(
    readonly caller: TeamCaller,
    readonly definition: JobDefinition,
  ) {
    super();
  }
}

@CommandHandler(DefineJob)
export class DefineJobHandler implements ICommandHandler<DefineJob> {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    private readonly ready: ReadySignal,
  ) {}

  async execute({ caller, definition }: DefineJob): Promise<DefinedJobAnswer> {
    const { state, events } = await decideOnJob(this.eventStore, this.pool, caller, definition.name, {
      type: 'DefineJob',
      definition,
    });
    const job = ownJob(caller, state, definition.name);
    const signingSecret =
      job.definition.target === undefined ? undefined : await prepareTarget(this.pool, caller.team, definition.name);
    // A changed definition may lift a limit its waiting runs were held back by (concurrency, perKeyConcurrency);
    // a first target has the dispatchers start polling.
    if (events.length > 0) this.ready.notify();
    return {
      job,
      created: events.some((e) => e.type === 'JobDefined' && e.data.version === 1),
      ...(signingSecret === undefined ? {} : { signingSecret }),
    };
  }
}
