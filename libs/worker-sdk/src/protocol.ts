/**
 * Wire shapes of the worker protocol (docs/api.md, "The worker protocol"): JSON
 * over HTTP, `Authorization: Bearer <worker token>` on every call.
 */

/** `POST /v1/lease` body. */
export interface LeaseRequest {
  readonly queues: readonly string[];
  /** 1..100 runs per call. */
  readonly max: number;
  /** 0..30: how long the server may hold the request open waiting for work. */
  readonly waitSeconds?: number;
  /** 1..3600 whole seconds on the real server (default 30 there). */
  readonly leaseSeconds?: number;
  readonly workerId?: string;
  /** 0..2000: runs due within this many milliseconds are leased too, each with its due time as `notBefore`. */
  readonly prefetchMs?: number;
}

/** One leased run, as `POST /v1/lease` returns it. */
export interface LeasedRun {
  readonly runId: string;
  readonly job: string;
  readonly attempt: number;
  /** Stable across attempts: hand it to downstream systems so a rerun has no second effect. */
  readonly idempotencyKey: string;
  /** Grows with every lease of the run; every later call for the run must carry it. */
  readonly fencingToken: number;
  readonly leaseExpiresAt: string;
  /** Leased ahead of its due time (prefetchMs): start it at this instant, not before. */
  readonly notBefore?: string;
  readonly payload: unknown;
  /** The job is in dry run: log what the run would do, and do none of it (RunContext.dryRun). */
  readonly dryRun: boolean;
  /** The W3C trace context of the request that enqueued the run, if it had one: the attempt's span links to it. */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

export interface LeaseResponse {
  readonly leases: readonly LeasedRun[];
}

export interface HeartbeatResponse {
  readonly leaseExpiresAt: string;
}

export type RunOutcome = 'success' | 'failure';

/** `POST /v1/runs/{runId}/complete` body. */
export interface CompleteRequest {
  readonly fencingToken: number;
  readonly outcome: RunOutcome;
  readonly error?: string;
  /** false sends the run straight to the dead-letter queue. */
  readonly retryable?: boolean;
  /** A retryable failure's retry waits this long instead of the job's backoff (0-86,400; RetryLaterError). */
  readonly retryAfterSeconds?: number;
  /** The attempt's W3C trace context (its span), recorded with the run's events the completion causes. */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

export interface CompleteResponse {
  readonly runId: string;
  /** The run's state after the completion (`succeeded`, `retry_wait`, `dead`, ...). */
  readonly state: string;
}

/**
 * `POST /v1/runs:complete` body: up to 100 completions, in one transaction on the server. With
 * `lease`, the same transaction leases the worker's next runs (never waiting for them).
 */
export interface CompleteManyRequest {
  readonly completions: ReadonlyArray<CompleteRequest & { readonly runId: string }>;
  readonly lease?: Omit<LeaseRequest, 'waitSeconds'>;
}

/** `POST /v1/runs:heartbeat` body: up to 100 heartbeats, in one transaction on the server. */
export interface HeartbeatManyRequest {
  readonly heartbeats: ReadonlyArray<
    {
      readonly runId: string;
      readonly fencingToken: number;
      readonly leaseSeconds?: number;
    } & AttemptTraceFields
  >;
}

/** An attempt's W3C trace context (its span), recorded with the run's events a call for it causes. */
export interface AttemptTraceFields {
  readonly traceparent?: string;
  readonly tracestate?: string;
}

/** One result per heartbeat, in order: the lease's new expiry, or the problem that refused it (stale-lease, not-found). */
export interface HeartbeatManyResponse {
  readonly results: ReadonlyArray<{
    readonly runId: string;
    readonly leaseExpiresAt?: string;
    readonly problem?: Problem;
  }>;
}

/** RFC 9457 problem details, as the server answers them. */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
}

/** One result per completion, in order: the run's state, or the problem that refused it (stale-lease, not-found). */
export interface CompleteManyResponse {
  readonly results: ReadonlyArray<{ readonly runId: string; readonly state?: string; readonly problem?: Problem }>;
  /** The runs leased for the request's `lease`, if it had one. */
  readonly leases?: readonly LeasedRun[];
}
