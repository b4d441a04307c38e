import { AttemptTrace } from './attempt-trace';
import { backoffDelayMs, sleep } from './backoff';
import { isTransient, NonRetryableError, RetryLaterError, StaleLeaseError } from './errors';
import type { CompleteRequest, LeasedRun } from './protocol';
import type { RunContext, RunHandler, WorkerClient, WorkerLogger } from './worker-options';

export interface RunExecutionSettings {
  readonly client: WorkerClient;
  readonly handler: RunHandler;
  readonly leaseSeconds: number;
  readonly heartbeatIntervalMs: number;
  readonly logger: WorkerLogger;
}

/**
 * Completion is idempotent on the server, so a lost answer or a refusal of the moment (the database
 * away, the run's shard moving to another server: 503) is retried, with backoff, while the lease
 * lasts; once it has expired the run is the server's to lease again, and a later answer could only
 * be stale.
 */
/** Enough to find the cause; the server refuses oversized bodies. */
const MAX_ERROR_LENGTH = 4_000;

/** Why a handler's signal was aborted at shutdown (a StaleLeaseError is the other reason). */
export class GracePeriodOverError extends Error {
  constructor() {
    super('worker shutdown: grace period over, the run is left to its lease expiry');
    this.name = 'GracePeriodOverError';
  }
}

/**
 * Starts at given instants (prefetched runs' notBefore): one timer per instant for all the runs due
 * at it, so that a burst of runs due at one moment starts in one turn of the event loop, none behind
 * the others' completions. A timer that fires early by the wall clock is set again for the rest.
 */
class StartsAt {
  private readonly instants = new Map<number, { timer: NodeJS.Timeout; starts: Set<() => void> }>();

  /** `start` at `atMs` (Date.now() time); the function returned gives it up. */
  add(atMs: number, start: () => void): () => void {
    let instant = this.instants.get(atMs);
    if (instant === undefined) {
      instant = { timer: this.arm(atMs), starts: new Set() };
      this.instants.set(atMs, instant);
    }
    instant.starts.add(start);
    const entry = instant;
    return () => {
      entry.starts.delete(start);
      if (entry.starts.size > 0 || this.instants.get(atMs) !== entry) return;
      clearTimeout(entry.timer);
      this.instants.delete(atMs);
    };
  }

  private arm(atMs: number): NodeJS.Timeout {
    return setTimeout(() => this.fire(atMs), Math.max(atMs - Date.now(), 0));
  }

  private fire(atMs: number): void {
    const instant = this.instants.get(atMs);
    if (instant === undefined) return;
    if (Date.now() < atMs) {
      instant.timer = this.arm(atMs);
      return;
    }
    this.instants.delete(atMs);
    for (const start of instant.starts) start();
  }
}

const startsAt = new StartsAt();

/**
 * One leased run: its handler, the heartbeats that keep the lease while the
 * handler works, and the completion. `handling` -> `completing` -> `done`, or
 * straight to `done` when the run is lost (stale lease) or abandoned
 * (shutdown), in which case the handler's result is dropped.
 */
export class RunExecution {
  private phase: 'handling' | 'completing' | 'done' = 'handling';
  private readonly abort = new AbortController();
  private heartbeatTimer: NodeJS.Timeout | undefined;
  /** The handler's attempt span, once it runs: its heartbeats and completion name it. */
  private attempt: AttemptTrace | undefined;
  /** When the lease ends as this worker last heard: the lease's answer, then each heartbeat's. */
  private leaseEndsAt: number;
  /** Gives up the wait for a prefetched run's notBefore. */
  private cancelStart: (() => void) | undefined;
  private markSettled!: () => void;
  private markHandled!: () => void;
  /** Settles when this worker owes the run nothing more (its completion answered, or the run given up). */
  readonly settled = new Promise<void>((resolve) => (this.markSettled = resolve));
  /**
   * Settles when the handler no longer runs (returned, or was abandoned at shutdown): its slot is
   * free for the next run while the completion is still on its way.
   */
  readonly handled = new Promise<void>((resolve) => (this.markHandled = resolve));

  constructor(
    readonly run: LeasedRun,
    private readonly settings: RunExecutionSettings,
  ) {
    this.leaseEndsAt = Date.parse(run.leaseExpiresAt);
  }

  /** Runs the handler now, or at the run's `notBefore` when it was leased ahead of its due time. */
  start(): Promise<void> {
    this.begin();
    return this.settled;
  }

