import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import {
  ABSENT,
  actorOf,
  decide,
  isWaiting,
  RUN_EVENT_SCHEMA_VERSION,
  type Caller,
  type PresentRun,
  type RunCommand,
  type RunEvent,
} from '@chronicle/domain';
import { type Clock, CLOCK } from '@chronicle/platform';
import { RunServers } from '../shards/run-servers';
import { changedWhileDecided } from '../unit-of-work/run-decisions';
import { lockAndLoadRuns } from '../workers/complete-runs.sql';
import { ReadySignal } from '../workers/ready-signal';
import { visibleRun } from './run-stream';

/** Cancel, replay, discard: a decider command on one run the caller may see. */
export class TransitionRun extends Command<PresentRun> {
  constructor(
    readonly caller: Caller,
    readonly runId: string,
    readonly command: (now: Date) => RunCommand,
  ) {
    super();
  }
}

/**
 * The batch path of claims and completions, for one run: lock its stream,
 * read its row, decide, append expecting the row's revision and write the
 * row through, in one unit of work. A refusal of the decider is the answer
 * (409 invalid-transition); with a log of its own, a row behind its stream
 * makes the append refuse the decision: a conflict, nothing written, the
 * caller may ask again; an append whose row then fails to commit leaves the
 * run reserved (RunReservations).
 */
@CommandHandler(TransitionRun)
export class TransitionRunHandler implements ICommandHandler<TransitionRun> {
  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly ready: ReadySignal,
    private readonly servers: RunServers,
  ) {}

  async execute({ caller, runId, command }: TransitionRun): Promise<PresentRun> {
    let proposed: readonly RunEvent[] = [];
    const metadata = { actor: actorOf(caller), schemaVersion: RUN_EVENT_SCHEMA_VERSION };
    const { before, decided } = await this.servers.ofRun(runId).decisions.unitOfWork(async (work) => {
      const { runs } = await lockAndLoadRuns(work.tx, [runId]);
      // Authorised on the row the command decides from: a run of another team reads as absent.
      const before = visibleRun(caller, runs[0] ?? ABSENT, runId);
      const decideOne = (run: PresentRun): RunEvent[] => (proposed = decide(command(this.clock.now()), run));
      const [decided] = await work.decide({ batches: [{ runs: [before], decideOne, metadata }] });
      return { before, decided: decided! };
    });
    if (proposed.length === 0) return before;
    const run = decided[0]?.after;
    if (run === undefined) throw changedWhileDecided(runId);
    // A replayed run waits again: wake this process's long-polls.
    if (isWaiting(run.status)) this.ready.notify();
    return run;
  }
}
