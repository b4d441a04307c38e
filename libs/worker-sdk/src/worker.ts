import { backoffDelayMs, sleep } from './backoff';
import { CompletionBatcher, HeartbeatBatcher, type LeaseWithCompletions } from './batched-calls';
import type { LeasedRun } from './protocol';
import { RunExecution, type RunExecutionSettings } from './run-execution';
import {
  resolveWorkerOptions,
  type ResolvedWorkerOptions,
  type ShutdownOptions,
  type WorkerClient,
  type WorkerOptions,
} from './worker-options';

/** The protocol's ceiling for one lease call. */
const MAX_LEASES_PER_CALL = 100;
const DEFAULT_GRACE_MS = 30_000;
/** An empty answer sooner than this (waitSeconds 0, a server that does not long-poll) waits out the rest. */
const MIN_EMPTY_POLL_MS = 1_000;

/**
 * Leases runs from the given queues and runs `handler` on each, at most
 * `concurrency` at a time, with automatic heartbeats and completion.
 * `run()` until `shutdown()`; see stopOnSignals() for a process's lifetime.
 */
export class Worker {
  private readonly options: ResolvedWorkerOptions;
  private readonly execution: RunExecutionSettings;
  /** Runs this worker owes something: a handler running, or a completion not yet answered. */
  private readonly inFlight = new Set<RunExecution>();
  /** Runs whose handler is running: the slots `concurrency` counts. */
  private readonly handling = new Set<RunExecution>();
  /** Slots promised to lease requests not yet answered (the long poll, or a completion call that leases). */
  private reserved = 0;
  /** The client completes in batches, and those calls lease the next runs. */
  private readonly leasesWithCompletions: boolean;
  /** Aborts the long poll in progress and any back-off sleep. */
  private readonly stopLeasing = new AbortController();
  private started = false;
  private finished = false;
  private graceTimer: NodeJS.Timeout | undefined;
  private graceDeadline = Infinity;
  private graceOver = false;
  private wakeLoop: (() => void) | undefined;
  private markStopped!: () => void;
  private readonly stopped = new Promise<void>((resolve) => (this.markStopped = resolve));

  constructor(options: WorkerOptions) {
    this.options = resolveWorkerOptions(options);
    const { client, handler, leaseSeconds, heartbeatIntervalMs, logger } = this.options;
    this.leasesWithCompletions = client.completeMany !== undefined;
    const leasing: LeaseWithCompletions = {
      ask: () => this.askWithCompletions(),
      received: (leases, asked) => {
        this.reserved -= asked.max;
        for (const run of leases) this.start(run);
        this.wake();
      },
    };
    this.execution = { client: withBatchedCalls(client, leasing), handler, leaseSeconds, heartbeatIntervalMs, logger };
  }

  /** Leases and handles runs until shutdown() has stopped leasing and drained the runs in flight. */
  async run(): Promise<void> {
    if (this.started) throw new Error('Worker.run() was already called; a worker runs once');
    this.started = true;
    await this.leaseLoop();
    // A completion call under way may still lease runs (asked before shutdown): they run too.
    while (this.inFlight.size > 0 || this.reserved > 0) await new Promise<void>((resolve) => (this.wakeLoop = resolve));
    clearTimeout(this.graceTimer);
    this.finished = true;
    this.markStopped();
  }

  /**
   * Stops leasing at once, lets in-flight handlers finish and complete within
   * `graceMs`, then aborts the rest and leaves them to their lease expiry
   * (they are not completed). Resolves when run() does. A second call may
   * shorten the grace period, never lengthen it.
   */
  shutdown(options: ShutdownOptions = {}): Promise<void> {
    if (!this.stopLeasing.signal.aborted) {
      this.options.logger.info('shutting down: leasing stopped', { inFlight: this.inFlight.size });
      this.stopLeasing.abort();
      this.wake();
    }
    if (!this.started || this.finished) {
      this.markStopped();
      return this.stopped;
    }
    const deadline = Date.now() + (options.graceMs ?? DEFAULT_GRACE_MS);
    if (deadline < this.graceDeadline) {
      this.graceDeadline = deadline;
      clearTimeout(this.graceTimer);
      this.graceTimer = setTimeout(() => this.abandonInFlight(), deadline - Date.now());
    }
    return this.stopped;
  }

