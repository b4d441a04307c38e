import { DEFAULT_PRIORITY_WEIGHTS, runStreamId, type WorkerCaller } from '@chronicle/domain';
import { PostgresEventStore } from '@chronicle/event-store';
import {
  createTestDatabase,
  runDecisions,
  seedRuns,
  testJob,
  workerHandlers,
  type TestDatabase,
} from '@chronicle/testing';
import { claimReadyRuns } from './claim-ready-runs';
import { CompleteRuns } from './complete-runs.command';

const job = testJob({ name: 'ops.split' });
const caller: WorkerCaller = { kind: 'worker', team: 'ops', queues: ['ops'] };

/**
 * With the log in a database of its own, a row can lag its stream (a crash
 * between the two commits, until the projector applies the event). The
 * append decides: a worker's decision from such a row is refused as a
 * conflict, writes nothing, and is not mistaken for an unknown run.
 */
describe('worker decisions with a log of its own', () => {
  let log: TestDatabase;
  let readModels: TestDatabase;
  let store: PostgresEventStore;

  beforeAll(async () => {
    [log, readModels] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    store = new PostgresEventStore(log.pool);
    await seedRuns(readModels.pool, store, [job], [{ job, runId: 'run_lagging', dueAt: new Date(Date.now() - 1000) }]);
  });
  afterAll(async () => {
    await Promise.all([log?.drop(), readModels?.drop()]);
  });

  it('refuses a completion decided from a row behind its stream as a conflict, and writes nothing', async () => {
    const { leases } = await runDecisions(store, readModels.pool).unitOfWork((work) =>
      claimReadyRuns(
        work,
        caller,
        { queues: ['ops'], max: 1, leaseSeconds: 30, workerId: 'w' },
        DEFAULT_PRIORITY_WEIGHTS,
      ),
    );
    expect(leases.map((l) => l.runId)).toEqual(['run_lagging']);
    // The log moves on without the row: a heartbeat whose write-through was lost.
    await store.appendToStream(runStreamId('run_lagging'), 1n, [
      { type: 'LeaseExtended', data: { leaseExpiresAt: new Date(Date.now() + 60_000).toISOString() } },
    ]);

    const completions = workerHandlers(store, readModels.pool).complete;
    const {
      results: [result],
    } = await completions.execute(
      new CompleteRuns(caller, [
        {
          runId: 'run_lagging',
          fencingToken: leases[0]!.fencingToken,
          outcome: 'success',
          error: null,
          retryable: true,
        },
      ]),
    );
    expect(result).toMatchObject({ runId: 'run_lagging', refused: { code: 'conflict' } });
    expect((await store.readStream(runStreamId('run_lagging'))).map((e) => e.type)).toEqual([
      'RunScheduled',
      'RunLeased',
      'LeaseExtended',
    ]);
    const { rows } = await readModels.pool.query('SELECT state, revision FROM runs WHERE run_id = $1', ['run_lagging']);
    expect(rows).toEqual([{ state: 'leased', revision: '1' }]);
  });
});
