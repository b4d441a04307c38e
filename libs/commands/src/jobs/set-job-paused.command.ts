import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import type { DefinedJob, TeamCaller } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { CLOCK, EVENT_STORE, PG_POOL, type Clock } from '@chronicle/platform';
import { ReadySignal } from '../workers/ready-signal';
import { decideOnJob, loadOwnJob, ownJob } from './job-stream';

/** :pause and :resume. A paused job's runs are neither leased nor materialised. */
export class SetJobPaused extends Command<DefinedJob> {
  constructor(
    readonly caller: TeamCaller,
    readonly name: string,
    readonly paused: boolean,
  ) {
    super();
  }
}

@CommandHandler(SetJobPaused)
export class SetJobPausedHandler implements ICommandHandler<SetJobPaused> {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly ready: ReadySignal,
  ) {}

  async execute({ caller, name, paused }: SetJobPaused): Promise<DefinedJob> {
    await loadOwnJob(this.eventStore, caller, name);
    const now = this.clock.now();
    const { state } = await decideOnJob(
      this.eventStore,
      this.pool,
      caller,
      name,
      paused ? { type: 'PauseJob', now } : { type: 'ResumeJob', now },
    );
    // A resumed job's ready runs may be leased again: its waiting workers are not left to their next poll.
    if (!paused) this.ready.notify();
    return ownJob(caller, state, name);
  }
}
