import type { LeasedRun } from './protocol';
import type { SchedulerClient } from './scheduler-client';

/** What a handler gets besides the run itself. */
export interface RunContext {
  /**
   * Aborted when the run is no longer ours (a heartbeat or the completion got
   * `stale-lease`) or when shutdown's grace period is over. Its `reason` says
   * which. Pass it to fetch and friends; stop soon after it fires.
   */
  readonly signal: AbortSignal;
  /** Hand it to downstream systems (an Idempotency-Key header, say): it is the same on every attempt. */
  readonly idempotencyKey: string;
  /** Hand it to fenced storage: a write with an older token than the last one seen must be refused. */
  readonly fencingToken: number;
  readonly attempt: number;
  /**
   * The job is in dry run: log what the run would do and do none of it; the run still succeeds or
   * fails as the handler says.
   */
  readonly dryRun: boolean;
  /** Extends the lease now (heartbeats are also automatic); rejects with StaleLeaseError if the run is gone. */
  heartbeat(): Promise<void>;
}

/**
 * Resolve: the run is completed as a success. Throw: completed as a failure
 * with the error's message, retryable unless it is a NonRetryableError.
 */
export type RunHandler = (run: LeasedRun, context: RunContext) => Promise<void>;

export interface WorkerLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * The calls the worker makes; a SchedulerClient, or anything shaped like
 * one. With `completeMany` and `heartbeatMany` too, completions and heartbeats go in batches
 * (CompletionBatcher, HeartbeatBatcher).
 */
export type WorkerClient = Pick<SchedulerClient, 'lease' | 'heartbeat' | 'complete'> &
  Partial<Pick<SchedulerClient, 'completeMany' | 'heartbeatMany'>>;

export interface WorkerOptions {
  readonly client: WorkerClient;
  readonly queues: readonly string[];
  readonly handler: RunHandler;
  /** Most runs in flight at once. Default 10. */
  readonly concurrency?: number;
  /**
   * Lease length asked for on lease and on every heartbeat. Default 30. The
   * real server takes whole seconds from 1 to 3600; fractions are only for
   * tests against a fake server.
   */
  readonly leaseSeconds?: number;
  /** Long-poll length of a lease call, 0..30. Default 20. */
  readonly waitSeconds?: number;
  /** Time between automatic heartbeats. Default a third of the lease, so two can fail before it lapses. */
  readonly heartbeatIntervalMs?: number;
  /** Sent with each lease call; shows in the run's history. */
  readonly workerId?: string;
  /**
   * Opt-in, 0..2000 ms (default 0): lease runs due within this window too. Such a run comes with its
   * due time as `notBefore`, and its handler starts then, not before: a run due at 09:00:00 starts
   * within milliseconds of it instead of after the lease call that finds it ready. A prefetched run
   * holds its slot while it waits.
   */
  readonly prefetchMs?: number;
  /**
   * Default: warnings and errors on the console. Any object with info, warn and error fits (the
   * server's JsonLogger, pino, ...).
   */
  readonly logger?: WorkerLogger;
}

export interface ShutdownOptions {
  /** How long in-flight handlers may take to finish. Default 30 s. */
  readonly graceMs?: number;
}

export const consoleLogger: WorkerLogger = {
  info: () => undefined,
  warn: (message, fields) => console.warn(`worker: ${message}`, fields ?? ''),
  error: (message, fields) => console.error(`worker: ${message}`, fields ?? ''),
};

/** The server's most for a lease's prefetchMs (it refuses more with validation-error). */
const PREFETCH_MS_LIMIT = 2000;

export type ResolvedWorkerOptions = Required<Omit<WorkerOptions, 'workerId'>> & Pick<WorkerOptions, 'workerId'>;

/** Defaults filled in; a bad value fails the constructor, not the first lease. */
export function resolveWorkerOptions(options: WorkerOptions): ResolvedWorkerOptions {
  const leaseSeconds = options.leaseSeconds ?? 30;
  const resolved: ResolvedWorkerOptions = {
    ...options,
    concurrency: options.concurrency ?? 10,
    leaseSeconds,
    waitSeconds: options.waitSeconds ?? 20,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? (leaseSeconds * 1000) / 3,
    logger: options.logger ?? consoleLogger,
    prefetchMs: options.prefetchMs ?? 0,
  };
  const { queues, concurrency, waitSeconds, heartbeatIntervalMs, prefetchMs } = resolved;
  if (queues.length === 0) throw new RangeError('Worker: queues must name at least one queue');
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new RangeError(`Worker: concurrency must be a whole number >= 1, not ${concurrency}`);
  if (!(leaseSeconds > 0 && leaseSeconds <= 3600))
    throw new RangeError(`Worker: leaseSeconds must be in (0, 3600], not ${leaseSeconds}`);
  if (!(waitSeconds >= 0 && waitSeconds <= 30))
    throw new RangeError(`Worker: waitSeconds must be in [0, 30], not ${waitSeconds}`);
  if (!Number.isInteger(prefetchMs) || prefetchMs < 0 || prefetchMs > PREFETCH_MS_LIMIT)
    throw new RangeError(`Worker: prefetchMs must be a whole number in [0, ${PREFETCH_MS_LIMIT}], not ${prefetchMs}`);
  if (!(heartbeatIntervalMs > 0 && heartbeatIntervalMs < leaseSeconds * 1000))
    throw new RangeError(
      `Worker: heartbeatIntervalMs must be positive and shorter than the lease, not ${heartbeatIntervalMs}`,
    );
  return resolved;
}
