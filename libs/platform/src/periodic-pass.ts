import { Counter, type Registry } from 'prom-client';
import type { JsonLogger } from './logging/logger';

/** The failures of every periodic pass of a process, by pass: one series per pass name. */
export const PASS_FAILURES_METRIC = 'chronicle_pass_failures_total';

export interface PeriodicPassOptions {
  /** The pass's name in its log lines and in chronicle_pass_failures_total{pass}. */
  readonly name: string;
  /** From the end of one pass to the start of the next. */
  readonly intervalMs: number;
  /** Each wait is drawn from intervalMs * [1 - jitter, 1 + jitter], so that the nodes of a fleet drift apart. Default 0. */
  readonly jitter?: number;
  /** The first pass at once (default), or after one interval. */
  readonly runAtStart?: boolean;
  /** After failures in a row the wait doubles each time, up to this. Default: 30 times the interval, at most 5 minutes. */
  readonly maxBackoffMs?: number;
  readonly logger: JsonLogger;
  readonly registry: Registry;
  /**
   * A failure the pass explains itself (logs and counts in its own terms): true when handled, and the
   * pass then goes on at its interval, without a failure line or backoff. Default: none is.
   */
  readonly handled?: (err: unknown) => boolean;
}

/**
 * Work repeated at an interval until stop(): one pass at a time (the next is
 * timed from the end of the last, never overlapping), a random spread of the
 * interval, and after a failure a log line, a count in
 * chronicle_pass_failures_total{pass} and a wait that doubles with each
 * failure in a row (so a database that is down is not hammered) and returns to
 * the interval at the first success. stop() waits for the pass under way.
 */
export class PeriodicPass {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> = Promise.resolve();
  private failuresInARow = 0;
  private stopped = true;
  private readonly failures: Counter<'pass'>;

  constructor(
    private readonly options: PeriodicPassOptions,
    private readonly work: () => Promise<void>,
  ) {
    this.failures = passFailures(options.registry);
    // Its series from the start, at 0: a rate over it sees the first failure.
    this.failures.inc({ pass: options.name }, 0);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    if (this.options.runAtStart === false) this.schedule(this.options.intervalMs);
    else this.runNow();
  }

  /** No pass starts any more; resolves once the one under way, if any, has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.current;
  }

  /** The pass under way, or the last one: resolves when it ends (never rejects). */
  settled(): Promise<void> {
    return this.current;
  }

  private runNow(): void {
    this.current = this.passOnce().finally(() => {
      if (!this.stopped) this.schedule(this.nextWaitMs());
    });
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => this.runNow(), ms);
  }

  private async passOnce(): Promise<void> {
    try {
      await this.work();
      this.failuresInARow = 0;
    } catch (err) {
      if (this.options.handled?.(err) === true) return;
      this.failuresInARow++;
      this.failures.inc({ pass: this.options.name });
      this.options.logger.error(`${this.options.name} pass failed`, {
        pass: this.options.name,
        failuresInARow: this.failuresInARow,
        nextTryMs: this.backoffMs(),
        err,
      });
    }
  }

  private nextWaitMs(): number {
    const jitter = this.options.jitter ?? 0;
    return Math.round(this.backoffMs() * (1 + jitter * (2 * Math.random() - 1)));
  }

  private backoffMs(): number {
    const { intervalMs } = this.options;
    const max = this.options.maxBackoffMs ?? Math.min(30 * intervalMs, 5 * 60_000);
    return this.failuresInARow === 0
      ? intervalMs
      : Math.min(intervalMs * 2 ** this.failuresInARow, Math.max(max, intervalMs));
  }
}

/** The process's chronicle_pass_failures_total, made on first use: every pass of a registry shares it. */
function passFailures(registry: Registry): Counter<'pass'> {
  const existing = registry.getSingleMetric(PASS_FAILURES_METRIC);
  if (existing !== undefined) return existing as Counter<'pass'>;
  return new Counter({
    name: PASS_FAILURES_METRIC,
    help: 'Failed passes of the periodic work (scheduler passes, shard ownership, vacuum, retention, canaries), by pass',
    labelNames: ['pass'],
    registers: [registry],
  });
}
