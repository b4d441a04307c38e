import { Command, CommandHandler, Query, QueryHandler, type ICommandHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { JobDefinition } from '../../../../libs/domain/src/job/job-decider';
import type { TeamCaller } from '../auth/caller';
import { JobsService, type DefinedJob } from './jobs.service';

/* Commands and queries on job definitions, routed by @nestjs/cqrs; the work is in JobsService. */

export class DefineJob extends Command<{ job: DefinedJob; created: boolean }> {
  constructor(
    readonly caller: TeamCaller,
    readonly definition: JobDefinition,
  ) {
    super();
  }
}

export class SetJobPaused extends Command<DefinedJob> {
  constructor(
    readonly caller: TeamCaller,
    readonly name: string,
    readonly paused: boolean,
  ) {
    super();
  }
}

export class GetJob extends Query<DefinedJob> {
  constructor(
    readonly caller: TeamCaller,
    readonly name: string,
  ) {
    super();
  }
}

@CommandHandler(DefineJob)
export class DefineJobHandler implements ICommandHandler<DefineJob> {
  constructor(private readonly jobs: JobsService) {}
  execute(command: DefineJob): Promise<{ job: DefinedJob; created: boolean }> {
    return this.jobs.define(command.caller, command.definition);
  }
}

@CommandHandler(SetJobPaused)
export class SetJobPausedHandler implements ICommandHandler<SetJobPaused> {
  constructor(private readonly jobs: JobsService) {}
  execute(command: SetJobPaused): Promise<DefinedJob> {
    return this.jobs.setPaused(command.caller, command.name, command.paused);
  }
}

@QueryHandler(GetJob)
export class GetJobHandler implements IQueryHandler<GetJob> {
  constructor(private readonly jobs: JobsService) {}
  execute(query: GetJob): Promise<DefinedJob> {
    return this.jobs.get(query.caller, query.name);
  }
}

export const JOB_HANDLERS = [DefineJobHandler, SetJobPausedHandler, GetJobHandler];