  /**
   * Shuts down on SIGTERM or SIGINT (a second signal skips what is left of
   * the grace period). The listeners go once the worker has stopped, so the
   * process exits as usual after that. Returns a function that removes them.
   */
  stopOnSignals(options: ShutdownOptions = {}, signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): () => void {
    let received = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      received += 1;
      this.options.logger.info(`${signal} received`, { inFlight: this.inFlight.size });
      void this.shutdown(received === 1 ? options : { graceMs: 0 });
    };
    const remove = (): void => {
      for (const signal of signals) process.off(signal, onSignal);
    };
    for (const signal of signals) process.on(signal, onSignal);
    void this.stopped.then(remove);
    return remove;
  }

  private async leaseLoop(): Promise<void> {
    const { client, queues, waitSeconds, leaseSeconds, workerId, prefetchMs, logger } = this.options;
    const signal = this.stopLeasing.signal;
    let failures = 0;
    while (!signal.aborted) {
      const free = this.freeSlots();
      // While completions are on their way, their calls lease the next runs: no call of its own.
      const owed = this.inFlight.size - this.handling.size;
      if (free <= 0 || (this.leasesWithCompletions && owed > 0)) {
        await new Promise<void>((resolve) => (this.wakeLoop = resolve));
        continue;
      }
      const askedAt = Date.now();
      const max = Math.min(free, MAX_LEASES_PER_CALL);
      this.reserved += max;
      try {
        const { leases } = await client
          .lease({ queues, max, waitSeconds, leaseSeconds, workerId, ...prefetching(prefetchMs) }, { signal })
          .finally(() => (this.reserved -= max));
        failures = 0;
        for (const run of leases) this.start(run);
        const elapsedMs = Date.now() - askedAt;
        if (leases.length === 0 && elapsedMs < MIN_EMPTY_POLL_MS) await sleep(MIN_EMPTY_POLL_MS - elapsedMs, signal);
      } catch (error) {
        if (signal.aborted) break; // shutdown aborted the long poll
        failures += 1;
        const delayMs = backoffDelayMs(failures);
        logger.warn('lease failed; retrying', {
          failures,
          delayMs: Math.round(delayMs),
          error: error instanceof Error ? error.message : String(error),
        });
        await sleep(delayMs, signal);
      }
    }
  }

  /**
   * Slots free for new runs: a slot frees when its handler returns; completions still on their way
   * are held to as many again, so a slow server slows leasing instead of piling up leased runs.
   */
  private freeSlots(): number {
    const { concurrency } = this.options;
    return Math.min(concurrency - this.handling.size, 2 * concurrency - this.inFlight.size) - this.reserved;
  }

  /** What a completion call going out now should lease: the free slots, unless the worker is stopping. */
  private askWithCompletions(): ReturnType<LeaseWithCompletions['ask']> {
    const max = Math.min(this.freeSlots(), MAX_LEASES_PER_CALL);
    if (this.stopLeasing.signal.aborted || max <= 0) return undefined;
    this.reserved += max;
    const { queues, leaseSeconds, workerId, prefetchMs } = this.options;
    return { queues, max, leaseSeconds, workerId, ...prefetching(prefetchMs) };
  }

  private start(run: LeasedRun): void {
    if (this.graceOver) {
      // Leased in the instant shutdown ran out of grace: the lease expiry hands it on.
      this.options.logger.warn('run leased after the grace period; left to its lease expiry', { runId: run.runId });
      return;
    }
    const execution = new RunExecution(run, this.execution);
    this.inFlight.add(execution);
    this.handling.add(execution);
    void execution.handled.then(() => {
      this.handling.delete(execution);
      this.wake();
    });
    void execution.start().then(() => {
      this.inFlight.delete(execution);
      this.wake();
    });
  }

  private abandonInFlight(): void {
    this.graceOver = true;
    for (const execution of this.handling) execution.abandon();
  }

  private wake(): void {
    const wake = this.wakeLoop;
    this.wakeLoop = undefined;
    wake?.();
  }
}

/**
 * Completions of runs that finish together, and heartbeats that fall due together, share one call
 * when the client can send many; completion calls lease the next runs.
 */
function withBatchedCalls(client: WorkerClient, leasing: LeaseWithCompletions): WorkerClient {
  const completions =
    client.completeMany === undefined
      ? undefined
      : new CompletionBatcher({ completeMany: client.completeMany.bind(client) }, leasing);
  const heartbeats =
    client.heartbeatMany === undefined
      ? undefined
      : new HeartbeatBatcher({ heartbeatMany: client.heartbeatMany.bind(client) });
  return {
    lease: client.lease.bind(client),
    heartbeat:
      heartbeats === undefined
        ? client.heartbeat.bind(client)
        : (runId, fencingToken, leaseSeconds, _options, trace) =>
            heartbeats.heartbeat(runId, fencingToken, leaseSeconds, trace),
    complete:
      completions === undefined
        ? client.complete.bind(client)
        : (runId, request) => completions.complete(runId, request),
  };
}

/** A lease call's prefetchMs: sent only when asked for (a server before it refuses unknown fields). */
function prefetching(prefetchMs: number): { prefetchMs?: number } {
  return prefetchMs > 0 ? { prefetchMs } : {};
}
