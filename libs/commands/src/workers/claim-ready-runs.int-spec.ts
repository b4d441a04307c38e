import { DEFAULT_PRIORITY_WEIGHTS } from '@chronicle/domain';
import { PostgresEventStore } from '@chronicle/event-store';
import { withTransaction } from '@chronicle/platform';
import { seedRuns, testJob, createTestDatabase, type TestDatabase } from '@chronicle/testing';
import { claimReadyRuns } from './claim-ready-runs';

const job = testJob({ name: 'ops.one-at-a-time', concurrency: 2 });
const caller = { kind: 'worker', team: 'ops', queues: ['ops'] } as const;
const request = (max: number) => ({ queues: ['ops'], max, leaseSeconds: 30, workerId: 'w' });

describe('claims of a job with a concurrency limit', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool);
    await seedRuns(
      db.pool,
      store,
      [job],
      [1, 2, 3].map((n) => ({ job, runId: `run_${n}`, dueAt: new Date(Date.now() - 60_000 + n) })),
    );
  });
  afterAll(() => db?.drop());

  it('counts the headroom under the job lock: a second claim waits for the first to commit, then takes what is left', async () => {
    const first = await db.pool.connect();
    let second: Promise<unknown[]> | undefined;
    try {
      await first.query('BEGIN');
      expect(
        await claimReadyRuns(first, store, caller, request(1), DEFAULT_PRIORITY_WEIGHTS).then((c) => c.leases),
      ).toHaveLength(1);
      // Uncommitted, the first lease is invisible: the second claim sees room for two and locks the next run.
      let secondDone = false;
      second = withTransaction(db.pool, (tx) => claimReadyRuns(tx, store, caller, request(5), DEFAULT_PRIORITY_WEIGHTS))
        .then((c) => c.leases)
        .finally(() => (secondDone = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(secondDone).toBe(false);
      await first.query('COMMIT');
      expect(await second).toHaveLength(1);
    } finally {
      first.release();
      await second?.catch(() => undefined);
    }
    const { rows } = await db.pool.query("SELECT count(*)::int AS n FROM events WHERE event_type = 'RunLeased'");
    expect(rows[0].n).toBe(2);
    // At the limit: nothing more until a run finishes.
    expect(
      (await withTransaction(db.pool, (tx) => claimReadyRuns(tx, store, caller, request(5), DEFAULT_PRIORITY_WEIGHTS)))
        .leases,
    ).toEqual([]);
  });
});
