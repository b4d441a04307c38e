import { runStreamId, type WorkerCaller } from '@chronicle/domain';
import { PostgresEventStore } from '@chronicle/event-store';
import { withTransaction } from '@chronicle/platform';
import { runsProjection } from '@chronicle/projections';
import { createTestDatabase, seedRuns, testJob, workerHandlers, waitFor, type TestDatabase } from '@chronicle/testing';
import { LeaseRuns } from '../workers/lease-runs.command';
import { RunReservations } from './run-reservations';

const job = testJob({ name: 'ops.reserved' });
const caller: WorkerCaller = { kind: 'worker', team: 'ops', queues: ['ops'] };

/**
 * With the log in a database of its own, a claim's RunLeased commits in the
 * log before the row is written. When the read models then refuse the row,
 * the row still shows the run ready until the projector applies the event:
 * the process keeps that run out of its claims meanwhile, instead of
 * proposing it for the append to refuse on every claim.
 */
describe('runs reserved while their rows lag the log (a log of its own)', () => {
  let log: TestDatabase;
  let readModels: TestDatabase;
  let store: PostgresEventStore;
  const warnings: Array<Record<string, unknown>> = [];
  const logger = { warn: (_message: unknown, fields?: unknown) => warnings.push(fields as Record<string, unknown>) };
  const eventTypes = async (runId: string): Promise<string[]> =>
    (await store.readStream(runStreamId(runId))).map((e) => e.type);
  const row = async (
    runId: string,
  ): Promise<{ state: string; revision: string; fencingToken: number; expiresAt: Date }> =>
    (
      await readModels.pool.query(
        `SELECT state, revision, fencing_token::int AS "fencingToken", lease_expires_at AS "expiresAt" FROM runs WHERE run_id = $1`,
        [runId],
      )
    ).rows[0];

  beforeAll(async () => {
    [log, readModels] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    store = new PostgresEventStore(log.pool);
    await seedRuns(
      readModels.pool,
      store,
      [job],
      [
        { job, runId: 'run_reserved', dueAt: new Date(Date.now() - 2000) },
        { job, runId: 'run_other', dueAt: new Date(Date.now() - 1000) },
        { job, runId: 'run_stuck', dueAt: new Date(Date.now() + 3_600_000) },
      ],
    );
  });
  afterAll(async () => {
    await Promise.all([log?.drop(), readModels?.drop()]);
  });
  beforeEach(() => warnings.splice(0));

  it('leaves a run whose lease is in the log but not in its row out of claims until the projector applied it', async () => {
    const reservations = new RunReservations(logger);
    const leases = workerHandlers(store, readModels.pool, reservations).lease;
    const lease = async (): Promise<string[]> =>
      (
        await leases.execute(
          new LeaseRuns(caller, { queues: ['ops'], max: 1, leaseSeconds: 30, workerId: 'w', waitSeconds: 0 }),
        )
      ).map((l) => l.runId);
    // The read models refuse the lease's row: the write-through fails after the append committed.
    await readModels.pool.query(`
      CREATE FUNCTION refuse_row() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'read models refuse the row of %', NEW.run_id; END $$;
      CREATE TRIGGER refuse_row BEFORE UPDATE ON runs FOR EACH ROW
        WHEN (NEW.run_id = 'run_reserved') EXECUTE FUNCTION refuse_row();`);
    await expect(lease()).rejects.toThrow('read models refuse the row of run_reserved');
    expect(await eventTypes('run_reserved')).toEqual(['RunScheduled', 'RunLeased']);
    expect(await row('run_reserved')).toMatchObject({ state: 'scheduled', revision: '0' });
    await readModels.pool.query('DROP TRIGGER refuse_row ON runs');

    // Its row still shows the oldest ready run, but the claim takes the next one; then there is none.
    expect(await lease()).toEqual(['run_other']);
    expect(await lease()).toEqual([]);
    expect(await eventTypes('run_reserved')).toEqual(['RunScheduled', 'RunLeased']);

    // The projector applies the log (what its runner does with each batch, in one transaction).
    const recorded = await store.readStream(runStreamId('run_reserved'));
    await withTransaction(readModels.pool, (tx) => runsProjection.apply(tx, recorded));
    const leased = recorded[1]!.data as { fencingToken: number; workerId: string; leaseExpiresAt: string };
    expect(await row('run_reserved')).toEqual({
      state: 'leased',
      revision: '1',
      fencingToken: leased.fencingToken,
      expiresAt: new Date(leased.leaseExpiresAt),
    });
    await waitFor(async () => (await reservations.reservedRunIds(readModels.pool)).length === 0, {
      timeoutMs: 5000,
      description: 'the reservation released once the row shows the revision appended',
    });
    expect(await lease()).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('releases a reservation whose row never catches up after its maximum age, and says so', async () => {
    const reservations = new RunReservations(logger, { maxAgeMs: 300, checkEveryMs: 0, maxReserved: 10 });
    // Appended, then the read models' transaction fails; no projector runs here.
    const failed = reservations.unitOfWork(store, readModels.pool, async (uow) => {
      await uow.append([
        {
          streamId: runStreamId('run_stuck'),
          expected: 0n,
          events: [{ type: 'RunCancelled', data: { cancelledAt: new Date().toISOString() } }],
        },
      ]);
      throw new Error('read models lost');
    });
    await expect(failed).rejects.toThrow('read models lost');
    expect(await reservations.reservedRunIds(readModels.pool)).toEqual(['run_stuck']);
    await waitFor(async () => (await reservations.reservedRunIds(readModels.pool)).length === 0, {
      timeoutMs: 5000,
      description: 'the reservation released at its maximum age',
    });
    expect(warnings).toEqual([expect.objectContaining({ runId: 'run_stuck', revision: 1 })]);
  });
});
