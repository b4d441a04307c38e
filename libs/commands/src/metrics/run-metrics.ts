import { Module } from '@nestjs/common';
import { Counter, Histogram, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@chronicle/platform';
import { LAG_BUCKET_BOUNDS_MS, scheduleLagMs } from '@chronicle/projections';
import type { RunDecision } from '../unit-of-work/run-batch';

const QUEUE_PRIORITY = ['queue', 'priority'] as const;

/**
 * The counters of run decisions, counted where they are decided (claims, completions, the lease
 * reaper) once their unit of work committed: each process counts its own, Prometheus sums them. With
 * a log of its own, a unit of work whose appends committed but whose rows then failed is not counted
 * (its caller got an error; the projector still applies the events): rare, and on the low side.
 */
export class RunMetrics {
  private readonly leased: Counter<'queue' | 'priority'>;
  private readonly succeeded: Counter<'queue' | 'priority'>;
  private readonly failed: Counter<'queue' | 'priority'>;
  private readonly leaseExpiries: Counter<'queue'>;
  private readonly dead: Counter<'queue' | 'priority'>;
  private readonly scheduleLag: Histogram<'priority'>;
  private readonly claimDuration: Histogram;

  constructor(registry: Registry) {
    const registers = [registry];
    this.leased = new Counter({
      name: 'chronicle_runs_leased_total',
      help: 'Leases of runs to workers (every attempt)',
      labelNames: QUEUE_PRIORITY,
      registers,
    });
    this.succeeded = new Counter({
      name: 'chronicle_runs_succeeded_total',
      help: 'Attempts that workers completed with success',
      labelNames: QUEUE_PRIORITY,
      registers,
    });
    this.failed = new Counter({
      name: 'chronicle_runs_failed_total',
      help: 'Attempts that workers completed with failure (retried or dead)',
      labelNames: QUEUE_PRIORITY,
      registers,
    });
    this.leaseExpiries = new Counter({
      name: 'chronicle_lease_expiries_total',
      help: 'Leases the reaper found expired (the worker neither completed nor heartbeat in time)',
      labelNames: ['queue'],
      registers,
    });
    this.dead = new Counter({
      name: 'chronicle_dead_runs_total',
      help: 'Runs that went dead (attempts exhausted, not retryable, or a last lease expired)',
      labelNames: QUEUE_PRIORITY,
      registers,
    });
    this.scheduleLag = new Histogram({
      name: 'chronicle_schedule_lag_seconds',
      help: "A run's first lease time minus its due time",
      labelNames: ['priority'],
      // The dashboard's buckets (run_activity), so both read the same quantiles.
      buckets: LAG_BUCKET_BOUNDS_MS.map((ms) => ms / 1000),
      registers,
    });
    this.claimDuration = new Histogram({
      name: 'chronicle_claim_duration_seconds',
      help: 'One claim of ready runs for a lease call: its transaction, from lock to commit',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
  }

  /** A committed unit of work's decisions, counted by the events each appended. */
  countDecisions(decisions: Iterable<Pick<RunDecision, 'after' | 'events'>>): void {
    for (const { after, events } of decisions) {
      const { queue, priority, dueAt } = after.definition;
      for (const event of events)
        switch (event.type) {
          case 'RunLeased': {
            this.leased.inc({ queue, priority });
            const lagMs = scheduleLagMs(event.data, new Date(dueAt));
            if (lagMs !== null) this.scheduleLag.observe({ priority }, lagMs / 1000);
            break;
          }
          case 'RunSucceeded':
            this.succeeded.inc({ queue, priority });
            break;
          case 'RunFailed':
            this.failed.inc({ queue, priority });
            break;
          case 'LeaseExpired':
            this.leaseExpiries.inc({ queue });
            break;
          case 'RunDead':
            this.dead.inc({ queue, priority });
            break;
          case 'RunScheduled':
          case 'LeaseExtended':
          case 'RunCancelled':
          case 'RunReplayed':
          case 'RunDiscarded':
          case 'RunDebounced':
            break;
          default: {
            const never: never = event;
            throw new Error(`unknown run event ${(never as { type: string }).type}`);
          }
        }
    }
  }

  /** Starts timing one claim; call the answer when it committed (or failed). */
  timeClaim(): () => void {
    const end = this.claimDuration.startTimer();
    return () => void end();
  }
}

/** The process's one RunMetrics: the API's handlers and the scheduler's reaper share it under npm start. */
@Module({
  providers: [{ provide: RunMetrics, inject: [METRICS_REGISTRY], useFactory: (r: Registry) => new RunMetrics(r) }],
  exports: [RunMetrics],
})
export class RunMetricsModule {}
