import type { RunEventType } from '../streams';

export const Priority = { critical: 'critical', default: 'default', bulk: 'bulk' } as const;
export type Priority = (typeof Priority)[keyof typeof Priority];
/** Highest first: the order claims weigh them in. */
export const PRIORITIES: readonly Priority[] = Object.values(Priority);

/** How a run came to be; catch-up runs of the scheduler say so. */
export type RunSource = 'api' | 'batch' | 'schedule' | 'catch_up' | 'backfill';

/** Where a payload stored by reference is: its JSON's SHA-256 (hex), the key of the payload store, and its size. */
export interface PayloadRef {
  readonly sha256: string;
  readonly bytes: number;
}

/** Attempts in all, the first included, and the full-jitter backoff's bounds (retry-backoff.ts). */
export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly baseSeconds: number;
  readonly maxSeconds: number;
}

export interface RunScheduledData {
  readonly runId: string;
  readonly job: string;
  readonly team: string;
  readonly queue: string;
  readonly priority: Priority;
  /** ISO-8601 UTC: when the run becomes ready. */
  readonly dueAt: string;
  /** null when it is stored by reference (payloadRef). */
  readonly payload: unknown;
  /** A payload over INLINE_PAYLOAD_BYTES: stored once in the payload store, under its SHA-256. */
  readonly payloadRef?: PayloadRef;
  readonly idempotencyKey: string;
  readonly retry: RetryPolicy;
  readonly timeoutSeconds: number;
  readonly source: RunSource;
  /** The version of the job's definition the run was made from; null for runs recorded before version 2. */
  readonly jobVersion: number | null;
  /** Made from a job in dry run (JobDefinition.dryRun): its worker is told to have no effects. Absent: not dry. */
  readonly dryRun?: true;
  /**
   * Enqueued with a unique key (docs/api.md, "Unique runs"): the key, and the job's rule for how long the
   * run holds it (`until`: ISO-8601 UTC, for scope `for`). Absent: the run holds no key.
   */
  readonly unique?: RunUnique;
  /**
   * Its concurrency key (docs/api.md, "Dispatch: priorities, fairness, concurrency"): it is leased only
   * while its job has fewer than its perKeyConcurrency runs of this key leased. Absent: none.
   */
  readonly concurrencyKey?: string;
  /**
   * Its ordering key and its place in the key's order (docs/api.md, "Order per key"): the runs of its job
   * with this key are leased one at a time, lowest `seq` first. `seq` is given under the key's lock when the
   * run is made: greater than every waiting or leased run of the key's then. Absent: none.
   */
  readonly ordering?: RunOrdering;
  /**
   * Its debounce key (docs/api.md, "Debounced runs"): while it waits unleased, an enqueue of its job naming
   * the key moves it and replaces its payload (RunDebounced) instead of making another run. Absent: none.
   */
  readonly debounceKey?: string;
  /**
   * The trace of the request that enqueued it (W3C trace context: docs/operations.md, "Traces"), handed to
   * the worker with each lease so that an attempt's trace links to it. Absent: enqueued untraced, or by
   * the scheduler.
   */
  readonly trace?: TraceContext;
}

/**
 * A W3C trace context: the `traceparent` header's value, and `tracestate`'s if any. As a run keeps its
 * enqueue's, an event's metadata and an HTTP request the trace they belong to.
 */
export interface TraceContext {
  readonly traceparent: string;
  readonly tracestate?: string;
}

export interface RunOrdering {
  readonly key: string;
  readonly seq: number;
}

export interface RunUnique {
  readonly key: string;
  readonly scope: 'while-pending' | 'while-not-finished' | 'for';
  readonly until?: string;
}

export interface RunLeasedData {
  readonly attempt: number;
  /** The revision of this event in the run's stream: greater than every earlier token of the run. */
  readonly fencingToken: number;
  readonly workerId: string;
  readonly leasedAt: string;
  readonly leaseExpiresAt: string;
  /**
   * Leased ahead of its due time (the worker's prefetchMs): the worker starts the run at this instant,
   * its due time, and not before; the lease runs from then. Absent: leased when ready, started at once.
   */
  readonly notBefore?: string;
}

