import { Counter, type Registry } from 'prom-client';
import type { JsonLogger } from './logging/logger';

/** The failures of every periodic pass of a process, by pass: one series per pass name. */
export const PASS_FAILURES_METRIC = 'chronicle_pass_failures_total';

/** What PassFailures needs of a piece of periodic work. */
export interface PassFailuresOptions {
  /** Its name in chronicle_pass_failures_total{pass} and in its failure line (`pass`). */
  readonly name: string;
  /** From the end of one try to the start of the next after a success; the first step of the backoff. */
  readonly intervalMs: number;
  /** The longest wait while it fails. Default: 30 times the interval, at most 5 minutes. */
  readonly maxBackoffMs?: number;
  /** The failure line's message. Default: "<name> pass failed". */
  readonly message?: string;
  readonly logger: JsonLogger;
  readonly registry: Registry;
}

export interface PeriodicPassOptions extends Omit<PassFailuresOptions, 'message'> {
  /** Each wait is drawn from intervalMs * [1 - jitter, 1 + jitter], so that the nodes of a fleet drift apart. Default 0. */
  readonly jitter?: number;
  /** The first pass at once (default), or after one interval. */
  readonly runAtStart?: boolean;
  /**
   * A failure the pass explains itself (logs and counts in its own terms): true when handled, and the
   * pass then goes on at its interval, without a failure line or backoff. Default: none is.
   */
  readonly handled?: (err: unknown) => boolean;
}

/**
 * The failures in a row of one piece of periodic work (a PeriodicPass, the
 * projector's following of the log): each one logged and counted in
 * chronicle_pass_failures_total{pass}, and the wait before the next try,
 * which doubles with each failure in a row (so a database that is down is not
 * hammered) and is the interval again after a success.
 */
export class PassFailures {
  private inARow = 0;
  private readonly counter: Counter<'pass'>;

  constructor(private readonly options: PassFailuresOptions) {
    this.counter = passFailures(options.registry);
    // Its series from the start, at 0: a rate over it sees the first failure.
    this.counter.inc({ pass: options.name }, 0);
  }

  succeeded(): void {
    this.inARow = 0;
  }

  /** Logs and counts `err`, with `context` in its line; the wait before the next try. */
  failed(err: unknown, context: Readonly<Record<string, unknown>> = {}): number {
    this.inARow++;
    this.counter.inc({ pass: this.options.name });
    const nextTryMs = this.waitMs();
    this.options.logger.error(this.options.message ?? `${this.options.name} pass failed`, {
      ...context,
      pass: this.options.name,
      failuresInARow: this.inARow,
      nextTryMs,
      err,
    });
    return nextTryMs;
  }

  /** The wait before the next try: the interval, or the backoff while failing. */
  waitMs(): number {
    const { intervalMs } = this.options;
    if (this.inARow === 0) return intervalMs;
    const max = Math.max(this.options.maxBackoffMs ?? Math.min(30 * intervalMs, 5 * 60_000), intervalMs);
    return Math.min(intervalMs * 2 ** this.inARow, max);
  }
}

/**
 * Work repeated at an interval until stop(): one pass at a time (the next is
 * timed from the end of the last, never overlapping), a random spread of the
 * interval, and its failures as PassFailures says: a log line, a count in
 * chronicle_pass_failures_total{pass}, and a wait that doubles with each
 * failure in a row. stop() waits for the pass under way.
 */
export class PeriodicPass {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> = Promise.resolve();
  private stopped = true;
  private readonly failures: PassFailures;

  constructor(
    private readonly options: PeriodicPassOptions,
    private readonly work: () => Promise<void>,
  ) {
    this.failures = new PassFailures(options);
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
      this.failures.succeeded();
    } catch (err) {
      if (this.options.handled?.(err) === true) return;
      this.failures.failed(err);
    }
  }

  private nextWaitMs(): number {
    const jitter = this.options.jitter ?? 0;
    return Math.round(this.failures.waitMs() * (1 + jitter * (2 * Math.random() - 1)));
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
