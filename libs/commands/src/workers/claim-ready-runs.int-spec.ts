import { DEFAULT_PRIORITY_WEIGHTS } from '@chronicle/domain';
import { PostgresEventStore } from '@chronicle/event-store';
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
    const claim = (max: number) =>
      store.unitOfWork(db.pool, (uow) => claimReadyRuns(uow, caller, request(max), DEFAULT_PRIORITY_WEIGHTS));
    // The first claim's unit of work stays open until the test lets it commit.
    let commitFirst!: () => void;
    const firstMayCommit = new Promise<void>((resolve) => (commitFirst = resolve));
    let firstClaimed!: (leases: number) => void;
    const firstLeases = new Promise<number>((resolve) => (firstClaimed = resolve));
    const first = store.unitOfWork(db.pool, async (uow) => {
      const { leases } = await claimReadyRuns(uow, caller, request(1), DEFAULT_PRIORITY_WEIGHTS);
      firstClaimed(leases.length);
      await firstMayCommit;
    });
    let second: Promise<unknown[]> | undefined;
    try {
      expect(await firstLeases).toBe(1);
      // Uncommitted, the first lease is invisible: the second claim sees room for two and locks the next run.
      let secondDone = false;
      second = claim(5)
        .then((c) => c.leases)
        .finally(() => (secondDone = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(secondDone).toBe(false);
      commitFirst();
      await first;
      expect(await second).toHaveLength(1);
    } finally {
      commitFirst();
      await first.catch(() => undefined);
      await second?.catch(() => undefined);
    }
    const { rows } = await db.pool.query("SELECT count(*)::int AS n FROM events WHERE event_type = 'RunLeased'");
    expect(rows[0].n).toBe(2);
    // At the limit: nothing more until a run finishes.
    expect((await claim(5)).leases).toEqual([]);
  });
});
