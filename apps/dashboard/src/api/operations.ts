import type { Priority, RunState } from '@chronicle/domain/vocabulary';

/*
 * The GraphQL operations the pages send, by the names of the GraphQL schema (apps/api/src/graphql), with the shapes of their
 * answers. Every list is a Relay connection (`edges { cursor node }`, `pageInfo`).
 */

export interface PageInfo {
  readonly hasNextPage: boolean;
  readonly endCursor: string | null;
}
export interface Connection<T> {
  readonly edges: ReadonlyArray<{ readonly cursor: string; readonly node: T }>;
  readonly pageInfo: PageInfo;
}

export interface QueueStats {
  readonly queue: string;
  readonly priority: Priority;
  readonly ready: number;
  readonly leased: number;
  readonly retryWait: number;
  readonly dead: number;
  readonly oldestReadyAgeSeconds: number | null;
  readonly concurrencyLimit: number | null;
  readonly rateLimit: { readonly limit: number; readonly per: string; readonly burst: number } | null;
}

/** One minute of one priority's activity (queueHistory). */
export interface HistoryPoint {
  readonly minute: string;
  readonly priority: Priority;
  readonly leased: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly leaseExpired: number;
  readonly dead: number;
  readonly lagP50Seconds: number | null;
  readonly lagP99Seconds: number | null;
}

export const OVERVIEW = `query Overview($minutes: Int, $queue: String) {
  queues { queue priority ready leased retryWait dead oldestReadyAgeSeconds concurrencyLimit rateLimit { limit per burst } }
  queueHistory(minutes: $minutes, queue: $queue) { minute priority leased succeeded failed leaseExpired dead lagP50Seconds lagP99Seconds }
}`;
export interface OverviewData {
  readonly queues: readonly QueueStats[];
  readonly queueHistory: readonly HistoryPoint[];
}

/** Signing in asks the cheapest question a team or the admin may ask. */
export const WHO_CAN_SEE = `query SignIn { queues { queue } }`;

export interface JobSummary {
  readonly name: string;
  readonly team: string;
  readonly queue: string;
  readonly priority: Priority;
  readonly paused: boolean;
  readonly version: number;
}
export const JOBS = `query Jobs($first: Int, $after: String, $queue: String, $team: String) {
  jobs(first: $first, after: $after, queue: $queue, team: $team) {
    edges { cursor node { name team queue priority paused version } }
    pageInfo { hasNextPage endCursor }
  }
}`;
export interface JobsData {
  readonly jobs: Connection<JobSummary>;
}

export interface RunSummary {
  readonly id: string;
  readonly job: string;
  readonly queue: string;
  readonly priority: Priority;
  readonly state: RunState;
  readonly attempt: number;
  readonly dueAt: string;
  readonly lastError: string | null;
  /** Made from a job in dry run: its handler logged, with no effects. */
  readonly dryRun: boolean;
}
const RUN_SUMMARY = 'id job queue priority state attempt dueAt lastError dryRun';

export interface JobDetail extends JobSummary {
  readonly definition: Record<string, unknown>;
  readonly nextFireTimes: readonly string[];
  readonly runs: Connection<RunSummary>;
}
export const JOB = `query Job($name: String!, $state: RunState, $first: Int) {
  job(name: $name) {
    name team queue priority paused version definition
    nextFireTimes(count: 10)
    runs(first: $first, state: $state) { edges { cursor node { ${RUN_SUMMARY} } } pageInfo { hasNextPage endCursor } }
  }
}`;
export interface JobData {
  readonly job: JobDetail | null;
}
export const PAUSE_JOB = `mutation PauseJob($name: String!) { pauseJob(name: $name) { name paused version } }`;
export const RESUME_JOB = `mutation ResumeJob($name: String!) { resumeJob(name: $name) { name paused version } }`;

