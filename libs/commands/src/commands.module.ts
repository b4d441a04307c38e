import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { LOGGER, type JsonLogger } from '@chronicle/platform';
import { QueueHistoryHandler } from './activity/queue-history.query';
import { GetDeadLetterHandler } from './dlq/get-dead-letter.query';
import { ListDeadLettersHandler } from './dlq/list-dead-letters.query';
import { DefineJobHandler } from './jobs/define-job.command';
import { GetJobHandler } from './jobs/get-job.query';
import { SetJobPausedHandler } from './jobs/set-job-paused.command';
import { RotateSigningSecretHandler } from './jobs/http-targets';
import { ListAuditEventsHandler } from './audit/list-audit-events.query';
import { ListTokensHandler, RevokeTokenHandler } from './teams/token-lifecycle.command';
import { ActOnDeadLettersHandler } from './dlq/act-on-dead-letters.command';
import {
  ChangeBulkOperationHandler,
  GetBulkOperationHandler,
  ListBulkOperationsHandler,
  PreviewBulkOperationHandler,
  StartBulkOperationHandler,
} from './bulk/bulk-operation.commands';
import { BulkOperationRunner } from './bulk/bulk-operation-runner';
import { GetEventsOfRunsHandler } from './listings/events-of-runs.query';
import { ListJobsHandler } from './listings/list-jobs.query';
import { ListRunsHandler, ListRunsOfJobsHandler } from './listings/list-runs.query';
import { GetQueueStatsHandler } from './listings/queue-stats.query';
import { GetPayloadsHandler, PayloadsModule } from './payloads/payload-store';
import { ReadModelGauges } from './metrics/read-model-gauges';
import { RunMetricsModule } from './metrics/run-metrics';
import { GetTeamQuotasHandler, SetTeamQuotasHandler } from './quotas/team-quotas.command';
import { ListShardsHandler } from './shards/list-shards.query';
import { EnqueueRunsHandler } from './runs/enqueue-runs.command';
import { GetJobVersionsHandler } from './jobs/job-versions.query';
import { GetRunAsOfHandler, GetRunEventsHandler, GetRunHandler } from './runs/get-run.query';
import { TransitionRunHandler } from './runs/transition-run.command';
import { CreateTeamHandler } from './teams/create-team.command';
import { GrantQueueHandler, ListGrantsHandler } from './teams/grant-queue.command';
import { GetQueueLimitsHandler, SetQueueLimitsHandler } from './queues/queue-limits.command';
import { IssueTokenHandler } from './teams/issue-token.command';
import { RunLog } from './unit-of-work/run-log';
import { RunDecisions } from './unit-of-work/run-decisions';
import { RunServers } from './shards/run-servers';
import { RunReservations } from './unit-of-work/run-reservations';
import { CompleteRunsHandler } from './workers/complete-runs.command';
import { HeartbeatRunsHandler } from './workers/heartbeat-runs.command';
import { LeaseRunsHandler } from './workers/lease-runs.command';
import { RunClaims } from './workers/run-claims';
import { ReadyBroadcast, ReadySignal } from './workers/ready-signal';
import { TeamsServed } from './workers/teams-served';

/**
 * The process's one RunDecisions, where every run event is appended, with its
 * RunReservations and the lines about runs (RunLog): the API's claims and
 * decisions and the scheduler's passes share them when they run in one
 * process (npm start).
 */
@Module({
  providers: [
    {
      provide: RunReservations,
      inject: [LOGGER],
      useFactory: (logger: JsonLogger) => new RunReservations(logger.child('run-reservations')),
    },
    { provide: RunLog, inject: [LOGGER], useFactory: (logger: JsonLogger) => new RunLog(logger.child('runs')) },
    RunDecisions,
    RunServers,
  ],
  exports: [RunDecisions, RunLog, RunServers],
})
export class RunDecisionsModule {}

/**
 * Every command and query, routed by @nestjs/cqrs (wiring only: nothing
 * durable rides on its buses). Each handler loads, decides, appends and
 * writes through itself; the API's controllers and resolvers only send.
 */
@Module({
  imports: [CqrsModule.forRoot(), RunDecisionsModule, RunMetricsModule, PayloadsModule],
  providers: [
    ReadModelGauges,
    ReadySignal,
    ReadyBroadcast,
    TeamsServed,
    DefineJobHandler,
    SetJobPausedHandler,
    RotateSigningSecretHandler,
    GetJobHandler,
    EnqueueRunsHandler,
    TransitionRunHandler,
    GetRunHandler,
    GetRunEventsHandler,
    GetRunAsOfHandler,
    GetJobVersionsHandler,
    LeaseRunsHandler,
    RunClaims,
    CompleteRunsHandler,
    HeartbeatRunsHandler,
    ListDeadLettersHandler,
    GetDeadLetterHandler,
    ListJobsHandler,
    ListRunsHandler,
    ListRunsOfJobsHandler,
    GetQueueStatsHandler,
    GetEventsOfRunsHandler,
    ListAuditEventsHandler,
    ListTokensHandler,
    RevokeTokenHandler,
    ActOnDeadLettersHandler,
    BulkOperationRunner,
    PreviewBulkOperationHandler,
    StartBulkOperationHandler,
    GetBulkOperationHandler,
    ListBulkOperationsHandler,
    ChangeBulkOperationHandler,
    ListShardsHandler,
    CreateTeamHandler,
    IssueTokenHandler,
    GrantQueueHandler,
    ListGrantsHandler,
    GetQueueLimitsHandler,
    SetQueueLimitsHandler,
    GetTeamQuotasHandler,
    SetTeamQuotasHandler,
    QueueHistoryHandler,
    GetPayloadsHandler,
  ],
  exports: [ReadySignal, BulkOperationRunner],
})
export class CommandsModule {}
