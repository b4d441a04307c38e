/**
 * The command side's public surface: what the apps (api, scheduler, projector, cli), the tests and
 * the bench use. Everything else in libs/commands is its own.
 */
export { QUEUE_HISTORY_MAX_MINUTES, QueueHistory, type QueueHistoryPoint } from './activity/queue-history.query';
export { CANARY_QUEUE, CANARY_TEAM, canaryJobName, ensureCanaryJobs } from './canary/canary-jobs';
export { CommandsModule, RunDecisionsModule } from './commands.module';
export { type AttemptView, attemptHistory } from './dlq/attempt-history';
export { GetDeadLetter } from './dlq/get-dead-letter.query';
export { ListDeadLetters } from './dlq/list-dead-letters.query';
export { DefineJob } from './jobs/define-job.command';
export { defineNewJobs } from './jobs/define-new-jobs';
export { GetJob } from './jobs/get-job.query';
export { SetJobPaused } from './jobs/set-job-paused.command';
export {
  MAX_PREVIOUS_VALID_SECONDS,
  RotateSigningSecret,
  type RotatedSecret,
  type TargetToCall,
  targetsOf,
} from './jobs/http-targets';
export { type AuditEvent, ListAuditEvents } from './audit/list-audit-events.query';
export { ListTokens, RevokeToken } from './teams/token-lifecycle.command';
export { ActOnDeadLetters, type DeadLettersProgress } from './dlq/act-on-dead-letters.command';
export {
  ChangeBulkOperation,
  GetBulkOperation,
  ListBulkOperations,
  PreviewBulkOperation,
  StartBulkOperation,
} from './bulk/bulk-operation.commands';
export { BulkOperationRunner } from './bulk/bulk-operation-runner';
export type { BulkPreview, BulkProgress } from './bulk/bulk-engine';
export type { BulkOperationRow, ServerCursor } from './bulk/bulk-operations.sql';
export type { BulkSampleItem } from './bulk/bulk-selection.sql';
export { GetJobVersions } from './jobs/job-versions.query';
export { GetEventsOfRuns } from './listings/events-of-runs.query';
export { ListJobs } from './listings/list-jobs.query';
export { ListRuns, ListRunsOfJobs } from './listings/list-runs.query';
export { type Page, type PageRequest, type UnavailableShards } from './listings/page';
export { GetQueueStats, type QueueStats } from './listings/queue-stats.query';
export { RunMetrics, RunMetricsModule } from './metrics/run-metrics';
export {
  GetPayloads,
  PAYLOAD_STORE,
  type PayloadStore,
  PayloadsModule,
  PostgresPayloadStore,
  storeLargePayloads,
} from './payloads/payload-store';
export { GetTeamQuotas, SetTeamQuotas, type TeamLimits } from './quotas/team-quotas.command';
export { EnqueueRuns } from './runs/enqueue-runs.command';
export { GetRun, GetRunAsOf, GetRunEvents } from './runs/get-run.query';
export { findDerivedRuns, madeRunId, newRunScheduled, scheduledRunId, scheduledRunIdBefore } from './runs/new-run';
export { isRetiredRun, retiredRunIds } from './runs/retired-runs.sql';
export { TransitionRun, TransitionRunHandler } from './runs/transition-run.command';
export { backfillRequests } from './schedules/backfill';
export { ListShards, type ShardView } from './shards/list-shards.query';
export { moveShard, type ShardMoveReport, SHARD_MOVES_STREAM } from './shards/move-shard';
export { runSlot, shardOf, slotOf, SLOTS } from './shards/shard-of';
export { type RunServer, RunServers } from './shards/run-servers';
export { acceptSchedule, parseSchedule, previewFireTimes } from './schedules/schedule-preview';
export { CreateTeam } from './teams/create-team.command';
export { GrantQueue, ListGrants } from './teams/grant-queue.command';
export { GetQueueLimits, SetQueueLimits } from './queues/queue-limits.command';
export type { QueueLimits } from './queues/queue-limits.sql';
export { IssueToken, type IssuedToken } from './teams/issue-token.command';
export { type QueueGrant, type TokenListing, findToken } from './teams/tokens.sql';
export { type DecideRuns, RunDecisions, type RunsUnitOfWork, type ScheduleRuns } from './unit-of-work/run-decisions';
export type { LockedRuns, RunPass } from './unit-of-work/run-pass';
export { RunLog } from './unit-of-work/run-log';
export { RunReservations } from './unit-of-work/run-reservations';
export { executeStreamCommand } from './unit-of-work/stream-command';
export { CLAIM_SQL } from './workers/claim-ready-runs.sql';
export { type ClaimRequest, claimReadyRuns } from './workers/claim-ready-runs';
export { CompleteRuns, CompleteRunsHandler, type Completion, successesOf } from './workers/complete-runs.command';
export { type Heartbeat, HeartbeatRuns } from './workers/heartbeat-runs.command';
export { LeaseRuns, LeaseRunsHandler } from './workers/lease-runs.command';
export { RunClaims } from './workers/run-claims';
export { ReadySignal, notifyRunsReady } from './workers/ready-signal';
export { TeamsServed } from './workers/teams-served';
