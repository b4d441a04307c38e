import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { RunCommand } from '../../../../libs/domain/src/run/run-decider';
import type { Caller, TeamCaller, WorkerCaller } from '../auth/caller';
import type { DefinedJob } from '../jobs/jobs.service';
import { CompletionService, type Completion, type CompletionResult } from '../workers/completion.service';
import { LeaseService, type Lease, type LeaseRequest } from '../workers/lease.service';
import { RunsService, type EnqueueRequest, type PresentRun } from './runs.service';

/* Commands on runs, routed by @nestjs/cqrs. The handlers are wiring: the load, decide, append is in RunsService and LeaseService. */

export class EnqueueRun extends Command<{ run: PresentRun; created: boolean }> {
  constructor(
    readonly caller: TeamCaller,
    readonly job: DefinedJob,
    readonly request: EnqueueRequest,
  ) {
    super();
  }
}

export class EnqueueRuns extends Command<Array<{ run: PresentRun; created: boolean }>> {
  constructor(
    readonly caller: TeamCaller,
    readonly items: ReadonlyArray<{ job: DefinedJob; request: EnqueueRequest }>,
  ) {
    super();
  }
}

/** Cancel, heartbeat, complete, replay, discard: a decider command on one run. */
export class TransitionRun extends Command<PresentRun> {
  constructor(
    readonly caller: Caller,
    readonly runId: string,
    readonly command: (now: Date) => RunCommand,
  ) {
    super();
  }
}

export class LeaseRuns extends Command<Lease[]> {
  constructor(
    readonly caller: WorkerCaller,
    readonly request: LeaseRequest,
  ) {
    super();
  }
}

/** One or many completions, in one transaction. */
export class CompleteRuns extends Command<CompletionResult[]> {
  constructor(
    readonly caller: WorkerCaller,
    readonly completions: readonly Completion[],
  ) {
    super();
  }
}

@CommandHandler(EnqueueRun)
export class EnqueueRunHandler implements ICommandHandler<EnqueueRun> {
  constructor(private readonly runs: RunsService) {}
  execute(command: EnqueueRun): Promise<{ run: PresentRun; created: boolean }> {
    return this.runs.enqueue(command.caller, command.job, command.request);
  }
}

@CommandHandler(EnqueueRuns)
export class EnqueueRunsHandler implements ICommandHandler<EnqueueRuns> {
  constructor(private readonly runs: RunsService) {}
  execute(command: EnqueueRuns): Promise<Array<{ run: PresentRun; created: boolean }>> {
    return this.runs.enqueueBatch(command.caller, command.items);
  }
}

@CommandHandler(TransitionRun)
export class TransitionRunHandler implements ICommandHandler<TransitionRun> {
  constructor(private readonly runs: RunsService) {}
  execute(command: TransitionRun): Promise<PresentRun> {
    return this.runs.command(command.caller, command.runId, command.command);
  }
}

@CommandHandler(LeaseRuns)
export class LeaseRunsHandler implements ICommandHandler<LeaseRuns> {
  constructor(private readonly leases: LeaseService) {}
  execute(command: LeaseRuns): Promise<Lease[]> {
    return this.leases.lease(command.caller, command.request);
  }
}

@CommandHandler(CompleteRuns)
export class CompleteRunsHandler implements ICommandHandler<CompleteRuns> {
  constructor(private readonly completions: CompletionService) {}
  execute(command: CompleteRuns): Promise<CompletionResult[]> {
    return this.completions.complete(command.caller, command.completions);
  }
}

export const RUN_COMMAND_HANDLERS = [EnqueueRunHandler, EnqueueRunsHandler, TransitionRunHandler, LeaseRunsHandler, CompleteRunsHandler];
