/** The public surface of this package: what the other packages of the repository import from it. */
export { auditProjection } from './audit/audit.projection';
export {
  type CheckpointMove,
  advanceCheckpoints,
  loadCheckpoint,
  resetCheckpoint,
  setCheckpoint,
} from './checkpoints/projection-checkpoints.sql';
export { jobsProjection } from './jobs/jobs.projection';
export { upsertJob, upsertJobs } from './jobs/jobs.sql';
export { type BulkIo, type Projection } from './projection';
export { ProjectionRunner, type ProjectionRunnerOptions } from './projection-runner';
export {
  controlProjections,
  deploymentProjections,
  PROJECTIONS,
  type ProjectedDatabase,
  RUN_PROJECTIONS,
  runServerProjections,
  type ServerProjections,
} from './projections';
export { LAG_BUCKET_BOUNDS_MS, lagQuantileSeconds, scheduleLagMs } from './run-activity/lag-histogram';
export { activityOf, runActivityProjection } from './run-activity/run-activity.projection';
export {
  ACTIVITY_RETENTION_HOURS,
  type ActivityIncrement,
  type ActivityMinuteRow,
  listActivityMinutes,
  takeActivity,
} from './run-activity/run-activity.sql';
export { runsProjection } from './runs/runs.projection';
export {
  RUN_COLUMNS,
  LOCKED_RUN_COLUMNS,
  runColumnsWith,
  type RunRow,
  WAITING_SQL,
  findJobRunLimits,
  findRunRevisions,
  findRunSnapshot,
  findRunSnapshots,
  findRunSnapshotsAt,
  runFromRow,
  runsInsert,
  runsUpdate,
  runsUpsert,
  updateRuns,
  upsertRuns,
} from './runs/runs.sql';
export { streamActivityProjection } from './stream-activity/stream-activity.projection';
export {
  type RebuildProgress,
  type VerifyReport,
  eventsInLog,
  rebuildProjection,
  verifyProjections,
} from './rebuild/projection-rebuild';
