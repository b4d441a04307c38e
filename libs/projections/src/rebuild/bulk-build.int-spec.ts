import { PostgresEventStore, START, type RecordedEvent, type StreamAppend } from '@chronicle/event-store';
import { createLogger } from '@chronicle/platform';
import { RUN_EVENT_SCHEMA_VERSION, type RunEvent } from '@chronicle/domain';
import { PROJECTIONS } from '../projections';
import { runsProjection } from '../runs/runs.projection';
import { catchUpUntil, createTestDatabase, testJob, seedRuns, waitFor, type TestDatabase } from '@chronicle/testing';
import { ProjectionRunner } from '../projection-runner';
import { verifyProjections } from './projection-rebuild';
import { createShadowTables, diffTable, dropSchema } from './shadow-tables.sql';
import { shadowIo } from './shadow-io';

const logger = createLogger('error');
const job = testJob({ name: 'ops.bulk' });
const RUNS = 40;

/** Run n's life after its RunScheduled: two attempts (the first fails, for even n) or one, all at fixed times. */
function lifeOf(n: number): RunEvent[] {
  const at = (s: number): string => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
  const lease = (attempt: number, fencingToken: number): RunEvent => ({
    type: 'RunLeased',
    data: { attempt, fencingToken, workerId: `w${n % 3}`, leasedAt: at(attempt), leaseExpiresAt: at(attempt + 30) },
  });
  if (n % 2 === 1)
    return [lease(1, 1), { type: 'RunSucceeded', data: { attempt: 1, fencingToken: 1, completedAt: at(2) } }];
  return [
    lease(1, 1),
    {
      type: 'RunFailed',
      data: {
        attempt: 1,
        fencingToken: 1,
        error: 'tab\there, "quoted"\\ and\nnewline',
        retryable: true,
        failedAt: at(3),
        retryAt: at(9),
      },
    },
    lease(2, 3),
    ...(n % 4 === 0 ? [{ type: 'LeaseExtended', data: { fencingToken: 3, leaseExpiresAt: at(90) } } as RunEvent] : []),
  ];
}

describe('bulk builds of projections (rebuild and verify fill their shadows through them)', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool);
    const runIds = Array.from({ length: RUNS }, (_, n) => `run_bulk_${n}`);
    await seedRuns(
      db.pool,
      store,
      [job],
      runIds.map((runId) => ({ job, runId, dueAt: new Date(Date.UTC(2026, 0, 1)) })),
    );
    // One transaction per step of every run's life: the runs' events interleave in the log.
    for (let step = 0; ; step++) {
      const appends: StreamAppend[] = runIds.flatMap((runId, n) => {
        const event = lifeOf(n)[step];
        if (event === undefined) return [];
        const metadata = { actor: 'worker:ops', schemaVersion: RUN_EVENT_SCHEMA_VERSION };
        return [{ streamId: `run-${runId}`, expected: BigInt(step), events: [{ ...event, metadata }] }];
      });
      if (appends.length === 0) break;
      await store.appendToStreams(appends);
    }
    // The live tables: the rows the seed wrote through, and the rest from the projector, a few events at a
    // time (starting anew, it folds over the written-through rows by revision and does not empty them).
    // The whole log: a read stops before any transaction still open in the cluster (other test files').
    await db.pool.query('DELETE FROM projection_checkpoints');
    const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM events');
    logSize = rows[0]!.n;
    await catchUpUntil(new ProjectionRunner(store, db.pool, PROJECTIONS, logger, { batchSize: 7 }), logSize);
  });
  let logSize = 0;
  /** Every event of the log, once it can all be read. */
  const wholeLog = async (): Promise<readonly RecordedEvent[]> => {
    let events: readonly RecordedEvent[] = [];
    await waitFor(async () => (events = await store.readAll({ from: START, maxCount: 10_000 })).length === logSize, {
      description: 'the whole log to be readable',
    });
    return events;
  };
  afterAll(async () => {
    await db?.drop();
  });

  it("writes the runs' rows the projector writes, also when it writes runs still going and reads them back", async () => {
    const events = await wholeLog();
    const build = runsProjection.bulkBuild!();
    const schema = 'bulk_runs';
    const io = shadowIo(db.pool, schema);
    await createShadowTables(db.pool, schema, runsProjection.tables);
    try {
      // A flush after every batch of 9: each run written while going, read back, written again.
      for (let i = 0; i < events.length; i += 9) {
        const batch = events
          .slice(i, i + 9)
          .filter((e) => runsProjection.eventTypes !== 'all' && runsProjection.eventTypes.has(e.type));
        await build.add(io, batch);
        await build.flush(io);
      }
      await io.drained();
      for (const table of runsProjection.tables) expect(await diffTable(db.pool, schema, table, 10)).toEqual([]);
      const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.run_listing`);
      expect(rows[0]!.n).toBe(RUNS);
    } finally {
      await dropSchema(db.pool, schema);
    }
  });

  it('verify, which fills every projection in bulk, finds the live tables the projector built', async () => {
    const { rows } = await db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM runs WHERE last_error LIKE 'tab%' AND state = 'leased'",
    );
    expect(rows[0]!.n).toBe(RUNS / 2);
    const verified = await verifyProjections(store, db.pool, PROJECTIONS);
    expect(verified.differences).toEqual([]);
  });
});
