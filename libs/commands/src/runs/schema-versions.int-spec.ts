import { runStreamId } from '@chronicle/domain';
import { readRun } from './run-stream';
import { findRunSnapshot, runsProjection } from '@chronicle/projections';
import { createTestDatabase, seedRuns, testJob, type TestDatabase } from '@chronicle/testing';

const job = testJob({ name: 'ops.legacy' });

/** Events written by the first schema version of the run events, read by today's code. */
describe('run events of schema version 1', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    await seedRuns(db.pool, db.eventStore, [job], []);
    // As version 1 wrote it: no jobVersion, schemaVersion 1 in the metadata; no row (the projector builds it).
    await db.eventStore.appendToStream(runStreamId('run_legacy'), 'no_stream', [
      {
        type: 'RunScheduled',
        data: {
          runId: 'run_legacy',
          job: job.name,
          team: 'ops',
          queue: job.queue,
          priority: job.priority,
          dueAt: new Date(Date.now() - 60_000).toISOString(),
          payload: null,
          idempotencyKey: 'run_legacy',
          retry: job.retry,
          timeoutSeconds: job.timeoutSeconds,
          source: 'api',
        },
        metadata: { actor: 'team:ops', schemaVersion: 1 },
      },
    ]);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('folds them in the shape of today, in commands and in the runs projection', async () => {
    const { recorded, state } = await readRun(db.eventStore, 'run_legacy');
    expect(recorded[0]!.data).not.toHaveProperty('jobVersion'); // the log is never rewritten
    expect(state).toMatchObject({ status: 'scheduled', definition: { runId: 'run_legacy', jobVersion: null } });

    // What the projector does with it.
    await runsProjection.apply(db.pool, recorded);
    const row = await findRunSnapshot(db.pool, 'run_legacy');
    expect(row).toMatchObject({ status: 'scheduled', definition: { jobVersion: null } });
  });
});
