import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { GetDeadLetterHandler } from './dlq/get-dead-letter.query';
import { ListDeadLettersHandler } from './dlq/list-dead-letters.query';
import { DefineJobHandler } from './jobs/define-job.command';
import { GetJobHandler } from './jobs/get-job.query';
import { SetJobPausedHandler } from './jobs/set-job-paused.command';
import { GetTeamQuotasHandler, SetTeamQuotasHandler } from './quotas/team-quotas.command';
import { EnqueueRunsHandler } from './runs/enqueue-runs.command';
import { GetRunEventsHandler, GetRunHandler } from './runs/get-run.query';
import { TransitionRunHandler } from './runs/transition-run.command';
import { CreateTeamHandler } from './teams/create-team.command';
import { GrantQueueHandler, ListGrantsHandler } from './teams/grant-queue.command';
import { IssueTokenHandler } from './teams/issue-token.command';
import { CompleteRunsHandler } from './workers/complete-runs.command';
import { HeartbeatRunsHandler } from './workers/heartbeat-runs.command';
import { LeaseRunsHandler } from './workers/lease-runs.command';
import { ReadySignal } from './workers/ready-signal';
import { TeamsServed } from './workers/teams-served';

/**
 * Every command and query, routed by @nestjs/cqrs (wiring only: nothing
 * durable rides on its buses). Each handler loads, decides, appends and
 * writes through itself; the API's controllers and resolvers only send.
 */
@Module({
  imports: [CqrsModule.forRoot()],
  providers: [
    ReadySignal,
    TeamsServed,
    DefineJobHandler,
    SetJobPausedHandler,
    GetJobHandler,
    EnqueueRunsHandler,
    TransitionRunHandler,
    GetRunHandler,
    GetRunEventsHandler,
    LeaseRunsHandler,
    CompleteRunsHandler,
    HeartbeatRunsHandler,
    ListDeadLettersHandler,
    GetDeadLetterHandler,
    CreateTeamHandler,
    IssueTokenHandler,
    GrantQueueHandler,
    ListGrantsHandler,
    GetTeamQuotasHandler,
    SetTeamQuotasHandler,
  ],
})
export class CommandsModule {}
