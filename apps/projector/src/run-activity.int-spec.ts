import { PostgresEventStore } from '@chronicle/event-store';
import { createLogger } from '@chronicle/platform';
import {
  PROJECTIONS,
  lagQuantileSeconds,
  listActivityMinutes,
  type ActivityMinuteRow,
  ProjectionRunner,
} from '@chronicle/projections';
import { createTestDatabase, type TestDatabase, catchUpUntil } from '@chronicle/testing';

const logger = createLogger('error');

/**
 * The run-activity read model (the dashboard's charts) built by the projector from real run events,
 * beside the runs projection whose rows it reads: counts per minute, team, queue and priority, and
 * the schedule lag of first leases.
 */
describe('run-activity projection', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool, { idleWaitMs: 20 });
    const now = Date.now();
    // billing, critical: on time-ish (1.5 s late) and succeeded; 45 s late, failed for good.
    await runHistory('r-ok', 'billing', 'billing', 'critical', now - 5_000, 1_500, [
      ['RunSucceeded', { attempt: 1, fencingToken: 1, completedAt: iso(now) }],
    ]);
    await runHistory('r-dead', 'billing', 'billing', 'critical', now - 60_000, 45_000, [
      [
        'RunFailed',
        { attempt: 1, fencingToken: 1, error: 'boom', retryable: false, failedAt: iso(now), retryAt: null },
      ],
      ['RunDead', { attempt: 1, reason: 'not_retryable', lastError: 'boom', deadAt: iso(now) }],
    ]);
    // growth, bulk: its worker vanished, the lease expired.
    await runHistory('r-lost', 'growth', 'growth', 'bulk', now - 1_000, 5, [
      ['LeaseExpired', { attempt: 1, fencingToken: 1, expiredAt: iso(now), retryAt: iso(now + 30_000) }],
    ]);
    const runner = new ProjectionRunner(store, db.pool, PROJECTIONS, logger);
    expect(await catchUpUntil(runner, 10)).toBe(10);
  });
  afterAll(() => db?.drop());

  async function runHistory(
    runId: string,
    team: string,
    queue: string,
    priority: string,
    dueAt: number,
    lagMs: number,
    ending: ReadonlyArray<readonly [string, Record<string, unknown>]>,
  ): Promise<void> {
    const metadata = { actor: `team:${team}`, schemaVersion: 1 };
    await store.appendToStream(`run-${runId}`, 'no_stream', [
      {
        type: 'RunScheduled',
        metadata,
        data: {
          runId,
          job: `${team}.job`,
          team,
          queue,
          priority,
          dueAt: iso(dueAt),
          payload: {},
          idempotencyKey: runId,
          retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
          timeoutSeconds: 60,
          source: 'api',
        },
      },
      {
        type: 'RunLeased',
        metadata: { ...metadata, actor: `worker:${team}` },
        data: {
          attempt: 1,
          fencingToken: 1,
          workerId: 'w1',
          leasedAt: iso(dueAt + lagMs),
          leaseExpiresAt: iso(dueAt + lagMs + 60_000),
        },
      },
      ...ending.map(([type, data]) => ({ type, data, metadata: { ...metadata, actor: `worker:${team}` } })),
    ]);
  }

  /** Over the minutes asked (the events may straddle a minute's end). */
  const total = (rows: readonly ActivityMinuteRow[], pick: (r: ActivityMinuteRow) => number): number =>
    rows.reduce((sum, r) => sum + pick(r), 0);
  const lagCounts = (rows: readonly ActivityMinuteRow[]): number[] =>
    rows.reduce<number[]>((sum, r) => r.lag_counts.map((n, i) => n + (sum[i] ?? 0)), []);

  it('counts a team’s leases, successes, failures and new dead runs, and measures the lag of first leases', async () => {
    const rows = await listActivityMinutes(db.pool, 'billing', undefined, 60);
    expect(new Set(rows.map((r) => r.priority))).toEqual(new Set(['critical']));
    expect({
      leased: total(rows, (r) => r.leased),
      succeeded: total(rows, (r) => r.succeeded),
      failed: total(rows, (r) => r.failed),
      leaseExpired: total(rows, (r) => r.lease_expired),
      dead: total(rows, (r) => r.dead),
    }).toEqual({ leased: 2, succeeded: 1, failed: 1, leaseExpired: 0, dead: 1 });
    const counts = lagCounts(rows);
    // 1.5 s and 45 s: the median in the 1-2.5 s bucket, the p99 in the 30-60 s one.
    expect(lagQuantileSeconds(counts, 0.5)).toBeGreaterThan(1);
    expect(lagQuantileSeconds(counts, 0.5)).toBeLessThanOrEqual(2.5);
    expect(lagQuantileSeconds(counts, 0.99)).toBeGreaterThan(30);
    expect(lagQuantileSeconds(counts, 0.99)).toBeLessThanOrEqual(60);
  });

  it('keeps teams apart, gives the admin every team, and filters by queue', async () => {
    const growth = await listActivityMinutes(db.pool, 'growth', undefined, 60);
    expect(total(growth, (r) => r.lease_expired)).toBe(1);
    expect(total(growth, (r) => r.dead)).toBe(0);
    const everyone = await listActivityMinutes(db.pool, undefined, undefined, 60);
    expect(total(everyone, (r) => r.leased)).toBe(3);
    expect(new Set(everyone.map((r) => r.priority))).toEqual(new Set(['critical', 'bulk']));
    const growthQueue = await listActivityMinutes(db.pool, undefined, 'growth', 60);
    expect(total(growthQueue, (r) => r.leased)).toBe(1);
  });

  it('answers only the minutes asked for', async () => {
    await db.pool.query(
      `INSERT INTO run_activity_minutes SELECT team, minute - interval '2 hours', queue, priority, leased, succeeded,
              failed, lease_expired, dead, lag_counts FROM run_activity_minutes`,
    );
    expect(total(await listActivityMinutes(db.pool, 'billing', undefined, 60), (r) => r.leased)).toBe(2);
    expect(total(await listActivityMinutes(db.pool, 'billing', undefined, 180), (r) => r.leased)).toBe(4);
  });
});

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