  private begin(): void {
    if (this.phase !== 'handling') return; // given up while it waited for its notBefore
    if (this.run.notBefore !== undefined && Date.parse(this.run.notBefore) > Date.now()) {
      this.cancelStart = startsAt.add(Date.parse(this.run.notBefore), () => this.begin());
      return;
    }
    this.scheduleHeartbeat();
    void this.execute();
  }

  /** Shutdown's grace is over: abort the handler and leave the run to the server's lease expiry. */
  abandon(): void {
    if (this.phase !== 'handling') return; // a completion under way is let through
    this.release(new GracePeriodOverError());
    // The handler may ignore its signal; the worker must not wait for it.
    this.markHandled();
    this.markSettled();
  }

  private async execute(): Promise<void> {
    const { run, settings } = this;
    const attempt = new AttemptTrace(run);
    this.attempt = attempt;
    let request: CompleteRequest;
    try {
      await attempt.within(() => settings.handler(run, this.context()));
      attempt.end();
      request = { fencingToken: run.fencingToken, outcome: 'success', ...attempt.fields };
    } catch (error) {
      attempt.end(describe(error));
      request = {
        fencingToken: run.fencingToken,
        outcome: 'failure',
        error: describe(error),
        retryable: !(error instanceof NonRetryableError),
        ...(error instanceof RetryLaterError ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
        ...attempt.fields,
      };
    }
    // A lost run keeps its slot until its handler returns, so the concurrency limit holds.
    this.markHandled();
    if (this.phase === 'handling') {
      this.phase = 'completing';
      clearTimeout(this.heartbeatTimer);
      await this.complete(request);
      this.phase = 'done';
    } else {
      settings.logger.info('result dropped: the run is no longer ours', {
        ...this.fields(),
        reason: String(this.abort.signal.reason),
      });
    }
    this.markSettled();
  }

  private context(): RunContext {
    const { run } = this;
    return {
      signal: this.abort.signal,
      idempotencyKey: run.idempotencyKey,
      fencingToken: run.fencingToken,
      attempt: run.attempt,
      dryRun: run.dryRun === true,
      heartbeat: () => this.heartbeat(),
    };
  }

  private async heartbeat(): Promise<void> {
    if (this.phase === 'done') throw this.abort.signal.reason;
    try {
      const beat = await this.settings.client.heartbeat(
        this.run.runId,
        this.run.fencingToken,
        this.settings.leaseSeconds,
        {},
        this.attempt?.fields,
      );
      const endsAt = Date.parse(beat.leaseExpiresAt);
      if (Number.isFinite(endsAt)) this.leaseEndsAt = endsAt;
    } catch (error) {
      // Completing already: the server answers stale-lease to a heartbeat that lands after it.
      if (error instanceof StaleLeaseError && this.phase === 'handling') this.release(error);
      throw error;
    }
  }

  // A chain of timeouts, not an interval: a slow heartbeat never overlaps the next.
  private scheduleHeartbeat(): void {
    this.heartbeatTimer = setTimeout(() => {
      this.heartbeat()
        .catch((error: unknown) => {
          // Anything but stale is transient: the next beat, a third of a lease later, retries.
          if (!(error instanceof StaleLeaseError))
            this.settings.logger.warn('heartbeat failed', { ...this.fields(), error: describe(error) });
        })
        .finally(() => {
          if (this.phase === 'handling') this.scheduleHeartbeat();
        });
    }, this.settings.heartbeatIntervalMs);
  }

  private release(reason: Error): void {
    this.phase = 'done';
    this.cancelStart?.();
    clearTimeout(this.heartbeatTimer);
    this.settings.logger.warn(
      reason instanceof StaleLeaseError
        ? 'lease lost: aborting the handler'
        : 'grace period over: aborting the handler',
      this.fields(),
    );
    this.abort.abort(reason);
  }

  private async complete(request: CompleteRequest): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.settings.client.complete(this.run.runId, request);
        return;
      } catch (error) {
        if (error instanceof StaleLeaseError) {
          this.settings.logger.warn('completion refused, stale lease: result dropped', {
            ...this.fields(),
            outcome: request.outcome,
          });
          return;
        }
        const wait = backoffDelayMs(attempt);
        if (!isTransient(error) || Date.now() + wait >= this.leaseEndsAt) {
          this.settings.logger.error('could not complete the run; it runs again after its lease expires', {
            ...this.fields(),
            error: describe(error),
          });
          return;
        }
        await sleep(wait);
      }
    }
  }

  private fields(): Record<string, unknown> {
    return { runId: this.run.runId, job: this.run.job, attempt: this.run.attempt, fencingToken: this.run.fencingToken };
  }
}

function describe(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}...` : text;
}
