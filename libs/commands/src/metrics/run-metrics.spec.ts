import { Registry } from 'prom-client';
import { ABSENT, evolve, type PresentRun, type RunEvent } from '@chronicle/domain';
import { RunMetrics } from './run-metrics';

const DUE = '2026-03-01T02:00:00.000Z';

function scheduled(priority: 'critical' | 'bulk'): PresentRun {
  return evolve(ABSENT, {
    type: 'RunScheduled',
    data: {
      runId: 'r1',
      job: 'billing.report',
      team: 'billing',
      queue: 'billing',
      priority,
      dueAt: DUE,
      payload: null,
      idempotencyKey: 'k',
      retry: { maxAttempts: 2, baseSeconds: 0, maxSeconds: 0 },
      timeoutSeconds: 60,
      source: 'api',
      jobVersion: 1,
    },
  }) as PresentRun;
}

const leased = (attempt: number, leasedAt: string): RunEvent => ({
  type: 'RunLeased',
  data: { attempt, fencingToken: attempt, workerId: 'w', leasedAt, leaseExpiresAt: leasedAt },
});

describe('RunMetrics: the run counters, from the events a decision appended', () => {
  let registry: Registry;
  let metrics: RunMetrics;
  beforeEach(() => {
    registry = new Registry();
    metrics = new RunMetrics(registry);
  });
  /** One series' value, as GET /metrics shows it (a histogram's by its `_bucket`, `_sum` or `_count` sample). */
  const value = async (sample: string, labels: Record<string, string>): Promise<number | undefined> => {
    const family = sample.replace(/_(bucket|sum|count)$/, '');
    const { values } = await registry.getSingleMetric(family)!.get();
    return (values as Array<(typeof values)[number] & { metricName?: string }>).find(
      (v) => (v.metricName ?? family) === sample && Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l),
    )?.value;
  };

  it("counts leases per queue and priority, and first leases' lag in the priority's histogram", async () => {
    metrics.countDecisions([
      { after: scheduled('critical'), events: [leased(1, '2026-03-01T02:00:03.000Z')] },
      { after: scheduled('critical'), events: [leased(2, '2026-03-01T02:30:00.000Z')] },
    ]);
    expect(await value('chronicle_runs_leased_total', { queue: 'billing', priority: 'critical' })).toBe(2);
    // The retry's lease (attempt 2) is not lag: one observation, of 3 s.
    expect(await value('chronicle_schedule_lag_seconds_bucket', { priority: 'critical', le: '+Inf' })).toBe(1);
    expect(await value('chronicle_schedule_lag_seconds_bucket', { priority: 'critical', le: '2.5' })).toBe(0);
    expect(await value('chronicle_schedule_lag_seconds_bucket', { priority: 'critical', le: '5' })).toBe(1);
  });

  it('counts a lease taken before the due time (a clock step) as no lag', async () => {
    metrics.countDecisions([{ after: scheduled('bulk'), events: [leased(1, '2026-03-01T01:59:58.000Z')] }]);
    expect(await value('chronicle_schedule_lag_seconds_bucket', { priority: 'bulk', le: '0.01' })).toBe(1);
    expect(await value('chronicle_schedule_lag_seconds_sum', { priority: 'bulk' })).toBe(0);
  });

  it('counts a last failure as failed and dead, and an expired last lease as an expiry and dead', async () => {
    const at = '2026-03-01T02:01:00.000Z';
    metrics.countDecisions([
      {
        after: scheduled('critical'),
        events: [{ type: 'RunSucceeded', data: { attempt: 1, fencingToken: 1, completedAt: at } }],
      },
      {
        after: scheduled('critical'),
        events: [
          {
            type: 'RunFailed',
            data: { attempt: 2, fencingToken: 3, error: 'boom', retryable: true, failedAt: at, retryAt: null },
          },
          { type: 'RunDead', data: { attempt: 2, reason: 'attempts_exhausted', lastError: 'boom', deadAt: at } },
        ],
      },
      {
        after: scheduled('bulk'),
        events: [
          { type: 'LeaseExpired', data: { attempt: 2, fencingToken: 3, expiredAt: at, retryAt: null } },
          { type: 'RunDead', data: { attempt: 2, reason: 'lease_expired', lastError: null, deadAt: at } },
        ],
      },
    ]);
    const critical = { queue: 'billing', priority: 'critical' };
    expect(await value('chronicle_runs_succeeded_total', critical)).toBe(1);
    expect(await value('chronicle_runs_failed_total', critical)).toBe(1);
    expect(await value('chronicle_dead_runs_total', critical)).toBe(1);
    expect(await value('chronicle_dead_runs_total', { queue: 'billing', priority: 'bulk' })).toBe(1);
    expect(await value('chronicle_lease_expiries_total', { queue: 'billing' })).toBe(1);
  });
});
