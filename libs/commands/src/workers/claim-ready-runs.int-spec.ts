import { DEFAULT_PRIORITY_WEIGHTS } from '@chronicle/domain';
import { PostgresEventStore } from '@chronicle/event-store';
import {
  seedRuns,
  testJob,
  createTestDatabase,
  queryPlan,
  runDecisions,
  waitFor,
  type TestDatabase,
} from '@chronicle/testing';
import { runsUnitOfWork } from '../unit-of-work/run-decisions';
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
      runDecisions(store, db.pool).unitOfWork((work) =>
        claimReadyRuns(work, caller, request(max), DEFAULT_PRIORITY_WEIGHTS),
      );
    // The first claim's unit of work stays open until the test lets it commit.
    let commitFirst!: () => void;
    const firstMayCommit = new Promise<void>((resolve) => (commitFirst = resolve));
    let firstClaimed!: (claimed: { leases: number; pid: number }) => void;
    const firstLeases = new Promise<{ leases: number; pid: number }>((resolve) => (firstClaimed = resolve));
    const first = runDecisions(store, db.pool).unitOfWork(async (work) => {
      const { leases } = await claimReadyRuns(work, caller, request(1), DEFAULT_PRIORITY_WEIGHTS);
      const { rows } = await work.tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      firstClaimed({ leases: leases.length, pid: rows[0]!.pid });
      await firstMayCommit;
    });
    let second: Promise<unknown[]> | undefined;
    try {
      const { leases, pid: firstPid } = await firstLeases;
      expect(leases).toBe(1);
      // Uncommitted, the first lease is invisible: the second claim sees room for two and locks the next run.
      let secondDone = false;
      second = claim(5)
        .then((c) => c.leases)
        .finally(() => (secondDone = true));
      const blockedByFirst = async (): Promise<boolean> =>
        (
          await db.pool.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
            [firstPid],
          )
        ).rows[0]!.n > 0;
      await waitFor(async () => secondDone || (await blockedByFirst()), {
        description: "the second claim to wait for the first's lock (or to end without waiting)",
      });
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

/** These waiting runs leased, as a claim's write-through leaves them: their rows, out of ready_runs, into run_leases. */
async function leaseRuns(db: TestDatabase, runIds: readonly string[]): Promise<void> {
  await db.pool.query(
    `WITH leased AS (
       UPDATE runs SET state = 'leased', fencing_token = 1, worker_id = 'w', leased_at = now(),
                       lease_expires_at = now() + interval '1 minute'
        WHERE run_id = ANY($1::text[])
       RETURNING run_id, job, team, queue, priority, due_at, lease_expires_at
     ), unready AS (
       DELETE FROM ready_runs WHERE run_id IN (SELECT run_id FROM leased)
     )
     INSERT INTO run_leases (run_id, job, team, queue, priority, due_at, lease_expires_at) SELECT * FROM leased`,
    [runIds],
  );
}

describe("the claim's count of leased runs per job (leased_runs_by_job, migrations/0027 and 0029)", () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  const busy = testJob({ name: 'ops.busy', concurrency: 5_000 });
  // Leased runs the claim has no use for: a job without a limit, and a limited job of another queue.
  const free = testJob({ name: 'ops.free' });
  const elsewhere = testJob({ name: 'ops.elsewhere', queue: 'other', concurrency: 10 });

  /** The pages a read of the count touches. */
  async function countPages(): Promise<number> {
    const plan = await queryPlan(
      db.pool,
      { text: 'SELECT * FROM leased_runs_by_job($1::text[])', values: [['ops']] },
      { buffers: true },
    );
    return plan['Shared Hit Blocks']! + plan['Shared Read Blocks']!;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool);
    const runs = Array.from({ length: 2_005 }, (_, n) => ({ job: busy, runId: `run_b${n}`, dueAt: new Date() }));
    const others = [free, elsewhere].flatMap((job) =>
      [1, 2, 3].map((n) => ({ job, runId: `run_${job.name}_${n}`, dueAt: new Date() })),
    );
    await seedRuns(db.pool, store, [busy, free, elsewhere], [...runs, ...others]);
    await leaseRuns(
      db,
      others.map((r) => r.runId),
    );
    // 2,000 runs leased and finished since, 5 leased now: the index of leased runs by job keeps an
    // entry for each of the 2,005 until a vacuum.
    await leaseRuns(
      db,
      runs.map((r) => r.runId),
    );
    await db.pool.query(
      `WITH finished AS (UPDATE runs SET state = 'succeeded', finished_at = now() WHERE run_id = ANY($1::text[]) RETURNING run_id)
       DELETE FROM run_leases WHERE run_id IN (SELECT run_id FROM finished)`,
      [runs.slice(5).map((r) => r.runId)],
    );
  });
  afterAll(() => db?.drop());

  it("reads the finished runs' index entries once: the next claim's count steps over them without the heap", async () => {
    const first = await countPages();
    const { rows } = await db.pool.query('SELECT job, leased::int FROM leased_runs_by_job($1::text[])', [['ops']]);
    // Only the limited job of the served queue: the others' leased runs are not the claim's to count.
    expect(rows).toEqual([{ job: 'ops.busy', leased: 5 }]);
    // A read visits the heap page of each finished run's entry, and marks the entry dead once no
    // transaction can see its row any more (at once on a quiet server; with the whole suite running,
    // a later read): the reads after it step over them. A bitmap scan, as the claim's plan had it,
    // never marks them, and reads about as many pages every time (163, then 137).
    expect(first).toBeGreaterThan(40);
    await waitFor(async () => (await countPages()) < first / 4, {
      timeoutMs: 15_000,
      pollMs: 100,
      description: "a read of the count that steps over the finished runs' entries",
    });
  });
});

