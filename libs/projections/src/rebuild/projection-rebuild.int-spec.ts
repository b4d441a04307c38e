import { PostgresEventStore } from '@chronicle/event-store';
import { createLogger } from '@chronicle/platform';
import { loadCheckpoint } from '../checkpoints/projection-checkpoints.sql';
import { jobsProjection } from '../jobs/jobs.projection';
import { PROJECTIONS } from '../projections';
import { runsProjection } from '../runs/runs.projection';
import {
  CompleteRuns,
  LeaseRuns,
  createTestDatabase,
  seedRuns,
  successesOf,
  testJob,
  waitFor,
  workerHandlers,
  type TestDatabase,
} from '@chronicle/testing';
import { ProjectionRunner } from '../projection-runner';
import { rebuildProjection, verifyProjections } from './projection-rebuild';

const logger = createLogger('error');
const job = testJob({ name: 'ops.rebuilt' });
const worker = { kind: 'worker', team: 'ops', queues: ['ops'] } as const;
const RUNS = 600;

describe('projections rebuilt and verified beside the live ones', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  const stopProjector = new AbortController();
  let projector: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool, { idleWaitMs: 20 });
    // The projector first: on an empty database it starts every projection afresh (emptying its tables).
    projector = new ProjectionRunner(store, db.pool, PROJECTIONS, logger, { retryDelayMs: 50 }).run(
      stopProjector.signal,
    );
    await waitFor(
      async () => (await db.pool.query('SELECT 1 FROM projection_checkpoints')).rowCount === PROJECTIONS.length,
      { timeoutMs: 10_000, description: 'the projector started' },
    );
    const due = new Date(Date.now() - 60_000);
    await seedRuns(
      db.pool,
      store,
      [job],
      Array.from({ length: RUNS }, (_, n) => ({ job, runId: `run_${String(n).padStart(4, '0')}`, dueAt: due })),
    );
  });
  afterAll(async () => {
    stopProjector.abort();
    await projector;
    await db?.drop();
  });

  const handlers = () => workerHandlers(store, db.pool);
  const indexesOfRuns = async (): Promise<string[]> =>
    (
      await db.pool.query<{ name: string }>(
        "SELECT indexname AS name FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'runs' ORDER BY 1",
      )
    ).rows.map((r) => r.name);
  /** The partitions of the live runs (migrations/0018), by name: a swap brings the rebuilt ones in. */
  const partitionsOfRuns = async (): Promise<string[]> =>
    (
      await db.pool.query<{ name: string }>(
        `SELECT n.nspname || '.' || c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE i.inhparent = 'public.runs'::regclass ORDER BY 1`,
      )
    ).rows.map((r) => r.name);
  /** Leases and completes runs, 20 at a time, until none is left or `stop` says so; every lease counted. */
  async function work(stop: () => boolean, leased: Map<string, number>): Promise<void> {
    const { lease, complete } = handlers();
    while (!stop()) {
      const leases = await lease.execute(
        new LeaseRuns(worker, { queues: ['ops'], max: 20, leaseSeconds: 60, workerId: 'w', waitSeconds: 0 }),
      );
      if (leases.length === 0) return;
      for (const l of leases) leased.set(l.runId, (leased.get(l.runId) ?? 0) + 1);
      const { results } = await complete.execute(new CompleteRuns(worker, successesOf(leases)));
      const refused = results.filter((r) => !('state' in r));
      if (refused.length > 0) throw new Error(`completions refused: ${JSON.stringify(refused)}`);
    }
  }

  it('rebuilds the runs while workers lease and complete: no claim fails, no run leased twice, the same rows after', async () => {
    const leased = new Map<string, number>();
    // Half the runs done before, the rest while the rebuild reads and swaps.
    await work(() => leased.size >= RUNS / 2, leased);
    let rebuilt = false;
    const workers = Promise.all([1, 2].map(() => work(() => rebuilt && leased.size >= RUNS, leased)));
    const indexesBefore = await indexesOfRuns();
    const partitionsBefore = await partitionsOfRuns();
    expect(partitionsBefore).toContain('public.runs_kept');
    expect(indexesBefore).toContain('runs_dlq_idx');
    const before = leased.size;
    const report = await rebuildProjection(store, db.pool, runsProjection, { batchSize: 100, lockTimeoutMs: 500 });
    const whileRebuilding = leased.size - before;
    rebuilt = true;
    await workers;
    await work(() => false, leased);

    expect(whileRebuilding).toBeGreaterThan(0);
    expect(report.events).toBeGreaterThanOrEqual(RUNS * 2);
    expect(leased.size).toBe(RUNS);
    expect([...leased.values()].filter((n) => n > 1)).toEqual([]);
    const { rows } = await db.pool.query<{ state: string; n: number }>(
      'SELECT state, count(*)::int AS n FROM runs GROUP BY state',
    );
    expect(rows).toEqual([{ state: 'succeeded', n: RUNS }]);
    // The live table is the rebuilt one, with the live one's indexes and settings; nothing left behind.
    const { rows: tables } = await db.pool.query<{ schema: string }>(
      "SELECT table_schema AS schema FROM information_schema.tables WHERE table_name = 'runs'",
    );
    expect(tables).toEqual([{ schema: 'public' }]);
    expect(await indexesOfRuns()).toEqual(indexesBefore);
    expect(await partitionsOfRuns()).toEqual(partitionsBefore);
    const { rows: options } = await db.pool.query<{ options: string[] }>(
      // Today's runs' partition: a partitioned table has no storage settings of its own (migrations/0018, 0025).
      "SELECT reloptions AS options FROM pg_class WHERE oid = ('public.runs_d' || to_char((now() AT TIME ZONE 'UTC')::date, 'YYYYMMDD'))::regclass",
    );
    expect(options[0]!.options).toContain('autovacuum_vacuum_threshold=2000');
    expect((await loadCheckpoint(db.pool, 'runs'))?.version).toBe(runsProjection.version);

    const verified = await verifyProjections(store, db.pool, PROJECTIONS, { batchSize: 200 });
    expect(verified.differences).toEqual([]);
    expect(verified.events).toBe(report.events + (await store.readAll({ from: report.position })).length);
  });

  it("leaves the scheduler's schedule cursors alone, which the jobs projection writes beside its own table", async () => {
    const cursor = (): Promise<unknown[]> =>
      db.pool
        .query("SELECT materialised_through, next_fire_at, updated_at FROM schedule_cursors WHERE job = 'ops.rebuilt'")
        .then((r) => r.rows);
    await db.pool.query(
      `UPDATE schedule_cursors SET materialised_through = '2026-01-01T00:00:00Z', next_fire_at = '2026-01-01T01:00:00Z',
              updated_at = '2026-01-01T00:00:00Z' WHERE job = 'ops.rebuilt'`,
    );
    const before = await cursor();
    expect(before).toHaveLength(1);
    await rebuildProjection(store, db.pool, jobsProjection, { batchSize: 100 });
    expect((await verifyProjections(store, db.pool, PROJECTIONS)).differences).toEqual([]);
    expect(await cursor()).toEqual(before);
  });

  it('finds a row that differs from what the log says, and a row the log does not have', async () => {
    await db.pool.query("UPDATE runs SET attempt = attempt + 5 WHERE run_id = 'run_0007'");
    await db.pool.query("UPDATE jobs SET paused = true WHERE name = 'ops.rebuilt'");
    await db.pool.query(
      "INSERT INTO stream_activity (stream_id, category, revision, last_event_type, last_recorded_at) VALUES ('ghost-1', 'ghost', 0, 'Nothing', now())",
    );
    const { differences } = await verifyProjections(store, db.pool, PROJECTIONS, { rounds: 2 });
    expect(differences.map((d) => [d.table, d.kind, JSON.parse(d.key)]).sort()).toEqual(
      [
        ['jobs', 'different', { name: 'ops.rebuilt' }],
        ['runs', 'different', { run_id: 'run_0007' }],
        ['stream_activity', 'unexpected', { stream_id: 'ghost-1' }],
      ].sort(),
    );
  });
});