export interface RunEvent {
  readonly type: string;
  readonly revision: number;
  readonly recordedAt: string;
  readonly actor: string | null;
  readonly data: Record<string, unknown>;
}
/** One attempt, as the API derives it from the run's events. */
export interface Attempt {
  readonly attempt: number;
  readonly workerId: string | null;
  readonly startedAt: string;
  readonly endedAt: string | null;
  /** success, failure, lease_expired or running */
  readonly outcome: string;
  readonly error: string | null;
}
export interface RunDetail extends RunSummary {
  readonly team: string;
  readonly idempotencyKey: string;
  readonly uniqueKey: string | null;
  readonly concurrencyKey: string | null;
  readonly orderingKey: string | null;
  readonly orderingSeq: number | null;
  readonly debounceKey: string | null;
  /** When it is ready to lease while it waits: dueAt, later after a debounce or while a retry waits. */
  readonly availableAt: string;
  readonly leaseExpiresAt: string | null;
  readonly payload: unknown;
  readonly attempts: readonly Attempt[];
  readonly events: readonly RunEvent[];
}
export const RUN = `query Run($id: ID!) {
  run(id: $id) {
    ${RUN_SUMMARY} team idempotencyKey uniqueKey concurrencyKey orderingKey orderingSeq debounceKey availableAt leaseExpiresAt payload
    attempts { attempt workerId startedAt endedAt outcome error }
    events { type revision recordedAt actor data }
  }
}`;
export interface RunData {
  readonly run: RunDetail | null;
}

export interface DeadRun extends RunSummary {
  readonly deadAt: string | null;
}
export const DEAD_LETTERS = `query DeadLetters($job: String, $first: Int, $after: String) {
  deadLetters(job: $job, first: $first, after: $after) {
    edges { cursor node { ${RUN_SUMMARY} deadAt } }
    pageInfo { hasNextPage endCursor }
  }
}`;
export interface DeadLettersData {
  readonly deadLetters: Connection<DeadRun>;
}
export const REPLAY_DEAD_LETTER = `mutation Replay($id: ID!) { replayDeadLetter(id: $id) { id state } }`;
export const DISCARD_DEAD_LETTER = `mutation Discard($id: ID!) { discardDeadLetter(id: $id) { id state } }`;

/** A filter of a bulk operation (as POST /v1/bulk-operations takes it): each field given narrows it. */
export interface BulkFilter {
  readonly team?: string;
  readonly job?: string;
  readonly queue?: string;
  readonly state?: string;
  readonly error?: string;
  readonly dueAfter?: string;
  readonly dueBefore?: string;
  readonly deadAfter?: string;
  readonly deadBefore?: string;
}
export interface BulkSampleItem {
  readonly id: string;
  readonly job: string;
  readonly team: string;
  readonly state: string;
  readonly dueAt: string | null;
  readonly deadAt: string | null;
  readonly lastError: string | null;
}
export const BULK_PREVIEW = `query BulkPreview($action: String!, $filter: BulkFilterInput) {
  bulkOperationPreview(action: $action, filter: $filter) { action matched sample { id job team state dueAt deadAt lastError } }
}`;
export interface BulkPreviewData {
  readonly bulkOperationPreview: { readonly matched: number; readonly sample: readonly BulkSampleItem[] };
}
export interface BulkOperation {
  readonly id: string;
  readonly action: string;
  readonly team: string | null;
  readonly status: string;
  readonly matched: number;
  readonly processed: number;
  readonly acted: number;
  readonly skipped: number;
  readonly error: string | null;
  readonly createdAt: string;
}
const BULK_OPERATION = 'id action team status matched processed acted skipped error createdAt';
export const START_BULK = `mutation StartBulk($action: String!, $filter: BulkFilterInput) {
  startBulkOperation(action: $action, filter: $filter) { ${BULK_OPERATION} }
}`;
export const BULK_OPERATION_QUERY = `query BulkOperation($id: ID!) { bulkOperation(id: $id) { ${BULK_OPERATION} } }`;
export const STOP_BULK = `mutation StopBulk($id: ID!) { stopBulkOperation(id: $id) { ${BULK_OPERATION} } }`;
export const RESUME_BULK = `mutation ResumeBulk($id: ID!) { resumeBulkOperation(id: $id) { ${BULK_OPERATION} } }`;
export const BULK_OPERATIONS = `query BulkOperations($first: Int) {
  bulkOperations(first: $first) { edges { cursor node { ${BULK_OPERATION} } } pageInfo { hasNextPage endCursor } }
}`;
export interface BulkOperationsData {
  readonly bulkOperations: Connection<BulkOperation>;
}
