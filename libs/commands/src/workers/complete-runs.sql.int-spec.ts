import { runStreamId } from '@chronicle/domain';
import { withTransaction } from '@chronicle/platform';
import { createTestDatabase, seedRuns, testJob, waitFor, type TestDatabase } from '@chronicle/testing';
import { lockAndLoadRuns } from './complete-runs.sql';

const job = testJob({ name: 'ops.locked' });

describe('lockAndLoadRuns (lock_and_read_runs)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await seedRuns(db.pool, db.eventStore, [job], [{ job, runId: 'run_held', dueAt: new Date(Date.now() - 1000) }]);
  });
  afterAll(() => db.drop());

  it('waits for the stream lock and then reads the row as its holder committed it, not as it was before', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // Another decision holds the run's stream lock and moves its row on.
    const holder = withTransaction(db.pool, async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(stream_lock_key($1))', [runStreamId('run_held')]);
      await tx.query("UPDATE runs SET revision = 7, attempt = 1 WHERE run_id = 'run_held'");
      await released;
    });
    await waitFor(
      async () =>
        (
          await db.pool.query(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
          )
        ).rowCount === 1,
      { description: 'the holder has the lock' },
    );
    const reading = withTransaction(db.pool, (tx) => lockAndLoadRuns(tx, ['run_held']));
    await waitFor(
      async () =>
        (
          await db.pool.query(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
          )
        ).rowCount === 1,
      { description: 'the reader waiting for the lock' },
    );
    release();
    await holder;
    const { runs } = await reading;
    expect(runs.map((run) => [run.definition.runId, run.revision, run.attempt])).toEqual([['run_held', 7, 1]]);
  });
});