describe('the count of leased runs with more limited jobs in the served queues than it probes one by one', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  // One more than leased_runs_by_job probes job by job: it counts every leased run in one pass instead.
  const schedules = Array.from({ length: 101 }, (_, n) => testJob({ name: `ops.hourly-${n}`, concurrency: 1 }));

  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool);
    const runs = schedules.map((job, n) => ({ job, runId: `run_h${n}`, dueAt: new Date() }));
    await seedRuns(db.pool, store, schedules, runs);
    await leaseRuns(
      db,
      runs.slice(0, 60).map((r) => r.runId),
    );
  });
  afterAll(() => db?.drop());

  it('gives the same counts: one per job with leased runs', async () => {
    const { rows } = await db.pool.query<{ job: string; leased: number }>(
      'SELECT job, leased::int FROM leased_runs_by_job($1::text[]) ORDER BY job',
      [['ops']],
    );
    expect(rows).toHaveLength(60);
    expect(rows.every((row) => row.leased === 1)).toBe(true);
  });
});

describe("the claim's scan of ready runs, on the generic plan the server runs it on", () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  const bulk = testJob({ name: 'ops.bulk' });
  const limited = testJob({ name: 'ops.limited', concurrency: 1 });

  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool);
    const dueAt = new Date(Date.now() - 60_000);
    await seedRuns(
      db.pool,
      store,
      [bulk, limited],
      [
        ...Array.from({ length: 2_000 }, (_, n) => ({ job: bulk, runId: `run_bulk${n}`, dueAt })),
        { job: limited, runId: 'run_limited', dueAt },
      ],
    );
    await db.pool.query('ANALYZE runs');
  });
  afterAll(() => db?.drop());

  it('reads the index range in order and stops at its limit: pages for the batch, not for every ready run', async () => {
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const uow = runsUnitOfWork({ tx: client, atomic: true, append: store.appendWith.bind(store, client) });
      // The first claim plans its statements (reading every partition's index roots); the second runs on them.
      expect((await claimReadyRuns(uow, caller, request(10), DEFAULT_PRIORITY_WEIGHTS)).leases).toHaveLength(10);
      const before = await pagesRead(client);
      const { leases } = await claimReadyRuns(uow, caller, request(10), DEFAULT_PRIORITY_WEIGHTS);
      expect(leases).toHaveLength(10);
      // A hash anti join of the ready runs with the jobs at their limit read all 2,000 and a page of
      // jobs_paused_idx for each (about 4,400 pages); in order with the limit, the claim reads a few dozen
      // and a probe of each day's partition's indexes, and its append and rows a few hundred (437 here).
      expect((await pagesRead(client)) - before).toBeLessThan(1_000);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});

/** The pages of this database's tables and indexes the current transaction has read so far. */
async function pagesRead(db: { query: TestDatabase['pool']['query'] }): Promise<number> {
  const { rows } = await db.query<{ pages: string }>(
    `SELECT sum(pg_stat_get_xact_blocks_fetched(c.oid))::text AS pages FROM pg_class c
      WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'i')`,
  );
  return Number(rows[0]!.pages);
}
