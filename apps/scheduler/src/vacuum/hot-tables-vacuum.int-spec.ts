import { createTestDatabase, seedRuns, testJob, waitFor, type TestDatabase } from '@chronicle/testing';
import { HotTablesVacuum } from './hot-tables-vacuum';

const job = testJob({ name: 'ops.churn' });
const deadRuns = async (db: TestDatabase): Promise<number> =>
  Number(
    (
      await db.pool.query<{ dead: string }>(
        "SELECT n_dead_tup AS dead FROM pg_stat_user_tables WHERE relname = 'runs_live'",
      )
    ).rows[0]!.dead,
  );

describe('the hot tables vacuum', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    const runs = Array.from({ length: 200 }, (_, i) => ({ job, runId: `run_${i}`, dueAt: new Date() }));
    await seedRuns(db.pool, db.eventStore, [job], runs);
  });
  afterAll(() => db.drop());

  it('vacuums the live runs once their dead row versions pass the threshold, and leaves it alone below', async () => {
    const vacuum = new HotTablesVacuum(db.pool, { info: () => undefined }, { deadRows: 1_000, deadShare: 0.05 });
    expect(await vacuum.vacuumOnce()).toEqual([]);
    // Churn: every update leaves a dead version of each row (as every transition does).
    const client = await db.pool.connect();
    try {
      for (let i = 0; i < 10; i++) await client.query('UPDATE runs SET attempt = attempt + 1');
      await client.query('SELECT pg_stat_force_next_flush()');
    } finally {
      client.release();
    }
    await waitFor(async () => (await deadRuns(db)) >= 1_500, { description: 'the dead rows counted' });

    expect(await vacuum.vacuumOnce()).toEqual(['runs_live']);
    expect(await deadRuns(db)).toBe(0);
    expect(await vacuum.vacuumOnce()).toEqual([]);
  });
});