export interface LeaseExtendedData {
  readonly fencingToken: number;
  readonly leaseExpiresAt: string;
}

export interface RunSucceededData {
  readonly attempt: number;
  readonly fencingToken: number;
  readonly completedAt: string;
}

export interface RunFailedData {
  readonly attempt: number;
  readonly fencingToken: number;
  readonly error: string | null;
  readonly retryable: boolean;
  readonly failedAt: string;
  /** When the next attempt is due; null when none is left (a RunDead follows). */
  readonly retryAt: string | null;
}

export interface LeaseExpiredData {
  readonly attempt: number;
  readonly fencingToken: number;
  readonly expiredAt: string;
  readonly retryAt: string | null;
}

export type DeathReason = 'attempts_exhausted' | 'not_retryable' | 'lease_expired';

export interface RunDeadData {
  readonly attempt: number;
  readonly reason: DeathReason;
  readonly lastError: string | null;
  readonly deadAt: string;
}

export interface RunCancelledData {
  readonly cancelledAt: string;
  /**
   * Absent: cancelled on request. The schedule's overlap policy: a fire
   * skipped while an earlier run was leased, or a leased run superseded by a
   * newer fire (cancel_other); `detail` names the other run.
   */
  readonly reason?: 'overlap_skipped' | 'overlap_superseded';
  readonly detail?: string;
}

export interface RunReplayedData {
  readonly replayedAt: string;
  /** The last attempt number allowed from now on: a fresh budget, the count goes on. */
  readonly attemptLimit: number;
}

export interface RunDiscardedData {
  readonly discardedAt: string;
}

/**
 * An enqueue naming the run's debounce key while it waited unleased: the run is ready at `availableAt`
 * (its `dueAt` stays the time it was made for) and its payload is the enqueue's, inline or by reference.
 * The event's metadata names the enqueue's actor.
 */
export interface RunDebouncedData {
  readonly debouncedAt: string;
  /** ISO-8601 UTC: the job's debounce seconds after the enqueue (debouncedAt, or its later runAt). */
  readonly availableAt: string;
  /** null when it is stored by reference (payloadRef). */
  readonly payload: unknown;
  readonly payloadRef?: PayloadRef;
}

interface Event<Type extends RunEventType, Data> {
  readonly type: Type;
  readonly data: Data;
}

/** Every event of a `run-<id>` stream. */
export type RunEvent =
  | Event<'RunScheduled', RunScheduledData>
  | Event<'RunLeased', RunLeasedData>
  | Event<'LeaseExtended', LeaseExtendedData>
  | Event<'RunSucceeded', RunSucceededData>
  | Event<'RunFailed', RunFailedData>
  | Event<'LeaseExpired', LeaseExpiredData>
  | Event<'RunDead', RunDeadData>
  | Event<'RunCancelled', RunCancelledData>
  | Event<'RunReplayed', RunReplayedData>
  | Event<'RunDiscarded', RunDiscardedData>
  | Event<'RunDebounced', RunDebouncedData>;

/**
 * Current shape version of run events' data, stored in every event's metadata. 2: RunScheduled has
 * `jobVersion` (upcasting.ts reads version 1 events).
 */
export const RUN_EVENT_SCHEMA_VERSION = 2;

/**
 * Recorded in the metadata of every run event after the first (its RunScheduled holds them in its data):
 * the run's team, queue, priority and due time, so that a reader files the event without the run's row.
 * Events recorded before these keys were added have none of them.
 */
export interface RunPlaceMetadata {
  readonly team: string;
  readonly queue: string;
  readonly priority: Priority;
  /** ISO-8601 UTC, as RunScheduledData's. */
  readonly dueAt: string;
}

/** The run place an event's metadata records, or undefined when it has none (older events). */
export function recordedRunPlace(metadata: Readonly<Record<string, unknown>>): RunPlaceMetadata | undefined {
  const { team, queue, priority, dueAt } = metadata;
  return typeof team === 'string' &&
    typeof queue === 'string' &&
    typeof priority === 'string' &&
    (PRIORITIES as readonly string[]).includes(priority) &&
    typeof dueAt === 'string'
    ? { team, queue, priority: priority as Priority, dueAt }
    : undefined;
}
