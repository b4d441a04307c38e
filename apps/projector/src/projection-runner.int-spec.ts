import { createTestDatabase, type TestDatabase, waitFor, catchUpUntil, seedRuns, testJob } from '@chronicle/testing';
import { PostgresEventStore, type RecordedEvent } from '@chronicle/event-store';
import { type Queryable, createLogger } from '@chronicle/platform';
import {
  runsProjection,
  streamActivityProjection,
  type Projection,
  loadCheckpoint,
  ProjectionRunner,
} from '@chronicle/projections';
import { Client } from 'pg';
import { Registry } from 'prom-client';

const logger = createLogger('error');

describe('projection runner (stream-activity on PostgreSQL)', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  beforeEach(async () => {
    db = await createTestDatabase();
    store = new PostgresEventStore(db.pool, { idleWaitMs: 20 });
  });
  afterEach(() => db.drop());

  const activity = async (): Promise<Array<Record<string, unknown>>> =>
    (
      await db.pool.query(
        'SELECT stream_id, category, revision::int, last_event_type FROM stream_activity ORDER BY stream_id',
      )
    ).rows;

  async function writeHistory(): Promise<void> {
    await store.appendToStream('team-1', 'no_stream', [
      { type: 'TeamCreated', data: {} },
      { type: 'TokenIssued', data: {} },
    ]);
    await store.appendToStream('job-export', 'no_stream', [{ type: 'JobDefined', data: {} }]);
    await store.appendToStream('team-1', 1n, [{ type: 'TokenRevoked', data: {} }]);
    await store.appendToStream('team-2', 'no_stream', [{ type: 'TeamCreated', data: {} }]);
  }
  const expected = [
    { stream_id: 'job-export', category: 'job', revision: 0, last_event_type: 'JobDefined' },
    { stream_id: 'team-1', category: 'team', revision: 2, last_event_type: 'TokenRevoked' },
    { stream_id: 'team-2', category: 'team', revision: 0, last_event_type: 'TeamCreated' },
  ];

  it('builds the read model from the log and stores the checkpoint at the last event', async () => {
    await writeHistory();
    const runner = new ProjectionRunner(store, db.pool, streamActivityProjection, logger, { batchSize: 2 });
    expect(await catchUpUntil(runner, 5)).toBe(5);
    expect(await activity()).toEqual(expected);
    const last = (await store.readAll()).at(-1)!;
    expect((await loadCheckpoint(db.pool, 'stream-activity'))?.position).toEqual(last.position);
  });

  it('is unchanged when the whole log is delivered again', async () => {
    await writeHistory();
    const runner = new ProjectionRunner(store, db.pool, streamActivityProjection, logger);
    await catchUpUntil(runner, 5);
    // Redelivery: the checkpoint goes back to the start, every event comes again.
    await db.pool.query('UPDATE projection_checkpoints SET commit_position = -1, prepare_position = -1');
    expect(await catchUpUntil(runner, 5)).toBe(5);
    expect(await activity()).toEqual(expected);
  });

  it('resumes after a crash in the middle of a batch without skipping or double-applying', async () => {
    await writeHistory();
    let calls = 0;
    const crashing: Projection = {
      ...streamActivityProjection,
      apply: async (tx: Queryable, events: readonly RecordedEvent[]) => {
        await streamActivityProjection.apply(tx, events);
        if (++calls === 2) throw new Error('process died here');
      },
    };
    const crashingRunner = new ProjectionRunner(store, db.pool, crashing, logger, { batchSize: 2 });
    await expect(catchUpUntil(crashingRunner, 5)).rejects.toThrow('process died here');
    // The first batch (2 events) committed with its checkpoint; the second rolled back whole.
    expect(await activity()).toEqual([
      { stream_id: 'team-1', category: 'team', revision: 1, last_event_type: 'TokenIssued' },
    ]);
    expect(
      await catchUpUntil(new ProjectionRunner(store, db.pool, streamActivityProjection, logger, { batchSize: 2 }), 3),
    ).toBe(3);
    expect(await activity()).toEqual(expected);
  });

  it('counts its failed batches in chronicle_pass_failures_total{pass="projector"}, waits longer after each, and goes on', async () => {
    await writeHistory();
    const registry = new Registry();
    let failuresLeft = 2;
    const failing: Projection = {
      ...streamActivityProjection,
      apply: async (db, events) => {
        if (failuresLeft-- > 0) throw new Error('the read models refused the batch');
        await streamActivityProjection.apply(db, events);
      },
    };
    const stop = new AbortController();
    const started = Date.now();
    const running = new ProjectionRunner(store, db.pool, failing, logger, { retryDelayMs: 50, registry }).run(
      stop.signal,
    );
    try {
      await waitFor(async () => (await activity()).length === expected.length, {
        timeoutMs: 10_000,
        description: 'the read model built once the batches stop failing',
      });
    } finally {
      stop.abort();
      await running;
    }
    expect(await activity()).toEqual(expected);
    const { values } = await registry.getSingleMetric('chronicle_pass_failures_total')!.get();
    expect(values).toEqual([expect.objectContaining({ labels: { pass: 'projector' }, value: 2 })]);
    // After two failures in a row it waited 100 ms, then 200 ms: twice the retry delay, then twice that.
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it('rebuilds a projection whose version changed', async () => {
    await writeHistory();
    await catchUpUntil(new ProjectionRunner(store, db.pool, streamActivityProjection, logger), 5);
    await db.pool.query("UPDATE stream_activity SET last_event_type = 'Corrupted'");
    const next: Projection = { ...streamActivityProjection, version: streamActivityProjection.version + 1 };
    expect(await catchUpUntil(new ProjectionRunner(store, db.pool, next, logger), 5)).toBe(5);
    expect(await activity()).toEqual(expected);
    expect((await loadCheckpoint(db.pool, 'stream-activity'))?.version).toBe(next.version);
  });

  it('leaves the rows commands wrote through as they are when it starts a written-through projection, never emptying them', async () => {
    const job = testJob({ name: 'ops.export', queue: 'ops' });
    await seedRuns(db.pool, store, [job], [{ job, runId: 'run_first', dueAt: new Date() }]);
    const rowVersion = async (): Promise<unknown[]> =>
      (await db.pool.query("SELECT ctid, xmin::text FROM runs WHERE run_id = 'run_first'")).rows;
    const before = await rowVersion();
    expect(before).toHaveLength(1);
    // Its first start: no checkpoint yet. Emptied, the run would read as absent until its events came
    // round again; folded over by revision, its row is the same row version.
    expect(await catchUpUntil(new ProjectionRunner(store, db.pool, runsProjection, logger), 2)).toBe(2);
    expect(await rowVersion()).toEqual(before);
    expect((await loadCheckpoint(db.pool, 'runs'))?.version).toBe(runsProjection.version);
  });

  it('keeps no row for run streams: the runs read model is their activity', async () => {
    await writeHistory();
    await store.appendToStream('run-9', 'no_stream', [{ type: 'RunScheduled', data: {} }]);
    expect(await catchUpUntil(new ProjectionRunner(store, db.pool, streamActivityProjection, logger), 6)).toBe(6);
    expect(await activity()).toEqual(expected);
  });

  it('reads the log once for several projections, each applying only what is past its own checkpoint', async () => {
    await writeHistory();
    await catchUpUntil(new ProjectionRunner(store, db.pool, streamActivityProjection, logger), 5);
    const seen: string[] = [];
    const counting: Projection = {
      name: 'counting',
      version: 1,
      eventTypes: 'all',
      tables: [],
      writtenThrough: false,
      apply: async (_tx: Queryable, events: readonly RecordedEvent[]) => void seen.push(...events.map((e) => e.type)),
      reset: async () => undefined,
    };
    let applied = 0;
    const watched: Projection = {
      ...streamActivityProjection,
      apply: async (tx: Queryable, events: readonly RecordedEvent[]) => {
        applied += events.length;
        await streamActivityProjection.apply(tx, events);
      },
    };
    await store.appendToStream('team-3', 'no_stream', [{ type: 'TeamCreated', data: {} }]);
    // The new projection starts from the beginning; stream-activity only takes the one event it has not seen.
    expect(await catchUpUntil(new ProjectionRunner(store, db.pool, [watched, counting], logger), 6)).toBe(6);
    expect(seen).toEqual(['TeamCreated', 'TokenIssued', 'JobDefined', 'TokenRevoked', 'TeamCreated', 'TeamCreated']);
    expect(applied).toBe(1);
    const last = (await store.readAll()).at(-1)!.position;
    expect((await loadCheckpoint(db.pool, 'counting'))?.position).toEqual(last);
    expect((await loadCheckpoint(db.pool, 'stream-activity'))?.position).toEqual(last);
  });

  it('follows the live log with one active runner when two are started', async () => {
    const stop = new AbortController();
    const runners = [1, 2].map(() =>
      new ProjectionRunner(store, db.pool, streamActivityProjection, logger, { retryDelayMs: 50 }).run(stop.signal),
    );
    try {
      await writeHistory();
      await waitFor(async () => JSON.stringify(await activity()) === JSON.stringify(expected));
      const { rows } = await db.pool.query<{ holders: number }>(
        "SELECT count(*)::int AS holders FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      );
      expect(rows[0]?.holders).toBe(1);
    } finally {
      stop.abort();
      await Promise.all(runners);
    }
  });

  it("ends a silent active runner's session and takes over; one that heartbeats it leaves alone", async () => {
    /** The second half's runner: it looks at the lock's holder every RETRY_DELAY_MS, silent after STALLED_AFTER_MS. */
    const RETRY_DELAY_MS = 100;
    const STALLED_AFTER_MS = 1_000;
    /**
     * How long the heartbeating holder is watched, to show that nothing happens to it: STALLED_AFTER_MS from
     * the lock taken, then five of the runner's looks, at which one that did not count heartbeats would end
     * its session.
     */
    const HEARTBEATING_KEPT_MS = STALLED_AFTER_MS + 5 * RETRY_DELAY_MS;
    const lockName = `projection:${streamActivityProjection.name}`;
    // An active runner as a stopped process leaves it: the lock held on a session that says nothing.
    const stalled = new Client({ connectionString: db.url });
    stalled.on('error', () => undefined);
    await stalled.connect();
    await stalled.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lockName]);
    // One that is alive heartbeats on its session, as the runner does.
    const alive = new Client({ connectionString: db.url });
    alive.on('error', () => undefined);
    await alive.connect();
    const stop = new AbortController();
    const waiting = new ProjectionRunner(store, db.pool, streamActivityProjection, logger, {
      retryDelayMs: 100,
      stalledAfterMs: 1_500,
    });
    let running: Promise<void> | undefined;
    try {
      const started = Date.now();
      running = waiting.run(stop.signal);
      await writeHistory();
      await waitFor(async () => JSON.stringify(await activity()) === JSON.stringify(expected), {
        timeoutMs: 10_000,
        description: 'the waiting runner taking over from the silent one',
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
      await expect(stalled.query('SELECT 1')).rejects.toThrow();

      // Now the waiting runner is the active one. Another, heartbeating holder of a second set's lock stays, for as
      // long as it is watched (HEARTBEATING_KEPT_MS: no event says that a runner left it alone).
      const otherLock = 'projection:some-other-set';
      await alive.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [otherLock]);
      const beating = setInterval(() => void alive.query('SELECT 1').catch(() => undefined), 200);
      const other = new ProjectionRunner(
        store,
        db.pool,
        { ...streamActivityProjection, name: 'some-other-set' },
        logger,
        { retryDelayMs: RETRY_DELAY_MS, stalledAfterMs: STALLED_AFTER_MS },
      );
      const otherStop = new AbortController();
      const otherRunning = other.run(otherStop.signal);
      await new Promise((resolve) => setTimeout(resolve, HEARTBEATING_KEPT_MS));
      clearInterval(beating);
      expect((await alive.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      otherStop.abort();
      await otherRunning;
    } finally {
      stop.abort();
      await running;
      await Promise.all([stalled.end().catch(() => undefined), alive.end()]);
    }
  });
});
