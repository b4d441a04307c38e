import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { actorOf, decide, isWaiting, type Caller, type PresentRun, type RunCommand } from '@chronicle/domain';
import type { EventStore } from '@chronicle/event-store';
import { type Clock, CLOCK, EVENT_STORE, PG_POOL } from '@chronicle/platform';
import { ReadySignal } from '../workers/ready-signal';
import { decideOnRun, visibleRun } from './run-stream';

/** Cancel, heartbeat, replay, discard: a decider command on one run the caller may see. */
export class TransitionRun extends Command<PresentRun> {
  constructor(
    readonly caller: Caller,
    readonly runId: string,
    readonly command: (now: Date) => RunCommand,
  ) {
    super();
  }
}

@CommandHandler(TransitionRun)
export class TransitionRunHandler implements ICommandHandler<TransitionRun> {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly ready: ReadySignal,
  ) {}

  async execute({ caller, runId, command }: TransitionRun): Promise<PresentRun> {
    // Authorised on the state the command decides from: one read of the stream.
    const { state, events } = await decideOnRun(this.eventStore, this.pool, actorOf(caller), runId, (current) =>
      decide(command(this.clock.now()), visibleRun(caller, current, runId)),
    );
    const run = visibleRun(caller, state, runId);
    // A replayed run waits again: wake this process's long-polls.
    if (events.length > 0 && isWaiting(run.status)) this.ready.notify();
    return run;
  }
}
