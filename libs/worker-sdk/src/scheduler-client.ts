import { errorFromResponse } from './errors';
import type {
  AttemptTraceFields,
  CompleteManyRequest,
  CompleteManyResponse,
  CompleteRequest,
  CompleteResponse,
  HeartbeatManyRequest,
  HeartbeatManyResponse,
  HeartbeatResponse,
  LeaseRequest,
  LeaseResponse,
} from './protocol';

export interface SchedulerClientOptions {
  /** Where the scheduler's API is, e.g. `https://scheduler.internal`; `/v1/...` is appended. */
  readonly baseUrl: string;
  /** A worker token: it may lease, heartbeat and complete runs of its queues. */
  readonly token: string;
  /** Longest wait for one answer, added to a lease's `waitSeconds`. Default 10 s. */
  readonly fetchTimeoutMs?: number;
}

export interface CallOptions {
  /** Aborts the call; the fetch then rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

const DEFAULT_FETCH_TIMEOUT_MS = 10_000;

/**
 * The worker protocol: lease, heartbeat, complete (one or many). Non-2xx answers throw SchedulerApiError
 * (StaleLeaseError for `stale-lease`); network errors and timeouts are thrown
 * as fetch reports them. No retries here: the Worker decides what to retry.
 */
export class SchedulerClient {
  private readonly baseUrl: string;
  private readonly token: string;
  private readonly fetchTimeoutMs: number;

  constructor(options: SchedulerClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.token = options.token;
    this.fetchTimeoutMs = options.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
  }

  /** Leases up to `max` runs, long-polling up to `waitSeconds`; the list may be empty. */
  lease(request: LeaseRequest, options: CallOptions = {}): Promise<LeaseResponse> {
    // A long poll legitimately holds the answer back for waitSeconds.
    const timeoutMs = this.fetchTimeoutMs + (request.waitSeconds ?? 0) * 1000;
    return this.post('/v1/lease', request, timeoutMs, options.signal);
  }

  /**
   * Extends the lease; StaleLeaseError when the token is no longer the run's current one. `trace`: the
   * attempt's span, which the run's LeaseExtended records.
   */
  heartbeat(
    runId: string,
    fencingToken: number,
    leaseSeconds?: number,
    options: CallOptions = {},
    trace: AttemptTraceFields = {},
  ): Promise<HeartbeatResponse> {
    return this.post(
      `/v1/runs/${encodeURIComponent(runId)}/heartbeat`,
      { fencingToken, leaseSeconds, ...trace },
      this.fetchTimeoutMs,
      options.signal,
    );
  }

  /** Reports the outcome; StaleLeaseError when the run is no longer ours (the result is then dropped). */
  complete(runId: string, request: CompleteRequest, options: CallOptions = {}): Promise<CompleteResponse> {
    return this.post(`/v1/runs/${encodeURIComponent(runId)}/complete`, request, this.fetchTimeoutMs, options.signal);
  }

  /** Many heartbeats in one call; each run's answer, its new expiry or a problem, is in the response. */
  heartbeatMany(request: HeartbeatManyRequest, options: CallOptions = {}): Promise<HeartbeatManyResponse> {
    return this.post('/v1/runs:heartbeat', request, this.fetchTimeoutMs, options.signal);
  }

  /** Many outcomes in one call; each run's answer, a state or a problem, is in the response. */
  completeMany(request: CompleteManyRequest, options: CallOptions = {}): Promise<CompleteManyResponse> {
    return this.post('/v1/runs:complete', request, this.fetchTimeoutMs, options.signal);
  }

  private async post<T>(path: string, body: unknown, timeoutMs: number, signal: AbortSignal | undefined): Promise<T> {
    signal?.throwIfAborted();
    // One controller for the caller's signal and the timeout, cleared when the
    // body is read: AbortSignal.any would keep every combined signal alive.
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(
      () => controller.abort(new DOMException(`no answer to POST ${path} within ${timeoutMs} ms`, 'TimeoutError')),
      timeoutMs,
    );
    try {
      const response = await fetch(this.baseUrl + path, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.token}`,
          'content-type': 'application/json',
          accept: 'application/json, application/problem+json',
        },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!response.ok) throw await errorFromResponse(response);
      return (await response.json()) as T;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
