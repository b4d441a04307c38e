/**
 * Stream and event names are a contract (docs/architecture.md, "Streams and events"): dashboards, the API and
 * auditors read them. Past tense, never renamed; a changed shape gets a new
 * schema version and an upcaster.
 */
export const JobEventType = {
  JobDefined: 'JobDefined',
  JobPaused: 'JobPaused',
  JobResumed: 'JobResumed',
  JobDeleted: 'JobDeleted',
} as const;
export type JobEventType = (typeof JobEventType)[keyof typeof JobEventType];

export const RunEventType = {
  RunScheduled: 'RunScheduled',
  RunLeased: 'RunLeased',
  LeaseExtended: 'LeaseExtended',
  RunSucceeded: 'RunSucceeded',
  RunFailed: 'RunFailed',
  LeaseExpired: 'LeaseExpired',
  RunDead: 'RunDead',
  RunCancelled: 'RunCancelled',
  RunReplayed: 'RunReplayed',
  RunDiscarded: 'RunDiscarded',
  RunDebounced: 'RunDebounced',
} as const;
export type RunEventType = (typeof RunEventType)[keyof typeof RunEventType];

/** The admin's changes: a team's in its `team-<id>` stream, platform worker tokens in `platform`. */
export const AdminEventType = {
  TeamCreated: 'TeamCreated',
  TokenIssued: 'TokenIssued',
  TokenRevoked: 'TokenRevoked',
  QueueGranted: 'QueueGranted',
  TeamQuotasSet: 'TeamQuotasSet',
  QueueLimitsSet: 'QueueLimitsSet',
  /** A team's HTTP-target job's signing secret rotated (the secrets themselves are never in the log). */
  SigningSecretRotated: 'SigningSecretRotated',
  /** A bulk operation began (its filter and count); in the team's stream, or `platform` for every team's. */
  BulkOperationStarted: 'BulkOperationStarted',
} as const;
export type AdminEventType = (typeof AdminEventType)[keyof typeof AdminEventType];
export const ADMIN_EVENT_SCHEMA_VERSION = 1;

export const jobStreamId = (jobName: string): string => `job-${jobName}`;
export const teamStreamId = (team: string): string => `team-${team}`;
/** Where the admin's changes that belong to no team go (platform worker tokens). */
export const PLATFORM_STREAM = 'platform';
/** A run's stream id begins with this; runs' streams are the log's streams that end (retention removes them). */
export const RUN_STREAM_PREFIX = 'run-';
export const runStreamId = (runId: string): string => `${RUN_STREAM_PREFIX}${runId}`;
export const isRunStream = (streamId: string): boolean => streamId.startsWith(RUN_STREAM_PREFIX);

/** What every event's metadata carries: who decided, why, and the shape's version. */
export interface EventMetadata {
  readonly actor: string;
  readonly schemaVersion: number;
  readonly causationId?: string;
  readonly correlationId?: string;
}
