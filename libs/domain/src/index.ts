/** The public surface of this package: what the other packages of the repository import from it. */
export {
  type Caller,
  type ReaderCaller,
  type TeamCaller,
  type WorkerCaller,
  actorOf,
  listedTeam,
  requireAdmin,
  requireAdminOrTeam,
  requireQueue,
  requireJobQueue,
  requireReader,
  requireTeam,
  requireWorker,
  workerActor,
} from './access/caller';
export {
  BULK_BATCH,
  BULK_OPERATION_ID_PATTERN,
  BULK_SAMPLE,
  BULK_STALE_SECONDS,
  type BulkFilter,
  actsOnRuns,
  bulkFilterFields,
  checkBulkFilter,
  decideResume,
  decideStop,
  jobStillSelected,
  runStillSelected,
} from './bulk/bulk-operations';
export {
  BULK_ACTIONS,
  BULK_STATUSES,
  type BulkAction,
  type BulkStatus,
  CANCELLABLE_STATES,
  type CancellableState,
} from './bulk/bulk-vocabulary';
export { DEFAULT_PRIORITY_WEIGHTS, type PriorityWeights, perGroupLimit } from './dispatch/dispatch-shares';
export { DomainError, type DomainErrorCode } from './domain-error';
export { type FieldChange, diffDefinitions } from './job/definition-diff';
export {
  type DefinedJob,
  JOB_EVENT_SCHEMA_VERSION,
  type JobCommand,
  type JobDefinition,
  type JobEvent,
  type JobSnapshot,
  NO_JOB,
  ORDERING_ON_RETRY,
  type OrderingOnRetry,
  RATE_PERIODS,
  type RateLimit,
  type RatePeriod,
  decideJob,
  evolveJob,
  foldJob,
  UNIQUE_SCOPES,
  type UniquePolicy,
  DEBOUNCE_SECONDS,
  type DebouncePolicy,
  HTTP_TARGET_QUEUE,
  type HttpTarget,
  TARGET_TIMEOUT_SECONDS,
} from './job/job-decider';
export { JOB_DEFAULTS, jobDefinition, rateLimit } from './job/job-defaults';
export {
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENCY_KEY_RULE,
  NAME_PATTERN,
  NAME_RULE,
  RUN_ID_PATTERN,
  TEAM_ID_PATTERN,
  TEAM_ID_RULE,
  parseIdempotencyKey,
  parseName,
  parseRunId,
} from './names';
export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, pageSize } from './paging';
export { INLINE_PAYLOAD_BYTES, MAX_PAYLOAD_BYTES, assertPayloadSize, utf8Length } from './payload-size';
export { type QuotaDecision, type TeamQuotas, decideEnqueue, effectiveBurst } from './quota/enqueue-quota';
export { dueTimeOf } from './run/due-time';
export { DEFAULT_LEASE_SECONDS, DEFAULT_WORKER_ID, MAX_PREFETCH_MS } from './run/lease-defaults';
export { MAX_RETRY_AFTER_SECONDS, type RunCommand, decide } from './run/run-decider';
export {
  type DeathReason,
  PRIORITIES,
  type PayloadRef,
  Priority,
  RUN_EVENT_SCHEMA_VERSION,
  type RunDeadData,
  type RunEvent,
  type RunLeasedData,
  type RunOrdering,
  type RunPlaceMetadata,
  type RunScheduledData,
  type TraceContext,
  type RunSource,
  type RunUnique,
  type RunDebouncedData,
  recordedRunPlace,
} from './run/run-events';
export { debounceKeyKept, debouncedAt, takesDebounce } from './run/debounced-runs';
export { UNIQUE_KEY_PATTERN, UNIQUE_KEY_RULE, holdsKey, keptByState, runUnique } from './run/unique-runs';
export { ABSENT, type PresentRun, type RunSnapshot, evolve, foldRun, visibleState } from './run/run-snapshot';
export {
  PENDING_RUN_STATES,
  RUN_STATES,
  RunState,
  STORED_RUN_STATES,
  UNSUCCESSFUL_RUN_STATES,
  WAITING_RUN_STATES,
  isWaiting,
} from './run/run-states';
export { assertUsableSchedule, scheduleFireTimes } from './schedule/fire-times';
export { jitterOffsetSeconds } from './schedule/jitter';
export { RUN_ALL_CAP, formatWithOffset, planScheduledRuns } from './schedule/plan-scheduled-runs';
export {
  DEFAULT_OVERLAP_POLICY,
  InvalidScheduleError,
  OVERLAP_POLICIES,
  type ScheduleSpec,
  parseScheduleSpec,
} from './schedule/schedule-spec';
export { type DstPolicy, DEFAULT_DST_POLICY } from './schedule/zoned-time';
export {
  ADMIN_EVENT_SCHEMA_VERSION,
  AdminEventType,
  JobEventType,
  PLATFORM_STREAM,
  RunEventType,
  jobStreamId,
  RUN_STREAM_PREFIX,
  isRunStream,
  runStreamId,
  teamStreamId,
} from './streams';
export { upcastData, upcastEvent } from './upcasting';
export { assertNoSecrets } from './security/secret-scanner';
