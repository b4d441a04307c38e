/**
 * The worker SDK of the scheduler: SchedulerClient speaks the worker protocol
 * (lease, heartbeat, complete); Worker runs handlers on leased runs.
 */
export { SchedulerClient, type CallOptions, type SchedulerClientOptions } from './scheduler-client';
export { Worker } from './worker';
export { BatchedCalls, CompletionBatcher, HeartbeatBatcher } from './batched-calls';
export type {
  RunContext,
  RunHandler,
  ShutdownOptions,
  WorkerClient,
  WorkerLogger,
  WorkerOptions,
} from './worker-options';
export { GracePeriodOverError } from './run-execution';
export {
  isTransient,
  NonRetryableError,
  RetryLaterError,
  SchedulerApiError,
  STALE_LEASE_PROBLEM,
  StaleLeaseError,
} from './errors';
export type {
  AttemptTraceFields,
  CompleteManyRequest,
  CompleteManyResponse,
  CompleteRequest,
  CompleteResponse,
  Problem,
  HeartbeatManyRequest,
  HeartbeatManyResponse,
  HeartbeatResponse,
  LeaseRequest,
  LeaseResponse,
  LeasedRun,
  RunOutcome,
} from './protocol';
